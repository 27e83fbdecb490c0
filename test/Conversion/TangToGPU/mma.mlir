// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu=tensor-cores=mma-sync --split-input-file --verify-diagnostics | FileCheck %s
// RUN: not tang-opt %s --convert-tang-to-gpu=tensor-cores=wmma 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu --split-input-file | FileCheck %s --check-prefix=PLAIN

// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu=tensor-cores=wgmma --split-input-file | FileCheck %s --check-prefixes=WGMMA,TMA
// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu="tensor-cores=wgmma tma=false" --split-input-file | FileCheck %s --check-prefix=NOTMA
// RUN: tang-opt %s --tang-schedule --convert-tang-to-gpu="tensor-cores=wgmma warp-specialize=false" --split-input-file | FileCheck %s --check-prefixes=TMA,TMA1

// OPTION: Cannot find option named 'wmma'

// Tensor-core kernels for contractions of bf16/f16 operands: ragged tiles
// (40 x 48 x 24 in 32 x 32 tiles), operands through a ring of shared
// memory buffers by cp.async (16 bytes, zero-filled past the edges), a
// [k, n] right operand read by transposing ldmatrix, the accumulators back
// through shared memory to 16-byte stores.
// PLAIN-NOT: nvvm.mma.sync
// CHECK-LABEL: func.func @matmul
// CHECK: gpu.launch_func @tang_kernels::@matmul_k0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) dynamic_shared_memory_size %{{.*}} args
// CHECK: gpu.func @matmul_k0
// CHECK: gpu.dynamic_shared_memory
// CHECK: memref.view {{.*}} to memref<4x32x32xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<4x32x32xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// CHECK: nvgpu.device_async_wait {{.*}} {numGroups = 2 : i32}
// CHECK: scf.for {{.*}} iter_args
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK: vector.store {{.*}} : memref<32x40xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK: arith.truncf {{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK: vector.store {{.*}} : memref<40x48xbf16>, vector<8xbf16>
func.func @matmul(%A: tensor<40x24xbf16>, %B: tensor<24x48xbf16>) -> tensor<40x48xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [40, 48, 24] monoid(add) : tensor<40x48xbf16> {
    %a = tang.read %A[%i, %k] : tensor<40x24xbf16>
    %b = tang.read %B[%k, %j] : tensor<24x48xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<40x48xbf16>
}

// -----

// A linear layer as fusion leaves it: the product nested in a map whose
// body (bias, activation) is the epilogue, run on the accumulators; the
// [n, k] weight is read without transposing; the batch index goes to the
// grid's z dimension.
// sm_90a: one warpgroup per 64 rows, both operands from shared memory laid
// out for swizzled descriptors (the 1024-byte aligned ring; K = 24 takes
// 32-deep steps, 64-byte swizzle), the [k, n] operand in blocks as wide as a
// swizzled row and transposed by the instruction; the
// fence orders cp.async's writes before the tensor cores read them; two
// wgmma groups in flight.
// WGMMA-LABEL: func.func @matmul
// WGMMA: dynamic_shared_memory_size
// WGMMA: gpu.func @matmul_k0
// WGMMA: memref.extract_aligned_pointer_as_index
// WGMMA: memref.view {{.*}} to memref<4x64x32xbf16, #gpu.address_space<workgroup>>
// WGMMA: memref.view {{.*}} to memref<4x2x32x32xbf16, #gpu.address_space<workgroup>>
// WGMMA: llvm.mlir.zero : !llvm.struct<(f32,
// WGMMA: scf.for
// WGMMA: nvgpu.device_async_wait {{.*}} {numGroups = 1 : i32}
// WGMMA: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WGMMA: gpu.barrier
// WGMMA: nvvm.wgmma.fence.aligned
// WGMMA-COUNT-2: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA: nvvm.wgmma.wait.group.sync.aligned 1
// WGMMA: nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA: vector.store {{.*}} : memref<40x48xbf16>, vector<8xbf16>

// CHECK-LABEL: func.func @linear
// CHECK: gpu.launch_func @tang_kernels::@linear_k0 blocks in (%{{.*}}, %{{.*}}, %[[Z:.*]]) threads
// CHECK: gpu.func @linear_k0
// CHECK: gpu.block_id z
// CHECK: memref.view {{.*}} to memref<4x32x32xf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<4x64x32xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-NOT: transpose = true
// WGMMA-LABEL: func.func @linear
// WGMMA: nvvm.wgmma.mma_async {{.*}} A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// CHECK: nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: scf.for
// CHECK: memref.load {{.*}} : memref<64xf16>
// CHECK: math.tanh
// CHECK: arith.truncf {{.*}} : vector<8xf32> to vector<8xf16>
// CHECK: vector.store {{.*}} : memref<3x32x64xf16>, vector<8xf16>
func.func @linear(%X: tensor<3x32x40xf16>, %W: tensor<64x40xf16>, %bias: tensor<64xf16>) -> tensor<3x32x64xf16> {
  %Z = tang.comprehension (%z, %i, %j) [3, 32, 64] : tensor<3x32x64xf16> {
    %y = tang.comprehension reduce (%k) [40] monoid(add) : f32 {
      %x = tang.read %X[%z, %i, %k] : tensor<3x32x40xf16>
      %w = tang.read %W[%j, %k] : tensor<64x40xf16>
      %x32 = arith.extf %x : f16 to f32
      %w32 = arith.extf %w : f16 to f32
      %p = arith.mulf %x32, %w32 : f32
      tang.yield %p : f32
    }
    %b = tang.read %bias[%j] : tensor<64xf16>
    %b32 = arith.extf %b : f16 to f32
    %s = arith.addf %y, %b32 : f32
    %t = math.tanh %s : f32
    %r = arith.truncf %t : f32 to f16
    tang.yield %r : f16
  }
  return %Z : tensor<3x32x64xf16>
}

// -----

// A left operand read along its rows (A^T B): wgmma transposes it (blocks
// of rows of A^T laid out like a [k, n] operand); mma.sync does not take
// it yet: it says so and takes the plain kernel.
// CHECK-LABEL: func.func @transposed
// CHECK-NOT: nvvm.mma.sync
// WGMMA-LABEL: func.func @transposed
// WGMMA: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <col>], B[<bf16>, <one>, <row>]
func.func @transposed(%A: tensor<24x40xbf16>, %B: tensor<24x48xbf16>) -> tensor<40x48xbf16> {
  // expected-remark @below {{not on tensor cores: the left operand is not contiguous in the reduced index}}
  %C = tang.comprehension (%i, %j) reduce (%k) [40, 48, 24] monoid(add) : tensor<40x48xbf16> {
    %a = tang.read %A[%k, %i] : tensor<24x40xbf16>
    %b = tang.read %B[%k, %j] : tensor<24x48xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<40x48xbf16>
}

// -----

// f32 operands stay on plain arithmetic without tf32=true, silently
// (tf32.mlir has them on tensor cores).
// CHECK-LABEL: func.func @f32
// CHECK-NOT: nvvm.mma.sync
func.func @f32(%A: tensor<40x24xf32>, %B: tensor<24x48xf32>) -> tensor<40x48xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [40, 48, 24] monoid(add) : tensor<40x48xf32> {
    %a = tang.read %A[%i, %k] : tensor<40x24xf32>
    %b = tang.read %B[%k, %j] : tensor<24x48xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<40x48xf32>
}

// -----

// Operands read through views stay contiguous when an 8-aligned run of the
// reduced index is contiguous: a reshape view (c floordiv 64, c mod 64) over
// a last dimension of 64, as the attention output is read by the output
// projection.
// CHECK-LABEL: func.func @reshaped
// CHECK: nvvm.mma.sync
func.func @reshaped(%O: tensor<2x40x2x64xbf16>, %W: tensor<128x64xbf16>) -> tensor<2x40x64xbf16> {
  %C = tang.comprehension (%b, %l, %e) reduce (%c) [2, 40, 64, 128] monoid(add) : tensor<2x40x64xbf16> {
    %o = tang.read %O[%b, %l, %c floordiv 64, %c mod 64] : tensor<2x40x2x64xbf16>
    %w = tang.read %W[%c, %e] : tensor<128x64xbf16>
    %p = arith.mulf %o, %w : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<2x40x64xbf16>
}

// -----

// The product written b * a reaches the tensor cores too.
// CHECK-LABEL: func.func @swapped
// CHECK: nvvm.mma.sync
// WGMMA-LABEL: func.func @swapped
// WGMMA: nvvm.wgmma.mma_async
func.func @swapped(%A: tensor<128x64xbf16>, %B: tensor<64x128xbf16>) -> tensor<128x128xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [128, 128, 64] monoid(add) : tensor<128x128xbf16> {
    %a = tang.read %A[%i, %k] : tensor<128x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x128xbf16>
    %p = arith.mulf %b, %a : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<128x128xbf16>
}

// -----

// A column offset that is a floordiv ((8 h) floordiv 16 = h floordiv 2) is
// not a multiple of 8: 16-byte copies would be misaligned, so no tensor
// cores.
// CHECK-LABEL: func.func @floordiv_offset
// CHECK-NOT: nvvm.mma.sync
func.func @floordiv_offset(%A: tensor<64x72xbf16>, %B: tensor<64x64xbf16>) -> tensor<4x64x64xbf16> {
  // expected-remark @below {{not on tensor cores: the left operand is not contiguous in the reduced index}}
  %C = tang.comprehension (%h, %i, %j) reduce (%k) [4, 64, 64, 64] monoid(add) : tensor<4x64x64xbf16> {
    %a = tang.read %A[%i, %k + (%h * 8) floordiv 16] : tensor<64x72xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x64xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<4x64x64xbf16>
}

// -----

// K steps of 64 (rows of 128 bytes, the 128-byte swizzle) on sm_90a: the
// operands come by bulk tensor copies. The host passes a tensor map per
// operand (a box of the buffer: 1 x 64 rows x 64 of k for the batched A,
// 64 of k x 64 columns for B, zero past its 200 columns); the kernel takes
// them as its last parameters; thread 0 initialises one mbarrier per ring
// slot, expects each step's bytes and issues the copies; every thread waits
// on the slot's phase. With tma=false, cp.async as before.
// Its 64-column tiles run the single-role kernel (as does every product
// with warp-specialize=false): thread 0 of the computing warps issues the
// copies and a block barrier per step orders the slots' reuse.
// CHECK-LABEL: func.func @tma
// WGMMA-LABEL: func.func @tma
// WGMMA: %[[CA:.*]] = memref.cast %arg0 : memref<2x96x128xbf16> to memref<*xbf16>
// WGMMA: %[[DA:.*]] = nvgpu.tma.create.descriptor %[[CA]] box[%{{.*}}, %{{.*}}, %{{.*}}] : memref<*xbf16> -> <tensor = memref<1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// WGMMA: %[[PA:.*]] = builtin.unrealized_conversion_cast %[[DA]] : {{.*}} to !llvm.ptr
// WGMMA: %[[CB:.*]] = memref.cast %arg1 : memref<128x200xbf16> to memref<*xbf16>
// WGMMA: nvgpu.tma.create.descriptor %[[CB]] {{.*}} -> <tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// WGMMA: %[[PB:.*]] = builtin.unrealized_conversion_cast
// WGMMA: gpu.launch_func @tang_kernels::@tma_k0 blocks in (%c4, {{.*}} threads in (%c128, {{.*}} args({{.*}}, %[[PA]] : !llvm.ptr, %[[PB]] : !llvm.ptr)
// TMA: gpu.func @tma_k0({{.*}}, %[[MA:.*]]: !llvm.ptr, %[[MB:.*]]: !llvm.ptr) kernel attributes {known_block_size = array<i32: 128, 1, 1>, tang.tensor_map_params = array<i64: 3, 4>}
// TMA-COUNT-4: nvvm.mbarrier.init
// TMA: nvvm.fence.mbarrier.init
// TMA: gpu.barrier
// TMA: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
// TMA: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[MA]], %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}]
// TMA: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[MB]], %{{.*}}, box[%{{.*}}, %{{.*}}]
// TMA: scf.for
// TMA: gpu.barrier
// TMA: nvvm.mbarrier.try_wait.parity
// TMA-NOT: nvgpu.device_async_copy
// TMA: nvvm.wgmma.mma_async
// TMA-NOT: nvgpu.device_async
// TMA: gpu.return
// NOTMA-LABEL: func.func @tma
// NOTMA-NOT: nvgpu.tma.create.descriptor
// NOTMA: gpu.func @tma_k0
// NOTMA-NOT: tensor_map_params
// NOTMA: nvgpu.device_async_copy
// NOTMA-NOT: cp.async.bulk.tensor
// NOTMA: gpu.return
func.func @tma(%A: tensor<2x96x128xbf16>, %B: tensor<128x200xbf16>) -> tensor<2x96x200xbf16> {
  %C = tang.comprehension (%z, %i, %j) reduce (%k) [2, 96, 200, 128] monoid(add) : tensor<2x96x200xbf16> {
    %a = tang.read %A[%z, %i, %k] : tensor<2x96x128xbf16>
    %b = tang.read %B[%k, %j] : tensor<128x200xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<2x96x200xbf16>
}

// -----

// A product of 256-column tiles (the default warp-specialised kernel): a
// persistent grid (a block per multiprocessor, 132, looping over the 256
// tiles) with a producer warpgroup past two consumer warpgroups (384
// threads): it hands its registers over (setmaxnreg), and its first thread
// waits for a slot's empty barrier before filling it; the consumers wait for
// the full barrier, multiply, and release the step before's slot once its
// products are done (the empty barriers count both consumer warpgroups);
// the epilogue syncs the consumers only (named barrier 1). With
// warp-specialize=false, the single-role kernel of @tma.
// CHECK-LABEL: func.func @tma_ws
// WGMMA-LABEL: func.func @tma_ws
// WGMMA: gpu.launch_func @tang_kernels::@tma_ws_k0 blocks in (%c132, {{.*}} threads in (%c384,
// WGMMA: gpu.func @tma_ws_k0({{.*}}, %[[MA:.*]]: !llvm.ptr, %[[MB:.*]]: !llvm.ptr) kernel attributes {known_block_size = array<i32: 384, 1, 1>, tang.tensor_map_params = array<i64: 3, 4>}
// WGMMA-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c1_i32
// WGMMA: nvvm.fence.mbarrier.init
// WGMMA-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c2_i32
// WGMMA: gpu.barrier
// WGMMA: scf.if
// WGMMA: nvvm.setmaxregister decrease 40
// WGMMA: scf.for %{{.*}} = %block_id_x to %c256{{.*}} step %c132
// WGMMA: scf.for
// WGMMA: nvvm.mbarrier.try_wait.parity
// WGMMA: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c49152_i32
// WGMMA: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[MA]], %{{.*}}, box[%{{.*}}, %{{.*}}]
// WGMMA: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %[[MB]], %{{.*}}, box[%{{.*}}, %{{.*}}]
// WGMMA: } else {
// WGMMA: nvvm.setmaxregister increase 232
// WGMMA: scf.for %{{.*}} = %block_id_x to %c256{{.*}} step %c132
// WGMMA: scf.for
// WGMMA: nvvm.mbarrier.try_wait.parity
// WGMMA: nvvm.wgmma.mma_async
// WGMMA: nvvm.wgmma.wait.group.sync.aligned 1
// WGMMA: nvvm.mbarrier.arrive
// WGMMA: nvvm.wgmma.wait.group.sync.aligned 0
// WGMMA: nvvm.mbarrier.arrive
// WGMMA: nvvm.barrier id = %{{.*}} number_of_threads = %c256_i32
// WGMMA-NOT: nvgpu.device_async
// WGMMA: gpu.return
// TMA1-LABEL: func.func @tma_ws
// TMA1: gpu.func @tma_ws_k0
// TMA1-NOT: nvvm.setmaxregister
// TMA1: gpu.return
func.func @tma_ws(%A: tensor<2048x128xbf16>, %B: tensor<128x4096xbf16>) -> tensor<2048x4096xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [2048, 4096, 128] monoid(add) : tensor<2048x4096xbf16> {
    %a = tang.read %A[%i, %k] : tensor<2048x128xbf16>
    %b = tang.read %B[%k, %j] : tensor<128x4096xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<2048x4096xbf16>
}

// -----

// Views that are not a box of the tensor keep cp.async: a reshape of k
// (A's last coordinate is k mod 64, not k), and a [k, n] operand longer
// than K (a box past row K = 96 would read rows of the tensor, not zeros).
// CHECK-LABEL: func.func @not_boxes
// WGMMA-LABEL: func.func @not_boxes
// WGMMA-NOT: nvgpu.tma.create.descriptor
// WGMMA: gpu.func @not_boxes_k0
// WGMMA: nvgpu.device_async_copy
// WGMMA-NOT: cp.async.bulk.tensor
// WGMMA: gpu.return
// WGMMA: gpu.func @not_boxes_k1
// WGMMA: nvgpu.device_async_copy
// WGMMA-NOT: cp.async.bulk.tensor
// WGMMA: gpu.return
func.func @not_boxes(%A: tensor<64x2x64xbf16>, %B: tensor<128x64xbf16>, %A2: tensor<64x96xbf16>) -> (tensor<64x64xbf16>, tensor<64x64xbf16>) {
  %C = tang.comprehension (%i, %j) reduce (%k) [64, 64, 128] monoid(add) : tensor<64x64xbf16> {
    %a = tang.read %A[%i, %k floordiv 64, %k mod 64] : tensor<64x2x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<128x64xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  %D = tang.comprehension (%i, %j) reduce (%k) [64, 64, 96] monoid(add) : tensor<64x64xbf16> {
    %a = tang.read %A2[%i, %k] : tensor<64x96xbf16>
    %b = tang.read %B[%k, %j] : tensor<128x64xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C, %D : tensor<64x64xbf16>, tensor<64x64xbf16>
}

// -----

// A sum over two indices read as consecutive coordinates (a weight
// gradient's batch and length) is one contraction over their product, the
// coordinates (r floordiv 32, r mod 32): rows contiguous in the summed pair.
// CHECK-LABEL: func.func @summed_pair
// CHECK: gpu.func @summed_pair_k0
// CHECK: arith.divsi %{{.*}}, %c32
// CHECK: arith.remsi %{{.*}}, %c32
// CHECK: nvvm.mma.sync
// WGMMA-LABEL: func.func @summed_pair
// WGMMA: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <row>]
func.func @summed_pair(%X: tensor<48x2x32xbf16>, %Y: tensor<2x32x40xbf16>) -> tensor<48x40xbf16> {
  %W = tang.comprehension (%i, %j) reduce (%b, %l) [48, 40, 2, 32] monoid(add) : tensor<48x40xbf16> {
    %x = tang.read %X[%i, %b, %l] : tensor<48x2x32xbf16>
    %y = tang.read %Y[%b, %l, %j] : tensor<2x32x40xbf16>
    %p = arith.mulf %x, %y : bf16
    tang.yield %p : bf16
  }
  return %W : tensor<48x40xbf16>
}

// -----

// The weight gradient itself, X^T dY: the left operand contiguous in its
// rows, which wgmma reads transposed; mma.sync takes it off the tensor
// cores and says why.
// CHECK-LABEL: func.func @weight_gradient
// WGMMA-LABEL: func.func @weight_gradient
// WGMMA: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <col>]
func.func @weight_gradient(%X: tensor<2x32x48xbf16>, %dY: tensor<2x32x40xbf16>) -> tensor<48x40xbf16> {
  // expected-remark @below {{not on tensor cores: summed over its reduced indices as one: the left operand is not contiguous in the reduced index}}
  %dW = tang.comprehension (%i, %j) reduce (%b, %l) [48, 40, 2, 32] monoid(add) : tensor<48x40xbf16> {
    %x = tang.read %X[%b, %l, %i] : tensor<2x32x48xbf16>
    %d = tang.read %dY[%b, %l, %j] : tensor<2x32x40xbf16>
    %p = arith.mulf %x, %d : bf16
    tang.yield %p : bf16
  }
  return %dW : tensor<48x40xbf16>
}
