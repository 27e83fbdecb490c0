// RUN: split-file --leading-lines %s %t
// RUN: tang-opt %t/main.mlir --tang-lower-opencl -o /dev/null > %t.cl
// RUN: FileCheck %s < %t.cl
// RUN: not tang-translate --to-opencl %t/arith.mlir 2>&1 | FileCheck %s --check-prefix=ARITH
// RUN: not tang-translate --to-opencl %t/wide.mlir 2>&1 | FileCheck %s --check-prefix=WIDE

// f16 buffers on OpenCL 1.2 without cl_khr_fp16: `__global half *`, read
// by vload_half and written by vstore_half_rte; an f16 value is a float
// holding a half's value, arith.truncf to f16 rounds through a private half.
// CHECK: float tang_round_half(float x) {
// CHECK-NEXT:   ushort h;
// CHECK-NEXT:   vstore_half_rte(x, 0, (__private half *)&h);
// CHECK-NEXT:   return vload_half(0, (__private const half *)&h);
// CHECK: __kernel void main_k0(__global half *restrict a0, __global half *restrict a1) {
// CHECK: float v[[X:[0-9]+]] = vload_half({{.*}}, a0);
// CHECK: float v[[Y:[0-9]+]] = (float)v[[X]];
// CHECK: float v[[P:[0-9]+]] = v[[Y]] * v{{[0-9]+}};
// CHECK: float v[[R:[0-9]+]] = tang_round_half(v[[P]]);
// CHECK: vstore_half_rte(v[[R]], {{.*}}, a1);

//--- main.mlir
func.func @main(%x: tensor<8x16xf16>) -> tensor<8x16xf16> {
  %y = tang.comprehension (%i, %j) [8, 16] : tensor<8x16xf16> {
    %v = tang.read %x[%i, %j] : tensor<8x16xf16>
    %c = arith.constant 2.0 : f16
    %w = arith.mulf %v, %c : f16
    tang.yield %w : f16
  }
  return %y : tensor<8x16xf16>
}

//--- arith.mlir
// Arithmetic in f16 (the kernel form computes 16-bit programs in f32; a
// hand-written one may not): refused, located.
// ARITH: arith.mlir:[[@LINE+6]]:12: error: 'arith.addf' op computes in f16: the OpenCL 1.2 target (no cl_khr_fp16) stores f16 but computes in f32
module attributes {gpu.container_module} {
  gpu.module @tang_kernels {
    gpu.func @k(%a: memref<8xf16>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<8xf16>
      %w = arith.addf %v, %v : f16
      memref.store %w, %a[%c0] : memref<8xf16>
      gpu.return
    }
  }
}

//--- wide.mlir
// f64 rounded to f16 (OpenCL 1.2 rounds only f32 to half): refused.
// WIDE: wide.mlir:[[@LINE+6]]:12: error: 'arith.truncf' op rounds 'f64' to f16: the OpenCL 1.2 target rounds only f32 to f16
module attributes {gpu.container_module} {
  gpu.module @tang_kernels {
    gpu.func @k(%a: memref<8xf64>, %b: memref<8xf16>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<8xf64>
      %w = arith.truncf %v : f64 to f16
      memref.store %w, %b[%c0] : memref<8xf16>
      gpu.return
    }
  }
}
