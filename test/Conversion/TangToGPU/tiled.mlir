// RUN: tang-opt %s --split-input-file --tang-attach-target=chip=portable --tang-schedule --convert-tang-to-gpu="cooperative=0" --canonicalize --cse | FileCheck %s

// The portable schedule of a matmul-like comprehension: 64 x 64 tiles of
// 16 x 16 threads, 4 x 4 points a thread (TiledKernel.cpp). Its operands
// are staged in workgroup memory by steps along k (32 halved until both
// [step][64 + 1] f32 tiles fit 16 KiB: 16), two barriers a step; the 16
// carriers run through both loops; the last step is shorter (k 40); ragged
// rows and columns clamp the reads and guard the stores.
// CHECK-LABEL: func.func @ragged
// CHECK: gpu.launch_func @tang_kernels::@ragged_k0 blocks in (%c2{{.*}}, %c2{{.*}}, %c1{{.*}}) threads in (%c16{{.*}}, %c16{{.*}}, %c1{{.*}})
// CHECK: gpu.func @ragged_k0
// CHECK-SAME: workgroup(%{{.*}} : memref<16x65xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x65xf32, #gpu.address_space<workgroup>>)
// CHECK: arith.minui
// CHECK: scf.for %[[K0:.*]] = %c0 to %c40 step %c16 iter_args({{([^,]*, ){15}[^,]*}}) ->
// CHECK: memref.store {{.*}} : memref<16x65xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: arith.minui
// CHECK: scf.for {{.*}} = %c0 to %{{.*}} step %c1 iter_args({{([^,]*, ){15}[^,]*}}) ->
// CHECK-COUNT-4: memref.load {{.*}} : memref<16x65xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: math.tanh
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<100x70xf32>
func.func @ragged(%A: tensor<100x40xf32>, %B: tensor<40x70xf32>, %bias: tensor<70xf32>) -> tensor<100x70xf32> {
  %C = tang.comprehension (%i, %j) [100, 70] : tensor<100x70xf32> {
    %s = tang.comprehension reduce (%k) [40] monoid(add) : f32 {
      %a = tang.read %A[%i, %k] : tensor<100x40xf32>
      %b = tang.read %B[%k, %j] : tensor<40x70xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %c = tang.read %bias[%j] : tensor<70xf32>
    %t = arith.addf %s, %c : f32
    %g = math.tanh %t : f32
    tang.yield %g : f32
  }
  return %C : tensor<100x70xf32>
}

// -----

// A schedule in global memory: the same points a thread, no workgroup
// memory, no barrier; each step loads 4 rows of A and 4 columns of B (CSE
// shares them among the 16 points).
// CHECK-LABEL: func.func @global
// CHECK: gpu.func @global_k0
// CHECK-NOT: workgroup(
// CHECK: scf.for {{.*}} iter_args({{([^,]*, ){15}[^,]*}}) ->
// CHECK: memref.load %arg0
// CHECK-COUNT-4: memref.load %arg1
// CHECK-COUNT-3: memref.load %arg0
// CHECK-NOT: memref.load
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
func.func @global(%A: tensor<128x32xf32>, %B: tensor<32x128xf32>) -> tensor<128x128xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 32] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 64, 32], mapping = [block_y, block_x, serial], threads = [16, 16, 1], vector = 1, stages = 1, storage = f32, accumulate = f32, memory = [global]>} : tensor<128x128xf32> {
    %a = tang.read %A[%i, %k] : tensor<128x32xf32>
    %b = tang.read %B[%k, %j] : tensor<32x128xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<128x128xf32>
}

// -----

// A product too small for more than one point a thread stays a point
// kernel.
// CHECK-LABEL: func.func @small
// CHECK: threads in (%c256
func.func @small(%A: tensor<16x32xf32>, %B: tensor<32x16xf32>) -> tensor<16x16xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [16, 16, 32] monoid(add) : tensor<16x16xf32> {
    %a = tang.read %A[%i, %k] : tensor<16x32xf32>
    %b = tang.read %B[%k, %j] : tensor<32x16xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<16x16xf32>
}
