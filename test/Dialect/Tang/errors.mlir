// RUN: tang-opt %s -split-input-file -verify-diagnostics

//===----------------------------------------------------------------------===//
// tang.comprehension: parser
//===----------------------------------------------------------------------===//

// Unknown builtin monoid name.
func.func @unknown_monoid(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{unknown monoid 'sum'; expected a builtin (add, mul, max, min, and, or, argmax, argmin, softmax_norm, online_softmax) or @symbol}}
  %r = tang.comprehension reduce (%k) [4] monoid(sum) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<f32>
}

// -----

// The extent list must have one entry per index.
func.func @wrong_extent_count(%X: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{expected 2 extents (one per index), found 3}}
  %r = tang.comprehension (%i, %j) [4, 8, 2] : tensor<4x8xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tang.comprehension: verify()
//===----------------------------------------------------------------------===//

// Extents must be positive.
func.func @zero_extent(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op extent of index #0 must be positive, got 0}}
  %r = tang.comprehension reduce (%k) [0] monoid(add) : tensor<f32> {
    %x = arith.constant 1.0 : f32
    tang.yield %x : f32
  }
  return %r : tensor<f32>
}

// -----

// The body must take one block argument per index (generic form).
func.func @body_arg_count() -> tensor<4xf32> {
  // expected-error @+1 {{'tang.comprehension' op body has 2 arguments but the comprehension has 1 indices}}
  %r = "tang.comprehension"() <{parallel_extents = array<i64: 4>, reduced_extents = array<i64>}> ({
  ^bb0(%i: index, %j: index):
    %x = arith.constant 1.0 : f32
    "tang.yield"(%x) : (f32) -> ()
  }) : () -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// The body's block arguments must be of type index (generic form).
func.func @body_arg_type() -> tensor<4xf32> {
  // expected-error @+1 {{'tang.comprehension' op body arguments (the indices) must be 'index', got 'i32'}}
  %r = "tang.comprehension"() <{parallel_extents = array<i64: 4>, reduced_extents = array<i64>}> ({
  ^bb0(%i: i32):
    %x = arith.constant 1.0 : f32
    "tang.yield"(%x) : (f32) -> ()
  }) : () -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Reduced indices need a monoid.
func.func @reduce_without_monoid(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op reduces over 1 indices but names no monoid}}
  %r = tang.comprehension reduce (%k) [4] : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<f32>
}

// -----

// A monoid without reduced indices is meaningless.
func.func @monoid_without_reduce(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.comprehension' op has a monoid but no reduced indices}}
  %r = tang.comprehension (%i) [4] monoid(add) : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// The schedule must tile every index.
func.func @schedule_tile_rank(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.comprehension' op schedule tiles 1 indices but the comprehension has 2}}
  %r = tang.comprehension (%i) reduce (%k) [4, 8] monoid(add) attributes {schedule = #tang.schedule<tile = [2]>} : tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A comprehension must have a result (generic form: the custom syntax needs a type).
func.func @no_results() {
  // expected-error @+1 {{'tang.comprehension' op must have at least one result}}
  "tang.comprehension"() <{parallel_extents = array<i64: 4>, reduced_extents = array<i64>}> ({
  ^bb0(%i: index):
    %x = arith.constant 1.0 : f32
    "tang.yield"(%x) : (f32) -> ()
  }) : () -> ()
  return
}

// -----

// A nested comprehension may not have parallel indices.
func.func @nested_parallel(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.comprehension' op nested in a comprehension body must have no parallel indices (it computes a scalar)}}
    %s = tang.comprehension (%j) [8] : tensor<8xf32> {
      %x = tang.read %X[%i, %j] : tensor<4x8xf32>
      tang.yield %x : f32
    }
    %c = arith.constant 1.0 : f32
    tang.yield %c : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A nested comprehension must produce scalars, not tensors.
func.func @nested_tensor_result(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.comprehension' op nested in a comprehension body must produce scalars, result #0 is 'tensor<f32>'}}
    %s = tang.comprehension reduce (%k) [8] monoid(add) : tensor<f32> {
      %x = tang.read %X[%i, %k] : tensor<4x8xf32>
      tang.yield %x : f32
    }
    %c = arith.constant 1.0 : f32
    tang.yield %c : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A function-level comprehension produces ranked tensors, not scalars.
func.func @toplevel_scalar_result(%X: tensor<4xf32>) -> f32 {
  // expected-error @+1 {{'tang.comprehension' op result #0 must be a ranked tensor, got 'f32'}}
  %r = tang.comprehension reduce (%k) [4] monoid(add) : f32 {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : f32
}

// -----

// Result shapes must equal the parallel extents.
func.func @result_shape(%X: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tang.comprehension' op result #0 has shape [8, 4] but the parallel extents are [4, 8]}}
  %r = tang.comprehension (%i, %j) [4, 8] : tensor<8x4xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %r : tensor<8x4xf32>
}

// -----

// Reduced extents are not part of the result shape.
func.func @result_shape_includes_reduced(%X: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tang.comprehension' op result #0 has shape [4, 8] but the parallel extents are [4]}}
  %r = tang.comprehension (%i) reduce (%k) [4, 8] monoid(add) : tensor<4x8xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4x8xf32>
}

// -----

// Every result's shape is checked, not just the first.
func.func @second_result_shape(%X: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<8xi32>) {
  // expected-error @+1 {{'tang.comprehension' op result #1 has shape [8] but the parallel extents are [4]}}
  %v, %i = tang.comprehension (%i) reduce (%k) [4, 8] monoid(argmax) : tensor<4xf32>, tensor<8xi32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    %ki = tang.index %k : i32
    tang.yield %x, %ki : f32, i32
  }
  return %v, %i : tensor<4xf32>, tensor<8xi32>
}

// -----

//===----------------------------------------------------------------------===//
// tang.comprehension: verifyRegions() (yields against the monoid)
//===----------------------------------------------------------------------===//

// The body must end with tang.yield (gpu.yield is a terminator with no parent
// constraint).
func.func @body_not_yield() -> tensor<4xf32> {
  // expected-error @+1 {{'tang.comprehension' op body must end with 'tang.yield'}}
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    %x = arith.constant 1.0 : f32
    gpu.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A map's yields must match its result element types.
func.func @map_yield_type(%X: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'tang.comprehension' op yield types do not match result element types: body yields ('f32') and results are ('f16')}}
  %r = tang.comprehension (%i) [4] : tensor<4xf16> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf16>
}

// -----

// A map yields one value per result.
func.func @map_yield_count(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.comprehension' op yield types do not match result element types: body yields ('f32', 'f32') and results are ('f32')}}
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x, %x : f32, f32
  }
  return %r : tensor<4xf32>
}

// -----

// add: yield type must match the result element type.
func.func @add_yield_type(%X: tensor<4xf32>) -> tensor<f64> {
  // expected-error @+1 {{'tang.comprehension' op yield type does not match result element type: body yields ('f32') and results are ('f64')}}
  %r = tang.comprehension reduce (%k) [4] monoid(add) : tensor<f64> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<f64>
}

// -----

// max: yield type must match the result element type.
func.func @max_yield_type(%X: tensor<4xi32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op yield type does not match result element type: body yields ('i32') and results are ('f32')}}
  %r = tang.comprehension reduce (%k) [4] monoid(max) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xi32>
    tang.yield %x : i32
  }
  return %r : tensor<f32>
}

// -----

// add takes exactly one yielded value.
func.func @add_two_yields(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid 'add' takes 1 yielded value(s): body yields ('f32', 'f32') and results are ('f32')}}
  %r = tang.comprehension reduce (%k) [4] monoid(add) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x, %x : f32, f32
  }
  return %r : tensor<f32>
}

// -----

// mul gives exactly one result.
func.func @mul_two_results(%X: tensor<4xf32>) -> (tensor<f32>, tensor<f32>) {
  // expected-error @+1 {{'tang.comprehension' op monoid 'mul' gives 1 result(s): body yields ('f32') and results are ('f32', 'f32')}}
  %a, %b = tang.comprehension reduce (%k) [4] monoid(mul) : tensor<f32>, tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %a, %b : tensor<f32>, tensor<f32>
}

// -----

// Builtin monoids combine integer or float scalars, not indices.
func.func @min_index_yield() -> tensor<f32> {
  %r = tang.comprehension reduce (%k) [4] monoid(min) : tensor<f32> {
    // expected-error @+1 {{'tang.comprehension' op yields must be integer or floating-point scalars: body yields ('index') and results are ('f32')}}
    %m = tang.comprehension reduce (%l) [4] monoid(min) : f32 {
      %c = arith.constant 0 : index
      tang.yield %c : index
    }
    tang.yield %m : f32
  }
  return %r : tensor<f32>
}

// -----

// Function-level results hold tang element types only.
func.func @result_index() -> tensor<4xindex> {
  // expected-error @+1 {{'tang.comprehension' op result #0 has element type 'index', not a tang element type (f64, f32, f16, bf16, i32, i8 or i1)}}
  %r = tang.comprehension (%i) [4] : tensor<4xindex> {
    %c = arith.constant 0 : index
    tang.yield %c : index
  }
  return %r : tensor<4xindex>
}

// -----

// and: needs integers.
func.func @and_float(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid 'and' needs matching integer types: body yields ('f32') and results are ('f32')}}
  %r = tang.comprehension reduce (%k) [4] monoid(and) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<f32>
}

// -----

// or: integer yield and result widths must match.
func.func @or_width(%X: tensor<4xi1>) -> tensor<i8> {
  // expected-error @+1 {{'tang.comprehension' op monoid 'or' needs matching integer types: body yields ('i1') and results are ('i8')}}
  %r = tang.comprehension reduce (%k) [4] monoid(or) : tensor<i8> {
    %x = tang.read %X[%k] : tensor<4xi1>
    tang.yield %x : i1
  }
  return %r : tensor<i8>
}

// -----

// argmax takes (value, index): one yield is too few.
func.func @argmax_one_yield(%X: tensor<4xf32>) -> (tensor<f32>, tensor<i32>) {
  // expected-error @+1 {{'tang.comprehension' op monoid 'argmax' takes 2 yielded value(s): body yields ('f32') and results are ('f32', 'i32')}}
  %v, %i = tang.comprehension reduce (%k) [4] monoid(argmax) : tensor<f32>, tensor<i32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %v, %i : tensor<f32>, tensor<i32>
}

// -----

// argmax gives (value, index): one result is too few.
func.func @argmax_one_result(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid 'argmax' gives 2 result(s): body yields ('f32', 'i32') and results are ('f32')}}
  %v = tang.comprehension reduce (%k) [4] monoid(argmax) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    %ki = tang.index %k : i32
    tang.yield %x, %ki : f32, i32
  }
  return %v : tensor<f32>
}

// -----

// argmin: the index component must be an integer.
func.func @argmin_float_index(%X: tensor<4xf32>) -> (tensor<f32>, tensor<f32>) {
  // expected-error @+1 {{'tang.comprehension' op monoid 'argmin' needs (value, integer index) yields matching results: body yields ('f32', 'f32') and results are ('f32', 'f32')}}
  %v, %i = tang.comprehension reduce (%k) [4] monoid(argmin) : tensor<f32>, tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    %ki = tang.index %k : f32
    tang.yield %x, %ki : f32, f32
  }
  return %v, %i : tensor<f32>, tensor<f32>
}

// -----

// argmax: the index result type must match the yielded index type.
func.func @argmax_index_type(%X: tensor<4xf32>) -> (tensor<f32>, tensor<i8>) {
  // expected-error @+1 {{'tang.comprehension' op monoid 'argmax' needs (value, integer index) yields matching results: body yields ('f32', 'i32') and results are ('f32', 'i8')}}
  %v, %i = tang.comprehension reduce (%k) [4] monoid(argmax) : tensor<f32>, tensor<i8> {
    %x = tang.read %X[%k] : tensor<4xf32>
    %ki = tang.index %k : i32
    tang.yield %x, %ki : f32, i32
  }
  return %v, %i : tensor<f32>, tensor<i8>
}

// -----

// softmax_norm gives (max, sum of exp): one result is too few.
func.func @softmax_norm_one_result(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid 'softmax_norm' gives 2 result(s): body yields ('f32') and results are ('f32')}}
  %m = tang.comprehension reduce (%k) [4] monoid(softmax_norm) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %m : tensor<f32>
}

// -----

// softmax_norm needs a float yield.
func.func @softmax_norm_int(%X: tensor<4xi32>) -> (tensor<i32>, tensor<i32>) {
  // expected-error @+1 {{'tang.comprehension' op monoid 'softmax_norm' needs a float yield and (max, sum of exp) results of its type: body yields ('i32') and results are ('i32', 'i32')}}
  %m, %l = tang.comprehension reduce (%k) [4] monoid(softmax_norm) : tensor<i32>, tensor<i32> {
    %x = tang.read %X[%k] : tensor<4xi32>
    tang.yield %x : i32
  }
  return %m, %l : tensor<i32>, tensor<i32>
}

// -----

// softmax_norm: both results have the yield's type.
func.func @softmax_norm_result_type(%X: tensor<4xf32>) -> (tensor<f32>, tensor<f64>) {
  // expected-error @+1 {{'tang.comprehension' op monoid 'softmax_norm' needs a float yield and (max, sum of exp) results of its type: body yields ('f32') and results are ('f32', 'f64')}}
  %m, %l = tang.comprehension reduce (%k) [4] monoid(softmax_norm) : tensor<f32>, tensor<f64> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %m, %l : tensor<f32>, tensor<f64>
}

// -----

// online_softmax takes (score, value): one yield is too few.
func.func @online_softmax_one_yield(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid 'online_softmax' takes 2 yielded value(s): body yields ('f32') and results are ('f32')}}
  %o = tang.comprehension reduce (%k) [4] monoid(online_softmax) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %o : tensor<f32>
}

// -----

// online_softmax: the result has the value's type, not the score's.
func.func @online_softmax_result_type(%S: tensor<4xf32>, %V: tensor<4xf64>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid 'online_softmax' needs float (score, value) yields and a result of the value's type: body yields ('f32', 'f64') and results are ('f32')}}
  %o = tang.comprehension reduce (%k) [4] monoid(online_softmax) : tensor<f32> {
    %s = tang.read %S[%k] : tensor<4xf32>
    %v = tang.read %V[%k] : tensor<4xf64>
    tang.yield %s, %v : f32, f64
  }
  return %o : tensor<f32>
}

// -----

// online_softmax: the score must be a float.
func.func @online_softmax_int_score(%S: tensor<4xi32>, %V: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid 'online_softmax' needs float (score, value) yields and a result of the value's type: body yields ('i32', 'f32') and results are ('f32')}}
  %o = tang.comprehension reduce (%k) [4] monoid(online_softmax) : tensor<f32> {
    %s = tang.read %S[%k] : tensor<4xi32>
    %v = tang.read %V[%k] : tensor<4xf32>
    tang.yield %s, %v : i32, f32
  }
  return %o : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// tang.comprehension: verifySymbolUses() (user monoids)
//===----------------------------------------------------------------------===//

// The monoid symbol must exist.
func.func @monoid_symbol_missing(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid @nope does not name a tang.monoid}}
  %r = tang.comprehension reduce (%k) [4] monoid(@nope) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<f32>
}

// -----

// The monoid symbol must name a tang.monoid, not some other symbol.
func.func private @not_a_monoid()
func.func @monoid_symbol_func(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op monoid @not_a_monoid does not name a tang.monoid}}
  %r = tang.comprehension reduce (%k) [4] monoid(@not_a_monoid) : tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<f32>
}

// -----

// Yields must match a user monoid's carrier.
tang.monoid @pair : [f32, i32] identity [0.0 : f32, 0 : i32] commutative {
^bb0(%a0: f32, %a1: i32, %b0: f32, %b1: i32):
  tang.yield %a0, %a1 : f32, i32
}
func.func @monoid_symbol_yield(%X: tensor<4xf32>) -> (tensor<f32>, tensor<i32>) {
  // expected-error @+1 {{'tang.comprehension' op yield types do not match the carrier of monoid @pair}}
  %a, %b = tang.comprehension reduce (%k) [4] monoid(@pair) : tensor<f32>, tensor<i32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %a, %b : tensor<f32>, tensor<i32>
}

// -----

// Results must match a user monoid's carrier.
tang.monoid @pair : [f32, i32] identity [0.0 : f32, 0 : i32] commutative {
^bb0(%a0: f32, %a1: i32, %b0: f32, %b1: i32):
  tang.yield %a0, %a1 : f32, i32
}
func.func @monoid_symbol_result(%X: tensor<4xf32>) -> (tensor<f32>, tensor<f32>) {
  // expected-error @+1 {{'tang.comprehension' op result element types do not match the carrier of monoid @pair}}
  %a, %b = tang.comprehension reduce (%k) [4] monoid(@pair) : tensor<f32>, tensor<f32> {
    %x = tang.read %X[%k] : tensor<4xf32>
    %ki = tang.index %k : i32
    tang.yield %x, %ki : f32, i32
  }
  return %a, %b : tensor<f32>, tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// tang.read
//===----------------------------------------------------------------------===//

// One index expression per tensor dimension: too few.
func.func @read_too_few(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op reads a rank-2 tensor with 1 index expressions}}
    %x = tang.read %X[%i] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// One index expression per tensor dimension: a rank-0 tensor takes none.
func.func @read_rank0_with_index(%Z: tensor<f32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op reads a rank-0 tensor with 1 index expressions}}
    %x = tang.read %Z[%i] : tensor<f32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Index expressions may not use affine symbols.
func.func @read_symbol(%X: tensor<4xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op index expressions may not use symbols}}
    %x = tang.read %X[symbol(%i)] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// The map's dimension count must equal the number of index operands (generic form).
func.func @read_map_dims(%X: tensor<4xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op map has 2 dimensions but 1 index operands}}
    %x = "tang.read"(%X, %i) <{map = affine_map<(d0, d1) -> (d0)>}> : (tensor<4xf32>, index) -> f32
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// The result is the tensor's element type (generic form).
func.func @read_result_type(%X: tensor<4xf32>) -> tensor<4xf16> {
  %r = tang.comprehension (%i) [4] : tensor<4xf16> {
    // expected-error @+1 {{'tang.read' op result type 'f16' is not the element type of 'tensor<4xf32>'}}
    %x = "tang.read"(%X, %i) <{map = affine_map<(d0) -> (d0)>}> : (tensor<4xf32>, index) -> f16
    tang.yield %x : f16
  }
  return %r : tensor<4xf16>
}

// -----

// Index operands must be iteration indices: not the result of arith.addi.
func.func @read_arith_index(%X: tensor<8xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'arith.addi' op uses iteration index #0; indices are used only by tang.read, tang.gather (as dimensions) and tang.index (use tang.index to compute with an index)}}
    %j = arith.addi %i, %c1 : index
    %x = tang.read %X[%j] : tensor<8xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Index operands must be iteration indices: not a function argument.
func.func @read_func_arg_index(%X: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op index operand #1 is not an iteration index of an enclosing comprehension}}
    %x = tang.read %X[%i + %n] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Index operands must be iteration indices: not an scf.for induction variable.
func.func @read_scf_iv(%X: tensor<4xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0.0 : f32
    %s = scf.for %iv = %c0 to %c4 step %c1 iter_args(%acc = %z) -> f32 {
      // expected-error @+1 {{'tang.read' op index operand #0 is not an iteration index of an enclosing comprehension}}
      %x = tang.read %X[%iv] : tensor<4xf32>
      %a = arith.addf %acc, %x : f32
      scf.yield %a : f32
    }
    tang.yield %s : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A read outside any comprehension body.
func.func @read_outside(%X: tensor<4xf32>, %n: index) -> f32 {
  // expected-error @+1 {{'tang.read' op must be inside a comprehension body}}
  %x = tang.read %X[%n] : tensor<4xf32>
  return %x : f32
}

// -----

// The index of a sibling comprehension is not in scope (caught by the parser).
func.func @read_sibling_index(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    %a = tang.comprehension reduce (%k) [8] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x8xf32>
      tang.yield %x : f32
    }
    %b = tang.comprehension reduce (%l) [8] monoid(max) : f32 {
      // expected-error @+1 {{use of undeclared SSA value name}}
      %x = tang.read %X[%i, %k] : tensor<4x8xf32>
      tang.yield %x : f32
    }
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Reads must stay in bounds over the whole domain: %i + 1 reaches 4.
func.func @read_oob_high(%X: tensor<4xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op index expression #0 (d0 + 1) ranges over [1, 4], out of bounds for dimension 0 of size 4}}
    %x = tang.read %X[%i + 1] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Reads must stay in bounds over the whole domain: %i - 1 reaches -1.
func.func @read_oob_negative(%X: tensor<4xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op index expression #0 (d0 - 1) ranges over [-1, 2], out of bounds for dimension 0 of size 4}}
    %x = tang.read %X[%i - 1] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Bounds use the extents of enclosing comprehensions' indices too: %i + %k reaches 10.
func.func @read_oob_nested(%X: tensor<8xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    %s = tang.comprehension reduce (%k) [8] monoid(add) : f32 {
      // expected-error @+1 {{'tang.read' op index expression #0 (d0 + d1) ranges over [0, 10], out of bounds for dimension 0 of size 8}}
      %x = tang.read %X[%i + %k] : tensor<8xf32>
      tang.yield %x : f32
    }
    tang.yield %s : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A strided read: %i * 2 + 1 reaches 7 in a dimension of size 7.
func.func @read_oob_strided(%X: tensor<4x7xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op index expression #1 (d0 * 2 + 1) ranges over [1, 7], out of bounds for dimension 1 of size 7}}
    %x = tang.read %X[%i, %i * 2 + 1] : tensor<4x7xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A constant index out of bounds.
func.func @read_oob_constant(%X: tensor<4x3xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op index expression #1 (3) ranges over [3, 3], out of bounds for dimension 1 of size 3}}
    %x = tang.read %X[%i, 3] : tensor<4x3xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// ODS: tensors of i64 are not tang tensors.
func.func @read_i64(%X: tensor<4xi64>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op operand #0 must be ranked tensor of 64-bit float or 32-bit float or 16-bit float or bfloat16 type or 32-bit signless integer or 8-bit signless integer or 1-bit signless integer values, but got 'tensor<4xi64>'}}
    %x = tang.read %X[%i] : tensor<4xi64>
    %f = arith.sitofp %x : i64 to f32
    tang.yield %f : f32
  }
  return %r : tensor<4xf32>
}

// -----

// ODS: tensors of f8 are not tang tensors.
func.func @read_f8(%X: tensor<4xf8E4M3FN>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.read' op operand #0 must be ranked tensor of}}
    %x = tang.read %X[%i] : tensor<4xf8E4M3FN>
    %f = arith.extf %x : f8E4M3FN to f32
    tang.yield %f : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Function-level results hold tang element types only: not f8.
func.func @result_f8() -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'tang.comprehension' op result #0 has element type 'f8E4M3FN'}}
  %r = tang.comprehension (%i) [4] : tensor<4xf8E4M3FN> {
    %c = arith.constant 1.0 : f8E4M3FN
    tang.yield %c : f8E4M3FN
  }
  return %r : tensor<4xf8E4M3FN>
}

// -----

// ODS: the comprehension body is a single-block region (generic form).
func.func @empty_body() -> tensor<4xf32> {
  // expected-error @+1 {{'tang.comprehension' op region #0 ('body') failed to verify constraint: region with 1 blocks}}
  %r = "tang.comprehension"() <{parallel_extents = array<i64: 4>, reduced_extents = array<i64>}> ({
  }) : () -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// ODS: the monoid attribute is a builtin monoid or a flat symbol (generic form).
func.func @nested_symbol_monoid(%X: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'tang.comprehension' op attribute 'monoid' failed to satisfy constraint: a builtin monoid or flat symbol reference attribute}}
  %r = "tang.comprehension"() <{monoid = @a::@b, parallel_extents = array<i64>, reduced_extents = array<i64: 4>}> ({
  ^bb0(%k: index):
    %x = tang.read %X[%k] : tensor<4xf32>
    "tang.yield"(%x) : (f32) -> ()
  }) : () -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// Parser: tang.read needs a ranked tensor type.
func.func @read_unranked(%X: tensor<*xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{invalid kind of type specified}}
    %x = tang.read %X[%i] : tensor<*xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tang.view
//===----------------------------------------------------------------------===//

// A view keeps the element type.
func.func @view_element_type(%A: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'tang.view' op changes the element type from 'f32' to 'f16'}}
  %V = tang.view %A by affine_map<(d0) -> (d0)> : tensor<4xf32> to tensor<4xf16>
  return %V : tensor<4xf16>
}

// -----

// View maps may not use symbols.
func.func @view_symbol(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.view' op map may not use symbols}}
  %V = tang.view %A by affine_map<(d0)[s0] -> (d0 + s0)> : tensor<4xf32> to tensor<4xf32>
  return %V : tensor<4xf32>
}

// -----

// The map takes one coordinate per view dimension.
func.func @view_dims(%A: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tang.view' op map takes 3 coordinates but the view has rank 2}}
  %V = tang.view %A by affine_map<(d0, d1, d2) -> (d1, d0)> : tensor<4x8xf32> to tensor<8x4xf32>
  return %V : tensor<8x4xf32>
}

// -----

// The map gives one coordinate per source dimension.
func.func @view_results(%A: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'tang.view' op map gives 1 coordinates but the source has rank 2}}
  %V = tang.view %A by affine_map<(d0, d1) -> (d1)> : tensor<4x8xf32> to tensor<8x4xf32>
  return %V : tensor<8x4xf32>
}

// -----

// Views need static shapes.
func.func @view_dynamic(%A: tensor<?xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.view' op needs static shapes (symbolic extents are not supported yet)}}
  %V = tang.view %A by affine_map<(d0) -> (d0)> : tensor<?xf32> to tensor<4xf32>
  return %V : tensor<4xf32>
}

// -----

// A transpose view with the wrong result shape is out of bounds.
func.func @view_oob_transpose(%A: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tang.view' op view coordinate #0 (d1) ranges over [0, 7], out of bounds for dimension 0 of size 4}}
  %V = tang.view %A by affine_map<(d0, d1) -> (d1, d0)> : tensor<4x8xf32> to tensor<4x8xf32>
  return %V : tensor<4x8xf32>
}

// -----

// A sliding window too large for its source is out of bounds.
func.func @view_oob_window(%I: tensor<10x10xf32>) -> tensor<9x8x3x3xf32> {
  // expected-error @+1 {{'tang.view' op view coordinate #0 (d0 + d2) ranges over [0, 10], out of bounds for dimension 0 of size 10}}
  %W = tang.view %I by affine_map<(h, w, r, s) -> (h + r, w + s)> : tensor<10x10xf32> to tensor<9x8x3x3xf32>
  return %W : tensor<9x8x3x3xf32>
}

// -----

// A reversed view that goes negative is out of bounds.
func.func @view_oob_negative(%A: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.view' op view coordinate #0 (-d0 + 2) ranges over [-1, 2], out of bounds for dimension 0 of size 4}}
  %V = tang.view %A by affine_map<(d0) -> (2 - d0)> : tensor<4xf32> to tensor<4xf32>
  return %V : tensor<4xf32>
}

// -----

// ODS: views of unsupported element types are rejected.
func.func @view_i64(%A: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'tang.view' op operand #0 must be ranked tensor of}}
  %V = tang.view %A by affine_map<(d0) -> (d0)> : tensor<4xi64> to tensor<4xi64>
  return %V : tensor<4xi64>
}

// -----

//===----------------------------------------------------------------------===//
// tang.index
//===----------------------------------------------------------------------===//

// tang.index takes an iteration index of an enclosing comprehension.
func.func @index_func_arg(%n: index) -> tensor<4xi32> {
  %r = tang.comprehension (%i) [4] : tensor<4xi32> {
    // expected-error @+1 {{'tang.index' op index operand #0 is not an iteration index of an enclosing comprehension}}
    %v = tang.index %n : i32
    tang.yield %v : i32
  }
  return %r : tensor<4xi32>
}

// -----

// ODS: tang.index produces a scalar, not a vector.
func.func @index_vector() -> tensor<4xi32> {
  %r = tang.comprehension (%i) [4] : tensor<4xi32> {
    // expected-error @+1 {{'tang.index' op result #0 must be signless integer or floating-point, but got 'vector<4xi32>'}}
    %v = tang.index %i : vector<4xi32>
    %c = arith.constant 1 : i32
    tang.yield %c : i32
  }
  return %r : tensor<4xi32>
}

// -----

// ODS: tang.index produces an integer or float, not an index.
func.func @index_index() -> tensor<4xi32> {
  %r = tang.comprehension (%i) [4] : tensor<4xi32> {
    // expected-error @+1 {{'tang.index' op result #0 must be signless integer or floating-point, but got 'index'}}
    %v = tang.index %i : index
    %c = arith.constant 1 : i32
    tang.yield %c : i32
  }
  return %r : tensor<4xi32>
}

// -----

//===----------------------------------------------------------------------===//
// tang.yield
//===----------------------------------------------------------------------===//

// tang.yield only terminates comprehension bodies and monoid combines.
func.func @yield_in_func(%x: f32) {
  // expected-error @+1 {{'tang.yield' op expects parent op to be one of 'tang.comprehension, tang.monoid, tang.scan'}}
  tang.yield %x : f32
}

// -----

//===----------------------------------------------------------------------===//
// tang.monoid
//===----------------------------------------------------------------------===//

// The carrier must not be empty.
// expected-error @+1 {{'tang.monoid' op carrier must have at least one component}}
tang.monoid @empty : [] identity [] {
^bb0:
  tang.yield
}

// -----

// Carrier components are integer or float scalars.
// expected-error @+1 {{'tang.monoid' op carrier components must be integer or floating-point scalars, got 'index'}}
tang.monoid @idx : [index] identity [0 : index] {
^bb0(%a: index, %b: index):
  tang.yield %a : index
}

// -----

// One identity component per carrier component.
// expected-error @+1 {{'tang.monoid' op identity has 1 components but the carrier has 2}}
tang.monoid @short_identity : [f32, f32] identity [0.0 : f32] {
^bb0(%a0: f32, %a1: f32, %b0: f32, %b1: f32):
  tang.yield %a0, %a1 : f32, f32
}

// -----

// Identity components are integer or float constants.
// expected-error @+1 {{'tang.monoid' op identity component #0 must be an integer or float constant}}
tang.monoid @string_identity : [f32] identity ["zero"] {
^bb0(%a: f32, %b: f32):
  tang.yield %a : f32
}

// -----

// Identity components have the carrier's types.
// expected-error @+1 {{'tang.monoid' op identity component #1 has type 'f32' but the carrier's is 'f64'}}
tang.monoid @identity_type : [f32, f64] identity [0.0 : f32, 0.0 : f32] {
^bb0(%a0: f32, %a1: f64, %b0: f32, %b1: f64):
  tang.yield %a0, %a1 : f32, f64
}

// -----

// combine takes two carrier values: wrong argument count.
// expected-error @+1 {{'tang.monoid' op combine must take two carrier values (2 arguments of the carrier types), got 1 arguments}}
tang.monoid @combine_arity : [f32] identity [0.0 : f32] {
^bb0(%a: f32):
  tang.yield %a : f32
}

// -----

// combine takes two carrier values: wrong argument types.
// expected-error @+1 {{'tang.monoid' op combine must take two carrier values (4 arguments of the carrier types), got 4 arguments}}
tang.monoid @combine_types : [f32, i32] identity [0.0 : f32, 0 : i32] {
^bb0(%a0: f32, %a1: i32, %b0: i32, %b1: f32):
  tang.yield %a0, %a1 : f32, i32
}

// -----

// combine must end with tang.yield (gpu.yield is a terminator with no parent
// constraint).
// expected-error @+1 {{'tang.monoid' op combine must end with 'tang.yield'}}
tang.monoid @combine_terminator : [f32] identity [0.0 : f32] {
^bb0(%a: f32, %b: f32):
  gpu.yield %a : f32
}

// -----

// combine must yield the carrier types.
// expected-error @+1 {{'tang.monoid' op combine must yield the carrier types}}
tang.monoid @combine_yield : [f32, i32] identity [0.0 : f32, 0 : i32] {
^bb0(%a0: f32, %a1: i32, %b0: f32, %b1: i32):
  tang.yield %a0 : f32
}

// -----

// ODS: the carrier is an array of types (generic form).
// expected-error @+1 {{'tang.monoid' op attribute 'carrier' failed to satisfy constraint: type array attribute}}
"tang.monoid"() <{carrier = [0 : i32], identity = [0 : i32], sym_name = "not_types"}> ({
^bb0(%a: i32, %b: i32):
  tang.yield %a : i32
}) : () -> ()

// -----

//===----------------------------------------------------------------------===//
// #tang.schedule: parser
//===----------------------------------------------------------------------===//

// Unknown field names are rejected.
func.func @schedule_unknown_field(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown schedule field 'tiles'; expected tile, mapping, threads, vector, stages, storage, accumulate, memory, kernel, mma, tma, warp_specialize, persistent, group_m or split_k}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tiles = [4]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Kernel kinds and tensor-core kinds are keywords of their enums.
func.func @schedule_unknown_kernel(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown kernel kind 'gemm'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], kernel = gemm>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @schedule_unknown_mma(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown tensor-core kind 'wmma'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], kernel = flash, mma = wmma>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @schedule_bad_bool(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected true or false, got 'yes'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], tma = yes>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A tensor-core kernel names its instructions; others have none (flash
// and score kernels may: without, they are the SIMT ones).
func.func @schedule_contraction_without_mma(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule of a contraction kernel needs mma = mma_sync or wgmma}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], kernel = contraction>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @schedule_simt_with_mma(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule of a simt kernel takes no mma}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], kernel = simt, mma = wgmma>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Bulk copies, warp specialisation and persistent grids are wgmma's.
func.func @schedule_tma_on_mma_sync(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{only wgmma kernels have}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], kernel = contraction, mma = mma_sync, tma = true>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Split k belongs to contractions and column reductions, and not to a
// persistent grid.
func.func @schedule_split_k_on_flash(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule split_k is a contraction's or a column reduction's (at least 1), got 2 on a flash kernel}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], kernel = flash, mma = wgmma, split_k = 2>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @schedule_split_k_zero(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule split_k is a contraction's or a column reduction's (at least 1), got 0}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], split_k = 0>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

func.func @schedule_split_k_persistent(%A: tensor<64x64xbf16>, %B: tensor<64x64xbf16>) -> tensor<64x64xf32> {
  // expected-error @+1 {{schedule split_k = 2 with a persistent grid}}
  %r = tang.comprehension (%i, %j) reduce (%k) [64, 64, 64] monoid(add) attributes {schedule = #tang.schedule<tile = [64, 64, 64], threads = [4, 32, 1], vector = 8, stages = 3, memory = [shared, shared, shared], kernel = contraction, mma = wgmma, tma = true, warp_specialize = true, persistent = true, split_k = 2>} : tensor<64x64xf32> {
    %a = tang.read %A[%i, %k] : tensor<64x64xbf16>
    %b = tang.read %B[%k, %j] : tensor<64x64xbf16>
    %af = arith.extf %a : bf16 to f32
    %bf = arith.extf %b : bf16 to f32
    %p = arith.mulf %af, %bf : f32
    tang.yield %p : f32
  }
  return %r : tensor<64x64xf32>
}

// -----

// Tile rasterisation belongs to contractions.
func.func @schedule_group_m_on_simt(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule group_m is a contraction's (at least 1), got 4 on a simt kernel}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], kernel = simt, group_m = 4>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A field may appear once.
func.func @schedule_duplicate_field(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{duplicate schedule field 'vector'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], vector = 2, vector = 4>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// tile is required.
func.func @schedule_missing_tile(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule needs a 'tile' field}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<vector = 4>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Mappings are processor names.
func.func @schedule_unknown_mapping(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown mapping 'block_w'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], mapping = [block_w]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Memory levels are global, shared or register.
func.func @schedule_unknown_memory(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown memory level 'texture'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], memory = [texture]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// #tang.schedule: ScheduleAttr::verify
//===----------------------------------------------------------------------===//

// tile must not be empty.
func.func @schedule_empty_tile(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule tile must have one size per index}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = []>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Tile sizes are positive.
func.func @schedule_zero_tile(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule tile sizes must be positive, got 0}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4, 0]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// One mapping per tiled index.
func.func @schedule_mapping_count(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule mapping has 1 entries but tile has 2}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4, 4], mapping = [block_x]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Several indices may share block_z only with tiles of 1 (a product's
// batch indices, flattened).
func.func @schedule_block_z_twice(%X: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{schedule maps two indices to 'block_z' (several only with tiles of 1)}}
  %r = tang.comprehension (%i, %j) [4, 4] attributes {schedule = #tang.schedule<tile = [2, 1], mapping = [block_z, block_z]>} : tensor<4x4xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4x4xf32>
}

// -----

// A hardware dimension carries at most one index.
func.func @schedule_mapping_twice(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule maps two indices to 'thread_x'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4, 4, 4], mapping = [thread_x, serial, thread_x]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Vector widths are powers of two up to 16.
func.func @schedule_vector_width(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule vector width must be 1, 2, 4, 8 or 16, got 3}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], vector = 3>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// At least one pipeline stage.
func.func @schedule_zero_stages(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule needs 1 to 16 stages, got 0}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], stages = 0>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Storage is a tang element type.
func.func @schedule_storage_type(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule storage type must be a tang element type, got 'i64'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], storage = i64>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Accumulation needs a wide enough type: not i8.
func.func @schedule_accumulate_type(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule accumulate type must be f64, f32, f16, bf16 or i32, got 'i8'}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], accumulate = i8>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Storage and accumulation agree on float vs integer.
func.func @schedule_float_int_mix(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule accumulates 'f16' in 'i32': storage and accumulate must both be floating-point or both integer}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], storage = f16, accumulate = i32>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Accumulation is at least as precise as storage.
func.func @schedule_less_precise(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule accumulates 'f32' in 'bf16', which is less precise}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], storage = f32, accumulate = bf16>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// One memory level per stage.
func.func @schedule_memory_count(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule has 2 stages but 1 memory levels}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], stages = 2, memory = [global]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Deeper pipelines than 16 stages are rejected before anything is allocated.
func.func @schedule_huge_stages(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule needs 1 to 16 stages, got 4611686018427387904}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], stages = 4611686018427387904>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// An index expression whose range overflows int64 is out of bounds, not wrapped.
func.func @read_overflow(%X: tensor<1xf32>) -> tensor<1xf32> {
  %r = tang.comprehension (%i) reduce (%k) [1, 5] monoid(add) : tensor<1xf32> {
    // expected-error @+1 {{'tang.read' op index expression #0 (d0 * 4611686018427387904) ranges over}}
    %x = tang.read %X[%k * 4611686018427387904] : tensor<1xf32>
    tang.yield %x : f32
  }
  return %r : tensor<1xf32>
}

// -----

// A view coordinate whose range overflows int64 is out of bounds, not wrapped.
func.func @view_overflow(%X: tensor<1xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'tang.view' op view coordinate #0 (d0 * 4611686018427387904) ranges over}}
  %V = tang.view %X by affine_map<(d0) -> (d0 * 4611686018427387904)> : tensor<1xf32> to tensor<5xf32>
  return %V : tensor<5xf32>
}

// -----

// A read over a symbolic extent that leaves the tensor for every size.
func.func @read_past_every_size(%X: tensor<?x4xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %X, %c0 : tensor<?x4xf32>
  %s = tang.comprehension (%i) reduce (%j) [%n, 4] monoid(add) : tensor<?xf32> {
    // expected-error @+1 {{'tang.read' op is out of bounds for every size: index expression #0 (d0 + 1), up to dim 0 of %arg0, stays below dimension 0 (dim 0 of %arg0) fails}}
    %x = tang.read %X[%i + 1, %j] : tensor<?x4xf32>
    tang.yield %x : f32
  }
  return %s : tensor<?xf32>
}

// -----

// An extent is a function-level size, not a value computed in a body.
func.func @extent_from_data(%X: tensor<4x4xf32>, %L: tensor<4xi32>) -> tensor<4xf32> {
  %s = tang.comprehension (%i) [4] : tensor<4xf32> {
    %l = tang.read %L[%i] : tensor<4xi32>
    %n = arith.index_cast %l : i32 to index
    // expected-error @+1 {{'tang.comprehension' op extent of index #0 is not a size: a size is a function-level value, not one computed in a body}}
    %r = tang.comprehension reduce (%j) [%n] monoid(add) : f32 {
      %x = tang.read %X[%i, %j] : tensor<4x4xf32>
      tang.yield %x : f32
    }
    tang.yield %r : f32
  }
  return %s : tensor<4xf32>
}

// -----

func.func @extent_product(%X: tensor<64xf32>, %a: index, %b: index) -> tensor<?xf32> {
  %n = arith.muli %a, %b : index
  // expected-error @+1 {{'tang.comprehension' op extent of index #0 is not a size: a product of two symbolic sizes is not affine}}
  %s = tang.comprehension (%i) [%n] : tensor<?xf32> {
    %x = tang.read %X[%i] : tensor<64xf32>
    tang.yield %x : f32
  }
  return %s : tensor<?xf32>
}

// -----

func.func @extent_not_a_size_op(%X: tensor<64xf32>, %a: index) -> tensor<?xf32> {
  %c2 = arith.constant 2 : index
  %n = arith.divui %a, %c2 : index
  // expected-error @+1 {{'tang.comprehension' op extent of index #0 is not a size: 'arith.divui' is not a size expression (index arguments, tensor.dim, constants, arith.addi/subi, arith.muli by a constant)}}
  %s = tang.comprehension (%i) [%n] : tensor<?xf32> {
    %x = tang.read %X[%i] : tensor<64xf32>
    tang.yield %x : f32
  }
  return %s : tensor<?xf32>
}

// -----

func.func @extent_zero(%X: tensor<64xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tang.comprehension' op extent of index #0 must be positive, got 0}}
  %s = tang.comprehension (%i) [%c0] : tensor<?xf32> {
    %x = tang.read %X[%i] : tensor<64xf32>
    tang.yield %x : f32
  }
  return %s : tensor<?xf32>
}

// -----

func.func @symbolic_result_static(%X: tensor<64xf32>, %n: index) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.comprehension' op result #0 has shape [4] but the parallel extents are [?] (a symbolic extent gives a '?' dimension)}}
  %s = tang.comprehension (%i) [%n] : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<64xf32>
    tang.yield %x : f32
  }
  return %s : tensor<4xf32>
}

// -----

func.func @symbolic_not_linear(%X: tensor<64xf32>, %n: index) -> tensor<?xf32> {
  %s = tang.comprehension (%i) [%n] : tensor<?xf32> {
    // expected-error @+1 {{'tang.read' op coordinate #0 (d0 floordiv 2) ranges over a symbolic extent and is not linear in the indices, so its bounds cannot be checked}}
    %x = tang.read %X[%i floordiv 2] : tensor<64xf32>
    tang.yield %x : f32
  }
  return %s : tensor<?xf32>
}

// -----

func.func @scan_symbolic(%X: tensor<4x16xf32>, %n: index) -> tensor<4x16xf32> {
  // expected-error @+1 {{symbolic extents are supported on tang.comprehension only}}
  %y = tang.scan (%b) along (%t) [4, %n] monoid(add) : tensor<4x16xf32> {
    %x = tang.read %X[%b, %t] : tensor<4x16xf32>
    tang.yield %x : f32
  }
  return %y : tensor<4x16xf32>
}

// -----

// A body is a scalar graph: tensors enter only through tang.read.
func.func @body_tensor_operand(%X: tensor<4xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'arith.addf' op in a comprehension body computes scalars, but operand #0 has type 'tensor<4xf32>' (tensors enter a body only through tang.read)}}
    %t = arith.addf %X, %X : tensor<4xf32>
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A view inside a body would produce a tensor there.
func.func @body_view(%X: tensor<4xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.view' op in a comprehension body computes scalars, but operand #0 has type 'tensor<4xf32>'}}
    %v = tang.view %X by affine_map<(d0) -> (3 - d0)> : tensor<4xf32> to tensor<4xf32>
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// A body op may not produce a tensor either.
func.func @body_tensor_result(%X: tensor<4xf32>) -> tensor<4xf32> {
  %r = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'arith.constant' op in a comprehension body computes scalars, but result #0 has type 'tensor<4xf32>'}}
    %t = arith.constant dense<1.0> : tensor<4xf32>
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Yielding an index directly is a use of the index outside read/index.
func.func @yield_index() -> tensor<4xi32> {
  %r = tang.comprehension (%i) [4] : tensor<4xi32> {
    // expected-error @+1 {{'tang.yield' op uses iteration index #0; indices are used only by tang.read, tang.gather (as dimensions) and tang.index}}
    tang.yield %i : index
  }
  return %r : tensor<4xi32>
}

// -----

// tang.index takes exactly one expression.
func.func @index_two_exprs() -> tensor<4xi32> {
  %r = tang.comprehension (%i) [4] : tensor<4xi32> {
    // expected-error @+1 {{'tang.index' op takes one index expression, got 2}}
    %v = tang.index [%i, %i + 1] : i32
    tang.yield %v : i32
  }
  return %r : tensor<4xi32>
}

// -----

// tang.index expressions use in-scope indices only.
func.func @index_not_in_scope(%n: index) -> tensor<4xi32> {
  %r = tang.comprehension (%i) [4] : tensor<4xi32> {
    // expected-error @+1 {{'tang.index' op index operand #1 is not an iteration index of an enclosing comprehension}}
    %v = tang.index [%i + %n] : i32
    tang.yield %v : i32
  }
  return %r : tensor<4xi32>
}

// -----

// A schedule names a thread count per index.
func.func @schedule_threads_count(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule threads has 2 entries but tile has 1}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], threads = [2, 2]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// More threads than elements in the tile, not several per element.
func.func @schedule_threads_exceed_tile(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{schedule shares a tile of 4 among 6 threads (expected 1 to 4, or a multiple of 4: threads sharing each element)}}
  %r = tang.comprehension (%i) [4] attributes {schedule = #tang.schedule<tile = [4], threads = [6]>} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %r : tensor<4xf32>
}

// -----

// Blocks hold at most 1024 threads.
func.func @schedule_block_too_large(%X: tensor<64x64xf32>) -> tensor<64x64xf32> {
  // expected-error @+1 {{schedule needs more than 1024 threads per block}}
  %r = tang.comprehension (%i, %j) [64, 64] attributes {schedule = #tang.schedule<tile = [64, 64], threads = [64, 32]>} : tensor<64x64xf32> {
    %x = tang.read %X[%i, %j] : tensor<64x64xf32>
    tang.yield %x : f32
  }
  return %r : tensor<64x64xf32>
}

// -----

// A read without indices is still a body operation.
func.func @read_rank0_outside(%S: tensor<f32>) -> f32 {
  // expected-error @+1 {{'tang.read' op must be inside a comprehension body}}
  %s = tang.read %S[] : tensor<f32>
  return %s : f32
}

// -----

// tang.index is a body operation too.
func.func @index_outside() -> i32 {
  // expected-error @+1 {{'tang.index' op must be inside a comprehension body}}
  %v = tang.index [3] : i32
  return %v : i32
}

// -----

// tang.index expressions may not use affine symbols.
func.func @index_symbol() -> tensor<4xi32> {
  %r = tang.comprehension (%i) [4] : tensor<4xi32> {
    // expected-error @+1 {{'tang.index' op index expressions may not use symbols}}
    %v = tang.index [symbol(%i)] : i32
    tang.yield %v : i32
  }
  return %r : tensor<4xi32>
}

// -----

// tang.index's map takes one dimension per index operand (generic form).
func.func @index_map_dims() -> tensor<4xi32> {
  %r = tang.comprehension (%i) [4] : tensor<4xi32> {
    // expected-error @+1 {{'tang.index' op map has 2 dimensions but 1 index operands}}
    %v = "tang.index"(%i) <{map = affine_map<(d0, d1) -> (d0)>}> : (index) -> i32
    tang.yield %v : i32
  }
  return %r : tensor<4xi32>
}

//===----------------------------------------------------------------------===//
// #tang.target and the tang.target module attribute
//===----------------------------------------------------------------------===//

// -----

// A block cannot have more shared memory than its multiprocessor.
// expected-error @+1 {{target: shared_per_sm (1024) is less than shared_per_block (2048)}}
module attributes {tang.target = #tang.target<chip = "sm_80", sm_count = 1, shared_per_block = 2048, shared_per_sm = 1024, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = none, tma = false, clusters = false>} {
}

// -----

// expected-error @+1 {{target: warp_size must be a power of two no larger than max_threads}}
module attributes {tang.target = #tang.target<chip = "sm_80", sm_count = 1, shared_per_block = 1024, shared_per_sm = 1024, registers_per_sm = 65536, warp_size = 24, max_threads = 1024, tensor_cores = none, tma = false, clusters = false>} {
}

// -----

// The widest access is a power of two of bytes.
// expected-error @+1 {{target: vector_bytes must be a power of two from 1 to 64}}
module attributes {tang.target = #tang.target<chip = "portable", sm_count = 1, shared_per_block = 1024, shared_per_sm = 1024, registers_per_sm = 65536, warp_size = 1, max_threads = 256, tensor_cores = none, tma = false, clusters = false, vector_bytes = 12>} {
}

// -----

// expected-error @+2 {{expected true or false, got 'yes'}}
// expected-error @+1 {{failed to parse Tang_TargetAttr parameter 'tma' which is to be a `bool`}}
module attributes {tang.target = #tang.target<chip = "sm_80", sm_count = 1, shared_per_block = 1024, shared_per_sm = 1024, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = none, tma = yes, clusters = false>} {
}

// -----

// The discardable attribute holds a #tang.target ...
// expected-error @+1 {{'tang.target' must be a #tang.target, got "sm_90a"}}
module attributes {tang.target = "sm_90a"} {
}

// -----

// ... on a module.
module {
  // expected-error @+1 {{'tang.target' belongs on a module}}
  func.func @f() attributes {tang.target = #tang.target<chip = "sm_80", sm_count = 1, shared_per_block = 1024, shared_per_sm = 1024, registers_per_sm = 65536, warp_size = 32, max_threads = 1024, tensor_cores = none, tma = false, clusters = false>} {
    return
  }
}

// -----

//===----------------------------------------------------------------------===//
// tang.gather
//===----------------------------------------------------------------------===//

// Without a data coordinate it is a read.
func.func @gather_no_symbol(%E: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %y = tang.comprehension (%i, %d) [10, 4] : tensor<10x4xf32> {
    // expected-error @+1 {{has no data coordinate (no symbol): it is a tang.read}}
    %e = tang.gather %E[%i, %d] : tensor<10x4xf32>
    tang.yield %e : f32
  }
  return %y : tensor<10x4xf32>
}

// -----

// An iteration index is a dimension, never a symbol.
func.func @gather_index_as_symbol(%E: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %y = tang.comprehension (%i, %d) [10, 4] : tensor<10x4xf32> {
    // expected-error @+1 {{'tang.gather' op uses iteration index #0; indices are used only by tang.read, tang.gather (as dimensions)}}
    %e = tang.gather %E[symbol(%i), %d] : tensor<10x4xf32>
    tang.yield %e : f32
  }
  return %y : tensor<10x4xf32>
}

// -----

// The coordinates without data are proved in bounds.
func.func @gather_static_out_of_bounds(%E: tensor<10x4xf32>, %t: tensor<6xi32>) -> tensor<6x5xf32> {
  %y = tang.comprehension (%i, %d) [6, 5] : tensor<6x5xf32> {
    %k = tang.read %t[%i] : tensor<6xi32>
    %r = arith.index_cast %k : i32 to index
    // expected-error @+1 {{coordinate #1 (d0) ranges over [0, 4], out of bounds for dimension 1 of size 4}}
    %e = tang.gather %E[symbol(%r), %d] : tensor<10x4xf32>
    tang.yield %e : f32
  }
  return %y : tensor<6x5xf32>
}

// -----

func.func @gather_rank(%E: tensor<10x4xf32>, %t: tensor<6xi32>) -> tensor<6xf32> {
  %y = tang.comprehension (%i) [6] : tensor<6xf32> {
    %k = tang.read %t[%i] : tensor<6xi32>
    %r = arith.index_cast %k : i32 to index
    // expected-error @+1 {{gathers from a rank-2 tensor with 1 coordinates}}
    %e = tang.gather %E[symbol(%r)] : tensor<10x4xf32>
    tang.yield %e : f32
  }
  return %y : tensor<6xf32>
}

// -----

func.func @gather_policy(%E: tensor<10x4xf32>, %t: tensor<6xi32>) -> tensor<6x4xf32> {
  %y = tang.comprehension (%i, %d) [6, 4] : tensor<6x4xf32> {
    %k = tang.read %t[%i] : tensor<6xi32>
    %r = arith.index_cast %k : i32 to index
    // expected-error @+1 {{expected an out-of-range policy (trap, clamp, zero or drop), got 'wrap'}}
    %e = tang.gather %E[symbol(%r), %d] wrap : tensor<10x4xf32>
    tang.yield %e : f32
  }
  return %y : tensor<6x4xf32>
}

// -----

// Only the gather's dimensions may be iteration indices.
func.func @gather_outside(%E: tensor<10x4xf32>, %r: index) -> f32 {
  // expected-error @+1 {{must be inside a comprehension body}}
  %e = tang.gather %E[symbol(%r), 0] : tensor<10x4xf32>
  return %e : f32
}

// -----

//===----------------------------------------------------------------------===//
// Padded reads
//===----------------------------------------------------------------------===//

// A fill must be a value of the element type.
func.func @fill_not_element(%I: tensor<8xi32>) -> tensor<8xi32> {
  %y = tang.comprehension (%i) [8] : tensor<8xi32> {
    // expected-error @+1 {{fill 1.500000e+00 : f64 is not a value of 'i32'}}
    %x = tang.read %I[%i - 1] fill(1.5) : tensor<8xi32>
    tang.yield %x : i32
  }
  return %y : tensor<8xi32>
}

// -----

// A typed fill of another type is refused by the verifier.
func.func @fill_typed_other(%X: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    // expected-error @+1 {{'tang.read' op fill 1.000000e+00 : f16 is not a value of 'f32'}}
    %x = "tang.read"(%X, %i) <{map = affine_map<(d0) -> (d0 - 1)>, fill = 1.0 : f16}> : (tensor<8xf32>, index) -> f32
    tang.yield %x : f32
  }
  return %y : tensor<8xf32>
}

// -----

// Without a fill, a coordinate outside the tensor is refused.
func.func @unpadded_outside(%X: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    // expected-error @+1 {{out of bounds}}
    %x = tang.read %X[%i - 1] : tensor<8xf32>
    tang.yield %x : f32
  }
  return %y : tensor<8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tang.scatter and tang.put
//===----------------------------------------------------------------------===//

func.func @scatter_result_type(%b: tensor<8xf32>, %i: tensor<4xi32>) -> tensor<8xf16> {
  // expected-error @+1 {{'tang.scatter' op result type 'tensor<8xf16>' is not the type of its base 'tensor<8xf32>'}}
  %r = "tang.scatter"(%b) <{extents = array<i64: 4>}> ({
  ^bb0(%p: index):
    %x = tang.read %b[%p] : tensor<8xf32>
    %y = arith.truncf %x : f32 to f16
    tang.put %y at [%p] : f16
  }) : (tensor<8xf32>) -> tensor<8xf16>
  return %r : tensor<8xf16>
}

// -----

func.func @put_wrong_type(%b: tensor<8xf32>) -> tensor<8xf32> {
  %r = tang.scatter (%p) [4] into %b : tensor<8xf32> {
    %x = tang.read %b[%p] : tensor<8xf32>
    %y = arith.truncf %x : f32 to f16
    // expected-error @+1 {{'tang.put' op writes 'f16' into a tensor of 'f32'}}
    tang.put %y at [%p] : f16
  }
  return %r : tensor<8xf32>
}

// -----

func.func @put_static_out_of_bounds(%b: tensor<8xf32>) -> tensor<8xf32> {
  %r = tang.scatter (%p) [4] into %b : tensor<8xf32> {
    %x = tang.read %b[%p] : tensor<8xf32>
    // expected-error @+1 {{'tang.put' op coordinate #0 (d0 + 5) ranges over [5, 8], out of bounds for dimension 0 of size 8}}
    tang.put %x at [%p + 5] : f32
  }
  return %r : tensor<8xf32>
}

// -----

func.func @put_read_policy(%b: tensor<8xf32>, %to: tensor<4xi32>) -> tensor<8xf32> {
  %r = tang.scatter (%p) [4] into %b : tensor<8xf32> {
    %t = tang.read %to[%p] : tensor<4xi32>
    %c = arith.index_cast %t : i32 to index
    %x = tang.read %b[%p] : tensor<8xf32>
    // expected-error @+1 {{'tang.put' op policy 'clamp' is for reads; a write traps or drops}}
    tang.put %x at [symbol(%c)] clamp : f32
  }
  return %r : tensor<8xf32>
}

// -----

func.func @gather_drop(%E: tensor<10x4xf32>, %to: tensor<4xi32>) -> tensor<4x4xf32> {
  %y = tang.comprehension (%i, %d) [4, 4] : tensor<4x4xf32> {
    %t = tang.read %to[%i] : tensor<4xi32>
    %c = arith.index_cast %t : i32 to index
    // expected-error @+1 {{'tang.gather' op cannot drop a read: give it the zero policy}}
    %e = tang.gather %E[symbol(%c), %d] drop : tensor<10x4xf32>
    tang.yield %e : f32
  }
  return %y : tensor<4x4xf32>
}

// -----

func.func @scatter_argmax(%b: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tang.scatter' op combines under monoid 'argmax', but a scatter combines one element with another of type 'f32'}}
  %r = tang.scatter (%p) [4] into %b monoid(argmax) : tensor<8xf32> {
    %x = tang.read %b[%p] : tensor<8xf32>
    tang.put %x at [%p] : f32
  }
  return %r : tensor<8xf32>
}

// -----

func.func @scatter_nested(%b: tensor<8xf32>) -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.scatter' op must be at function level (it makes a tensor)}}
    %r = tang.scatter (%p) [4] into %b : tensor<8xf32> {
      %x = tang.read %b[%p] : tensor<8xf32>
      tang.put %x at [%p] : f32
    }
    %z = arith.constant 0.0 : f32
    tang.yield %z : f32
  }
  return %y : tensor<4xf32>
}

// -----

func.func @put_index_as_value(%b: tensor<8xf32>) -> tensor<8xf32> {
  %r = tang.scatter (%p) [4] into %b : tensor<8xf32> {
    %x = tang.read %b[%p] : tensor<8xf32>
    // expected-error @+1 {{'tang.put' op uses iteration index #0; indices are used only by tang.read, tang.gather (as dimensions)}}
    tang.put %x at [symbol(%p)] : f32
  }
  return %r : tensor<8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// tang.scan
//===----------------------------------------------------------------------===//

func.func @scan_shape(%X: tensor<16xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tang.scan' op result #0 has shape [8] but the domain is [16]}}
  %y = tang.scan along (%t) [16] monoid(add) : tensor<8xf32> {
    %x = tang.read %X[%t] : tensor<16xf32>
    tang.yield %x : f32
  }
  return %y : tensor<8xf32>
}

// -----

func.func @scan_yield_type(%X: tensor<16xf32>) -> tensor<16xf16> {
  // expected-error @+1 {{'tang.scan' op yield type does not match result element type: body yields ('f32') and results are ('f16')}}
  %y = tang.scan along (%t) [16] monoid(add) : tensor<16xf16> {
    %x = tang.read %X[%t] : tensor<16xf32>
    tang.yield %x : f32
  }
  return %y : tensor<16xf16>
}

// -----

func.func @scan_two_indices(%X: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{a scan runs along exactly one index}}
  %y = tang.scan along (%t, %u) [16, 16] monoid(add) : tensor<16xf32> {
    %x = tang.read %X[%t] : tensor<16xf32>
    tang.yield %x : f32
  }
  return %y : tensor<16xf32>
}

// -----

func.func @scan_nested(%X: tensor<16xf32>) -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    // expected-error @+1 {{'tang.scan' op must be at function level (it makes tensors)}}
    %s = tang.scan along (%t) [16] monoid(add) : tensor<16xf32> {
      %x = tang.read %X[%t] : tensor<16xf32>
      tang.yield %x : f32
    }
    %z = arith.constant 0.0 : f32
    tang.yield %z : f32
  }
  return %y : tensor<4xf32>
}

// -----

tang.monoid @pair : [f32, f32] identity [0.0 : f32, 0.0 : f32] {
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.addf %a1, %a2 : f32
  %b = arith.addf %b1, %b2 : f32
  tang.yield %a, %b : f32, f32
}
func.func @scatter_two_component_monoid(%b: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tang.scatter' op monoid @pair must have one component of the element type 'f32' to combine elements}}
  %r = tang.scatter (%p) [4] into %b monoid(@pair) : tensor<8xf32> {
    %x = tang.read %b[%p] : tensor<8xf32>
    tang.put %x at [%p] : f32
  }
  return %r : tensor<8xf32>
}

// -----

func.func @put_rank(%b: tensor<8x2xf32>) -> tensor<8x2xf32> {
  %r = tang.scatter (%p) [4] into %b : tensor<8x2xf32> {
    %x = tang.read %b[%p, 0] : tensor<8x2xf32>
    // expected-error @+1 {{'tang.put' op writes a rank-2 tensor with 1 coordinates}}
    tang.put %x at [%p] : f32
  }
  return %r : tensor<8x2xf32>
}

// -----

func.func @scatter_dynamic_base(%b: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'tang.scatter' op needs a statically shaped base (symbolic extents are not supported yet), got 'tensor<?xf32>'}}
  %r = tang.scatter (%p) [4] into %b : tensor<?xf32> {
    %x = arith.constant 1.0 : f32
    tang.put %x at [%p] : f32
  }
  return %r : tensor<?xf32>
}

// -----

// expected-error @+1 {{'tang.donate' belongs on a tensor argument of a function}}
func.func @donate_an_index(%n: index {tang.donate}) {
  return
}

// -----

// expected-error @+1 {{'tang.donate' must be a unit attribute}}
func.func @donate_a_value(%x: tensor<4xf32> {tang.donate = 1 : i32}) {
  return
}

// -----

// expected-error @+1 {{unknown argument attribute 'tang.donated' (the tang dialect declares tang.donate)}}
func.func @donate_misspelled(%x: tensor<4xf32> {tang.donated}) {
  return
}

// -----

// A '?' extent needs its size operand (the generic form can omit it).
func.func @extent_without_size(%X: tensor<64xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'tang.comprehension' op has 1 symbolic extents but 0 size operands}}
  %s = "tang.comprehension"() <{parallel_extents = array<i64: -9223372036854775808>, reduced_extents = array<i64>}> ({
  ^bb0(%i: index):
    %x = tang.read %X[%i] : tensor<64xf32>
    tang.yield %x : f32
  }) : () -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

// Found by tools/tang-fuzz (a division by zero in the bounds proof).
func.func @view_floordiv_zero(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'tang.view' op coordinate #0 (d0 floordiv 0) divides by 0: floordiv, ceildiv and mod take a positive constant}}
  %v = tang.view %x by affine_map<(i, j) -> (i floordiv 0, j)> : tensor<4x8xf32> to tensor<4x8xf32>
  return %v : tensor<4x8xf32>
}

// -----

func.func @read_mod_negative(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    // expected-error @+1 {{'tang.read' op coordinate #0 (d0 mod -2) divides by -2: floordiv, ceildiv and mod take a positive constant}}
    %a = tang.read %x[%i mod -2] : tensor<8xf32>
    tang.yield %a : f32
  }
  return %y : tensor<8xf32>
}

// -----

func.func @index_ceildiv_zero(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tang.comprehension (%i) [8] : tensor<8xf32> {
    // expected-error @+1 {{'tang.index' op coordinate #0 (d0 ceildiv 0) divides by 0}}
    %n = tang.index [%i ceildiv 0] : f32
    tang.yield %n : f32
  }
  return %y : tensor<8xf32>
}
