// RUN: tang-opt %s -split-input-file -verify-diagnostics

// A tensor monoid declares no identity.
// expected-error @+1 {{'tang.monoid' op a tensor monoid declares no identity (identity []): tang.tensor_scan starts from the first element}}
tang.monoid @m : [tensor<2xf32>] identity [0.0 : f32] {
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  tang.yield %a : tensor<2xf32>
}

// -----

// Tensors and scalars do not mix in a carrier.
// expected-error @+1 {{'tang.monoid' op carrier mixes tensors and scalars: component #1 is 'f32'}}
tang.monoid @m : [tensor<2xf32>, f32] identity [] {
^bb0(%a: tensor<2xf32>, %s: f32, %b: tensor<2xf32>, %t: f32):
  tang.yield %a, %s : tensor<2xf32>, f32
}

// -----

// expected-error @+1 {{'tang.monoid' op tensor carrier component #0 must have a static shape, got 'tensor<?xf32>'}}
tang.monoid @m : [tensor<?xf32>] identity [] {
^bb0(%a: tensor<?xf32>, %b: tensor<?xf32>):
  tang.yield %a : tensor<?xf32>
}

// -----

// A combine computes with function-level ops only.
tang.monoid @m : [tensor<2xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  // expected-error @+1 {{'tensor.empty' op cannot be in a tensor monoid's combine (comprehensions, views, scans, scatters and constants can)}}
  %e = tensor.empty() : tensor<2xf32>
  tang.yield %e : tensor<2xf32>
}

// -----

tang.monoid @s : [f32] identity [0.0 : f32] {
^bb0(%a: f32, %b: f32):
  %c = arith.addf %a, %b : f32
  tang.yield %c : f32
}
func.func @scalar_monoid(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op monoid @s has a scalar carrier: scan scalars with tang.scan}}
  %r = tang.tensor_scan @s(%x : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

tang.monoid @m : [tensor<2xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  tang.yield %a : tensor<2xf32>
}
func.func @wrong_element(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op element #0 ('tensor<4x3xf32>') must be [parallel..., length, 2] of 'f32' (the carrier's component 'tensor<2xf32>')}}
  %r = tang.tensor_scan @m(%x : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

tang.monoid @m : [tensor<2xf32>, tensor<3xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>, %d: tensor<3xf32>):
  tang.yield %a, %b : tensor<2xf32>, tensor<3xf32>
}
func.func @lengths_differ(%x: tensor<4x2xf32>, %y: tensor<5x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op element #1 has parallel and scan dimensions [5] but element #0 has [4]}}
  %r:2 = tang.tensor_scan @m(%x, %y : tensor<4x2xf32>, tensor<5x3xf32>) -> tensor<4x2xf32>, tensor<5x3xf32>
  return %r#0 : tensor<4x2xf32>
}

// -----

tang.monoid @m : [tensor<2xf32>, tensor<3xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<3xf32>, %c: tensor<2xf32>, %d: tensor<3xf32>):
  tang.yield %a, %b : tensor<2xf32>, tensor<3xf32>
}
func.func @one_element(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op monoid @m has 2 carrier components: give as many elements and results, got 1 and 1}}
  %r = tang.tensor_scan @m(%x : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

tang.monoid @m : [tensor<2xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  tang.yield %a : tensor<2xf32>
}
func.func @bad_init(%x: tensor<3x4x2xf32>, %i: tensor<4x2xf32>) -> tensor<3x4x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op init #0 must be [3, 2] of 'f32', got 'tensor<4x2xf32>'}}
  %r = tang.tensor_scan @m(%x : tensor<3x4x2xf32>) init(%i : tensor<4x2xf32>) -> tensor<3x4x2xf32>
  return %r : tensor<3x4x2xf32>
}

// -----

func.func @no_monoid(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op monoid @nothing does not name a tang.monoid}}
  %r = tang.tensor_scan @nothing(%x : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

tang.monoid @m : [tensor<2xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  tang.yield %a : tensor<2xf32>
}
func.func @result_type(%x: tensor<4x2xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op result #0 must have element #0's type 'tensor<4x2xf32>'}}
  %r = tang.tensor_scan @m(%x : tensor<4x2xf32>) -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

// -----

// expected-error @+1 {{'tang.monoid' op tensor carrier component #0 has element type 'i64', not a tang element type}}
tang.monoid @m : [tensor<2xi64>] identity [] {
^bb0(%a: tensor<2xi64>, %b: tensor<2xi64>):
  tang.yield %a : tensor<2xi64>
}

// -----

tang.monoid @m : [tensor<2xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  tang.yield %a : tensor<2xf32>
}
func.func @dynamic_element(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op element #0 must have a static shape, got 'tensor<?x2xf32>'}}
  %r = tang.tensor_scan @m(%x : tensor<?x2xf32>) -> tensor<?x2xf32>
  return %r : tensor<?x2xf32>
}

// -----

tang.monoid @m : [tensor<2xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  tang.yield %a : tensor<2xf32>
}
func.func @init_count(%x: tensor<4x2xf32>, %i: tensor<2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tang.tensor_scan' op init gives 2 tensors but the carrier has 1 components}}
  %r = tang.tensor_scan @m(%x : tensor<4x2xf32>) init(%i, %i : tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

tang.monoid @m : [tensor<2xf32>] identity [] {
^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
  tang.yield %a : tensor<2xf32>
}
func.func @in_a_body(%x: tensor<4x2xf32>) -> tensor<3xf32> {
  %r = tang.comprehension (%i) [3] : tensor<3xf32> {
    // A body computes scalars: its tensors are refused before the scan's
    // own "must be at function level".
    // expected-error @+1 {{'tang.tensor_scan' op in a comprehension body computes scalars, but operand #0 has type 'tensor<4x2xf32>' (tensors enter a body only through tang.read)}}
    %s = tang.tensor_scan @m(%x : tensor<4x2xf32>) -> tensor<4x2xf32>
    %y = tang.read %s[0, 0] : tensor<4x2xf32>
    tang.yield %y : f32
  }
  return %r : tensor<3xf32>
}
