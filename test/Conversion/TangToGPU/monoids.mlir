// RUN: tang-opt %s --convert-tang-to-gpu | FileCheck %s

// The kernels combine under the builtin monoids' one definition
// (TangMonoids.cpp), the IR tang-run evaluates: argmax takes a NaN over
// every number and the earlier of two NaNs (NumPy's argmax), ties to the
// smaller index.
// CHECK-LABEL: gpu.func @argmax_k0
// CHECK-DAG: %[[LOW:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[LAST:.*]] = arith.constant 2147483647 : i32
// CHECK: scf.for {{.*}} iter_args(%[[V:.*]] = %[[LOW]], %[[I:.*]] = %[[LAST]])
// CHECK: %[[X:.*]] = memref.load
// CHECK: %[[K:.*]] = arith.index_cast
// CHECK: %[[BETTER:.*]] = arith.cmpf ogt, %[[X]], %[[V]] : f32
// CHECK: %[[EQUAL:.*]] = arith.cmpf oeq, %[[X]], %[[V]] : f32
// CHECK: %[[VNAN:.*]] = arith.cmpf uno, %[[V]], %[[V]] : f32
// CHECK: %[[XNAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK: %[[ONLY:.*]] = arith.cmpi ugt, %[[XNAN]], %[[VNAN]] : i1
// CHECK: %[[B2:.*]] = arith.ori %[[BETTER]], %[[ONLY]] : i1
// CHECK: %[[BOTH:.*]] = arith.andi %[[VNAN]], %[[XNAN]] : i1
// CHECK: %[[E2:.*]] = arith.ori %[[EQUAL]], %[[BOTH]] : i1
// CHECK: %[[EARLIER:.*]] = arith.cmpi slt, %[[K]], %[[I]] : i32
// CHECK: %[[TIE:.*]] = arith.andi %[[E2]], %[[EARLIER]] : i1
// CHECK: %[[TAKE:.*]] = arith.ori %[[B2]], %[[TIE]] : i1
// CHECK: arith.select %[[TAKE]], %[[X]], %[[V]] : f32
// CHECK: arith.select %[[TAKE]], %[[K]], %[[I]] : i32
func.func @argmax(%X: tensor<8x32xf32>) -> (tensor<8xf32>, tensor<8xi32>) {
  %v, %idx = tang.comprehension (%i) reduce (%j) [8, 32] monoid(argmax) : tensor<8xf32>, tensor<8xi32> {
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %vj = tang.index %j : i32
    tang.yield %x, %vj : f32, i32
  }
  return %v, %idx : tensor<8xf32>, tensor<8xi32>
}
