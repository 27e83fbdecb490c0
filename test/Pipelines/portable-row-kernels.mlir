// The portable backends' row kernels: schedules from the portable device
// model (#tang.target chip "portable": no subgroup size assumed, at most
// 256 threads, scalar accesses; SPIR-V's of 8 bytes), a workgroup per row, the threads'
// carriers combined in workgroup memory alone (no subgroup operation), in
// thread order, then every thread reads the total.
// RUN: tang-opt %s --tang-attach-target=chip=portable --tang-schedule --convert-tang-to-gpu=cooperative=false | FileCheck %s --check-prefix=FORM
// RUN: tang-opt %s --tang-lower-spirv | FileCheck %s --check-prefix=SPIRV
// RUN: tang-opt %s --tang-lower-opencl -o /dev/null | FileCheck %s --check-prefix=OPENCL
// RUN: tang-opt %s --tang-lower-metal -o /dev/null | FileCheck %s --check-prefix=METAL
// RUN: tang-opt %s --tang-lower-glsl -o /dev/null | FileCheck %s --check-prefix=GLSL
// RUN: tang-opt %s --tang-lower-wgsl -o /dev/null | FileCheck %s --check-prefix=WGSL
// Off: one thread per point, no workgroup memory; C (whose launcher runs
// work items in turn) never has row kernels.
// RUN: tang-opt %s --tang-lower-opencl=row-kernels=0 -o /dev/null | FileCheck %s --check-prefix=POINT
// RUN: tang-opt %s --tang-lower-c -o /dev/null | FileCheck %s --check-prefix=POINT
// The pipeline's kernels are those of its passes run by hand, printed by
// tang-translate.
// RUN: tang-opt %s --tang-lower-opencl -o /dev/null > %t.pipeline
// RUN: tang-opt %s --tang-attach-target=chip=portable --canonicalize --tang-schedule --convert-tang-to-gpu=cooperative=false --canonicalize --cse | tang-translate --to-opencl > %t.translate
// RUN: diff %t.pipeline %t.translate

// The schedule: a row of 64 shared by 64 threads, one element each.
// FORM: gpu.func @main_k0({{.*}}) workgroup({{.*}} : memref<64x4xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// FORM-NOT: gpu.shuffle
// FORM-NOT: vector.
// Each thread's (value, index) carrier to its row of the buffer, the index
// through its f32 bits.
// FORM: gpu.barrier
// FORM: arith.bitcast {{.*}} : i32 to f32
// FORM: gpu.barrier
// The first step: threads 0, 2, 4, ... combine their row with the next.
// FORM: arith.remui %{{.*}}, %c2
// FORM: scf.if
// FORM: gpu.barrier
// FORM: gpu.func @main_k1
// FORM-NOT: gpu.shuffle
// FORM: gpu.return

// SPIR-V takes accesses of 8 bytes (--tang-lower-spirv attaches the model
// with vector-bytes=8): 32 threads of 2 f32 a row, their vector loads
// through a second variable bound to the buffer
// (tang-spirv-alias-vector-access).
// SPIRV: spirv.GlobalVariable @{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<128 x f32>)>, Workgroup>
// SPIRV: spirv.GlobalVariable @main_k0_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<512 x f32, stride=4> [0])>, StorageBuffer>
// SPIRV: spirv.GlobalVariable @main_k0_arg_0_v2 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<256 x vector<2xf32>, stride=8> [0])>, StorageBuffer>
// SPIRV-NOT: GroupNonUniform
// SPIRV-NOT: spirv.Bitcast {{.*}}!spirv.ptr
// SPIRV: spirv.Load "StorageBuffer" {{.*}} ["Aligned", 8] : vector<2xf32>
// SPIRV: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// SPIRV: spirv.ExecutionMode @main_k0 "LocalSize", 32, 1, 1

// OPENCL: __kernel void main_k0(__global float *restrict a0, __global float *restrict a1, __global int *restrict a2) {
// OPENCL-NEXT: __local float w0[256];
// OPENCL: barrier(CLK_LOCAL_MEM_FENCE);
// OPENCL: as_float(
// OPENCL: as_int(

// METAL: kernel void main_k0(
// METAL-NEXT: threadgroup float w0[256];
// METAL: threadgroup_barrier(mem_flags::mem_threadgroup);
// METAL: as_type<float>(

// GLSL: #version 450
// GLSL: shared float w0[256];
// GLSL: void main() {
// GLSL: memoryBarrierShared(); barrier();
// GLSL: intBitsToFloat(
// GLSL: floatBitsToInt(

// WGSL: var<workgroup> main_k0_w0: array<f32, 256>;
// WGSL: var<workgroup> main_k1_w0: array<f32, 256>;
// WGSL: fn main_k1(
// WGSL: workgroupBarrier();

// POINT-NOT: __local
// POINT-NOT: barrier
func.func @main(%X: tensor<8x64xf32>) -> (tensor<8xf32>, tensor<8xi32>, tensor<8xf32>) {
  %v, %idx = tang.comprehension (%i) reduce (%j) [8, 64] monoid(argmax) : tensor<8xf32>, tensor<8xi32> {
    %x = tang.read %X[%i, %j] : tensor<8x64xf32>
    %vj = tang.index %j : i32
    tang.yield %x, %vj : f32, i32
  }
  %s = tang.comprehension (%i) reduce (%j) [8, 64] monoid(add) : tensor<8xf32> {
    %x = tang.read %X[%i, %j] : tensor<8x64xf32>
    %sq = arith.mulf %x, %x : f32
    tang.yield %sq : f32
  }
  return %v, %idx, %s : tensor<8xf32>, tensor<8xi32>, tensor<8xf32>
}
