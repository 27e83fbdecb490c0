// A comprehension with no reads (a fill, as `linalg.fill` imports) whose
// constant canonicalisation hoists out of the body crashed every lowering
// (the kernel-form builder looked for the yielded value among the body's).
// Every pipeline lowers it and stores the constant.
// RUN: tang-opt %s --tang-lower-cuda | FileCheck %s --check-prefix=CUDA
// RUN: tang-opt %s --tang-lower-spirv | FileCheck %s --check-prefix=SPIRV
// RUN: tang-opt %s --tang-lower-c -o /dev/null | FileCheck %s --check-prefix=TEXT
// RUN: tang-opt %s --tang-lower-opencl -o /dev/null | FileCheck %s --check-prefix=TEXT
// RUN: tang-opt %s --tang-lower-glsl -o /dev/null | FileCheck %s --check-prefix=TEXT
// RUN: tang-opt %s --tang-lower-metal -o /dev/null | FileCheck %s --check-prefix=TEXT
// RUN: tang-opt %s --tang-lower-wgsl -o /dev/null | FileCheck %s --check-prefix=WGSL

// 0x40200000 is 2.5 in f32 (4 at a time: the pointwise schedule's
// 16-byte vectors; SPIR-V's accesses are of 8 bytes).
// CUDA: st.global.v4.b32 {{.*}}{0f40200000, 0f40200000, 0f40200000, 0f40200000}
// SPIRV: spirv.Constant dense<2.500000e+00> : vector<2xf32>
// SPIRV: spirv.Store "StorageBuffer" {{.*}} : vector<2xf32>
// TEXT: float v{{[0-9]+}} = 2.5000000000000000e+00f;
// WGSL: let v{{[0-9]+}}: f32 = 2.5000000000000000e+00f;
func.func @fill(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = tang.comprehension (%i, %j) [4, 8] : tensor<4x8xf32> {
    %v = arith.constant 2.5 : f32
    tang.yield %v : f32
  }
  %y = tang.comprehension (%i, %j) [4, 8] : tensor<4x8xf32> {
    %a = tang.read %x[%i, %j] : tensor<4x8xf32>
    %b = tang.read %c[%i, %j] : tensor<4x8xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  return %c, %y : tensor<4x8xf32>, tensor<4x8xf32>
}
