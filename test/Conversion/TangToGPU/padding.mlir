// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu=tensor-cores=mma-sync --split-input-file --verify-diagnostics | FileCheck %s

// A padded read in a kernel: each coordinate checked with an unsigned
// comparison (a negative one is huge), read at 0 where it is outside, and
// the fill (here -inf, extended to the compute type) selected there.
// CHECK-LABEL: gpu.func @maxpool_k0
// CHECK: scf.for
// CHECK: %[[OK:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK: %[[C:.*]] = arith.select %[[OK]], %{{.*}}, %{{.*}} : index
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%[[C]]] : memref<16xbf16>
// CHECK: %[[VF:.*]] = arith.extf %[[V]] : bf16 to f32
// CHECK: %[[NINF:.*]] = arith.constant 0xFF80 : bf16
// CHECK: %[[F:.*]] = arith.extf %[[NINF]] : bf16 to f32
// CHECK: arith.select %[[OK]], %[[VF]], %[[F]] : f32
func.func @maxpool(%X: tensor<16xbf16>) -> tensor<16xbf16> {
  %y = tang.comprehension (%i) reduce (%k) [16, 3] monoid(max) : tensor<16xbf16> {
    %x = tang.read %X[%i + %k - 1] fill(0xFF80 : bf16) : tensor<16xbf16>
    tang.yield %x : bf16
  }
  return %y : tensor<16xbf16>
}

// -----

// A contraction that reads with padding stays off the tensor cores (their
// tile loads have no guards): a SIMT kernel, and a remark says why.
// CHECK-LABEL: gpu.func @padded_gemm_k0
// CHECK-NOT: nvvm.mma.sync
// CHECK: arith.cmpi ult
// CHECK: gpu.return
func.func @padded_gemm(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xf32> {
  // expected-remark @below {{a SIMT kernel: it reads with padding}}
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) : tensor<128x128xf32> {
    %a = tang.read %A[%i - 2, %k] fill(0.0) : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %af, %bf : f32
    tang.yield %p : f32
  }
  return %C : tensor<128x128xf32>
}

// -----

// A schedule that names a tensor-core kernel for it is refused.
func.func @padded_scheduled(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  // expected-error @+1 {{has a schedule asking for a contraction kernel, but it reads with padding, which only SIMT kernels guard}}
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 64, 32], threads = [2, 64, 1], vector = 8, stages = 2, memory = [shared, shared], kernel = contraction, mma = mma_sync>} : tensor<128x128xbf16> {
    %a = tang.read %A[%i - 2, %k] fill(0.0) : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x128xbf16>
}
