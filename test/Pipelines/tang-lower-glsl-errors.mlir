// RUN: tang-opt %s --split-input-file --tang-lower-glsl -verify-diagnostics -o /dev/null

// Types the GLSL target does not have are refused before any lowering,
// where the program first uses them: the operation the user wrote, not an
// operation of the kernel form.

// An index asked for as i64 (GLSL has no 64-bit integers).
func.func @main(%x: tensor<8xi32>) -> tensor<8xi32> {
  %y = tang.comprehension (%i) [8] : tensor<8xi32> {
    %v = tang.read %x[%i] : tensor<8xi32>
    // expected-error @+1 {{'tang.index' op uses 'i64', which the GLSL target does not support yet (32-bit int and float, bool)}}
    %n = tang.index %i : i64
    %t = arith.trunci %n : i64 to i32
    %w = arith.addi %v, %t : i32
    tang.yield %w : i32
  }
  return %y : tensor<8xi32>
}

// -----

// f16, reported once, at the argument.
// expected-error @+1 {{argument #0 of @main uses 'f16', which the GLSL target does not support yet (32-bit int and float, bool)}}
func.func @main(%x: tensor<8xf16>) -> tensor<8xf16> {
  %y = tang.comprehension (%i) [8] : tensor<8xf16> {
    %v = tang.read %x[%i] : tensor<8xf16>
    tang.yield %v : f16
  }
  return %y : tensor<8xf16>
}
