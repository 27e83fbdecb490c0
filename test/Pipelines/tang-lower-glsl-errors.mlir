// RUN: tang-opt %s --split-input-file --tang-lower-glsl -verify-diagnostics -o /dev/null

// Types the GLSL target does not have are refused before any lowering,
// where the program first uses them: the operation the user wrote, not an
// operation of the kernel form.

// An index asked for as i64 (GLSL has no 64-bit integers).
func.func @main(%x: tensor<8xi32>) -> tensor<8xi32> {
  %y = tang.comprehension (%i) [8] : tensor<8xi32> {
    %v = tang.read %x[%i] : tensor<8xi32>
    // expected-error @+1 {{'tang.index' op uses 'i64', which the GLSL target does not support yet (32-bit int and float, f16 storage, bool)}}
    %n = tang.index %i : i64
    %t = arith.trunci %n : i64 to i32
    %w = arith.addi %v, %t : i32
    tang.yield %w : i32
  }
  return %y : tensor<8xi32>
}

// -----

// f64, reported once, at the argument (f16 is 16-bit storage).
// expected-error @+1 {{argument #0 of @main uses 'f64', which the GLSL target does not support yet (32-bit int and float, f16 storage, bool)}}
func.func @main(%x: tensor<8xf64>) -> tensor<8xf64> {
  %y = tang.comprehension (%i) [8] : tensor<8xf64> {
    %v = tang.read %x[%i] : tensor<8xf64>
    tang.yield %v : f64
  }
  return %y : tensor<8xf64>
}
