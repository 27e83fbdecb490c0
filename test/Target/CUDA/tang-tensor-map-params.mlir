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

// expected-error @+1 {{has no pointer parameter #2 for a tensor map}}
llvm.func @bad(%m: !llvm.ptr, %n: i32) attributes {nvvm.kernel, tang.tensor_map_params = array<i64: 2>} {
  llvm.return
}
