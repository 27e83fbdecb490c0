// RUN: tang-opt %s -split-input-file -verify-diagnostics

func.func @not_square(%L: tensor<4x5xf32>, %Y: tensor<4x2xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tang.triangular_solve' op needs a square lower operand, got 'tensor<4x5xf32>'}}
  %X = tang.triangular_solve %L, %Y : tensor<4x5xf32>, tensor<4x2xf32>
  return %X : tensor<4x2xf32>
}

// -----

func.func @rows(%L: tensor<4x4xf32>, %Y: tensor<3x2xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'tang.triangular_solve' op needs the right-hand side [P..., 4, N] of the lower operand's points and rows, got 'tensor<3x2xf32>'}}
  %X = tang.triangular_solve %L, %Y : tensor<4x4xf32>, tensor<3x2xf32>
  return %X : tensor<3x2xf32>
}

// -----

func.func @points(%L: tensor<2x4x4xf32>, %Y: tensor<3x4x2xf32>) -> tensor<3x4x2xf32> {
  // expected-error @+1 {{'tang.triangular_solve' op needs the right-hand side [P..., 4, N] of the lower operand's points and rows, got 'tensor<3x4x2xf32>'}}
  %X = tang.triangular_solve %L, %Y : tensor<2x4x4xf32>, tensor<3x4x2xf32>
  return %X : tensor<3x4x2xf32>
}

// -----

func.func @rank(%L: tensor<4x4xf32>, %Y: tensor<1x4x2xf32>) -> tensor<1x4x2xf32> {
  // expected-error @+1 {{'tang.triangular_solve' op needs [P..., C, C] and [P..., C, N] operands of one rank (at least 2), got 'tensor<4x4xf32>' and 'tensor<1x4x2xf32>'}}
  %X = tang.triangular_solve %L, %Y : tensor<4x4xf32>, tensor<1x4x2xf32>
  return %X : tensor<1x4x2xf32>
}

// -----

func.func @integers(%L: tensor<4x4xi32>, %Y: tensor<4x2xi32>) -> tensor<4x2xi32> {
  // expected-error @+1 {{'tang.triangular_solve' op needs floating-point operands of one element type, got 'tensor<4x4xi32>' and 'tensor<4x2xi32>'}}
  %X = tang.triangular_solve %L, %Y : tensor<4x4xi32>, tensor<4x2xi32>
  return %X : tensor<4x2xi32>
}

// -----

func.func @types(%L: tensor<4x4xf32>, %Y: tensor<4x2xf16>) -> tensor<4x2xf16> {
  // expected-error @+1 {{'tang.triangular_solve' op needs floating-point operands of one element type, got 'tensor<4x4xf32>' and 'tensor<4x2xf16>'}}
  %X = tang.triangular_solve %L, %Y : tensor<4x4xf32>, tensor<4x2xf16>
  return %X : tensor<4x2xf16>
}

// -----

func.func @inside(%L: tensor<4x4xf32>, %Y: tensor<4x2xf32>) -> tensor<3xf32> {
  %c = tang.comprehension (%i) [3] : tensor<3xf32> {
    // expected-error @+1 {{'tang.triangular_solve' op must be at function level (it makes tensors)}}
    %X = tang.triangular_solve %L, %Y : tensor<4x4xf32>, tensor<4x2xf32>
    %z = arith.constant 0.0 : f32
    tang.yield %z : f32
  }
  return %c : tensor<3xf32>
}

// -----

func.func @dynamic(%L: tensor<?x4x4xf32>, %Y: tensor<?x4x2xf32>) -> tensor<?x4x2xf32> {
  // expected-error @+1 {{'tang.triangular_solve' op needs static shapes, got 'tensor<?x4x4xf32>' and 'tensor<?x4x2xf32>'}}
  %X = tang.triangular_solve %L, %Y : tensor<?x4x4xf32>, tensor<?x4x2xf32>
  return %X : tensor<?x4x2xf32>
}
