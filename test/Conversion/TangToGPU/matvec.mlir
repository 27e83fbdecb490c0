// RUN: tang-opt %s --split-input-file --tang-schedule --convert-tang-to-gpu | FileCheck %s

// Matrix-vector kernels (RowKernel.cpp, emitMatVecKernel): a warp per
// output, 4 per block; the lanes stride the reduced index 16 bytes of the
// weights at a time, every row of the batch in the warp sharing each weight
// vector; shuffles combine the lanes; row r's epilogue runs on lane r.

// The down product with its residual, batch 2 (the reduction nested in a
// map): 4096 outputs in 1024 blocks of 128 threads; per step one weight
// vector (8 bf16) and one vector of each row's activations; after the
// butterfly, lane 0 stores row 0 and lane 1 row 1, each adding its
// residual.
// CHECK-LABEL: func.func @down_residual
// CHECK: gpu.launch_func @tang_kernels::@down_residual_k0 blocks in (%[[GX:.*]], %{{.*}}, %{{.*}}) threads in (%[[TX:.*]], %{{.*}}, %{{.*}})
// CHECK-LABEL: gpu.func @down_residual_k0
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %[[C32]]
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]]
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[FIRST:.*]] = arith.muli %[[BX]], %[[C4]]
// CHECK: %[[OUT:.*]] = arith.addi %[[FIRST]], %[[WARP]]
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, f32)
// CHECK: vector.load %arg1[%[[OUT]], %[[K]]] {alignment = 16 : i64} : memref<4096x12288xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.load %arg2[%{{.*}}, %[[K]]] {alignment = 16 : i64} : memref<2x12288xf32>, vector<8xf32>
// CHECK-NOT: vector.load %arg1[%[[OUT]], %[[K]]]
// CHECK: vector.load %arg2[%{{.*}}, %[[K]]] {alignment = 16 : i64} : memref<2x12288xf32>, vector<8xf32>
// CHECK: scf.yield
// CHECK-COUNT-10: gpu.shuffle xor
// CHECK: arith.cmpi eq, %[[LANE]]
// CHECK: scf.if
// CHECK: memref.load %arg0
// CHECK: memref.store %{{.*}}, %arg3[%{{.*}}, %[[OUT]]] : memref<2x4096xf32>
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg3[%{{.*}}, %[[OUT]]] : memref<2x4096xf32>
// CHECK: gpu.return
func.func @down_residual(%x: tensor<2x4096xf32>, %W: tensor<4096x12288xbf16>, %a: tensor<2x12288xf32>) -> tensor<2x4096xf32> {
  %y = tang.comprehension (%r, %n) [2, 4096] : tensor<2x4096xf32> {
    %xv = tang.read %x[%r, %n] : tensor<2x4096xf32>
    %d = tang.comprehension reduce (%k) [12288] monoid(add) : f32 {
      %w = tang.read %W[%n, %k] : tensor<4096x12288xbf16>
      %we = arith.extf %w : bf16 to f32
      %av = tang.read %a[%r, %k] : tensor<2x12288xf32>
      %p = arith.mulf %we, %av : f32
      tang.yield %p : f32
    }
    %s = arith.addf %xv, %d : f32
    tang.yield %s : f32
  }
  return %y : tensor<2x4096xf32>
}

// -----

// A product per head with more heads (20) than a warp takes together: the
// heads go over block_y; 50 outputs leave the last block's two last warps
// idle (guarded).
// CHECK-LABEL: func.func @per_head
// CHECK: gpu.launch_func @tang_kernels::@per_head_k0 blocks in (%[[GX:.*]], %[[GY:.*]], %{{.*}})
// CHECK-LABEL: gpu.func @per_head_k0
// CHECK: %[[H:.*]] = gpu.block_id y
// CHECK: %[[IN:.*]] = arith.cmpi ult
// CHECK: scf.if %[[IN]]
// CHECK: scf.for
// CHECK: vector.load %arg0[%[[H]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<20x50x64xf32>, vector<4xf32>
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: memref.store %{{.*}}, %arg2[%[[H]], %{{.*}}] : memref<20x50xf32>
func.func @per_head(%W: tensor<20x50x64xf32>, %x: tensor<20x64xf32>) -> tensor<20x50xf32> {
  %y = tang.comprehension (%h, %n) reduce (%k) [20, 50, 64] monoid(add) : tensor<20x50xf32> {
    %w = tang.read %W[%h, %n, %k] : tensor<20x50x64xf32>
    %v = tang.read %x[%h, %k] : tensor<20x64xf32>
    %p = arith.mulf %w, %v : f32
    tang.yield %p : f32
  }
  return %y : tensor<20x50xf32>
}

// -----

// The output product reads attention's [heads, head_dim] result as one row
// of 4096 (o[k floordiv 128, k mod 128]): runs of 8 never cross a head, so
// it is loaded 8 at a time like the weights.
// CHECK-LABEL: gpu.func @o_proj_k0
// CHECK: scf.for %[[K:[^ ]*]] =
// CHECK: vector.load %arg0[%{{.*}}, %[[K]]] {alignment = 16 : i64} : memref<4096x4096xbf16>, vector<8xbf16>
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<32x128xf32>, vector<8xf32>
func.func @o_proj(%W: tensor<4096x4096xbf16>, %o: tensor<32x128xf32>) -> tensor<4096xf32> {
  %y = tang.comprehension (%n) reduce (%k) [4096, 4096] monoid(add) : tensor<4096xf32> {
    %w = tang.read %W[%n, %k] : tensor<4096x4096xbf16>
    %we = arith.extf %w : bf16 to f32
    %ov = tang.read %o[%k floordiv 128, %k mod 128] : tensor<32x128xf32>
    %p = arith.mulf %we, %ov : f32
    tang.yield %p : f32
  }
  return %y : tensor<4096xf32>
}

// -----

// Experts picked per (token, slot) by data (a mixture of experts): the
// weight row is a gather whose data coordinate depends on the token and
// the slot, so neither shares a weight vector: each is a grid dimension
// (slots over block_y, tokens over block_z), not a row of the warp. The
// routed expert is read once per step, before the loads (it does not
// depend on the reduced index), and the gathered row is loaded 16 bytes at
// a time at the clamped expert.
// CHECK-LABEL: func.func @experts
// CHECK: gpu.launch_func @tang_kernels::@experts_k0 blocks in (%{{.*}}, %[[GY:.*]], %[[GZ:.*]]) threads in
// CHECK-LABEL: gpu.func @experts_k0
// CHECK: %[[BY:.*]] = gpu.block_id y
// CHECK: %[[BZ:.*]] = gpu.block_id z
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: %[[E:.*]] = memref.load %arg0[%[[BZ]], %[[BY]]] : memref<3x4xi32>
// CHECK: arith.index_cast %[[E]]
// CHECK: arith.maxsi
// CHECK: %[[ROW:.*]] = vector.load %arg1[%{{.*}}, %{{.*}}, %[[K]]] {alignment = 16 : i64} : memref<16x256x512xbf16>, vector<8xbf16>
// CHECK-NOT: memref.load %arg1
// CHECK: scf.yield
// CHECK: gpu.return
func.func @experts(%sel: tensor<3x4xi32>, %W: tensor<16x256x512xbf16>, %x: tensor<3x512xbf16>) -> tensor<3x4x256xf32> {
  %y = tang.comprehension (%t, %s, %f) [3, 4, 256] : tensor<3x4x256xf32> {
    %d = tang.comprehension reduce (%k) [512] monoid(add) : f32 {
      %e = tang.read %sel[%t, %s] : tensor<3x4xi32>
      %row = arith.index_cast %e : i32 to index
      %w = tang.gather %W[symbol(%row), %f, %k] clamp : tensor<16x256x512xbf16>
      %we = arith.extf %w : bf16 to f32
      %xv = tang.read %x[%t, %k] : tensor<3x512xbf16>
      %xe = arith.extf %xv : bf16 to f32
      %p = arith.mulf %we, %xe : f32
      tang.yield %p : f32
    }
    tang.yield %d : f32
  }
  return %y : tensor<3x4x256xf32>
}
