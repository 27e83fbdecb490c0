// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --tang-fuse --tang-online-softmax --tang-schedule --convert-tang-to-gpu="tensor-cores=target split-softmax-mma=true" | FileCheck %s
// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --tang-fuse --tang-online-softmax --convert-tang-to-gpu="cooperative=false" | FileCheck %s --check-prefix=PORTABLE
// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --tang-fuse --tang-online-softmax --tang-schedule --convert-tang-to-gpu="tensor-cores=target split-softmax-mma=off" | FileCheck %s --check-prefix=LANES

// Decode attention over a context length %pos + 1 (a size): fused into one
// online-softmax reduction, it runs split over its keys (flash-decoding):
// blocks of 4 warps per (row, run of keys) write their carriers (max, sum,
// weighted sum per value column) to a scratch buffer that a second kernel
// combines, with the same launch for every context length. 4 rows, the 2
// query heads of a key/value head taken by one block (each key loaded once
// for both): 2 row groups on the H200's 132 multiprocessors, 64 splits (at
// most).

// CHECK-LABEL: func.func @main
// CHECK: %[[SIZES:.*]] = memref.alloc() {tang.sizes_buffer} : memref<1xi32>
// CHECK: %[[SCRATCH:.*]] = memref.alloc() : memref<4x64x16x3xf32>
// CHECK: gpu.launch_func @tang_kernels::@main_k0 blocks in (%c64, %c2, %c1{{.*}}) threads in (%c128,
// CHECK-SAME: %[[SCRATCH]] : memref<4x64x16x3xf32>, %[[SIZES]] : memref<1xi32>)
// CHECK: gpu.launch_func @tang_kernels::@main_k0_1
// CHECK-SAME: %[[SCRATCH]] : memref<4x64x16x3xf32>, %[[SIZES]] : memref<1xi32>)
// CHECK: memref.dealloc %[[SCRATCH]]
// Scores over the context alone (@scores below): a matrix-vector product
// whose output extent is symbolic, a warp per score striding the outputs
// over a fixed grid (4 warps per block; 32 heads over block_y).
// CHECK-LABEL: func.func @scores
// CHECK: gpu.launch_func @tang_kernels::@scores_k0 blocks in (%c{{[0-9]+}}, %c32, %c1{{.*}}) threads in (%c128,
// Grouped-query decode attention at head dimension 128 with bf16 caches
// (@gqa below): 4 query heads per key/value head, 2 row groups, 64 splits.
// CHECK-LABEL: func.func @gqa
// CHECK: memref.alloc() : memref<8x64x128x3xf32>
// CHECK: gpu.launch_func @tang_kernels::@gqa_k0 blocks in (%c64, %c2, %c1{{.*}}) threads in (%c128,
// Without grouped queries (@mha below: every head reads its own keys) a
// block takes one row: 4 row groups.
// CHECK-LABEL: func.func @mha
// CHECK: gpu.launch_func @tang_kernels::@mha_k0 blocks in (%c64, %c4, %c1{{.*}}) threads in (%c128,
// The partial kernel: the block's run of keys from the sizes buffer; a
// key's 16 f32 value columns on 4 lanes (a vector of 4 each), so a warp
// takes 8 keys at once, 4 per step: 128 keys a step for the block; the 2
// rows of the group share each key's loads.
// CHECK: gpu.func @main_k0({{.*}}%{{.*}}: memref<4x64x16x3xf32>, %{{.*}}: memref<1xi32>) workgroup(%{{.*}} : memref<4x2x16x3xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128
// The score's dot product on the key's 4 lanes: a vector of 4 each,
// shuffles sum.
// CHECK: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<2x64x16xf32>, vector<4xf32>
// CHECK: gpu.shuffle xor
// CHECK: vector.load %arg2[{{.*}}] {alignment = 16 : i64} : memref<2x64x16xf32>, vector<4xf32>
// CHECK-NOT: vector.load %arg1
// CHECK: vector.load %arg0
// CHECK-NOT: vector.load %arg2
// CHECK: vector.load %arg1
// CHECK: math.exp
// The rest of the run, a key at a time.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// CHECK: gpu.barrier
// The combining kernel: a thread per (row, column) over the splits that
// had keys (at most 64), 8 at a time: their 24 loads issued together, then
// joined in order (those past the splits with keys as the identity).
// CHECK: gpu.func @main_k0_1(
// CHECK: arith.minui %c64{{.*}}, %
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step %c8{{.*}} iter_args
// CHECK-COUNT-24: memref.load %arg{{[0-9]+}}[%{{.*}}] : memref<4x64x16x3xf32>
// CHECK-NOT: memref.load
// CHECK: scf.yield
// CHECK: gpu.func @scores_k0(
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c{{[0-9]+}} {
// CHECK: gpu.shuffle xor
// The grouped kernel on tensor cores (split-softmax-mma: mma.sync m16n8k16,
// the group's 4 heads the products' rows; SplitSoftmaxMma.cpp): a warp takes tiles of 16
// keys, 64 keys apart. Per tile: 8 loads of 16 bytes of keys (2 keys of each
// n8 tile per lane, 4 loads each), 8 of values (4 keys x 2 column blocks),
// Q K^T as 2 n8 tiles x 8 k16 steps x 2 products (the f32 query's three
// bf16 parts: two in the first, the third in the second), the row's
// maximum over its 4 lanes, then P V as 16 n8 tiles of 2 products each
// (P's three parts), each B operand 2 byte permutes of value words. The
// loop carries the next tile's words: its loads (the first tile's before
// the loop) are issued before the current tile's products, whose B
// operands are the loop's arguments.
// CHECK: gpu.func @gqa_k0({{.*}}workgroup(%{{.*}} : memref<4x4x128x3xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: nvvm.minctasm
// CHECK-COUNT-8: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<2x256x128xbf16>, vector<8xbf16>
// CHECK-COUNT-8: vector.load %arg2[{{.*}}] {alignment = 16 : i64} : memref<2x256x128xbf16>, vector<8xbf16>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64{{.*}} iter_args
// CHECK-COUNT-8: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<2x256x128xbf16>, vector<8xbf16>
// CHECK-COUNT-8: vector.load %arg2[{{.*}}] {alignment = 16 : i64} : memref<2x256x128xbf16>, vector<8xbf16>
// CHECK: nvvm.mma.sync A[{{.*}}] B[%arg
// CHECK-COUNT-31: nvvm.mma.sync A[{{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32
// CHECK: nvvm.prmt <default> %c21520_i32{{.*}}, %{{.*}}, %
// CHECK: nvvm.prmt <default> %c21520_i32{{.*}}, %{{.*}}, %
// CHECK-NOT: nvvm.prmt
// CHECK-COUNT-2: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: nvvm.prmt <default> %c30258_i32{{.*}}, %{{.*}}, %
// The run's last, partial tile: its keys past the run masked (scores
// -inf, values zero).
// CHECK: scf.if
// CHECK: arith.cmpi ult
// CHECK: arith.select
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK: gpu.barrier
// With split-softmax-mma=off (auto would take tensor cores for these 2 row
// groups, split-softmax-auto.mlir), the grouped kernel: a key's 128 bf16 value columns on 16 lanes (a
// vector of 8 each: a warp takes 2 keys at once); per key, the key and
// value rows loaded once for the 4 heads of the group, 4 dot products
// summed by shuffles, a maximum and sum per head for all its columns.
// LANES-LABEL: gpu.func @gqa_k0({{.*}}workgroup(%{{.*}} : memref<4x4x128x3xf32, #gpu.address_space<workgroup>>) kernel attributes {{{.*}}nvvm.minctasm = 4 : i32}
// LANES: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// LANES-COUNT-1: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<2x256x128xbf16>, vector<8xbf16>
// LANES-NOT: vector.load %arg1
// LANES: vector.load %arg2[{{.*}}] {alignment = 16 : i64} : memref<2x256x128xbf16>, vector<8xbf16>
// LANES-NOT: vector.load %arg1
// LANES: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<2x256x128xbf16>, vector<8xbf16>
// The key sets of a warp combined (xor 16), then the warps'.
// LANES: gpu.shuffle xor %{{.*}}, %c16_i32
// LANES: gpu.barrier
// PORTABLE-LABEL: func.func @main
// PORTABLE-NOT: memref<4x64x16x3xf32>
// PORTABLE: gpu.launch_func @tang_kernels::@main_k0 blocks
// PORTABLE-NOT: gpu.launch_func
// PORTABLE-LABEL: func.func @scores
// PORTABLE: gpu.func @main_k0
// PORTABLE-NOT: workgroup
func.func @main(%q: tensor<4x16xf32>, %K: tensor<2x64x16xf32>, %V: tensor<2x64x16xf32>, %pos: index) -> tensor<4x16xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %s = tang.comprehension (%h, %j) [4, %len] : tensor<4x?xf32> {
    %dot = tang.comprehension reduce (%e) [16] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<4x16xf32>
      %b = tang.read %K[%h floordiv 2, %j, %e] : tensor<2x64x16xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %scale = arith.constant 0.25 : f32
    %r = arith.mulf %dot, %scale : f32
    tang.yield %r : f32
  }
  %m = tang.comprehension (%h) reduce (%j) [4, %len] monoid(max) : tensor<4xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    tang.yield %x : f32
  }
  %z = tang.comprehension (%h) reduce (%j) [4, %len] monoid(add) : tensor<4xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    %mx = tang.read %m[%h] : tensor<4xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    tang.yield %e : f32
  }
  %p = tang.comprehension (%h, %j) [4, %len] : tensor<4x?xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    %mx = tang.read %m[%h] : tensor<4xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %zz = tang.read %z[%h] : tensor<4xf32>
    %r = arith.divf %e, %zz : f32
    tang.yield %r : f32
  }
  %o = tang.comprehension (%h, %d) reduce (%j) [4, 16, %len] monoid(add) : tensor<4x16xf32> {
    %w = tang.read %p[%h, %j] : tensor<4x?xf32>
    %v = tang.read %V[%h floordiv 2, %j, %d] : tensor<2x64x16xf32>
    %r = arith.mulf %w, %v : f32
    tang.yield %r : f32
  }
  return %o : tensor<4x16xf32>
}

func.func @scores(%q: tensor<32x128xf32>, %K: tensor<8x256x128xbf16>, %pos: index) -> tensor<32x?xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %s = tang.comprehension (%h, %j) [32, %len] : tensor<32x?xf32> {
    %dot = tang.comprehension reduce (%e) [128] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<32x128xf32>
      %b = tang.read %K[%h floordiv 4, %j, %e] : tensor<8x256x128xbf16>
      %bf = arith.extf %b : bf16 to f32
      %p = arith.mulf %a, %bf : f32
      tang.yield %p : f32
    }
    tang.yield %dot : f32
  }
  return %s : tensor<32x?xf32>
}

func.func @gqa(%q: tensor<8x128xf32>, %K: tensor<2x256x128xbf16>, %V: tensor<2x256x128xbf16>, %pos: index) -> tensor<8x128xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %s = tang.comprehension (%h, %j) [8, %len] : tensor<8x?xf32> {
    %dot = tang.comprehension reduce (%e) [128] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<8x128xf32>
      %b = tang.read %K[%h floordiv 4, %j, %e] : tensor<2x256x128xbf16>
      %bf = arith.extf %b : bf16 to f32
      %p = arith.mulf %a, %bf : f32
      tang.yield %p : f32
    }
    %scale = arith.constant 0.0883883461 : f32
    %r = arith.mulf %dot, %scale : f32
    tang.yield %r : f32
  }
  %m = tang.comprehension (%h) reduce (%j) [8, %len] monoid(max) : tensor<8xf32> {
    %x = tang.read %s[%h, %j] : tensor<8x?xf32>
    tang.yield %x : f32
  }
  %z = tang.comprehension (%h) reduce (%j) [8, %len] monoid(add) : tensor<8xf32> {
    %x = tang.read %s[%h, %j] : tensor<8x?xf32>
    %mx = tang.read %m[%h] : tensor<8xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    tang.yield %e : f32
  }
  %o = tang.comprehension (%h, %d) reduce (%j) [8, 128, %len] monoid(add) : tensor<8x128xf32> {
    %x = tang.read %s[%h, %j] : tensor<8x?xf32>
    %mx = tang.read %m[%h] : tensor<8xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %zz = tang.read %z[%h] : tensor<8xf32>
    %w = arith.divf %e, %zz : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<2x256x128xbf16>
    %vf = arith.extf %v : bf16 to f32
    %r = arith.mulf %w, %vf : f32
    tang.yield %r : f32
  }
  return %o : tensor<8x128xf32>
}

func.func @mha(%q: tensor<4x16xf32>, %K: tensor<4x64x16xf32>, %V: tensor<4x64x16xf32>, %pos: index) -> tensor<4x16xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %s = tang.comprehension (%h, %j) [4, %len] : tensor<4x?xf32> {
    %dot = tang.comprehension reduce (%e) [16] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<4x16xf32>
      %b = tang.read %K[%h, %j, %e] : tensor<4x64x16xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    tang.yield %dot : f32
  }
  %m = tang.comprehension (%h) reduce (%j) [4, %len] monoid(max) : tensor<4xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    tang.yield %x : f32
  }
  %z = tang.comprehension (%h) reduce (%j) [4, %len] monoid(add) : tensor<4xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    %mx = tang.read %m[%h] : tensor<4xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    tang.yield %e : f32
  }
  %o = tang.comprehension (%h, %d) reduce (%j) [4, 16, %len] monoid(add) : tensor<4x16xf32> {
    %x = tang.read %s[%h, %j] : tensor<4x?xf32>
    %mx = tang.read %m[%h] : tensor<4xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %zz = tang.read %z[%h] : tensor<4xf32>
    %w = arith.divf %e, %zz : f32
    %v = tang.read %V[%h, %j, %d] : tensor<4x64x16xf32>
    %r = arith.mulf %w, %v : f32
    tang.yield %r : f32
  }
  return %o : tensor<4x16xf32>
}
