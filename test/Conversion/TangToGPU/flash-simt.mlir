// RUN: tang-opt %s --split-input-file --tang-attach-target=chip=portable --tang-schedule --convert-tang-to-gpu="cooperative=0" --canonicalize --cse | FileCheck %s

// Attention without tensor cores (the portable model): the SIMT flash
// kernel (SimtScoreKernel.cpp), not a point kernel per output column. A
// block of 32 x 4 threads owns 32 query rows (100 rows: 4 blocks, the last
// ragged) of one batch point and walks the keys 64 at a time. Its tiles in
// f32 workgroup memory: Q's and K's columns 8 head columns at a time
// ([8][32 + 1], [8][64 + 1]), V 8 keys at a time ([8][64]), the
// probabilities ([32][64 + 1]), the rescaling and sums. The causal mask
// bounds the key loop by the block's last row (maxsi/minsi), each key
// step: the dot products (8 rows x 2 keys a thread) through the head loop,
// two barriers a head step; the statistics by the row's thread (max, exp);
// P V 8 keys a step. The softmax statistics beside it are written by the same
// kernel; the outputs are acc / l with guarded stores.
// CHECK-LABEL: func.func @causal
// CHECK: gpu.launch_func @tang_kernels::@causal_k0 blocks in (%c4, %c2, %c1) threads in (%c32, %c4, %c1)
// CHECK-SAME: memref<2x100xf32>, %{{.*}} : memref<2x100xf32>)
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @causal_k0
// CHECK-SAME: workgroup(%{{.*}} : memref<8x33xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x65xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x64xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32x65xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>)
// CHECK: arith.maxsi
// CHECK: %[[END:.*]] = arith.minsi %{{.*}}, %c100
// CHECK: scf.for %{{.*}} = %c0 to %[[END]] step %c64 iter_args({{([^,]*, ){17}[^,]*}}) ->
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c8 iter_args({{([^,]*, ){15}[^,]*}}) ->
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK: gpu.barrier
// CHECK: arith.select
// CHECK: gpu.barrier
// CHECK: scf.if %{{.*}} -> (f32, f32)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c8 iter_args({{([^,]*, ){15}[^,]*}}) ->
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}#0, %{{.*}} : memref<2x100xf32>
// CHECK: memref.store %{{.*}}#1, %{{.*}} : memref<2x100xf32>
// CHECK: gpu.barrier
// CHECK: arith.divf
// CHECK: scf.if
// CHECK: memref.store {{.*}} : memref<2x100x64xf32>
func.func @causal(%Q: tensor<2x100x64xf16>, %K: tensor<2x100x64xf16>, %V: tensor<2x100x64xf16>) -> (tensor<2x100x64xf32>, tensor<2x100xf32>, tensor<2x100xf32>) {
  %c = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %O = tang.comprehension (%b, %i, %d) reduce (%j) [2, 100, 64, 100] monoid(online_softmax) : tensor<2x100x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %q = tang.read %Q[%b, %i, %e] : tensor<2x100x64xf16>
      %k = tang.read %K[%b, %j, %e] : tensor<2x100x64xf16>
      %qf = arith.extf %q : f16 to f32
      %kf = arith.extf %k : f16 to f32
      %p = arith.mulf %qf, %kf : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %c : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %keep = arith.cmpi sle, %jj, %ii : i32
    %sm = arith.select %keep, %s, %ninf : f32
    %v = tang.read %V[%b, %j, %d] : tensor<2x100x64xf16>
    %vf = arith.extf %v : f16 to f32
    tang.yield %sm, %vf : f32, f32
  }
  %m, %l = tang.comprehension (%b, %i) reduce (%j) [2, 100, 100] monoid(softmax_norm) : tensor<2x100xf32>, tensor<2x100xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %q = tang.read %Q[%b, %i, %e] : tensor<2x100x64xf16>
      %k = tang.read %K[%b, %j, %e] : tensor<2x100x64xf16>
      %qf = arith.extf %q : f16 to f32
      %kf = arith.extf %k : f16 to f32
      %p = arith.mulf %qf, %kf : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %c : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %keep = arith.cmpi sle, %jj, %ii : i32
    %sm = arith.select %keep, %s, %ninf : f32
    tang.yield %sm : f32
  }
  return %O, %m, %l : tensor<2x100x64xf32>, tensor<2x100xf32>, tensor<2x100xf32>
}

// -----

// A schedule naming the SIMT flash kernel (kernel = flash, mma = none):
// its tiles are taken (16 rows and 64 keys a block: 7 blocks a batch
// point, 4 scores and 4 x 2 outputs a thread).
// CHECK-LABEL: func.func @scheduled
// CHECK: gpu.launch_func @tang_kernels::@scheduled_k0 blocks in (%c7, %c2, %c1) threads in (%c32, %c4, %c1)
// CHECK: gpu.func @scheduled_k0
// CHECK-SAME: memref<16x65xf32, #gpu.address_space<workgroup>>
// CHECK-SAME: memref<16x65xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for %{{.*}} = %c0 to %c100 step %c64 iter_args({{([^,]*, ){9}[^,]*}}) ->
func.func @scheduled(%Q: tensor<2x100x64xf32>, %K: tensor<2x100x64xf32>, %V: tensor<2x100x64xf32>) -> tensor<2x100x64xf32> {
  %O = tang.comprehension (%b, %i, %d) reduce (%j) [2, 100, 64, 100] monoid(online_softmax) attributes {schedule = #tang.schedule<tile = [1, 16, 1, 64], mapping = [block_y, block_x, serial, serial], threads = [1, 4, 1, 32], vector = 1, stages = 1, storage = f32, accumulate = f32, memory = [shared], kernel = flash>} : tensor<2x100x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %q = tang.read %Q[%b, %i, %e] : tensor<2x100x64xf32>
      %k = tang.read %K[%b, %j, %e] : tensor<2x100x64xf32>
      %p = arith.mulf %q, %k : f32
      tang.yield %p : f32
    }
    %v = tang.read %V[%b, %j, %d] : tensor<2x100x64xf32>
    tang.yield %dot, %v : f32, f32
  }
  return %O : tensor<2x100x64xf32>
}

// -----

// A sum over keys of dot-product scores (attention's dV, rows the keys,
// the sum over queries; the probabilities from saved statistics, the
// causal mask keeping queries from the row on): the SIMT score kernel.
// The same tiles as flash but no statistics or rescaling (no [32] tiles);
// the query loop starts at the block's first row (keys before a row
// contribute nothing), and the result is the sum itself.
// CHECK-LABEL: func.func @dv
// CHECK: gpu.launch_func @tang_kernels::@dv_k0 blocks in (%c4, %c2, %c1) threads in (%c32, %c4, %c1)
// CHECK: gpu.func @dv_k0
// CHECK-SAME: workgroup(%{{.*}} : memref<8x33xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x65xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x64xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32x65xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[ROW0:.*]] = arith.muli %block_id_x, %c32
// CHECK: %[[BEGIN:.*]] = arith.maxsi %[[ROW0]], %c0
// CHECK: scf.for %{{.*}} = %[[BEGIN]] to %c100 step %c64 iter_args({{([^,]*, ){15}[^,]*}}) ->
// CHECK: math.exp
// CHECK-NOT: arith.maximumf
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c8
// CHECK-NOT: arith.divf
// CHECK: memref.store {{.*}} : memref<2x100x64xf32>
func.func @dv(%Q: tensor<2x100x64xf32>, %K: tensor<2x100x64xf32>, %dO: tensor<2x100x64xf32>, %m: tensor<2x100xf32>, %l: tensor<2x100xf32>) -> tensor<2x100x64xf32> {
  %c = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %dV = tang.comprehension (%b, %j, %d) reduce (%i) [2, 100, 64, 100] monoid(add) : tensor<2x100x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %k = tang.read %K[%b, %j, %e] : tensor<2x100x64xf32>
      %q = tang.read %Q[%b, %i, %e] : tensor<2x100x64xf32>
      %p = arith.mulf %k, %q : f32
      tang.yield %p : f32
    }
    %s = arith.mulf %dot, %c : f32
    %ii = tang.index %i : i32
    %jj = tang.index %j : i32
    %keep = arith.cmpi sle, %jj, %ii : i32
    %sm = arith.select %keep, %s, %ninf : f32
    %mi = tang.read %m[%b, %i] : tensor<2x100xf32>
    %li = tang.read %l[%b, %i] : tensor<2x100xf32>
    %z = arith.subf %sm, %mi : f32
    %ez = math.exp %z : f32
    %g = arith.divf %ez, %li : f32
    %o = tang.read %dO[%b, %i, %d] : tensor<2x100x64xf32>
    %t = arith.mulf %g, %o : f32
    tang.yield %t : f32
  }
  return %dV : tensor<2x100x64xf32>
}
