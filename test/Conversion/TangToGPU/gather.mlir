// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu | FileCheck %s

// A gather in a kernel: its data coordinate (an integer read, cast to
// index) clamped into the table (clamp), or checked with an unsigned
// comparison and read at 0 then replaced by zero (zero). The gathered
// table is a kernel argument like a read tensor. The pointwise schedule
// moves 4 columns at a time: the token's row once, each gathered row as
// one vector, the result stored as one.
// CHECK-LABEL: gpu.func @lookup_k0
// CHECK-SAME: memref<8xi32>, %{{.*}}: memref<64x16xf32>
// CHECK: %[[T:.*]] = memref.load {{.*}} : memref<8xi32>
// CHECK: %[[R:.*]] = arith.index_cast %[[T]] : i32 to index
// CHECK: arith.minsi %[[R]]
// CHECK: arith.maxsi
// CHECK: vector.load {{.*}} : memref<64x16xf32>, vector<4xf32>
// CHECK: arith.cmpi ult
// CHECK: arith.select
// CHECK: vector.load {{.*}} : memref<64x16xf32>, vector<4xf32>
// CHECK: arith.select {{.*}} : vector<4xf32>
// CHECK: vector.store {{.*}} : memref<8x16xf32>, vector<4xf32>
func.func @lookup(%tok: tensor<8xi32>, %E: tensor<64x16xf32>) -> tensor<8x16xf32> {
  %y = tang.comprehension (%i, %d) [8, 16] : tensor<8x16xf32> {
    %k = tang.read %tok[%i] : tensor<8xi32>
    %row = arith.index_cast %k : i32 to index
    %a = tang.gather %E[symbol(%row), %d] clamp : tensor<64x16xf32>
    %b = tang.gather %E[symbol(%row) + 1, %d] zero : tensor<64x16xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  return %y : tensor<8x16xf32>
}

// A gathered row given by a constant from outside the body (a row of a
// cache at a fixed position, as the kv-cache example's gradient writes
// it): the constant is brought into the kernel before the vector load
// (this crashed the vectorised point kernel).
// CHECK-LABEL: gpu.func @constant_row_k0
// CHECK: %[[C:.*]] = arith.constant 63 : index
// CHECK: arith.cmpi ult, %[[C]]
// CHECK: vector.load {{.*}} : memref<64x16xf32>, vector<4xf32>
func.func @constant_row(%E: tensor<64x16xf32>) -> tensor<16xf32> {
  %c63 = arith.constant 63 : index
  %y = tang.comprehension (%d) [16] : tensor<16xf32> {
    %a = tang.gather %E[symbol(%c63), %d] zero : tensor<64x16xf32>
    tang.yield %a : f32
  }
  return %y : tensor<16xf32>
}
