// RUN: tang-opt %s --tang-check-target-types="target=glsl" --split-input-file --verify-diagnostics
// RUN: not tang-opt %s --tang-check-target-types="target=metal" 2>&1 | FileCheck %s --check-prefix=BADTARGET

// BADTARGET: Cannot find option named 'metal'

// GLSL refuses an f16 argument at the argument (SPIR-V: the -spirv test).
// expected-error @+1 {{argument #0 of @half uses 'f16', which the GLSL target does not support yet (32-bit int and float, bool)}}
func.func @half(%x: tensor<4xf16>) -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    %v = tang.read %x[%i] : tensor<4xf16>
    %w = arith.extf %v : f16 to f32
    tang.yield %w : f32
  }
  return %y : tensor<4xf32>
}

// -----

// A type the user's op produces, reported at that op, once.
func.func @index64() -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.index' op uses 'i64', which the GLSL target does not support yet (32-bit int and float, bool)}}
    %v = tang.index %i : i64
    %w = arith.sitofp %v : i64 to f32
    tang.yield %w : f32
  }
  return %y : tensor<4xf32>
}
