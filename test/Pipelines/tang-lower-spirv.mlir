// RUN: tang-opt %s --tang-lower-spirv=row-kernels=0 | FileCheck %s
// RUN: rm -rf %t && tang-opt %s --tang-lower-spirv="fuse=1 bundle=%t" -o /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// The kernels become a Vulkan compute spirv.module (one GLCompute entry
// point per kernel with its workgroup size); the host launch sequence stays
// in the kernel form for the bundle.
// CHECK: func.func @main(%{{.*}}: memref<4x64xf32{{.*}}>, %{{.*}}: memref<4x64xf32{{.*}}>)
// CHECK: gpu.launch_func @tang_kernels::@main_k0
// CHECK: spirv.module @__spv__tang_kernels Logical GLSL450
// CHECK: spirv.EntryPoint "GLCompute" @main_k0
// CHECK: spirv.ExecutionMode @main_k0 "LocalSize", 256, 1, 1

// MANIFEST: "chip": "vulkan"
// MANIFEST: "format": "spirv"
// MANIFEST: "kernel": "main_k0"
// MANIFEST: "image": "tang_kernels.spv"

// A row softmax.
func.func @main(%X: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = tang.comprehension (%i, %j) [4, 64] : tensor<4x64xf32> {
    %m = tang.comprehension reduce (%k) [64] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x64xf32>
      tang.yield %x : f32
    }
    %x = tang.read %X[%i, %j] : tensor<4x64xf32>
    %d = arith.subf %x, %m : f32
    %e = math.exp %d : f32
    tang.yield %e : f32
  }
  return %y : tensor<4x64xf32>
}
