// f32 contractions on tensor cores as tf32, only when asked (tf32=true):
// mma.sync m16n8k8 with each operand rounded to nearest tf32 (cvt.rna), or,
// on wgmma, m64nNk8 tf32 when both operands are contiguous in k (wgmma's tf32
// takes no other layout; the others fall back to mma.sync).
// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu=tensor-cores=mma-sync --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu="tensor-cores=mma-sync tf32=true" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=SYNC
// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu="tensor-cores=wgmma tf32=true" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=WGMMA

// A [m, k], B [k, n]: ldmatrix for A (a 16-bit view of the f32 tile: an
// 8 x 8 matrix of 16-bit values is an 8 x 4 one of 32-bit values), scalar
// loads for B (no 32-bit transposing ldmatrix); on wgmma too (B is not
// contiguous in k).
// OFF-LABEL: func.func @nn
// OFF-NOT: nvvm.mma.sync
// OFF: return
// SYNC-LABEL: func.func @nn
// SYNC: memref.view {{.*}} to memref<4x128x32xf32, #gpu.address_space<workgroup>>
// SYNC: memref.view {{.*}} to memref<4x32x128xf32, #gpu.address_space<workgroup>>
// SYNC: memref.view {{.*}} to memref<4x128x64xbf16, #gpu.address_space<workgroup>>
// SYNC: nvgpu.device_async_copy {{.*}} : memref<200x72xf32> to memref<4x128x32xf32, #gpu.address_space<workgroup>>
// SYNC: nvgpu.ldmatrix {{.*}} : memref<4x128x64xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// SYNC: memref.load {{.*}} : memref<4x32x128xf32, #gpu.address_space<workgroup>>
// SYNC: nvvm.convert.float.to.tf32 {{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// SYNC: nvvm.mma.sync {{.*}} multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>
// WGMMA-LABEL: func.func @nn
// WGMMA-NOT: wgmma
// WGMMA: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 8>
func.func @nn(%A: tensor<200x72xf32>, %B: tensor<72x136xf32>) -> tensor<200x136xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [200, 136, 72] monoid(add) : tensor<200x136xf32> {
    %a = tang.read %A[%i, %k] : tensor<200x72xf32>
    %b = tang.read %B[%k, %j] : tensor<72x136xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<200x136xf32>
}

// -----

// B [n, k] (nn.Linear's weight): ldmatrix for both on mma.sync; wgmma tf32
// from 128-byte swizzled rows of 32 f32 values, filled by bulk tensor
// copies.
// SYNC-LABEL: func.func @nt
// SYNC-NOT: memref.load {{.*}}workgroup
// SYNC: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 8>
// WGMMA-LABEL: func.func @nt
// WGMMA: nvgpu.tma.create.descriptor {{.*}} -> <tensor = memref<{{[0-9]+}}x32xf32, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// WGMMA: nvvm.cp.async.bulk.tensor.shared.cluster.global
// WGMMA: nvvm.wgmma.mma_async {{.*}} <m = 64, n = {{[0-9]+}}, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
func.func @nt(%A: tensor<200x72xf32>, %B: tensor<136x72xf32>) -> tensor<200x136xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [200, 136, 72] monoid(add) : tensor<200x136xf32> {
    %a = tang.read %A[%i, %k] : tensor<200x72xf32>
    %b = tang.read %B[%j, %k] : tensor<136x72xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<200x136xf32>
}

// -----

// A^T B of f32: neither mma.sync nor wgmma's tf32 takes it; with tf32 asked
// for, it says so.
// SYNC-LABEL: func.func @tn
// SYNC-NOT: nvvm.mma.sync
// SYNC: return
func.func @tn(%A: tensor<72x200xf32>, %B: tensor<72x136xf32>) -> tensor<200x136xf32> {
  // expected-remark @below {{not on tensor cores: the left operand is not contiguous in the reduced index}}
  %C = tang.comprehension (%i, %j) reduce (%k) [200, 136, 72] monoid(add) : tensor<200x136xf32> {
    %a = tang.read %A[%k, %i] : tensor<72x200xf32>
    %b = tang.read %B[%k, %j] : tensor<72x136xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<200x136xf32>
}
