// RUN: tang-opt %s --split-input-file --tang-lower-metal -verify-diagnostics -o /dev/null

// Metal has no 64-bit float: a diagnostic at the comprehension whose
// kernel needs it, naming the feature.
func.func @main(%x: tensor<8xf64>) -> tensor<8xf64> {
  // expected-error @+1 {{'gpu.func' op uses f64: Metal has no 64-bit float}}
  %y = tang.comprehension (%i) [8] : tensor<8xf64> {
    %v = tang.read %x[%i] : tensor<8xf64>
    tang.yield %v : f64
  }
  return %y : tensor<8xf64>
}

// -----

// bf16 is refused by the Metal target, in its own name.
func.func @main(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  // expected-error @+1 {{'gpu.func' op uses 'bf16': the Metal target does not print bfloat (MSL 3.1) yet; store the program in f16 or f32}}
  %y = tang.comprehension (%i) [8] : tensor<8xbf16> {
    %v = tang.read %x[%i] : tensor<8xbf16>
    tang.yield %v : bf16
  }
  return %y : tensor<8xbf16>
}
