// REQUIRES: ptxas
// A bf16 matrix product lowers through --tang-lower-cuda to tensor-core PTX
// (cp.async into shared memory, ldmatrix, mma.sync with f32 accumulators)
// that ptxas accepts for sm_90a with no spills; for a chip without
// mma.sync (sm_75) the same program takes plain arithmetic.
// RUN: rm -rf %t && tang-opt %s --tang-lower-cuda="bundle=%t/sm90" -o /dev/null
// RUN: FileCheck %s --input-file=%t/sm90/tang_kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/sm90/tang_kernels.ptx -o %t/sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tang-opt %s --tang-lower-cuda="chip=sm_75 features=+ptx80 bundle=%t/sm75" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM75 --input-file=%t/sm75/tang_kernels.ptx
// CHECK: cp.async.cg.shared.global
// CHECK: cp.async.commit_group
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// SM75-NOT: mma.sync
// SM75: .target sm_75
func.func @main(%A: tensor<1000x512xbf16>, %B: tensor<512x1000xbf16>) -> tensor<1000x1000xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [1000, 1000, 512] monoid(add) : tensor<1000x1000xbf16> {
    %a = tang.read %A[%i, %k] : tensor<1000x512xbf16>
    %b = tang.read %B[%k, %j] : tensor<512x1000xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<1000x1000xbf16>
}
