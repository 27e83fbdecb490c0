// REQUIRES: ptxas
// tf32=true through --tang-lower-cuda: an f32 product with a [k, n] operand
// runs mma.sync m16n8k8 tf32 (operands rounded with cvt.rna), one with both
// operands contiguous in k runs wgmma m64nNk8 tf32 on sm_90a; ptxas takes
// both with no spills. Without tf32=true, neither.
// RUN: rm -rf %t && tang-opt %s --tang-lower-cuda="tf32=true bundle=%t/on" -o /dev/null
// RUN: FileCheck %s --input-file=%t/on/tang_kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/on/tang_kernels.ptx -o %t/on.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tang-opt %s --tang-lower-cuda="bundle=%t/off" -o /dev/null
// RUN: FileCheck %s --check-prefix=OFF --input-file=%t/off/tang_kernels.ptx
// CHECK-LABEL: .entry main_k0
// CHECK: cvt.rna.tf32.f32
// CHECK: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
// CHECK-LABEL: .entry main_k1
// CHECK: cp.async.bulk.tensor.2d
// CHECK: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k8.f32.tf32.tf32
// PTXAS-NOT: warning
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// OFF-NOT: tf32
func.func @main(%A: tensor<200x72xf32>, %B: tensor<72x136xf32>, %W: tensor<136x72xf32>) -> (tensor<200x136xf32>, tensor<200x136xf32>) {
  %C = tang.comprehension (%i, %j) reduce (%k) [200, 136, 72] monoid(add) : tensor<200x136xf32> {
    %a = tang.read %A[%i, %k] : tensor<200x72xf32>
    %b = tang.read %B[%k, %j] : tensor<72x136xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  %D = tang.comprehension (%i, %j) reduce (%k) [200, 136, 72] monoid(add) : tensor<200x136xf32> {
    %a = tang.read %A[%i, %k] : tensor<200x72xf32>
    %w = tang.read %W[%j, %k] : tensor<136x72xf32>
    %p = arith.mulf %a, %w : f32
    tang.yield %p : f32
  }
  return %C, %D : tensor<200x136xf32>, tensor<200x136xf32>
}
