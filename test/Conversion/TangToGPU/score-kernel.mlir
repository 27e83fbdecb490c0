// RUN: tang-opt %s --convert-tang-to-gpu=tensor-cores=mma-sync --verify-diagnostics | FileCheck %s
// RUN: tang-opt %s --convert-tang-to-gpu=tensor-cores=wgmma --verify-diagnostics | FileCheck %s --check-prefix=WG

// The training step of causal attention (bf16, [1, 2, 80, 64]) as
// `--tang-grad=split=1` and `--tang-fuse` leave it (bench/prepare_gemm.py's
// attention_program): the forward (the flash kernel, then the softmax's
// running max and sum) and the backward (D = rowsum(dO O), dQ, dK, dV).
// Every sum over keys of dot-product scores is a score kernel
// (ScoreKernel.cpp): 4 warps of 16 rows, the row operands' tiles resident
// in shared memory, the key-indexed tiles streamed in two slots (K read in
// Q K^T and as dQ's summand share one), the dot products and the product
// with the summand's read on mma.sync, whatever the tensor-core option
// (the same kernels with tensor-cores=wgmma).

// The forward: the flash kernel computes the running max and sum of the
// softmax_norm comprehension after it (the same scores) and writes them:
// that comprehension has no kernel of its own.
// CHECK-LABEL: func.func @main_fwd
// CHECK: gpu.launch_func @tang_kernels::@main_fwd_k0
// CHECK-NOT: gpu.launch_func
// The backward: D on a row kernel, then dQ, and dK with dV, on score
// kernels: dV's comprehension (rows keys, sum over queries, its one dot
// product the scores, equal to dK's first) is computed by dK's kernel,
// which writes both results (its tiles, Q and dO, serve both).
// CHECK-LABEL: func.func @main_bwd
// CHECK-SAME: (%{{.*}}: memref<1x2x80x64xbf16>, %{{.*}}: memref<1x2x80x64xbf16>, %{{.*}}: memref<1x2x80x64xbf16>, %{{.*}}: memref<1x2x80x64xbf16>, %{{.*}}: memref<1x2x80xf32>, %{{.*}}: memref<1x2x80xf32>, %{{.*}}: memref<1x2x80x64xbf16>, %[[GQ:.*]]: memref<1x2x80x64xbf16>, %[[GK:.*]]: memref<1x2x80x64xbf16>, %[[GV:.*]]: memref<1x2x80x64xbf16>)
// CHECK: gpu.launch_func @tang_kernels::@main_bwd_k0
// CHECK: gpu.launch_func @tang_kernels::@main_bwd_k1 {{.*}} threads in (%c128{{.*}}) dynamic_shared_memory_size %c49152_i32
// CHECK: gpu.launch_func @tang_kernels::@main_bwd_k2 {{.*}} threads in (%c128{{.*}}) dynamic_shared_memory_size %c49152_i32{{.*}} args({{.*}}%[[GK]] : memref<1x2x80x64xbf16>, %[[GV]] : memref<1x2x80x64xbf16>)
// CHECK-NOT: @main_bwd_k3
// With wgmma: a warpgroup of 64 rows; the tiles in 128-byte swizzled
// blocks of 64 columns (1024-byte aligned), the dot products by wgmma, G W
// by wgmma with G from registers (inline PTX: the register form; no G tile
// in shared memory).
// WG: gpu.launch_func @tang_kernels::@main_bwd_k1 {{.*}} threads in (%c128{{.*}}) dynamic_shared_memory_size %c50176_i32
// WG-LABEL: gpu.func @main_bwd_k1
// WG: memref.extract_aligned_pointer_as_index
// WG-COUNT-2: memref.view {{.*}} to memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>
// WG-COUNT-2: memref.view {{.*}} to memref<2x1x64x64xbf16, #gpu.address_space<workgroup>>
// WG-NOT: memref.view
// WG: scf.for
// WG-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, {{.*}}], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// WG-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, {{.*}}], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// WG: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// WG-NOT: vector.store {{.*}}#gpu.address_space<workgroup>
// WG: nvvm.wgmma.fence.aligned
// WG-COUNT-4: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// WG: nvvm.wgmma.commit.group.sync.aligned
// WG: nvvm.wgmma.wait.group.sync.aligned 0

// CHECK-LABEL: gpu.func @main_fwd_k0
// CHECK: scf.for
// CHECK: arith.cmpi eq
// CHECK: memref.store {{.*}} : memref<1x2x80xf32>
// CHECK: memref.store {{.*}} : memref<1x2x80xf32>
// CHECK: vector.store {{.*}} : memref<1x2x80x64xbf16>, vector<2xbf16>

// dQ: rows are queries; two dot products (Q K^T, dO V^T) from two resident
// row tiles; K (dot and summand) and V streamed: 16 + 32 KiB; keys past
// the block's last row skipped.
// CHECK-LABEL: gpu.func @main_bwd_k1
// CHECK: arith.subi %c1{{.*}}, %block_id_x
// CHECK-COUNT-2: memref.view {{.*}} to memref<1x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK-COUNT-2: memref.view {{.*}} to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.view
// CHECK: arith.floordivsi
// CHECK: scf.for
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// CHECK: vector.store {{.*}} : memref<1x2x80x64xbf16>, vector<2xbf16>

// dK: rows are keys, the reduced index the queries: query tiles wholly
// before the block's first row are skipped (the loop starts later).
// CHECK-LABEL: gpu.func @main_bwd_k2
// CHECK-NOT: arith.subi %c1{{.*}}, %block_id_x
// CHECK: %[[ROW0:.*]] = arith.muli %block_id_x
// CHECK: %[[FROM:.*]] = arith.subi %[[ROW0]], %c0
// CHECK: arith.floordivsi %[[FROM]]
// CHECK: scf.for
// The two dot products (shared by dK and dV), then G_K Q and G_V dO.
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK: vector.store {{.*}} : memref<1x2x80x64xbf16>, vector<2xbf16>
// CHECK: vector.store {{.*}} : memref<1x2x80x64xbf16>, vector<2xbf16>
// The statistics alone: one dot product, the running max and sum, stored
// once per row by the first lane of the row; the causal select bounds the
// keys (tiles past the block's last row skipped; the last rows first).
// CHECK-LABEL: gpu.func @stats_k0
// CHECK: arith.subi %c1{{.*}}, %block_id_x
// CHECK: memref.view {{.*}} to memref<1x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: arith.floordivsi
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.mma.sync
// CHECK: arith.cmpi sle
// CHECK: arith.maximumf
// CHECK: gpu.shuffle  xor
// CHECK: math.exp
// CHECK: memref.store {{.*}} : memref<1x2x80xf32>
// CHECK: memref.store {{.*}} : memref<1x2x80xf32>

// CHECK-LABEL: gpu.func @not_a_dot_k0
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.return

func.func @main_fwd(%arg0: tensor<1x2x80x64xbf16>, %arg1: tensor<1x2x80x64xbf16>, %arg2: tensor<1x2x80x64xbf16>) -> (tensor<1x2x80x64xbf16>, tensor<1x2x80xf32>, tensor<1x2x80xf32>) {
  %cst = arith.constant 0xFF80 : bf16
  %cst_0 = arith.constant 1.250000e-01 : bf16
  %0 = tang.comprehension (%p0, %p1, %p2, %p3) reduce (%r0) [1, 2, 80, 64, 80] monoid(online_softmax) attributes {tang.saved} : tensor<1x2x80x64xbf16> {
    %2 = tang.comprehension reduce (%r0_1) [64] monoid(add) : bf16 {
      %9 = tang.read %arg0[%p0, %p1, %p2, %r0_1] : tensor<1x2x80x64xbf16>
      %10 = tang.read %arg1[%p0, %p1, %r0, %r0_1] : tensor<1x2x80x64xbf16>
      %11 = arith.mulf %9, %10 : bf16
      tang.yield %11 : bf16
    }
    %3 = arith.mulf %2, %cst_0 : bf16
    %4 = tang.index %p2 : i32
    %5 = tang.index %r0 : i32
    %6 = arith.cmpi sle, %5, %4 : i32
    %7 = arith.select %6, %3, %cst : bf16
    %8 = tang.read %arg2[%p0, %p1, %r0, %p3] : tensor<1x2x80x64xbf16>
    tang.yield %7, %8 : bf16, bf16
  }
  %1:2 = tang.comprehension (%p0, %p1, %p2) reduce (%r0) [1, 2, 80, 80] monoid(softmax_norm) attributes {tang.saved} : tensor<1x2x80xf32>, tensor<1x2x80xf32> {
    %2 = tang.comprehension reduce (%r0_1) [64] monoid(add) : bf16 {
      %9 = tang.read %arg0[%p0, %p1, %p2, %r0_1] : tensor<1x2x80x64xbf16>
      %10 = tang.read %arg1[%p0, %p1, %r0, %r0_1] : tensor<1x2x80x64xbf16>
      %11 = arith.mulf %9, %10 : bf16
      tang.yield %11 : bf16
    }
    %3 = arith.mulf %2, %cst_0 : bf16
    %4 = tang.index %p2 : i32
    %5 = tang.index %r0 : i32
    %6 = arith.cmpi sle, %5, %4 : i32
    %7 = arith.select %6, %3, %cst : bf16
    %8 = arith.extf %7 : bf16 to f32
    tang.yield %8 : f32
  }
  return %0, %1#0, %1#1 : tensor<1x2x80x64xbf16>, tensor<1x2x80xf32>, tensor<1x2x80xf32>
}
func.func @main_bwd(%arg0: tensor<1x2x80x64xbf16>, %arg1: tensor<1x2x80x64xbf16>, %arg2: tensor<1x2x80x64xbf16>, %arg3: tensor<1x2x80x64xbf16>, %arg4: tensor<1x2x80xf32>, %arg5: tensor<1x2x80xf32>, %arg6: tensor<1x2x80x64xbf16>) -> (tensor<1x2x80x64xbf16>, tensor<1x2x80x64xbf16>, tensor<1x2x80x64xbf16>) {
  %cst = arith.constant 1.250000e-01 : bf16
  %cst_0 = arith.constant 0xFF80 : bf16
  %cst_1 = arith.constant 0.000000e+00 : bf16
  %0 = tang.comprehension (%p0, %p1, %p2) reduce (%r0) [1, 2, 80, 64] monoid(add) attributes {tang.saved} : tensor<1x2x80xf32> {
    %4 = tang.read %arg6[%p0, %p1, %p2, %r0] : tensor<1x2x80x64xbf16>
    %5 = arith.extf %4 : bf16 to f32
    %6 = tang.read %arg3[%p0, %p1, %p2, %r0] : tensor<1x2x80x64xbf16>
    %7 = arith.extf %6 : bf16 to f32
    %8 = arith.mulf %5, %7 : f32
    tang.yield %8 : f32
  }
  %1 = tang.comprehension (%p0, %p1, %p2, %p3) reduce (%r0) [1, 2, 80, 64, 80] monoid(add) : tensor<1x2x80x64xbf16> {
    %4 = tang.comprehension reduce (%r0_2) [64] monoid(add) : bf16 {
      %25 = tang.read %arg0[%p0, %p1, %p2, %r0_2] : tensor<1x2x80x64xbf16>
      %26 = tang.read %arg1[%p0, %p1, %r0, %r0_2] : tensor<1x2x80x64xbf16>
      %27 = arith.mulf %25, %26 : bf16
      tang.yield %27 : bf16
    }
    %5 = arith.mulf %4, %cst : bf16
    %6 = tang.index %p2 : i32
    %7 = tang.index %r0 : i32
    %8 = arith.cmpi sle, %7, %6 : i32
    %9 = arith.select %8, %5, %cst_0 : bf16
    %10 = arith.extf %9 : bf16 to f32
    %11 = tang.read %arg4[%p0, %p1, %p2] : tensor<1x2x80xf32>
    %12 = arith.subf %10, %11 : f32
    %13 = math.exp %12 : f32
    %14 = tang.read %arg5[%p0, %p1, %p2] : tensor<1x2x80xf32>
    %15 = arith.divf %13, %14 : f32
    %16 = tang.comprehension reduce (%r0_2) [64] monoid(add) : f32 {
      %25 = tang.read %arg2[%p0, %p1, %r0, %r0_2] : tensor<1x2x80x64xbf16>
      %26 = tang.read %arg6[%p0, %p1, %p2, %r0_2] : tensor<1x2x80x64xbf16>
      %27 = arith.extf %26 : bf16 to f32
      %28 = arith.extf %25 : bf16 to f32
      %29 = arith.mulf %27, %28 : f32
      tang.yield %29 : f32
    }
    %17 = tang.read %0[%p0, %p1, %p2] : tensor<1x2x80xf32>
    %18 = arith.subf %16, %17 : f32
    %19 = arith.mulf %15, %18 : f32
    %20 = arith.truncf %19 : f32 to bf16
    %21 = arith.select %8, %20, %cst_1 : bf16
    %22 = arith.mulf %21, %cst : bf16
    %23 = tang.read %arg1[%p0, %p1, %r0, %p3] : tensor<1x2x80x64xbf16>
    %24 = arith.mulf %22, %23 : bf16
    tang.yield %24 : bf16
  }
  %2 = tang.comprehension (%p0, %p1, %p2, %p3) reduce (%r0) [1, 2, 80, 64, 80] monoid(add) : tensor<1x2x80x64xbf16> {
    %4 = tang.comprehension reduce (%r0_2) [64] monoid(add) : bf16 {
      %25 = tang.read %arg0[%p0, %p1, %r0, %r0_2] : tensor<1x2x80x64xbf16>
      %26 = tang.read %arg1[%p0, %p1, %p2, %r0_2] : tensor<1x2x80x64xbf16>
      %27 = arith.mulf %25, %26 : bf16
      tang.yield %27 : bf16
    }
    %5 = arith.mulf %4, %cst : bf16
    %6 = tang.index %r0 : i32
    %7 = tang.index %p2 : i32
    %8 = arith.cmpi sle, %7, %6 : i32
    %9 = arith.select %8, %5, %cst_0 : bf16
    %10 = arith.extf %9 : bf16 to f32
    %11 = tang.read %arg4[%p0, %p1, %r0] : tensor<1x2x80xf32>
    %12 = arith.subf %10, %11 : f32
    %13 = math.exp %12 : f32
    %14 = tang.read %arg5[%p0, %p1, %r0] : tensor<1x2x80xf32>
    %15 = arith.divf %13, %14 : f32
    %16 = tang.comprehension reduce (%r0_2) [64] monoid(add) : f32 {
      %25 = tang.read %arg2[%p0, %p1, %p2, %r0_2] : tensor<1x2x80x64xbf16>
      %26 = tang.read %arg6[%p0, %p1, %r0, %r0_2] : tensor<1x2x80x64xbf16>
      %27 = arith.extf %26 : bf16 to f32
      %28 = arith.extf %25 : bf16 to f32
      %29 = arith.mulf %27, %28 : f32
      tang.yield %29 : f32
    }
    %17 = tang.read %0[%p0, %p1, %r0] : tensor<1x2x80xf32>
    %18 = arith.subf %16, %17 : f32
    %19 = arith.mulf %15, %18 : f32
    %20 = arith.truncf %19 : f32 to bf16
    %21 = arith.select %8, %20, %cst_1 : bf16
    %22 = arith.mulf %21, %cst : bf16
    %23 = tang.read %arg0[%p0, %p1, %r0, %p3] : tensor<1x2x80x64xbf16>
    %24 = arith.mulf %22, %23 : bf16
    tang.yield %24 : bf16
  }
  %3 = tang.comprehension (%p0, %p1, %p2, %p3) reduce (%r0) [1, 2, 80, 64, 80] monoid(add) : tensor<1x2x80x64xbf16> {
    %4 = tang.comprehension reduce (%r0_2) [64] monoid(add) : bf16 {
      %20 = tang.read %arg0[%p0, %p1, %r0, %r0_2] : tensor<1x2x80x64xbf16>
      %21 = tang.read %arg1[%p0, %p1, %p2, %r0_2] : tensor<1x2x80x64xbf16>
      %22 = arith.mulf %20, %21 : bf16
      tang.yield %22 : bf16
    }
    %5 = arith.mulf %4, %cst : bf16
    %6 = tang.index %r0 : i32
    %7 = tang.index %p2 : i32
    %8 = arith.cmpi sle, %7, %6 : i32
    %9 = arith.select %8, %5, %cst_0 : bf16
    %10 = arith.extf %9 : bf16 to f32
    %11 = tang.read %arg4[%p0, %p1, %r0] : tensor<1x2x80xf32>
    %12 = arith.subf %10, %11 : f32
    %13 = math.exp %12 : f32
    %14 = tang.read %arg5[%p0, %p1, %r0] : tensor<1x2x80xf32>
    %15 = arith.divf %13, %14 : f32
    %16 = tang.read %arg6[%p0, %p1, %r0, %p3] : tensor<1x2x80x64xbf16>
    %17 = arith.extf %16 : bf16 to f32
    %18 = arith.mulf %17, %15 : f32
    %19 = arith.truncf %18 : f32 to bf16
    tang.yield %19 : bf16
  }
  return %1, %2, %3 : tensor<1x2x80x64xbf16>, tensor<1x2x80x64xbf16>, tensor<1x2x80x64xbf16>
}
func.func @stats(%arg0: tensor<1x2x80x64xbf16>, %arg1: tensor<1x2x80x64xbf16>) -> (tensor<1x2x80xf32>, tensor<1x2x80xf32>) {
  %cst = arith.constant 0xFF80 : bf16
  %cst_0 = arith.constant 1.250000e-01 : bf16
  %1:2 = tang.comprehension (%p0, %p1, %p2) reduce (%r0) [1, 2, 80, 80] monoid(softmax_norm) attributes {tang.saved} : tensor<1x2x80xf32>, tensor<1x2x80xf32> {
    %2 = tang.comprehension reduce (%r0_1) [64] monoid(add) : bf16 {
      %9 = tang.read %arg0[%p0, %p1, %p2, %r0_1] : tensor<1x2x80x64xbf16>
      %10 = tang.read %arg1[%p0, %p1, %r0, %r0_1] : tensor<1x2x80x64xbf16>
      %11 = arith.mulf %9, %10 : bf16
      tang.yield %11 : bf16
    }
    %3 = arith.mulf %2, %cst_0 : bf16
    %4 = tang.index %p2 : i32
    %5 = tang.index %r0 : i32
    %6 = arith.cmpi sle, %5, %4 : i32
    %7 = arith.select %6, %3, %cst : bf16
    %8 = arith.extf %7 : bf16 to f32
    tang.yield %8 : f32
  }
  return %1#0, %1#1 : tensor<1x2x80xf32>, tensor<1x2x80xf32>
}

// A sum over keys whose nested sum is not a dot product (three reads of
// its index): the plain kernels, and remarks saying why.
func.func @not_a_dot(%Q: tensor<1x64x64xbf16>, %K: tensor<1x64x64xbf16>, %W: tensor<1x64x64xbf16>) -> tensor<1x64x64xbf16> {
  // expected-remark @+2 {{not a score kernel: a dot product has more than two reads of its index}}
  // expected-remark @+1 {{not on tensor cores: the product's factors are not reads}}
  %O = tang.comprehension (%b, %i, %c) reduce (%j) [1, 64, 64, 64] monoid(add) : tensor<1x64x64xbf16> {
    %s = tang.comprehension reduce (%e) [64] monoid(add) : bf16 {
      %q = tang.read %Q[%b, %i, %e] : tensor<1x64x64xbf16>
      %k = tang.read %K[%b, %j, %e] : tensor<1x64x64xbf16>
      %w = tang.read %W[%b, %j, %e] : tensor<1x64x64xbf16>
      %qk = arith.mulf %q, %k : bf16
      %qkw = arith.mulf %qk, %w : bf16
      tang.yield %qkw : bf16
    }
    %v = tang.read %W[%b, %j, %c] : tensor<1x64x64xbf16>
    %t = arith.mulf %s, %v : bf16
    tang.yield %t : bf16
  }
  return %O : tensor<1x64x64xbf16>
}
