// RUN: not tang-opt %s --tang-lower-opencl -o /dev/null 2>&1 | FileCheck %s

// bf16 has no OpenCL 1.2 storage: a located diagnostic naming the type and
// the target, at compile time.
// CHECK: tang-lower-opencl-errors.mlir:[[@LINE+3]]:8: error: 'gpu.func' op uses 'bf16': bf16 is not available on the OpenCL 1.2 target; store the program in f16 or f32
// CHECK-NOT: __kernel
func.func @brain(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %y = tang.comprehension (%i) [8] : tensor<8xbf16> {
    %v = tang.read %x[%i] : tensor<8xbf16>
    tang.yield %v : bf16
  }
  return %y : tensor<8xbf16>
}
