// RUN: tang-opt %s --tang-specialize-sizes="sizes=arg1=9 function=prefix" | FileCheck %s
// RUN: tang-opt %s --tang-specialize-sizes="sizes=arg0.0=5 function=rows" | FileCheck %s --check-prefix=DIMS
// RUN: not tang-opt %s --tang-specialize-sizes="sizes=arg1=64 function=prefix" 2>&1 | FileCheck %s --check-prefix=BROKEN
// RUN: not tang-opt %s --tang-specialize-sizes="sizes=arg2=3 function=prefix" 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not tang-opt %s --tang-specialize-sizes="function=rows" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not tang-opt %s --tang-specialize-sizes="sizes=arg1=9" 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: not tang-opt %s --tang-specialize-sizes="sizes=arg1=9 function=nope" 2>&1 | FileCheck %s --check-prefix=NOPE

// An index argument: it goes, its uses become a constant, the extents it
// gave become static and so do the result types.
// CHECK-LABEL: func.func @prefix(
// CHECK-SAME: %{{.*}}: tensor<64xf32>) -> tensor<10xf32>
// CHECK-NOT: arith.addi
// CHECK: %[[C9:.*]] = arith.constant 9 : index
// CHECK: tang.comprehension (%[[T:.*]]) [10] : tensor<10xf32>
// CHECK: tang.index %[[T]] : i32
// CHECK: arith.index_cast %[[C9]]
// CHECK: return %{{.*}} : tensor<10xf32>
// BROKEN: error: 'tang.read' op --tang-specialize-sizes: coordinate #0 (d0), up to %arg1, stays below dimension 0 (64) only if %arg1 <= 63, but %arg1 = 64
// SYNTAX: error: 'func.func' op --tang-specialize-sizes: 'arg2=3' is not a size of @prefix: expected argK=N (an index argument) or argK.D=N
func.func @prefix(%x: tensor<64xf32>, %pos: index) -> tensor<?xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %y = tang.comprehension (%t) [%len] : tensor<?xf32> {
    %a = tang.read %x[%t] : tensor<64xf32>
    %ti = tang.index %t : i32
    %p = arith.index_cast %pos : index to i32
    %keep = arith.cmpi slt, %ti, %p : i32
    %zero = arith.constant 0.0 : f32
    %v = arith.select %keep, %a, %zero : f32
    tang.yield %v : f32
  }
  return %y : tensor<?xf32>
}

// A '?' dimension of a tensor argument: static, tensor.dim of it a constant.
// DIMS-LABEL: func.func @rows(
// DIMS-SAME: %{{.*}}: tensor<5x8xf32>) -> tensor<5xf32>
// DIMS-NOT: tensor.dim
// DIMS: tang.comprehension (%{{.*}}) reduce (%{{.*}}) [5, 8] monoid(add) : tensor<5xf32>
// MISSING: error: 'func.func' op --tang-specialize-sizes: the size dim 0 of %arg0 has no value (add arg0.0=N to sizes)
// Without `function`, every function with sizes gets the same values:
// @rows has no size arg1.
// OTHER: error: 'func.func' op --tang-specialize-sizes: 'arg1=9' is not a size of @rows
// NOPE: error: --tang-specialize-sizes: no function @nope
func.func @rows(%x: tensor<?x8xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %y = tang.comprehension (%i) reduce (%j) [%n, 8] monoid(add) : tensor<?xf32> {
    %a = tang.read %x[%i, %j] : tensor<?x8xf32>
    tang.yield %a : f32
  }
  return %y : tensor<?xf32>
}
