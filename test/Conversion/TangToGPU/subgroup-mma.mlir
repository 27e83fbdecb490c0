// RUN: tang-opt %s --convert-tang-to-gpu="matrix-units=16" --split-input-file --verify-diagnostics | FileCheck %s
// RUN: tang-opt %s --convert-tang-to-gpu="matrix-units=8 subgroup-size=64" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=TILE8
// RUN: not tang-opt %s --convert-tang-to-gpu="matrix-units=100" 2>&1 | FileCheck %s --check-prefix=OPTION

// OPTION: convert-tang-to-gpu: matrix-units must be 0 to 64 and subgroup-size 1 to 1024, got 100 and 32

// A [k, n] product on the portable matrix units: one subgroup per 16x16
// tile (columns over x, rows over y), the reduced index in steps of 16,
// tiles loaded from the buffers with their row strides, stored once.
// CHECK-LABEL: func.func @kn
// CHECK: gpu.launch_func {{.*}}@kn_k0 blocks in (%c3, %c2, %c1) threads in (%c32, %{{.*}}, %{{.*}})
// CHECK: gpu.func @kn_k0
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// CHECK: %[[ACC0:.*]] = gpu.subgroup_mma_constant_matrix %{{.*}} : !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c16{{.*}} iter_args(%{{.*}} = %[[ACC0]])
// CHECK: gpu.subgroup_mma_load_matrix %arg0[%{{.*}}, %[[K]]] {leadDimension = 64 : index} : memref<32x64xf32> -> !gpu.mma_matrix<16x16xf32, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %arg1[%[[K]], %{{.*}}] {leadDimension = 48 : index} : memref<64x48xf32> -> !gpu.mma_matrix<16x16xf32, "BOp">
// CHECK: gpu.subgroup_mma_compute
// CHECK: gpu.subgroup_mma_store_matrix %{{.*}}, %arg2[%{{.*}}, %{{.*}}] {leadDimension = 48 : index}
// TILE8-LABEL: func.func @kn
// TILE8: blocks in (%c6, %c4, %c1) threads in (%c64, %{{.*}}, %{{.*}})
// TILE8: !gpu.mma_matrix<8x8xf32, "AOp">
func.func @kn(%A: tensor<32x64xf32>, %B: tensor<64x48xf32>) -> tensor<32x48xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [32, 48, 64] monoid(add) : tensor<32x48xf32> {
    %a = tang.read %A[%i, %k] : tensor<32x64xf32>
    %b = tang.read %B[%k, %j] : tensor<64x48xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<32x48xf32>
}

// -----

// f16 operands with an f32 sum, a batch index (over z) and an [n, k] right
// operand, loaded transposed; heads as column offsets of a wider tensor.
// CHECK-LABEL: func.func @heads
// CHECK: blocks in (%c2, %c1, %c2{{.*}}) threads in (%c32, %{{.*}}, %{{.*}})
// CHECK: gpu.block_id z
// CHECK: gpu.subgroup_mma_load_matrix %arg0[%{{.*}}, %{{.*}}] {leadDimension = 64 : index} : memref<16x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %arg1[%{{.*}}, %{{.*}}] {leadDimension = 64 : index, transpose} : memref<32x64xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: gpu.subgroup_mma_store_matrix %{{.*}}, %arg2[%{{.*}}, %{{.*}}, %{{.*}}] {leadDimension = 32 : index}
func.func @heads(%Q: tensor<16x64xf16>, %K: tensor<32x64xf16>) -> tensor<2x16x32xf32> {
  %Qh = tang.view %Q by affine_map<(h, i, k) -> (i, h * 32 + k)> : tensor<16x64xf16> to tensor<2x16x32xf16>
  %Kh = tang.view %K by affine_map<(h, j, k) -> (j, h * 32 + k)> : tensor<32x64xf16> to tensor<2x32x32xf16>
  %S = tang.comprehension (%h, %i, %j) reduce (%k) [2, 16, 32, 32] monoid(add) : tensor<2x16x32xf32> {
    %q = tang.read %Qh[%h, %i, %k] : tensor<2x16x32xf16>
    %c = tang.read %Kh[%h, %j, %k] : tensor<2x32x32xf16>
    %x = arith.extf %q : f16 to f32
    %y = arith.extf %c : f16 to f32
    %p = arith.mulf %x, %y : f32
    tang.yield %p : f32
  }
  return %S : tensor<2x16x32xf32>
}

// -----

// Misses: a remark naming why, and the plain kernel.
// CHECK-LABEL: func.func @ragged
// CHECK-NOT: subgroup_mma
// CHECK: scf.for
func.func @ragged(%A: tensor<20x32xf32>, %B: tensor<32x24xf32>) -> tensor<20x24xf32> {
  // expected-remark @+1 {{not on matrix units: an extent is not a multiple of the}}
  %C = tang.comprehension (%i, %j) reduce (%k) [20, 24, 32] monoid(add) : tensor<20x24xf32> {
    %a = tang.read %A[%i, %k] : tensor<20x32xf32>
    %b = tang.read %B[%k, %j] : tensor<32x24xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<20x24xf32>
}

// -----

// CHECK-LABEL: func.func @transposed_result
// CHECK-NOT: subgroup_mma
func.func @transposed_result(%A: tensor<2x32x64xf32>, %B: tensor<2x64x48xf32>) -> tensor<32x2x48xf32> {
  // expected-remark @+1 {{not on matrix units: the result's last two indices are not its rows and columns}}
  %C = tang.comprehension (%i, %b, %j) reduce (%k) [32, 2, 48, 64] monoid(add) : tensor<32x2x48xf32> {
    %a = tang.read %A[%b, %i, %k] : tensor<2x32x64xf32>
    %w = tang.read %B[%b, %k, %j] : tensor<2x64x48xf32>
    %p = arith.mulf %a, %w : f32
    tang.yield %p : f32
  }
  return %C : tensor<32x2x48xf32>
}

// -----

// An epilogue: each tile goes through a tile x tile f32 workgroup buffer
// between subgroup-local barriers, each thread applying the epilogue to
// tile^2 / 32 of its elements (8 of 16 x 16; 1 of 8 x 8 with 64 threads).
// CHECK-LABEL: func.func @epilogue
// CHECK: gpu.func @epilogue_k0
// CHECK-SAME: workgroup(%[[W:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for
// CHECK: gpu.subgroup_mma_store_matrix %{{.*}}, %[[W]][%{{.*}}, %{{.*}}] {leadDimension = 16 : index}
// CHECK-NEXT: gpu.barrier {tang.subgroup_local}
// CHECK-COUNT-8: math.tanh
// CHECK: gpu.barrier {tang.subgroup_local}
// TILE8-LABEL: func.func @epilogue
// TILE8: workgroup(%{{.*}} : memref<8x8xf32, #gpu.address_space<workgroup>>)
// TILE8: gpu.barrier {tang.subgroup_local}
// TILE8: memref.load {{.*}}workgroup
// TILE8-COUNT-1: math.tanh
// TILE8-NEXT: memref.store
// TILE8-NEXT: gpu.barrier {tang.subgroup_local}
func.func @epilogue(%A: tensor<32x64xf32>, %B: tensor<64x48xf32>) -> tensor<32x48xf32> {
  %C = tang.comprehension (%i, %j) [32, 48] : tensor<32x48xf32> {
    %s = tang.comprehension reduce (%k) [64] monoid(add) : f32 {
      %a = tang.read %A[%i, %k] : tensor<32x64xf32>
      %b = tang.read %B[%k, %j] : tensor<64x48xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %t = math.tanh %s : f32
    tang.yield %t : f32
  }
  return %C : tensor<32x48xf32>
}

// -----

// Register blocking: the first of 4 x 4, 4 x 2, 2 x 4, 2 x 2 tiles a
// subgroup that keeps 256 workgroups: 2 x 2 of 32 x 32 tiles of 16 (each
// step loads 2 tiles of A and 2 of B and computes 4 products), 4 x 4 of
// 64 x 64 tiles of 8.
// CHECK-LABEL: func.func @blocked
// CHECK: blocks in (%c16{{.*}}, %c16{{.*}}, %c1{{.*}}) threads in (%c32
// CHECK: scf.for {{.*}} iter_args({{[^,]*}}, {{[^,]*}}, {{[^,]*}}, {{[^,]*}}) ->
// CHECK-COUNT-2: gpu.subgroup_mma_load_matrix %arg0
// CHECK-COUNT-2: gpu.subgroup_mma_load_matrix %arg1
// CHECK-COUNT-4: gpu.subgroup_mma_compute
// CHECK: scf.yield
// CHECK-COUNT-4: gpu.subgroup_mma_store_matrix
// TILE8-LABEL: func.func @blocked
// TILE8: blocks in (%c16{{.*}}, %c16{{.*}}, %c1{{.*}}) threads in (%c64
// TILE8-COUNT-16: gpu.subgroup_mma_compute
func.func @blocked(%A: tensor<512x32xf32>, %B: tensor<32x512xf32>) -> tensor<512x512xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [512, 512, 32] monoid(add) : tensor<512x512xf32> {
    %a = tang.read %A[%i, %k] : tensor<512x32xf32>
    %b = tang.read %B[%k, %j] : tensor<32x512xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<512x512xf32>
}

// -----

// A schedule naming the kernel sets the blocking: 64 x 32 (4 x 2 tiles of
// 16, 8 x 4 of 8); one that is not whole tiles dividing the extents is an
// error, not a silent fallback.
// CHECK-LABEL: func.func @scheduled
// CHECK: blocks in (%c2, %c1{{.*}}, %c1{{.*}}) threads in (%c32
// CHECK-COUNT-8: gpu.subgroup_mma_compute
// TILE8-LABEL: func.func @scheduled
// TILE8: blocks in (%c2, %c1{{.*}}, %c1{{.*}}) threads in (%c64
// TILE8-COUNT-32: gpu.subgroup_mma_compute
func.func @scheduled(%A: tensor<64x32xf32>, %B: tensor<32x64xf32>) -> tensor<64x64xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [64, 64, 32] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 32, 16], mapping = [block_y, block_x, serial], threads = [1, 32, 1], vector = 1, stages = 1, storage = f32, accumulate = f32, memory = [global], kernel = subgroup_mma>} : tensor<64x64xf32> {
    %a = tang.read %A[%i, %k] : tensor<64x32xf32>
    %b = tang.read %B[%k, %j] : tensor<32x64xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<64x64xf32>
}

// -----

func.func @bad_schedule(%A: tensor<64x32xf32>, %B: tensor<32x64xf32>) -> tensor<64x64xf32> {
  // expected-error @+1 {{has a schedule asking for a subgroup_mma kernel, but its schedule's tile [24, 32, 16] (rows, columns, reduced) is not whole}}
  %C = tang.comprehension (%i, %j) reduce (%k) [64, 64, 32] monoid(add) attributes {schedule = #tang.schedule<tile = [24, 32, 16], mapping = [block_y, block_x, serial], threads = [1, 32, 1], vector = 1, stages = 1, storage = f32, accumulate = f32, memory = [global], kernel = subgroup_mma>} : tensor<64x64xf32> {
    %a = tang.read %A[%i, %k] : tensor<64x32xf32>
    %b = tang.read %B[%k, %j] : tensor<32x64xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<64x64xf32>
}
