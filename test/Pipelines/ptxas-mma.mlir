// REQUIRES: ptxas
// A bf16 matrix product (of 128 x 256 tiles: the warp-specialised kernel)
// lowers through --tang-lower-cuda to tensor-core PTX
// that ptxas accepts with no spills: wgmma for sm_90a (operands by bulk
// tensor copies on mbarriers, tensor maps passed by value; with tma=false by
// cp.async), mma.sync (cp.async into shared memory, ldmatrix, f32
// accumulators) for sm_80; for a chip without either (sm_75) the same
// program takes plain arithmetic.
// RUN: rm -rf %t && tang-opt %s --tang-lower-cuda="bundle=%t/sm90" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM90 --input-file=%t/sm90/tang_kernels.ptx
// RUN: FileCheck %s --check-prefix=MANIFEST --input-file=%t/sm90/manifest.json
// RUN: %ptxas -arch=sm_90a -v %t/sm90/tang_kernels.ptx -o %t/sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tang-opt %s --tang-lower-cuda="tma=false bundle=%t/sm90-cp" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM90CP --input-file=%t/sm90-cp/tang_kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/sm90-cp/tang_kernels.ptx -o %t/sm90-cp.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// SM90: .param .align 64 .b8 main_k0_param_3[128]
// SM90: .param .align 64 .b8 main_k0_param_4[128]
// SM90: mbarrier.init.shared.b64
// SM90: setmaxnreg.dec.sync.aligned.u32 40
// SM90: mbarrier.try_wait.parity.shared.b64
// SM90: mbarrier.arrive.expect_tx.shared.b64
// SM90: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// SM90: setmaxnreg.inc.sync.aligned.u32 232
// SM90: mbarrier.try_wait.parity.shared.b64
// SM90-NOT: cp.async.cg.shared.global
// SM90: wgmma.fence.sync.aligned
// SM90: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.bf16.bf16
// SM90: wgmma.commit_group.sync.aligned
// SM90: wgmma.wait_group.sync.aligned
// SM90: mbarrier.arrive.shared.b64
// SM90: bar.sync 1, 256;
// MANIFEST: "arg": 0,
// MANIFEST-NEXT: "tensor_map": {
// MANIFEST-NEXT: "box": [
// MANIFEST-NEXT: 128,
// MANIFEST-NEXT: 64
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "swizzle": 128
// RUN: tang-opt %s --tang-lower-cuda="chip=sm_80 bundle=%t/sm80" -o /dev/null
// RUN: FileCheck %s --input-file=%t/sm80/tang_kernels.ptx
// RUN: %ptxas -arch=sm_80 -v %t/sm80/tang_kernels.ptx -o %t/sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// SM90CP-NOT: cp.async.bulk
// SM90CP: cp.async.cg.shared.global
// SM90CP: fence.proxy.async.shared::cta
// SM90CP: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.bf16.bf16
// RUN: tang-opt %s --tang-lower-cuda="chip=sm_75 features=+ptx80 bundle=%t/sm75" -o /dev/null
// RUN: FileCheck %s --check-prefix=SM75 --input-file=%t/sm75/tang_kernels.ptx
// CHECK: cp.async.cg.shared.global
// CHECK: cp.async.commit_group
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTXAS-NOT: warning
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// SM75-NOT: mma.sync
// SM75: .target sm_75
func.func @main(%A: tensor<4000x512xbf16>, %B: tensor<512x4000xbf16>) -> tensor<4000x4000xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [4000, 4000, 512] monoid(add) : tensor<4000x4000xbf16> {
    %a = tang.read %A[%i, %k] : tensor<4000x512xbf16>
    %b = tang.read %B[%k, %j] : tensor<512x4000xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<4000x4000xbf16>
}
