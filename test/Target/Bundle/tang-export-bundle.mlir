// RUN: tang-opt %s --tang-lower-spirv -o %t.spirv.mlir
// RUN: rm -rf %t && tang-opt %t.spirv.mlir --tang-export-bundle="dir=%t" -o /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json
// RUN: test -s %t/tang_kernels.spv
// RUN: not tang-opt %s --tang-export-bundle="dir=%t.none" 2>&1 | FileCheck %s --check-prefix=NOBINARY
// RUN: not tang-opt %s --tang-export-bundle 2>&1 | FileCheck %s --check-prefix=NODIR

// A compiled module (here SPIR-V) and its host launch sequence become the
// image and the manifest every runtime reads.
// CHECK-DAG: "format": "spirv"
// CHECK-DAG: "image": "tang_kernels.spv"
// CHECK-DAG: "kernel": "main_k0"
// CHECK-DAG: "role": "output"
// Nothing compiled: a located error, not an empty bundle.
// NOBINARY: error: a bundle needs the compiled kernels: exactly one gpu.binary (run gpu-module-to-binary) or spirv.module, found 0 and 0
// NODIR: error: tang-export-bundle: no bundle directory (dir=)
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf32> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf32>
    %c = arith.constant 2.0 : f32
    %w = arith.mulf %v, %c : f32
    tang.yield %w : f32
  }
  return %y : tensor<8x16xf32>
}
