// RUN: tang-opt %s --tang-check-target-types="target=glsl" --split-input-file --verify-diagnostics
// RUN: not tang-opt %s --tang-check-target-types="target=metal" 2>&1 | FileCheck %s --check-prefix=BADTARGET

// BADTARGET: Cannot find option named 'metal'

// GLSL refuses an f64 argument at the argument (SPIR-V: the -spirv test);
// f16 it stores (16-bit storage).
// expected-error @+1 {{argument #0 of @wide uses 'f64', which the GLSL target does not support yet (32-bit int and float, f16 storage, bool)}}
func.func @wide(%x: tensor<4xf64>, %h: tensor<4xf16>) -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    %v = tang.read %x[%i] : tensor<4xf64>
    %w = arith.truncf %v : f64 to f32
    %u = tang.read %h[%i] : tensor<4xf16>
    %e = arith.extf %u : f16 to f32
    %s = arith.addf %w, %e : f32
    tang.yield %s : f32
  }
  return %y : tensor<4xf32>
}

// -----

// A type the user's op produces, reported at that op, once.
func.func @index64() -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.index' op uses 'i64', which the GLSL target does not support yet (32-bit int and float, f16 storage, bool)}}
    %v = tang.index %i : i64
    %w = arith.sitofp %v : i64 to f32
    tang.yield %w : f32
  }
  return %y : tensor<4xf32>
}
