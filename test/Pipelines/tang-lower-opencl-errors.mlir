// RUN: not tang-opt %s --tang-lower-opencl -o /dev/null 2>&1 | FileCheck %s

// f16 has no OpenCL 1.2 arithmetic on PoCL (no cl_khr_fp16): a located
// diagnostic naming the feature and the target, at compile time.
// CHECK: tang-lower-opencl-errors.mlir:[[@LINE+3]]:8: error: 'gpu.func' op uses 'f16': 16-bit floats are not available on the OpenCL 1.2 target (no cl_khr_fp16 on PoCL)
// CHECK-NOT: __kernel
func.func @half(%x: tensor<8xf16>) -> tensor<8xf16> {
  %y = tang.comprehension (%i) [8] : tensor<8xf16> {
    %v = tang.read %x[%i] : tensor<8xf16>
    tang.yield %v : f16
  }
  return %y : tensor<8xf16>
}
