// RUN: tang-opt %s --tang-traffic-bound="levels=shared=233472" --split-input-file -verify-diagnostics -o /dev/null
// RUN: not tang-opt %s --tang-traffic-bound="levels=shared" 2>&1 | FileCheck %s --check-prefix=LEVELS

// LEVELS: --tang-traffic-bound: levels must be name=bytes, comma-separated; got 'shared'

// Matrix product, N = 4096, M = 58368 f32: the LP's optimum is the classical
// N^3 / sqrt(M) tile (kappa = 3/2, every access weighted 1/2), and the bound
// M (ceil(N^3 / (2M)^(3/2)) - 1) = 1722 M elements.
func.func @matmul(%A: tensor<4096x4096xf32>, %B: tensor<4096x4096xf32>) -> tensor<4096x4096xf32> {
  // expected-remark @+1 {{traffic bound at shared (M = 58368 elements of 4 bytes): >= 100509696 elements moved (402038784 bytes); compulsory 50331648 elements; the largest tile that fits runs M^1.500 iterations: tile [241, 241, 241]; dual s = [1/2, 1/2, 1/2], t = [0, 0, 0]; certificate checked}}
  %C = tang.comprehension (%i, %j) reduce (%k) [4096, 4096, 4096] monoid(add) : tensor<4096x4096xf32> {
    %a = tang.read %A[%i, %k] : tensor<4096x4096xf32>
    %b = tang.read %B[%k, %j] : tensor<4096x4096xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<4096x4096xf32>
}

// -----

// Matrix-vector: the matrix's footprint limits a tile to M iterations
// (kappa = 1, only the matrix weighted): M (ceil(mn / 2M) - 1).
func.func @gemv(%A: tensor<8192x4096xf32>, %x: tensor<4096xf32>) -> tensor<8192xf32> {
  // expected-remark @+1 {{traffic bound at shared (M = 58368 elements of 4 bytes): >= 16751616 elements moved (67006464 bytes); compulsory 33566720 elements; the largest tile that fits runs M^1.000 iterations}}
  %y = tang.comprehension (%i) reduce (%k) [8192, 4096] monoid(add) : tensor<8192xf32> {
    %a = tang.read %A[%i, %k] : tensor<8192x4096xf32>
    %b = tang.read %x[%k] : tensor<4096xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %y : tensor<8192xf32>
}

// -----

// A transpose through a view is still a projection (of the source).
func.func @transposed(%A: tensor<64x32xf32>) -> tensor<32xf32> {
  %T = tang.view %A by affine_map<(d0, d1) -> (d1, d0)> : tensor<64x32xf32> to tensor<32x64xf32>
  // expected-remark @+1 {{compulsory 2080 elements}}
  %y = tang.comprehension (%i) reduce (%k) [32, 64] monoid(add) : tensor<32xf32> {
    %a = tang.read %T[%i, %k] : tensor<32x64xf32>
    tang.yield %a : f32
  }
  return %y : tensor<32xf32>
}

// -----

// A sliding window (through its view) is not a projection: the LP sees the
// read through its single-index coordinates (here none), a valid and
// possibly weaker bound, and says so.
func.func @window(%x: tensor<10xf32>) -> tensor<8xf32> {
  %W = tang.view %x by affine_map<(i, r) -> (i + r)> : tensor<10xf32> to tensor<8x3xf32>
  // expected-remark @+2 {{traffic bound relaxed: %arg0 (coordinates d0 + d1) bounded through single-index coordinates only (a valid, possibly weaker bound)}}
  // expected-remark @+1 {{traffic bound at shared}}
  %y = tang.comprehension (%i) reduce (%r) [8, 3] monoid(add) : tensor<8xf32> {
    %a = tang.read %W[%i, %r] : tensor<8x3xf32>
    tang.yield %a : f32
  }
  return %y : tensor<8xf32>
}

// -----

func.func @nested(%X: tensor<8x32xf32>) -> tensor<8x32xf32> {
  // expected-warning @+1 {{no traffic bound: its body holds a nested comprehension}}
  %Y = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
    %ss = tang.comprehension reduce (%k) [32] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<8x32xf32>
      tang.yield %x : f32
    }
    tang.yield %ss : f32
  }
  return %Y : tensor<8x32xf32>
}

// -----

// A 1-d convolution y[i] = sum_r x[i + r] w[r] (N = 4096, R = 8): the
// window read relaxed, segments of 2M R iterations, so the bound
// M (ceil(N / 2M) - 1) is 0 here, where M = 58368 >= N / 2
// (test_traffic_bound.py checks the closed form at small M).
func.func @conv1d(%x: tensor<4103xf32>, %w: tensor<8xf32>) -> tensor<4096xf32> {
  // expected-remark @+2 {{traffic bound relaxed: %arg0 (coordinates d0 + d1)}}
  // expected-remark @+1 {{traffic bound at shared (M = 58368 elements of 4 bytes): >= 0 elements moved}}
  %y = tang.comprehension (%i) reduce (%r) [4096, 8] monoid(add) : tensor<4096xf32> {
    %a = tang.read %x[%i + %r] : tensor<4103xf32>
    %b = tang.read %w[%r] : tensor<8xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %y : tensor<4096xf32>
}
