// RUN: tang-opt %s --convert-linalg-to-tang=strict=1 -split-input-file -verify-diagnostics

// linalg on memrefs.
func.func @memref_matmul(%A: memref<4x8xf32>, %B: memref<8x2xf32>, %C: memref<4x2xf32>) {
  // expected-error @+1 {{cannot import 'linalg.matmul': linalg on memrefs is not supported (only linalg on tensors)}}
  linalg.matmul ins(%A, %B : memref<4x8xf32>, memref<8x2xf32>) outs(%C : memref<4x2xf32>)
  return
}

// -----

// Dynamic shapes.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @dynamic(%X: tensor<?x4xf32>, %Y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{cannot import 'linalg.generic': dynamic shapes are not supported yet}}
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%X : tensor<?x4xf32>) outs(%Y : tensor<?x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %1 = arith.negf %in : f32
    linalg.yield %1 : f32
  } -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Element types outside tang's set.
func.func @i64(%X: tensor<4xi64>, %Y: tensor<4xi64>) -> tensor<4xi64> {
  %0 = tensor.empty() : tensor<4xi64>
  // expected-error @+1 {{cannot import 'linalg.add': operand #0 has element type 'i64', not a tang element type (f64, f32, f16, bf16, i32, i8 or i1)}}
  %1 = linalg.add ins(%X, %Y : tensor<4xi64>, tensor<4xi64>) outs(%0 : tensor<4xi64>) -> tensor<4xi64>
  return %1 : tensor<4xi64>
}

// -----

// Scalar operands must be integers or floats.
#map = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @index_scalar(%X: tensor<4xi32>, %n: index) -> tensor<4xi32> {
  // expected-error @+1 {{cannot import 'linalg.generic': operand #1 has type 'index' (only tensors and integer or float scalars are supported)}}
  %0 = linalg.generic {indexing_maps = [#map, #scalar, #map], iterator_types = ["parallel"]}
      ins(%X, %n : tensor<4xi32>, index) outs(%X : tensor<4xi32>) {
  ^bb0(%in: i32, %s: index, %out: i32):
    %c = arith.index_cast %s : index to i32
    %1 = arith.addi %in, %c : i32
    linalg.yield %1 : i32
  } -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// A combiner tang has no monoid for.
func.func @div_combiner(%X: tensor<8x32xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot import 'linalg.reduce': the combiner 'arith.divf' is not recognised (expected arith.addf/addi, subf/subi (acc - x), mulf/muli, maximumf/maxnumf/maxsi, minimumf/minnumf/minsi, andi or ori applied to the accumulator)}}
  %0 = linalg.reduce ins(%X : tensor<8x32xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %1 = arith.divf %acc, %in : f32
      linalg.yield %1 : f32
    }
  return %0 : tensor<8xf32>
}

// -----

// x - acc alternates signs.
func.func @sub_from_combiner(%X: tensor<8x32xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot import 'linalg.reduce': the combiner 'arith.subf' subtracts the accumulator (x - acc alternates signs: not a reduction under a monoid)}}
  %0 = linalg.reduce ins(%X : tensor<8x32xf32>) outs(%init : tensor<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %1 = arith.subf %in, %acc : f32
      linalg.yield %1 : f32
    }
  return %0 : tensor<8xf32>
}

// -----

// Unsigned max: not a builtin monoid.
func.func @maxui(%X: tensor<8x32xi32>, %init: tensor<8xi32>) -> tensor<8xi32> {
  // expected-error @+1 {{the combiner 'arith.maxui' is not recognised}}
  %0 = linalg.reduce { arith.maxui } ins(%X : tensor<8x32xi32>) outs(%init : tensor<8xi32>) dimensions = [1]
  return %0 : tensor<8xi32>
}

// -----

// Two combiners on one accumulator.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @two_combiners(%X: tensor<8x32xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot import 'linalg.generic': the accumulator (the output block argument) must be used once, by the yielded 'arith.mulf' (several combiners, or other uses of it, are not supported)}}
  %0 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%X : tensor<8x32xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %1 = arith.addf %acc, %in : f32
    %2 = arith.mulf %1, %acc : f32
    linalg.yield %2 : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A reduction that yields an element instead of combining.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @no_combiner(%X: tensor<8x32xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot import 'linalg.generic': the yielded value must be a combiner applied to the accumulator (the output block argument)}}
  %0 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%X : tensor<8x32xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    linalg.yield %in : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// The combined value has other users than the yield.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @combiner_result_reused(%X: tensor<8x32xf32>, %init: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot import 'linalg.generic': the combined value is used by other payload ops besides linalg.yield}}
  %0 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%X : tensor<8x32xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %1 = arith.addf %acc, %in : f32
    %2 = arith.negf %1 : f32
    linalg.yield %1 : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A reduction with two outputs (an argmax): one combiner per reduction only.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @argmax(%X: tensor<8x32xf32>, %v: tensor<8xf32>, %i: tensor<8xi32>) -> (tensor<8xf32>, tensor<8xi32>) {
  // expected-error @+1 {{cannot import 'linalg.generic': reductions with 2 outputs are not supported (one combiner per reduction)}}
  %0:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%X : tensor<8x32xf32>) outs(%v, %i : tensor<8xf32>, tensor<8xi32>) {
  ^bb0(%in: f32, %vacc: f32, %iacc: i32):
    %j = linalg.index 1 : index
    %j32 = arith.index_cast %j : index to i32
    %gt = arith.cmpf ogt, %in, %vacc : f32
    %nv = arith.select %gt, %in, %vacc : f32
    %ni = arith.select %gt, %j32, %iacc : i32
    linalg.yield %nv, %ni : f32, i32
  } -> (tensor<8xf32>, tensor<8xi32>)
  return %0#0, %0#1 : tensor<8xf32>, tensor<8xi32>
}

// -----

// An output map that is not a permutation of the parallel loops.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @not_permutation(%X: tensor<8x32xf32>, %Y: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot import 'linalg.generic': the output indexing map (d0, d1) -> (d0) is not a permutation of the parallel loops}}
  %0 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]}
      ins(%X : tensor<8x32xf32>) outs(%Y : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Outputs with different indexing maps.
#map = affine_map<(d0, d1) -> (d0, d1)>
#mapT = affine_map<(d0, d1) -> (d1, d0)>
func.func @different_outputs(%X: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = tensor.empty() : tensor<4x4xf32>
  // expected-error @+1 {{cannot import 'linalg.generic': outputs with different indexing maps are not supported}}
  %1:2 = linalg.generic {indexing_maps = [#map, #map, #mapT], iterator_types = ["parallel", "parallel"]}
      ins(%X : tensor<4x4xf32>) outs(%0, %0 : tensor<4x4xf32>, tensor<4x4xf32>) {
  ^bb0(%in: f32, %o0: f32, %o1: f32):
    linalg.yield %in, %in : f32, f32
  } -> (tensor<4x4xf32>, tensor<4x4xf32>)
  return %1#0, %1#1 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// linalg.index used as an 'index' value.
#map = affine_map<(d0) -> (d0)>
func.func @index_arith(%X: tensor<8xi32>) -> tensor<8xi32> {
  %0 = tensor.empty() : tensor<8xi32>
  // expected-error @+1 {{cannot import 'linalg.generic': linalg.index is used by 'arith.addi'; only arith.index_cast/index_castui to an integer type can become tang.index (which produces an integer or float, not 'index')}}
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%X : tensor<8xi32>) outs(%0 : tensor<8xi32>) {
  ^bb0(%in: i32, %out: i32):
    %i = linalg.index 0 : index
    %c1 = arith.constant 1 : index
    %i1 = arith.addi %i, %c1 : index
    %v = arith.index_cast %i1 : index to i32
    %r = arith.addi %in, %v : i32
    linalg.yield %r : i32
  } -> tensor<8xi32>
  return %1 : tensor<8xi32>
}

// -----

// A payload computing on tensors.
#map = affine_map<(d0) -> (d0)>
func.func @tensor_payload(%X: tensor<8xf32>, %T: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{cannot import 'linalg.generic': the payload op 'tensor.from_elements' computes on non-scalar values (tang bodies compute scalars)}}
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%X : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = tensor.from_elements %in : tensor<1xf32>
    %c0 = arith.constant 0 : index
    %t = tensor.extract %s[%c0] : tensor<1xf32>
    %r = arith.addf %in, %t : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A reduction into an unfilled tensor.empty.
func.func @reduce_into_empty(%X: tensor<8x32xf32>) -> tensor<8xf32> {
  %0 = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{cannot import 'linalg.reduce': the reduction's init is a tensor.empty, whose contents are undefined (fill it with the monoid's identity)}}
  %1 = linalg.reduce { arith.addf } ins(%X : tensor<8x32xf32>) outs(%0 : tensor<8xf32>) dimensions = [1]
  return %1 : tensor<8xf32>
}

// -----

// A map reading its tensor.empty output.
#map = affine_map<(d0) -> (d0)>
func.func @read_empty_output(%X: tensor<8xf32>) -> tensor<8xf32> {
  %0 = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{cannot import 'linalg.generic': the payload reads output #0, a tensor.empty whose contents are undefined}}
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%X : tensor<8xf32>) outs(%0 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A tensor.empty read as an input.
func.func @read_empty_input() -> tensor<8xf32> {
  %0 = tensor.empty() : tensor<8xf32>
  %1 = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{cannot import 'linalg.map': input #0 is a tensor.empty, whose contents are undefined}}
  %2 = linalg.map { math.exp } ins(%0 : tensor<8xf32>) outs(%1 : tensor<8xf32>)
  return %2 : tensor<8xf32>
}

// -----

// A tensor.empty used other than by linalg.
func.func @return_empty() -> tensor<8xf32> {
  // expected-error @+1 {{'tensor.empty' is used by 'func.return': its contents are undefined, so it can only be an operand that linalg ops do not read}}
  %0 = tensor.empty() : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Zero-sized loops.
func.func @zero_sized(%X: tensor<0x4xf32>) -> tensor<4x0xf32> {
  %0 = tensor.empty() : tensor<4x0xf32>
  // expected-error @+1 {{cannot import 'linalg.transpose': loop #1 has extent 0 (tang extents must be positive)}}
  %1 = linalg.transpose ins(%X : tensor<0x4xf32>) outs(%0 : tensor<4x0xf32>) permutation = [1, 0]
  return %1 : tensor<4x0xf32>
}

// -----

// Function-level ops other than linalg, tensor.empty, reshapes, slices,
// pads, arith.constant, tang.
func.func @concat(%X: tensor<8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'tensor.concat' at function level is not supported by convert-linalg-to-tang (expected linalg ops on tensors, tensor.empty, tensor.expand_shape/collapse_shape, tensor.extract_slice/insert_slice, tensor.pad, arith.constant, tang ops or func.return)}}
  %0 = tensor.concat dim(0) %X, %X : (tensor<8xf32>, tensor<8xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

// A pad by a value computed from the coordinates.
func.func @pad_by_index(%X: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{cannot import 'tensor.pad': it pads with a value that is not a constant}}
  %p = tensor.pad %X low[1] high[1] {
  ^bb0(%i: index):
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    tensor.yield %f : f32
  } : tensor<4xf32> to tensor<6xf32>
  return %p : tensor<6xf32>
}

// -----

func.func @dynamic_reshape(%X: tensor<?xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tensor.dim' at function level is not supported by convert-linalg-to-tang}}
  %n = tensor.dim %X, %c0 : tensor<?xf32>
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{'arith.divui' at function level is not supported by convert-linalg-to-tang}}
  %m = arith.divui %n, %c4 : index
  // expected-error @+1 {{cannot import 'tensor.expand_shape': dynamic shapes are not supported yet}}
  %0 = tensor.expand_shape %X [[0, 1]] output_shape [%m, 4] : tensor<?xf32> into tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @scalar_arith(%X: tensor<8xf32>) -> tensor<8xf32> {
  %a = arith.constant 1.0 : f32
  // expected-error @+1 {{'arith.addf' at function level is not supported by convert-linalg-to-tang}}
  %b = arith.addf %a, %a : f32
  %0 = linalg.fill ins(%b : f32) outs(%X : tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A softmax of dynamic shape.
func.func @dynamic_softmax(%X: tensor<?x8xf32>, %Y: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{cannot import 'linalg.softmax': dynamic shapes are not supported yet}}
  %0 = linalg.softmax dimension(1) ins(%X : tensor<?x8xf32>) outs(%Y : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Control flow at function level; the tensor.empty it uses is not reported again.
func.func @loop(%X: tensor<8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %0 = tensor.empty() : tensor<8xf32>
  // expected-error @+1 {{'scf.for' at function level is not supported by convert-linalg-to-tang}}
  %1 = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %0) -> tensor<8xf32> {
    %2 = linalg.add ins(%X, %acc : tensor<8xf32>, tensor<8xf32>) outs(%acc : tensor<8xf32>) -> tensor<8xf32>
    scf.yield %2 : tensor<8xf32>
  }
  return %1 : tensor<8xf32>
}
