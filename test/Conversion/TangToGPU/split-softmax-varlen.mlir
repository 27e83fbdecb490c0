// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --convert-tang-to-gpu="tensor-cores=target" | FileCheck %s
// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --convert-tang-to-gpu="tensor-cores=target" 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --tang-schedule --convert-tang-to-gpu="tensor-cores=target" 2>/dev/null | FileCheck %s --check-prefix=STATIC

// Decode attention over sequences of different lengths
// (SplitSoftmaxKeyLimit): the score is -inf for keys past a length read
// from a tensor, the value 0 there. Each block's run of keys ends at its
// row's length (the partial kernel and the combine both compute it), so
// keys past it are never read.

// lens[b], keys j < lens[b]: 2 sequences x 2 key/value heads, 4 query
// heads a block.
// CHECK-LABEL: func.func @lens
// CHECK: gpu.launch_func @tang_kernels::@lens_k0 blocks in (%{{.*}}, %c4, %c1)
// j <= lens[h]: the limit differs between the heads of a group, so a block
// per head.
// CHECK-LABEL: func.func @per_head
// CHECK: gpu.launch_func @tang_kernels::@per_head_k0 blocks in (%{{.*}}, %c8, %c1)

// The partial kernel: n = min(extent, max(0, lens[b])), the run
// [split x chunk, min(n, split x chunk + chunk)).
// CHECK: gpu.func @lens_k0(
// CHECK: %[[L:.*]] = memref.load %arg{{[0-9]+}}[%{{.*}}] : memref<2xi32>
// CHECK: %[[X:.*]] = arith.index_cast %[[L]] : i32 to index
// CHECK: %[[P:.*]] = arith.addi %[[X]], %c0{{.*}} : index
// CHECK: %[[M:.*]] = arith.maxsi %[[P]], %c0{{.*}} : index
// CHECK: %[[N:.*]] = arith.minui %{{.*}}, %[[M]] : index
// CHECK: arith.minui %[[N]], %{{.*}} : index
// The combining kernel reads the splits that had keys of its row.
// CHECK: gpu.func @lens_k0_1(
// CHECK: memref.load %arg{{[0-9]+}}[%{{.*}}] : memref<2xi32>
// CHECK: arith.maxsi
// With `<=`, one key more: x + 1.
// CHECK: gpu.func @per_head_k0(
// CHECK: %[[L2:.*]] = memref.load %arg{{[0-9]+}}[%{{.*}}] : memref<8xi32>
// CHECK: %[[X2:.*]] = arith.index_cast %[[L2]] : i32 to index
// CHECK: arith.addi %[[X2]], %c1{{.*}} : index

// REMARK: remark: a point kernel, not split over its keys: the value is masked by other than the score's key limit

func.func @lens(%q: tensor<2x8x64xf32>, %K: tensor<2x2x128x64xbf16>, %V: tensor<2x2x128x64xbf16>, %lens: tensor<2xi32>, %n: index) -> tensor<2x8x64xf32> {
  %o = tang.comprehension (%b, %h, %d) reduce (%j) [2, 8, 64, %n] monoid(online_softmax) : tensor<2x8x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%b, %h, %e] : tensor<2x8x64xf32>
      %k = tang.read %K[%b, %h floordiv 4, %j, %e] : tensor<2x2x128x64xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %len = tang.read %lens[%b] : tensor<2xi32>
    %vj = tang.index %j : i32
    %keep = arith.cmpi slt, %vj, %len : i32
    %ninf = arith.constant 0xFF800000 : f32
    %s = arith.select %keep, %dot, %ninf : f32
    %v = tang.read %V[%b, %h floordiv 4, %j, %d] : tensor<2x2x128x64xbf16>
    %vf = arith.extf %v : bf16 to f32
    %zero = arith.constant 0.0 : f32
    %vm = arith.select %keep, %vf, %zero : f32
    tang.yield %s, %vm : f32, f32
  }
  return %o : tensor<2x8x64xf32>
}

func.func @per_head(%q: tensor<8x64xf32>, %K: tensor<2x128x64xbf16>, %V: tensor<2x128x64xbf16>, %lens: tensor<8xi32>, %n: index) -> tensor<8x64xf32> {
  %o = tang.comprehension (%h, %d) reduce (%j) [8, 64, %n] monoid(online_softmax) : tensor<8x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<8x64xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<2x128x64xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %len = tang.read %lens[%h] : tensor<8xi32>
    %vj = tang.index %j : i32
    %keep = arith.cmpi sge, %len, %vj : i32
    %ninf = arith.constant 0xFF800000 : f32
    %s = arith.select %keep, %dot, %ninf : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<2x128x64xbf16>
    %vf = arith.extf %v : bf16 to f32
    tang.yield %s, %vf : f32, f32
  }
  return %o : tensor<8x64xf32>
}

// The value's mask is not the score's: no kernel may skip the keys.
func.func @other_mask(%q: tensor<8x64xf32>, %K: tensor<2x128x64xbf16>, %V: tensor<2x128x64xbf16>, %lens: tensor<8xi32>, %n: index) -> tensor<8x64xf32> {
  %o = tang.comprehension (%h, %d) reduce (%j) [8, 64, %n] monoid(online_softmax) : tensor<8x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %a = tang.read %q[%h, %e] : tensor<8x64xf32>
      %k = tang.read %K[%h floordiv 4, %j, %e] : tensor<2x128x64xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %len = tang.read %lens[%h] : tensor<8xi32>
    %vj = tang.index %j : i32
    %keep = arith.cmpi slt, %vj, %len : i32
    %ninf = arith.constant 0xFF800000 : f32
    %s = arith.select %keep, %dot, %ninf : f32
    %v = tang.read %V[%h floordiv 4, %j, %d] : tensor<2x128x64xbf16>
    %vf = arith.extf %v : bf16 to f32
    %one = arith.constant 1 : i32
    %len1 = arith.addi %len, %one : i32
    %keep1 = arith.cmpi slt, %vj, %len1 : i32
    %zero = arith.constant 0.0 : f32
    %vm = arith.select %keep1, %vf, %zero : f32
    tang.yield %s, %vm : f32, f32
  }
  return %o : tensor<8x64xf32>
}

// A static context (the cache's capacity, lengths from a tensor): two row
// groups would leave the device idle, so the kernel choice splits the
// keys too (64 ways: 64 keys a split at least).
// STATIC-LABEL: func.func @capacity
// STATIC: gpu.launch_func @tang_kernels::@capacity_k0 blocks in (%c64, %c2, %c1)
// STATIC: nvvm.mma.sync
func.func @capacity(%q: tensor<1x8x128xf32>, %K: tensor<1x2x4096x128xbf16>, %V: tensor<1x2x4096x128xbf16>, %lens: tensor<1xi32>) -> tensor<1x8x128xf32> {
  %o = tang.comprehension (%b, %h, %d) reduce (%j) [1, 8, 128, 4096] monoid(online_softmax) : tensor<1x8x128xf32> {
    %dot = tang.comprehension reduce (%e) [128] monoid(add) : f32 {
      %a = tang.read %q[%b, %h, %e] : tensor<1x8x128xf32>
      %k = tang.read %K[%b, %h floordiv 4, %j, %e] : tensor<1x2x4096x128xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %len = tang.read %lens[%b] : tensor<1xi32>
    %vj = tang.index %j : i32
    %keep = arith.cmpi slt, %vj, %len : i32
    %ninf = arith.constant 0xFF800000 : f32
    %s = arith.select %keep, %dot, %ninf : f32
    %v = tang.read %V[%b, %h floordiv 4, %j, %d] : tensor<1x2x4096x128xbf16>
    %vf = arith.extf %v : bf16 to f32
    %zero = arith.constant 0.0 : f32
    %vm = arith.select %keep, %vf, %zero : f32
    tang.yield %s, %vm : f32, f32
  }
  return %o : tensor<1x8x128xf32>
}
