// RUN: tang-opt %s --pass-pipeline="builtin.module(llvm.func(tang-tensor-map-params))" --split-input-file --verify-diagnostics | FileCheck %s

// Parameter 0 carries a tensor map: 128 bytes by value, 64-byte aligned, a
// grid constant; the naming attribute is gone.
// CHECK-LABEL: llvm.func @k
// CHECK-SAME: (%{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: !llvm.ptr)
// CHECK-NOT: tang.tensor_map_params
llvm.func @k(%m: !llvm.ptr, %p: !llvm.ptr) attributes {nvvm.kernel, tang.tensor_map_params = array<i64: 0>} {
  llvm.return
}

// -----

// Parameter 1 is not a pointer. (A position past the parameters is the
// dialect verifier's error: test/Dialect/Tang/discardable-attrs.mlir.)
// expected-error @+1 {{has no pointer parameter #1 for a tensor map}}
llvm.func @bad(%m: !llvm.ptr, %n: i32) attributes {nvvm.kernel, tang.tensor_map_params = array<i64: 1>} {
  llvm.return
}
