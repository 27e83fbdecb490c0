// RUN: tang-opt %s --tang-schedule --split-input-file | FileCheck %s
// RUN: tang-opt %s --tang-schedule="max-threads=256" --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: not tang-opt %s --tang-schedule="warp-size=24" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tang-opt %s --tang-schedule="tile-source=traffic-bound shared-memory=16384" --split-input-file | FileCheck %s --check-prefix=LP
// RUN: not tang-opt %s --tang-schedule="tile-source=guess" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADSRC

// BADSRC: Cannot find option named 'guess'

// BAD: error: tang-schedule: device facts must be positive, the warp size a power of two and max-threads at least the warp size

// Pointwise (bf16): 16-byte vectors of 8 along the row, 256 threads, rows
// over block_y.
// CHECK-LABEL: func.func @pointwise
// CHECK: tang.schedule<tile = [1, 2048], mapping = [block_y, block_x], threads = [1, 256], vector = 8, stages = 1, storage = bf16, accumulate = f32, memory = [global]>
// CHECK-SAME: tang.shape_class = "pointwise"
func.func @pointwise(%X: tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16> {
  %y = tang.comprehension (%i, %j) [4096, 4096] : tensor<4096x4096xbf16> {
    %x = tang.read %X[%i, %j] : tensor<4096x4096xbf16>
    %e = math.exp %x : bf16
    tang.yield %e : bf16
  }
  return %y : tensor<4096x4096xbf16>
}

// -----

// Row reduction (softmax after fusion, bf16 32768x4096): a block per row,
// 256 threads striding it 8 elements (16 bytes) at a time.
// CHECK-LABEL: func.func @softmax_rows
// CHECK: tang.schedule<tile = [1, 4096], mapping = [block_x, serial], threads = [1, 256], vector = 8
// CHECK-SAME: tang.shape_class = "row_reduction"
// SMALL-LABEL: func.func @softmax_rows
// SMALL: threads = [1, 128]
func.func @softmax_rows(%X: tensor<32768x4096xbf16>) -> tensor<32768x4096xbf16> {
  %y = tang.comprehension (%i, %j) [32768, 4096] : tensor<32768x4096xbf16> {
    %m = tang.comprehension reduce (%k) [4096] monoid(max) : bf16 {
      %x = tang.read %X[%i, %k] : tensor<32768x4096xbf16>
      tang.yield %x : bf16
    }
    %x = tang.read %X[%i, %j] : tensor<32768x4096xbf16>
    %d = arith.subf %x, %m : bf16
    tang.yield %d : bf16
  }
  return %y : tensor<32768x4096xbf16>
}

// -----

// Column reduction: a warp-wide strip of 256 columns per block, 8 warps on
// runs of the rows, the rows split among 8 blocks (16 rows a warp: the
// fewest the heuristic gives; 16 strips x 8 splits).
// CHECK-LABEL: func.func @column_sums
// CHECK: tang.schedule<tile = [256, 1024], mapping = [block_x, serial], threads = [32, 8], vector = 8, {{.*}}, split_k = 8>
// CHECK-SAME: tang.shape_class = "column_reduction"
func.func @column_sums(%X: tensor<1024x4096xbf16>) -> tensor<4096xbf16> {
  %s = tang.comprehension (%j) reduce (%i) [4096, 1024] monoid(add) : tensor<4096xbf16> {
    %x = tang.read %X[%i, %j] : tensor<1024x4096xbf16>
    tang.yield %x : bf16
  }
  return %s : tensor<4096xbf16>
}

// -----

// A norm weight's gradient: the per-row statistic (read by the reduced
// indices alone) does not make it a row reduction; the other parallel
// index over block_z.
// CHECK-LABEL: func.func @norm_weight_grad
// CHECK: tang.schedule<tile = [1, 128, 8, 2048], mapping = [block_z, block_x, serial, serial], threads = [1, 32, 1, 8], vector = 4, {{.*}}, split_k = 17>
// CHECK-SAME: tang.shape_class = "column_reduction"
func.func @norm_weight_grad(%x: tensor<2x8x2048x1024xbf16>, %dy: tensor<2x8x2048x1024xbf16>, %rs: tensor<8x2048xf32>) -> tensor<2x1024xf32> {
  %c = tang.comprehension (%o, %p) reduce (%b, %l) [2, 1024, 8, 2048] monoid(add) : tensor<2x1024xf32> {
    %s = tang.read %rs[%b, %l] : tensor<8x2048xf32>
    %a = tang.read %x[%o, %b, %l, %p] : tensor<2x8x2048x1024xbf16>
    %af = arith.extf %a : bf16 to f32
    %m = arith.mulf %af, %s : f32
    %g = tang.read %dy[%o, %b, %l, %p] : tensor<2x8x2048x1024xbf16>
    %gf = arith.extf %g : bf16 to f32
    %q = arith.mulf %gf, %m : f32
    tang.yield %q : f32
  }
  return %c : tensor<2x1024xf32>
}

// -----

// GEMV 4096 -> 12288: narrow matrix-vector, a warp per output (4 per
// block), its 32 lanes striding k 8 elements (16 bytes) at a time.
// CHECK-LABEL: func.func @gemv
// CHECK: tang.schedule<tile = [4, 4096], mapping = [block_x, serial], threads = [4, 32], vector = 8
// CHECK-SAME: tang.shape_class = "narrow_matvec"
func.func @gemv(%W: tensor<12288x4096xbf16>, %x: tensor<4096xbf16>) -> tensor<12288xbf16> {
  %y = tang.comprehension (%i) reduce (%k) [12288, 4096] monoid(add) : tensor<12288xbf16> {
    %w = tang.read %W[%i, %k] : tensor<12288x4096xbf16>
    %v = tang.read %x[%k] : tensor<4096xbf16>
    %p = arith.mulf %w, %v : bf16
    tang.yield %p : bf16
  }
  return %y : tensor<12288xbf16>
}

// -----

// A decode step's down product with its residual, batch 2: the reduction
// nested in the map is the matrix-vector product; a warp per output
// (128 threads for a tile of 4: 32 cooperate per output), both rows of the
// batch in the warp.
// CHECK-LABEL: func.func @down_residual
// CHECK: tang.schedule<tile = [2, 4], mapping = [serial, block_x], threads = [1, 128], vector = 8
// CHECK-SAME: tang.shape_class = "narrow_matvec"
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

// A vector times matrices read down their columns (the gated delta rule's
// decode `w^T S0`, S0 stored [K, V]): a column reduction, the lanes along
// the contiguous columns and the reduction's 128 rows over 8 warps, every
// other parallel index one point a block over block_z (16 x 32 x 1). The
// same product with a second vector (batch 2 of `x W`) stays matrix-vector.
// CHECK-LABEL: func.func @decode_state_columns
// CHECK: tang.schedule<tile = [1, 1, 1, 128, 128], mapping = [block_z, block_z, block_z, block_x, serial], threads = [1, 1, 1, 32, 8], vector = 4
// CHECK-SAME: tang.shape_class = "column_reduction"
func.func @decode_state_columns(%w: tensor<16x1x16x128xf32>, %S: tensor<16x32x128x128xf32>) -> tensor<16x32x1x128xf32> {
  %y = tang.comprehension (%b, %h, %t, %j) reduce (%r) [16, 32, 1, 128, 128] monoid(add) : tensor<16x32x1x128xf32> {
    %a = tang.read %w[%b, %t, %h floordiv 2, %r] : tensor<16x1x16x128xf32>
    %s = tang.read %S[%b, %h, %r, %j] : tensor<16x32x128x128xf32>
    %p = arith.mulf %a, %s : f32
    tang.yield %p : f32
  }
  return %y : tensor<16x32x1x128xf32>
}

// -----

// CHECK-LABEL: func.func @two_vectors_columns
// CHECK: tang.shape_class = "narrow_matvec"
func.func @two_vectors_columns(%x: tensor<2x4096xf32>, %W: tensor<4096x4096xf32>) -> tensor<2x4096xf32> {
  %y = tang.comprehension (%r, %n) reduce (%k) [2, 4096, 4096] monoid(add) : tensor<2x4096xf32> {
    %a = tang.read %x[%r, %k] : tensor<2x4096xf32>
    %w = tang.read %W[%k, %n] : tensor<4096x4096xf32>
    %p = arith.mulf %a, %w : f32
    tang.yield %p : f32
  }
  return %y : tensor<2x4096xf32>
}

// -----

// Batch 16 of bf16 weights times f32 activations: still matrix-vector (no
// matrix unit takes the mixed pair; the weights stream once for all 16
// rows). The same 16 rows with both factors f32 are a tiled product.
// CHECK-LABEL: func.func @decode16
// CHECK: tang.shape_class = "narrow_matvec"
func.func @decode16(%W: tensor<4096x4096xbf16>, %a: tensor<16x4096xf32>) -> tensor<16x4096xf32> {
  %y = tang.comprehension (%r, %n) reduce (%k) [16, 4096, 4096] monoid(add) : tensor<16x4096xf32> {
    %w = tang.read %W[%n, %k] : tensor<4096x4096xbf16>
    %we = arith.extf %w : bf16 to f32
    %av = tang.read %a[%r, %k] : tensor<16x4096xf32>
    %p = arith.mulf %we, %av : f32
    tang.yield %p : f32
  }
  return %y : tensor<16x4096xf32>
}

// -----

// CHECK-LABEL: func.func @rows16_f32
// CHECK: tang.shape_class = "matmul_like"
func.func @rows16_f32(%W: tensor<4096x4096xf32>, %a: tensor<16x4096xf32>) -> tensor<16x4096xf32> {
  %y = tang.comprehension (%r, %n) reduce (%k) [16, 4096, 4096] monoid(add) : tensor<16x4096xf32> {
    %w = tang.read %W[%n, %k] : tensor<4096x4096xf32>
    %av = tang.read %a[%r, %k] : tensor<16x4096xf32>
    %p = arith.mulf %w, %av : f32
    tang.yield %p : f32
  }
  return %y : tensor<16x4096xf32>
}

// -----

// An RMSNorm's sum of squares does not depend on the output index: not a
// matrix-vector product (every warp would recompute it), a row kernel.
// CHECK-LABEL: func.func @rmsnorm_row
// CHECK: tang.schedule<tile = [1, 4096], mapping = [block_x, serial], threads = [1, 256]
// CHECK-SAME: tang.shape_class = "row_reduction"
func.func @rmsnorm_row(%x: tensor<1x4096xf32>, %g: tensor<4096xbf16>) -> tensor<1x4096xf32> {
  %y = tang.comprehension (%r, %n) [1, 4096] : tensor<1x4096xf32> {
    %xv = tang.read %x[%r, %n] : tensor<1x4096xf32>
    %ss = tang.comprehension reduce (%k) [4096] monoid(add) : f32 {
      %v = tang.read %x[%r, %k] : tensor<1x4096xf32>
      %q = arith.mulf %v, %v : f32
      tang.yield %q : f32
    }
    %inv = math.rsqrt %ss : f32
    %gv = tang.read %g[%n] : tensor<4096xbf16>
    %ge = arith.extf %gv : bf16 to f32
    %t = arith.mulf %xv, %inv : f32
    %o = arith.mulf %t, %ge : f32
    tang.yield %o : f32
  }
  return %y : tensor<1x4096xf32>
}

// -----

// Matmul of bf16 operands (batched through the outer index): 128x256
// tiles, 64-deep steps, 8 warps for the tensor cores, 4 stages in shared
// memory, f32 accumulation.
// CHECK-LABEL: func.func @batched_matmul
// With tile-source=traffic-bound, the output tile is the LP's certified
// tile at shared memory (16 KiB: 8192 bf16 elements, a cube of side
// sqrt(8192) = 90) rounded down to a power of two, with one stage.
// LP-LABEL: func.func @batched_matmul
// LP: tang.schedule<tile = [1, 64, 64, 64], mapping = [block_z, block_y, block_x, serial], threads = [1, 2, 64, 1], vector = 8, stages = 1,
// LP-SAME: tang.traffic_tile = array<i64: 1, 90, 90, 90>
// CHECK: tang.schedule<tile = [1, 128, 256, 64], mapping = [block_z, block_y, block_x, serial], threads = [1, 2, 128, 1], vector = 8, stages = 4, storage = bf16, accumulate = f32, memory = [shared, shared, shared, shared]>
// CHECK-SAME: tang.shape_class = "matmul_like"
func.func @batched_matmul(%A: tensor<8x1024x512xbf16>, %B: tensor<512x1024xbf16>) -> tensor<8x1024x1024xbf16> {
  %C = tang.comprehension (%b, %i, %j) reduce (%k) [8, 1024, 1024, 512] monoid(add) : tensor<8x1024x1024xbf16> {
    %a = tang.read %A[%b, %i, %k] : tensor<8x1024x512xbf16>
    %w = tang.read %B[%k, %j] : tensor<512x1024xbf16>
    %p = arith.mulf %a, %w : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<8x1024x1024xbf16>
}

// -----

// A matmul with its epilogue (after fusion) is still matmul-like.
// CHECK-LABEL: func.func @matmul_epilogue
// CHECK: tang.shape_class = "matmul_like"
func.func @matmul_epilogue(%A: tensor<256x64xf32>, %B: tensor<64x256xf32>) -> tensor<256x256xf32> {
  %C = tang.comprehension (%i, %j) [256, 256] : tensor<256x256xf32> {
    %c = tang.comprehension reduce (%k) [64] monoid(add) : f32 {
      %a = tang.read %A[%i, %k] : tensor<256x64xf32>
      %b = tang.read %B[%k, %j] : tensor<64x256xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %t = math.tanh %c : f32
    tang.yield %t : f32
  }
  return %C : tensor<256x256xf32>
}

// -----

// A norm (x * x of one tensor) is a row reduction, not a contraction.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: tang.shape_class = "row_reduction"
func.func @sum_of_squares(%X: tensor<64x512xf32>) -> tensor<64xf32> {
  %s = tang.comprehension (%i) reduce (%k) [64, 512] monoid(add) : tensor<64xf32> {
    %x = tang.read %X[%i, %k] : tensor<64x512xf32>
    %x2 = arith.mulf %x, %x : f32
    tang.yield %x2 : f32
  }
  return %s : tensor<64xf32>
}

// -----

// A matrix squared reads one tensor on both sides, at other coordinates: a
// contraction, not a norm. f32 operands on a tensor-core target without
// tf32: the register-tiled SIMT kernel's 64 x 64 tiles of 16 x 16 threads;
// both batch indices on block_z, one point a block.
// CHECK-LABEL: func.func @matrix_squared
// CHECK: tang.schedule<tile = [1, 1, 64, 64, 32], mapping = [block_z, block_z, block_y, block_x, serial], threads = [1, 1, 16, 16, 1]
// CHECK-SAME: tang.shape_class = "matmul_like"
func.func @matrix_squared(%N: tensor<4x8x64x64xf32>) -> tensor<4x8x64x64xf32> {
  %s = tang.comprehension (%h, %c, %r, %t) reduce (%q) [4, 8, 64, 64, 64] monoid(add) : tensor<4x8x64x64xf32> {
    %a = tang.read %N[%h, %c, %r, %q] : tensor<4x8x64x64xf32>
    %b = tang.read %N[%h, %c, %q, %t] : tensor<4x8x64x64xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %s : tensor<4x8x64x64xf32>
}

// -----

// The same product nested in an epilogue (a Neumann step of the chunked
// scan, T + T N): the SIMT tiles, and the vector of the nested reduction's
// steps (the register-tiled kernel's runs of 4 points read as vectors).
// CHECK-LABEL: func.func @nested_product
// CHECK: tang.schedule<tile = [1, 64, 64], mapping = [block_z, block_y, block_x], threads = [1, 16, 16], vector = 4
// CHECK-SAME: tang.shape_class = "matmul_like"
func.func @nested_product(%T: tensor<8x64x64xf32>, %N: tensor<8x64x64xf32>) -> tensor<8x64x64xf32> {
  %s = tang.comprehension (%c, %r, %t) [8, 64, 64] : tensor<8x64x64xf32> {
    %x = tang.read %T[%c, %r, %t] : tensor<8x64x64xf32>
    %d = tang.comprehension reduce (%q) [64] monoid(add) : f32 {
      %a = tang.read %T[%c, %r, %q] : tensor<8x64x64xf32>
      %b = tang.read %N[%c, %q, %t] : tensor<8x64x64xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %y = arith.addf %x, %d : f32
    tang.yield %y : f32
  }
  return %s : tensor<8x64x64xf32>
}

// -----

// Two reductions nested in one epilogue (a SwiGLU's gate and up products):
// a thread per point, so vector 1 (4 would give each thread four points
// and their eight reductions: 4.4x slower at Qwen3-Next's shared expert).
// CHECK-LABEL: func.func @two_nested_products
// CHECK: tang.schedule<tile = [64, 64], mapping = [block_y, block_x], threads = [16, 16], vector = 1,
func.func @two_nested_products(%x: tensor<64x256xf32>, %G: tensor<128x256xf32>, %U: tensor<128x256xf32>) -> tensor<64x128xf32> {
  %s = tang.comprehension (%t, %f) [64, 128] : tensor<64x128xf32> {
    %g = tang.comprehension reduce (%k) [256] monoid(add) : f32 {
      %a = tang.read %x[%t, %k] : tensor<64x256xf32>
      %b = tang.read %G[%f, %k] : tensor<128x256xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %u = tang.comprehension reduce (%k) [256] monoid(add) : f32 {
      %a = tang.read %x[%t, %k] : tensor<64x256xf32>
      %b = tang.read %U[%f, %k] : tensor<128x256xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    %y = arith.mulf %g, %u : f32
    tang.yield %y : f32
  }
  return %s : tensor<64x128xf32>
}

// -----

// A factor computed from bf16 reads is f32 (no tensor-core operand): the
// SIMT tiles, not the tensor-core ones.
// CHECK-LABEL: func.func @computed_factor
// CHECK: tang.schedule<tile = [1, 64, 64, 32], mapping = [block_z, block_y, block_x, serial], threads = [1, 16, 16, 1]
// CHECK-SAME: tang.shape_class = "matmul_like"
func.func @computed_factor(%A: tensor<8x256x128xbf16>, %B: tensor<8x256x128xbf16>, %beta: tensor<8x256xbf16>) -> tensor<8x256x256xf32> {
  %s = tang.comprehension (%h, %r, %t) reduce (%k) [8, 256, 256, 128] monoid(add) : tensor<8x256x256xf32> {
    %a = tang.read %A[%h, %r, %k] : tensor<8x256x128xbf16>
    %b = tang.read %B[%h, %t, %k] : tensor<8x256x128xbf16>
    %bt = tang.read %beta[%h, %t] : tensor<8x256xbf16>
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %btf = arith.extf %bt : bf16 to f32
    %u = arith.mulf %btf, %bf : f32
    %p = arith.mulf %af, %u : f32
    tang.yield %p : f32
  }
  return %s : tensor<8x256x256xf32>
}

// -----

// Online softmax (attention core): 64 queries per block, the head dimension
// whole, 64-key steps double-buffered in shared memory.
// CHECK-LABEL: func.func @attention
// CHECK: tang.schedule<tile = [1, 1, 64, 128, 64], mapping = [block_z, block_y, block_x, serial, serial], threads = [1, 1, 64, 1, 1], vector = 8, stages = 2, storage = bf16, accumulate = f32, memory = [shared, shared]>
// CHECK-SAME: tang.shape_class = "online_softmax"
func.func @attention(%S: tensor<4x16x2048x2048xbf16>, %V: tensor<4x16x2048x128xbf16>) -> tensor<4x16x2048x128xbf16> {
  %o = tang.comprehension (%b, %h, %i, %d) reduce (%j) [4, 16, 2048, 128, 2048] monoid(online_softmax) : tensor<4x16x2048x128xbf16> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<4x16x2048x2048xbf16>
    %v = tang.read %V[%b, %h, %j, %d] : tensor<4x16x2048x128xbf16>
    tang.yield %s, %v : bf16, bf16
  }
  return %o : tensor<4x16x2048x128xbf16>
}

// -----

// A comprehension that has a schedule keeps it.
// CHECK-LABEL: func.func @kept
// CHECK: tang.schedule<tile = [2], mapping = [serial], threads = [1], vector = 1
// CHECK-NOT: tang.shape_class
func.func @kept(%X: tensor<4xf32>) -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [2]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %y : tensor<4xf32>
}

// -----

// The module's device model sizes the schedule: with 1024 multiprocessors,
// the product's 128 x 256 tiles (256 of them) narrow to 128 x 64 (1024),
// where the default H200 (132) keeps 128 x 256 (@batched_matmul above).
// CHECK-LABEL: func.func @many_multiprocessors
// CHECK: tang.schedule<tile = [1, 128, 64, 64],
module attributes {tang.target = #tang.target<chip = "sm_90a", sm_count = 1024, shared_per_block = 232448, shared_per_sm = 233472, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = wgmma, tma = true, clusters = true>} {
func.func @many_multiprocessors(%A: tensor<8x1024x512xbf16>, %B: tensor<512x1024xbf16>) -> tensor<8x1024x1024xbf16> {
  %C = tang.comprehension (%b, %i, %j) reduce (%k) [8, 1024, 1024, 512] monoid(add) : tensor<8x1024x1024xbf16> {
    %a = tang.read %A[%b, %i, %k] : tensor<8x1024x512xbf16>
    %w = tang.read %B[%k, %j] : tensor<512x1024xbf16>
    %p = arith.mulf %a, %w : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<8x1024x1024xbf16>
}
}

// -----

// A map whose body reduces a long row read along its own (last) index has
// no row for the threads to share: each point is a block and its 256
// threads split the nested reduction, 8 bf16 (16 bytes) at a time (was one
// block for all 4096 points). A short nested reduction (@short_nested)
// keeps the row kernel over the map's index.
// CHECK-LABEL: func.func @rowless
// CHECK: tang.schedule<tile = [1], mapping = [block_x], threads = [256], vector = 8,
// SMALL-LABEL: func.func @rowless
// SMALL: threads = [128], vector = 8,
func.func @rowless(%X: tensor<4096x151936xbf16>) -> tensor<4096xf32> {
  %y = tang.comprehension (%i) [4096] : tensor<4096xf32> {
    %s = tang.comprehension reduce (%j) [151936] monoid(add) : f32 {
      %xb = tang.read %X[%i, %j] : tensor<4096x151936xbf16>
      %x = arith.extf %xb : bf16 to f32
      tang.yield %x : f32
    }
    %l = math.log %s : f32
    tang.yield %l : f32
  }
  return %y : tensor<4096xf32>
}
// CHECK-LABEL: func.func @short_nested
// CHECK: tang.schedule<tile = [4096], mapping = [serial], threads = [256]
func.func @short_nested(%X: tensor<4096x64xf32>) -> tensor<4096xf32> {
  %y = tang.comprehension (%i) [4096] : tensor<4096xf32> {
    %s = tang.comprehension reduce (%j) [64] monoid(add) : f32 {
      %x = tang.read %X[%i, %j] : tensor<4096x64xf32>
      tang.yield %x : f32
    }
    tang.yield %s : f32
  }
  return %y : tensor<4096xf32>
}
