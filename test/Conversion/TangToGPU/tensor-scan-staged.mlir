// RUN: tang-opt %s --tang-attach-target=chip=sm_80 --convert-tang-to-gpu | FileCheck %s
// RUN: tang-opt %s --tang-attach-target=chip=sm_75 --convert-tang-to-gpu | FileCheck %s --check-prefix=AHEAD

// The affine scan kernel on a target with asynchronous copies (sm_80 on),
// f32 states of 8 rows (a multiple of 4): each step's transition A[t]
// (8 x 8, 256 bytes) is copied whole into one of two workgroup buffers
// (cp.async, 16 bytes a copy: 16 copies, one for each of the 16 threads,
// 8 rows x 2 of 4 columns) while the step before computes from the other.
// Dynamic workgroup memory holds both buffers and the slice: 2 x 256 + 8 x
// 8 x 4 = 768 bytes. The copy of A[0] before the steps;
// in each step the copy of A[t + 1] into buffer (t + 1) mod 2, a wait
// leaving that one group in flight, a barrier, then the sum reads A[t]
// from buffer t mod 2 as 16-byte vectors.
// CHECK: gpu.launch_func @tang_kernels::@states_k0 {{.*}} dynamic_shared_memory_size %c768_i32
// CHECK-LABEL: gpu.func @states_k0
// CHECK-NOT: workgroup(
// CHECK-SAME: known_block_size = array<i32: 16, 1, 1>
// CHECK: %[[SMEM:.*]] = gpu.dynamic_shared_memory
// CHECK: %[[BUF:.*]] = memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x8x8xf32, #gpu.address_space<workgroup>>
// CHECK: %[[SLICE:.*]] = memref.view %[[SMEM]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<8x8xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %c0{{.*}}, %{{.*}}, %{{.*}}], %[[BUF]][%c0{{.*}}, %{{.*}}, %{{.*}}], 4
// CHECK: nvgpu.device_async_create_group
// CHECK: scf.for %[[T:[^ ]*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[SLOT:.*]] = arith.remui %[[T]], %{{.*}}
// CHECK: nvgpu.device_async_copy
// CHECK: %[[G:.*]] = nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait %[[G]] {numGroups = 1 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for
// CHECK: vector.load %[[BUF]][%[[SLOT]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<2x8x8xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.load %[[SLICE]]
// CHECK: gpu.return

// Without them (sm_75), the transition rows come from global memory into
// registers, a trip ahead; the slice a static workgroup buffer.
// AHEAD-LABEL: gpu.func @states_k0
// AHEAD-SAME: workgroup(
// AHEAD-NOT: nvgpu.device_async_copy
// AHEAD: vector.load %{{.*}} : memref<3x5x8x8xf32>, vector<4xf32>
// AHEAD-NOT: nvgpu.device_async_copy
// AHEAD: gpu.return

tang.monoid @affine : [tensor<8x8xf32>, tensor<8x8xf32>] identity [] {
^bb0(%a1: tensor<8x8xf32>, %b1: tensor<8x8xf32>, %a2: tensor<8x8xf32>, %b2: tensor<8x8xf32>):
  %a = tang.comprehension (%i, %j) reduce (%k) [8, 8, 8] monoid(add) : tensor<8x8xf32> {
    %x = tang.read %a2[%i, %k] : tensor<8x8xf32>
    %y = tang.read %a1[%k, %j] : tensor<8x8xf32>
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  %b = tang.comprehension (%i, %j) [8, 8] : tensor<8x8xf32> {
    %s = tang.comprehension reduce (%k) [8] monoid(add) : f32 {
      %x = tang.read %a2[%i, %k] : tensor<8x8xf32>
      %y = tang.read %b1[%k, %j] : tensor<8x8xf32>
      %p = arith.mulf %y, %x : f32
      tang.yield %p : f32
    }
    %z = tang.read %b2[%i, %j] : tensor<8x8xf32>
    %r = arith.addf %z, %s : f32
    tang.yield %r : f32
  }
  tang.yield %a, %b : tensor<8x8xf32>, tensor<8x8xf32>
}
func.func @states(%A: tensor<3x5x8x8xf32>, %B: tensor<3x5x8x8xf32>, %I: tensor<3x8x8xf32>, %S0: tensor<3x8x8xf32>) -> tensor<3x5x8x8xf32> {
  %PA, %S = tang.tensor_scan @affine(%A, %B : tensor<3x5x8x8xf32>, tensor<3x5x8x8xf32>) init(%I, %S0 : tensor<3x8x8xf32>, tensor<3x8x8xf32>) -> tensor<3x5x8x8xf32>, tensor<3x5x8x8xf32>
  return %S : tensor<3x5x8x8xf32>
}
