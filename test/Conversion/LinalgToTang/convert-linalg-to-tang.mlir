// RUN: tang-opt %s --convert-linalg-to-tang --split-input-file | FileCheck %s

// matmul over a zero fill: one add-reduction, the fill and tensor.empty vanish.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:.*]]: tensor<16x32xf32>, %[[B:.*]]: tensor<32x24xf32>)
// CHECK-NOT: linalg.
// CHECK-NOT: tensor.empty
// CHECK: %[[C:.*]] = tang.comprehension (%[[I:.*]], %[[J:.*]]) reduce (%[[K:.*]]) [16, 24, 32] monoid(add) : tensor<16x24xf32> {
// CHECK-NEXT: %[[AV:.*]] = tang.read %[[A]][%[[I]], %[[K]]] : tensor<16x32xf32>
// CHECK-NEXT: %[[BV:.*]] = tang.read %[[B]][%[[K]], %[[J]]] : tensor<32x24xf32>
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[AV]], %[[BV]] : f32
// CHECK-NEXT: tang.yield %[[P]] : f32
// CHECK: return %[[C]]
func.func @matmul(%A: tensor<16x32xf32>, %B: tensor<32x24xf32>) -> tensor<16x24xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<16x24xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<16x24xf32>) -> tensor<16x24xf32>
  %2 = linalg.matmul ins(%A, %B : tensor<16x32xf32>, tensor<32x24xf32>)
                     outs(%1 : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %2 : tensor<16x24xf32>
}

// -----

// matmul accumulating into an argument: the reduction, then a map adding the init.
// CHECK-LABEL: func.func @matmul_accumulate
// CHECK-SAME: %[[C:[^:]*]]: tensor<4x2xf32>)
// CHECK: %[[S:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) reduce (%{{.*}}) [4, 2, 8] monoid(add) : tensor<4x2xf32>
// CHECK: %[[R:.*]] = tang.comprehension (%[[I:.*]], %[[J:.*]]) [4, 2] : tensor<4x2xf32> {
// CHECK-NEXT: %[[CV:.*]] = tang.read %[[C]][%[[I]], %[[J]]] : tensor<4x2xf32>
// CHECK-NEXT: %[[SV:.*]] = tang.read %[[S]][%[[I]], %[[J]]] : tensor<4x2xf32>
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[CV]], %[[SV]] : f32
// CHECK-NEXT: tang.yield %[[SUM]] : f32
// CHECK: return %[[R]]
func.func @matmul_accumulate(%A: tensor<4x8xf32>, %B: tensor<8x2xf32>, %C: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %0 = linalg.matmul ins(%A, %B : tensor<4x8xf32>, tensor<8x2xf32>)
                     outs(%C : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// The same contraction written as a linalg.generic, with the accumulator as
// the combiner's first operand.
#mapA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mapB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mapC = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @generic_matmul
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x2xf32>)
// CHECK: tang.comprehension (%[[I:.*]], %[[J:.*]]) reduce (%[[K:.*]]) [4, 2, 8] monoid(add)
// CHECK-NEXT: tang.read %[[A]][%[[I]], %[[K]]]
// CHECK-NEXT: tang.read %[[B]][%[[K]], %[[J]]]
// CHECK-NOT: tang.comprehension
func.func @generic_matmul(%A: tensor<4x8xf32>, %B: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<4x2xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %2 = linalg.generic {indexing_maps = [#mapA, #mapB, #mapC],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%A, %B : tensor<4x8xf32>, tensor<8x2xf32>) outs(%1 : tensor<4x2xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %3 = arith.mulf %a, %b : f32
    %4 = arith.addf %acc, %3 : f32
    linalg.yield %4 : f32
  } -> tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}

// -----

// batch_matmul of bf16 into f32: the casts stay in the body.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-SAME: (%[[A:.*]]: tensor<4x16x32xbf16>, %[[B:.*]]: tensor<4x32x24xbf16>)
// CHECK: tang.comprehension (%[[N:.*]], %[[I:.*]], %[[J:.*]]) reduce (%[[K:.*]]) [4, 16, 24, 32] monoid(add) : tensor<4x16x24xf32>
// CHECK-NEXT: %[[AV:.*]] = tang.read %[[A]][%[[N]], %[[I]], %[[K]]] : tensor<4x16x32xbf16>
// CHECK-NEXT: %[[BV:.*]] = tang.read %[[B]][%[[N]], %[[K]], %[[J]]] : tensor<4x32x24xbf16>
// CHECK-NEXT: %[[AE:.*]] = arith.extf %[[AV]] : bf16 to f32
// CHECK-NEXT: %[[BE:.*]] = arith.extf %[[BV]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[AE]], %[[BE]] : f32
// CHECK-NEXT: tang.yield %[[P]] : f32
func.func @batch_matmul(%A: tensor<4x16x32xbf16>, %B: tensor<4x32x24xbf16>) -> tensor<4x16x24xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<4x16x24xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x16x24xf32>) -> tensor<4x16x24xf32>
  %2 = linalg.batch_matmul ins(%A, %B : tensor<4x16x32xbf16>, tensor<4x32x24xbf16>)
                           outs(%1 : tensor<4x16x24xf32>) -> tensor<4x16x24xf32>
  return %2 : tensor<4x16x24xf32>
}

// -----

// matvec.
// CHECK-LABEL: func.func @matvec
// CHECK-SAME: (%[[A:.*]]: tensor<16x32xf32>, %[[X:.*]]: tensor<32xf32>)
// CHECK: tang.comprehension (%[[I:.*]]) reduce (%[[K:.*]]) [16, 32] monoid(add) : tensor<16xf32>
// CHECK-NEXT: tang.read %[[A]][%[[I]], %[[K]]]
// CHECK-NEXT: tang.read %[[X]][%[[K]]]
func.func @matvec(%A: tensor<16x32xf32>, %x: tensor<32xf32>) -> tensor<16xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<16xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<16xf32>) -> tensor<16xf32>
  %2 = linalg.matvec ins(%A, %x : tensor<16x32xf32>, tensor<32xf32>)
                     outs(%1 : tensor<16xf32>) -> tensor<16xf32>
  return %2 : tensor<16xf32>
}

// -----

// Row sum with linalg.reduce (accumulator second): the body yields the element.
// CHECK-LABEL: func.func @row_sum
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>)
// CHECK: %[[S:.*]] = tang.comprehension (%[[I:.*]]) reduce (%[[J:.*]]) [8, 32] monoid(add) : tensor<8xf32> {
// CHECK-NEXT: %[[XV:.*]] = tang.read %[[X]][%[[I]], %[[J]]] : tensor<8x32xf32>
// CHECK-NEXT: tang.yield %[[XV]] : f32
// CHECK: return %[[S]]
func.func @row_sum(%X: tensor<8x32xf32>) -> tensor<8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
  %2 = linalg.reduce ins(%X : tensor<8x32xf32>) outs(%1 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %3 = arith.addf %in, %init : f32
      linalg.yield %3 : f32
    }
  return %2 : tensor<8xf32>
}

// -----

// Row max over a -inf fill, as a generic: monoid(max), no combine map.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @row_max
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>)
// CHECK: %[[M:.*]] = tang.comprehension (%[[I:.*]]) reduce (%[[J:.*]]) [8, 32] monoid(max) : tensor<8xf32> {
// CHECK-NEXT: %[[XV:.*]] = tang.read %[[X]][%[[I]], %[[J]]] : tensor<8x32xf32>
// CHECK-NEXT: tang.yield %[[XV]] : f32
// CHECK-NOT: tang.comprehension
// CHECK: return %[[M]]
func.func @row_max(%X: tensor<8x32xf32>) -> tensor<8xf32> {
  %cst = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
  %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]}
      ins(%X : tensor<8x32xf32>) outs(%1 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %3 = arith.maximumf %in, %out : f32
    linalg.yield %3 : f32
  } -> tensor<8xf32>
  return %2 : tensor<8xf32>
}

// -----

// A max over the lowest finite float is not the identity: the (constant)
// init is combined in a map; the fill is not materialised.
// CHECK-LABEL: func.func @row_max_lowest
// CHECK-NEXT: %[[M:.*]] = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [8, 32] monoid(max)
// CHECK: %[[R:.*]] = tang.comprehension (%[[I:.*]]) [8] : tensor<8xf32> {
// CHECK-NEXT: %[[INIT:.*]] = arith.constant -3.40282347E+38 : f32
// CHECK-NEXT: %[[MV:.*]] = tang.read %[[M]][%[[I]]] : tensor<8xf32>
// CHECK-NEXT: %[[MAX:.*]] = arith.maxnumf %[[MV]], %[[INIT]] : f32
// CHECK-NEXT: tang.yield %[[MAX]] : f32
// CHECK: return %[[R]]
func.func @row_max_lowest(%X: tensor<8x32xf32>) -> tensor<8xf32> {
  %cst = arith.constant -3.40282347E+38 : f32
  %0 = tensor.empty() : tensor<8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8xf32>) -> tensor<8xf32>
  %2 = linalg.reduce ins(%X : tensor<8x32xf32>) outs(%1 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %3 = arith.maxnumf %in, %init : f32
      linalg.yield %3 : f32
    }
  return %2 : tensor<8xf32>
}

// -----

// Integer reductions: signed min over INT_MAX, and over all ones, or over 0.
// CHECK-LABEL: func.func @int_reductions
// CHECK: tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 6] monoid(min) : tensor<4xi32>
// CHECK: tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 6] monoid(and) : tensor<4xi8>
// CHECK: tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 6] monoid(or) : tensor<4xi1>
// CHECK-NOT: tang.comprehension
func.func @int_reductions(%X: tensor<4x6xi32>, %Y: tensor<4x6xi8>, %Z: tensor<4x6xi1>)
    -> (tensor<4xi32>, tensor<4xi8>, tensor<4xi1>) {
  %max = arith.constant 2147483647 : i32
  %ones = arith.constant -1 : i8
  %false = arith.constant false
  %e32 = tensor.empty() : tensor<4xi32>
  %e8 = tensor.empty() : tensor<4xi8>
  %e1 = tensor.empty() : tensor<4xi1>
  %f32 = linalg.fill ins(%max : i32) outs(%e32 : tensor<4xi32>) -> tensor<4xi32>
  %f8 = linalg.fill ins(%ones : i8) outs(%e8 : tensor<4xi8>) -> tensor<4xi8>
  %f1 = linalg.fill ins(%false : i1) outs(%e1 : tensor<4xi1>) -> tensor<4xi1>
  %min = linalg.reduce { arith.minsi } ins(%X : tensor<4x6xi32>) outs(%f32 : tensor<4xi32>) dimensions = [1]
  %and = linalg.reduce { arith.andi } ins(%Y : tensor<4x6xi8>) outs(%f8 : tensor<4xi8>) dimensions = [1]
  %or = linalg.reduce { arith.ori } ins(%Z : tensor<4x6xi1>) outs(%f1 : tensor<4xi1>) dimensions = [1]
  return %min, %and, %or : tensor<4xi32>, tensor<4xi8>, tensor<4xi1>
}

// -----

// Elementwise add as a generic, as linalg.add, as linalg.map and as linalg.elementwise.
#map = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[Y:.*]]: tensor<8x32xf32>)
// CHECK-COUNT-4: tang.comprehension (%{{.*}}, %{{.*}}) [8, 32] : tensor<8x32xf32>
// CHECK-NOT: tensor.empty
// CHECK-NOT: linalg.
func.func @elementwise(%X: tensor<8x32xf32>, %Y: tensor<8x32xf32>)
    -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %0 = tensor.empty() : tensor<8x32xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%X, %Y : tensor<8x32xf32>, tensor<8x32xf32>) outs(%0 : tensor<8x32xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %5 = arith.addf %in, %in_0 : f32
    linalg.yield %5 : f32
  } -> tensor<8x32xf32>
  %2 = linalg.add ins(%X, %Y : tensor<8x32xf32>, tensor<8x32xf32>)
                  outs(%0 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %3 = linalg.map { arith.addf } ins(%X, %Y : tensor<8x32xf32>, tensor<8x32xf32>)
                                 outs(%0 : tensor<8x32xf32>)
  %4 = linalg.elementwise kind=#linalg.elementwise_kind<add>
      ins(%X, %Y : tensor<8x32xf32>, tensor<8x32xf32>) outs(%0 : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %1, %2, %3, %4 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// A map that reads its output: the init is read at the output map.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @read_output
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>, %[[Y:.*]]: tensor<8xf32>)
// CHECK: tang.comprehension (%[[I:.*]]) [8] : tensor<8xf32> {
// CHECK-NEXT: %[[XV:.*]] = tang.read %[[X]][%[[I]]]
// CHECK-NEXT: %[[YV:.*]] = tang.read %[[Y]][%[[I]]]
// CHECK-NEXT: %[[S:.*]] = arith.subf %[[YV]], %[[XV]] : f32
// CHECK-NEXT: tang.yield %[[S]] : f32
func.func @read_output(%X: tensor<8xf32>, %Y: tensor<8xf32>) -> tensor<8xf32> {
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%X : tensor<8xf32>) outs(%Y : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %1 = arith.subf %out, %in : f32
    linalg.yield %1 : f32
  } -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Transpose: the comprehension iterates in the output's order, no view needed.
// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>)
// CHECK: tang.comprehension (%[[I:.*]], %[[J:.*]]) [32, 8] : tensor<32x8xf32> {
// CHECK-NEXT: %[[V:.*]] = tang.read %[[X]][%[[J]], %[[I]]] : tensor<8x32xf32>
// CHECK-NEXT: tang.yield %[[V]] : f32
func.func @transpose(%X: tensor<8x32xf32>) -> tensor<32x8xf32> {
  %0 = tensor.empty() : tensor<32x8xf32>
  %1 = linalg.transpose ins(%X : tensor<8x32xf32>) outs(%0 : tensor<32x8xf32>) permutation = [1, 0]
  return %1 : tensor<32x8xf32>
}

// -----

// A reduction whose output map is permuted: parallel indices follow the output.
#in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-LABEL: func.func @permuted_output
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: tang.comprehension (%[[P0:.*]], %[[P1:.*]]) reduce (%[[R:.*]]) [4, 2, 3] monoid(add) : tensor<4x2xf32> {
// CHECK-NEXT: tang.read %[[X]][%[[P1]], %[[R]], %[[P0]]] : tensor<2x3x4xf32>
func.func @permuted_output(%X: tensor<2x3x4xf32>) -> tensor<4x2xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<4x2xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %2 = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%X : tensor<2x3x4xf32>) outs(%1 : tensor<4x2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %3 = arith.addf %in, %acc : f32
    linalg.yield %3 : f32
  } -> tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}

// -----

// Broadcast: the read drops the broadcast index.
// CHECK-LABEL: func.func @broadcast
// CHECK-SAME: (%[[X:.*]]: tensor<32xf32>)
// CHECK: tang.comprehension (%[[I:.*]], %[[J:.*]]) [8, 32] : tensor<8x32xf32> {
// CHECK-NEXT: tang.read %[[X]][%[[J]]] : tensor<32xf32>
func.func @broadcast(%X: tensor<32xf32>) -> tensor<8x32xf32> {
  %0 = tensor.empty() : tensor<8x32xf32>
  %1 = linalg.broadcast ins(%X : tensor<32xf32>) outs(%0 : tensor<8x32xf32>) dimensions = [0]
  return %1 : tensor<8x32xf32>
}

// -----

// A fill alone: a comprehension yielding the constant, cloned into its body.
// CHECK-LABEL: func.func @fill
// CHECK-NEXT: %[[F:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) [4, 4] : tensor<4x4xf32> {
// CHECK-NEXT: %[[C:.*]] = arith.constant 2.500000e+00 : f32
// CHECK-NEXT: tang.yield %[[C]] : f32
// CHECK: return %[[F]]
func.func @fill() -> tensor<4x4xf32> {
  %cst = arith.constant 2.500000e+00 : f32
  %0 = tensor.empty() : tensor<4x4xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// linalg.index feeding index casts becomes tang.index: a causal mask.
#map = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @causal_mask
// CHECK-SAME: (%[[S:.*]]: tensor<4x4xf32>)
// CHECK: tang.comprehension (%[[I:.*]], %[[J:.*]]) [4, 4] : tensor<4x4xf32> {
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[SV:.*]] = tang.read %[[S]][%[[I]], %[[J]]]
// CHECK-DAG: %[[VI:.*]] = tang.index %[[I]] : i32
// CHECK-DAG: %[[VJ:.*]] = tang.index %[[J]] : i32
// CHECK: %[[KEEP:.*]] = arith.cmpi sle, %[[VJ]], %[[VI]] : i32
// CHECK: %[[R:.*]] = arith.select %[[KEEP]], %[[SV]], %[[NINF]] : f32
// CHECK: tang.yield %[[R]] : f32
// CHECK-NOT: linalg.index
func.func @causal_mask(%S: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<4x4xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
      ins(%S : tensor<4x4xf32>) outs(%0 : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i32 = arith.index_cast %i : index to i32
    %j32 = arith.index_castui %j : index to i32
    %keep = arith.cmpi sle, %j32, %i32 : i32
    %r = arith.select %keep, %in, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// Chained ops: the second reads the first's result; tang ops already present are kept.
// CHECK-LABEL: func.func @chain
// CHECK: %[[T:.*]] = tang.comprehension (%{{.*}}) [8] : tensor<8xf32>
// CHECK: %[[E:.*]] = tang.comprehension (%[[I:.*]]) [8] : tensor<8xf32> {
// CHECK-NEXT: %[[TV:.*]] = tang.read %[[T]][%[[I]]]
// CHECK-NEXT: math.exp %[[TV]]
func.func @chain(%X: tensor<8xf32>) -> tensor<8xf32> {
  %t = tang.comprehension (%i) [8] : tensor<8xf32> {
    %x = tang.read %X[%i] : tensor<8xf32>
    %y = arith.negf %x : f32
    tang.yield %y : f32
  }
  %0 = tensor.empty() : tensor<8xf32>
  %1 = linalg.map { math.exp } ins(%t : tensor<8xf32>) outs(%0 : tensor<8xf32>)
  return %1 : tensor<8xf32>
}

// -----

// Convolution: window reads keep their affine sums.
// CHECK-LABEL: func.func @conv_2d
// CHECK-SAME: (%[[I:.*]]: tensor<1x10x10x3xf32>, %[[F:.*]]: tensor<3x3x3x8xf32>)
// CHECK: tang.comprehension (%[[N:.*]], %[[H:.*]], %[[W:.*]], %[[CO:.*]]) reduce (%[[KH:.*]], %[[KW:.*]], %[[CI:.*]]) [1, 8, 8, 8, 3, 3, 3] monoid(add) : tensor<1x8x8x8xf32> {
// CHECK-NEXT: tang.read %[[I]][%[[N]], %[[H]] + %[[KH]], %[[W]] + %[[KW]], %[[CI]]] : tensor<1x10x10x3xf32>
// CHECK-NEXT: tang.read %[[F]][%[[KH]], %[[KW]], %[[CI]], %[[CO]]] : tensor<3x3x3x8xf32>
func.func @conv_2d(%I: tensor<1x10x10x3xf32>, %F: tensor<3x3x3x8xf32>) -> tensor<1x8x8x8xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x8x8x8xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %2 = linalg.conv_2d_nhwc_hwcf ins(%I, %F : tensor<1x10x10x3xf32>, tensor<3x3x3x8xf32>)
                                outs(%1 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %2 : tensor<1x8x8x8xf32>
}

// -----

// Max pooling: the window-shape tensor.empty is never read and disappears.
// CHECK-LABEL: func.func @max_pool
// CHECK-NOT: tensor.empty
// CHECK: tang.comprehension (%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) reduce (%{{.*}}, %{{.*}}) [1, 8, 8, 3, 3, 3] monoid(max) : tensor<1x8x8x3xf32>
// CHECK-NOT: tang.comprehension
func.func @max_pool(%I: tensor<1x10x10x3xf32>) -> tensor<1x8x8x3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<1x8x8x3xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  %1 = linalg.fill ins(%ninf : f32) outs(%0 : tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32>
  %2 = linalg.pooling_nhwc_max ins(%I, %window : tensor<1x10x10x3xf32>, tensor<3x3xf32>)
                               outs(%1 : tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32>
  return %2 : tensor<1x8x8x3xf32>
}

// -----

// A full reduction gives a rank-0 tensor: no parallel indices.
// CHECK-LABEL: func.func @full_sum
// CHECK: tang.comprehension reduce (%{{.*}}, %{{.*}}) [4, 6] monoid(add) : tensor<f32>
func.func @full_sum(%X: tensor<4x6xf32>) -> tensor<f32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<f32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<f32>) -> tensor<f32>
  %2 = linalg.reduce { arith.addf } ins(%X : tensor<4x6xf32>) outs(%1 : tensor<f32>) dimensions = [0, 1]
  return %2 : tensor<f32>
}

// -----

// A map with two outputs: one comprehension with two results.
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @two_outputs
// CHECK: %[[R:.*]]:2 = tang.comprehension (%{{.*}}) [8] : tensor<8xf32>, tensor<8xi1> {
// CHECK: tang.yield %{{.*}}, %{{.*}} : f32, i1
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @two_outputs(%X: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi1>) {
  %zero = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<8xf32>
  %1 = tensor.empty() : tensor<8xi1>
  %2:2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%X : tensor<8xf32>) outs(%0, %1 : tensor<8xf32>, tensor<8xi1>) {
  ^bb0(%in: f32, %o0: f32, %o1: i1):
    %relu = arith.maximumf %in, %zero : f32
    %pos = arith.cmpf ogt, %in, %zero : f32
    linalg.yield %relu, %pos : f32, i1
  } -> (tensor<8xf32>, tensor<8xi1>)
  return %2#0, %2#1 : tensor<8xf32>, tensor<8xi1>
}

// -----

// linalg.softmax is decomposed, then imported: its maxnumf starts from NaN,
// maxnumf's identity, so the max needs no combine map.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK: %[[M:.*]] = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(max) : tensor<4xf32>
// CHECK: %[[E:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) [4, 8] : tensor<4x8xf32>
// CHECK: math.exp
// CHECK: %[[L:.*]] = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(add) : tensor<4xf32>
// CHECK: %[[Y:.*]] = tang.comprehension (%{{.*}}, %{{.*}}) [4, 8] : tensor<4x8xf32>
// CHECK: arith.divf
// CHECK: return %[[Y]]
func.func @softmax(%X: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tensor.empty() : tensor<4x8xf32>
  %1 = linalg.softmax dimension(1) ins(%X : tensor<4x8xf32>) outs(%0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// A function without linalg is left alone (dead code included).
// CHECK-LABEL: func.func @no_linalg
// CHECK: %[[DEAD:.*]] = tang.comprehension
// CHECK: return %arg0
func.func @no_linalg(%X: tensor<8xf32>) -> tensor<8xf32> {
  %t = tang.comprehension (%i) [8] : tensor<8xf32> {
    %x = tang.read %X[%i] : tensor<8xf32>
    tang.yield %x : f32
  }
  return %X : tensor<8xf32>
}

// -----

// Reshapes and slices become views, an insert a scatter, a constant pad a
// comprehension of a padded read.
// CHECK-LABEL: func.func @shapes
// CHECK: tang.view %{{.*}} by #{{.*}} : tensor<8xf32> to tensor<2x4xf32>
// CHECK: tang.view %{{.*}} by #{{.*}} : tensor<4x6xf32> to tensor<2x3xf32>
// CHECK: tang.scatter (%[[I:.*]]) [3] into %{{.*}} : tensor<5x5xf32>
// CHECK: tang.put %{{.*}} at [1, %[[I]] + 2] : f32
// CHECK: tang.comprehension (%[[P:.*]], %[[Q:.*]]) [6, 9] : tensor<6x9xf32>
// CHECK: tang.read %{{.*}}[%[[P]] - 1, %[[Q]] - 2] fill(-2.500000e+00) : tensor<4x6xf32>
func.func @shapes(%F: tensor<8xf32>, %X: tensor<4x6xf32>, %B: tensor<5x5xf32>, %V: tensor<3xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>, tensor<5x5xf32>, tensor<6x9xf32>) {
  %e = tensor.expand_shape %F [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  %s = tensor.extract_slice %X[1, 0] [2, 3] [1, 2] : tensor<4x6xf32> to tensor<2x3xf32>
  %i = tensor.insert_slice %V into %B[1, 2] [1, 3] [1, 1] : tensor<3xf32> into tensor<5x5xf32>
  %cst = arith.constant -2.5 : f32
  %p = tensor.pad %X low[1, 2] high[1, 1] {
  ^bb0(%a: index, %b: index):
    tensor.yield %cst : f32
  } : tensor<4x6xf32> to tensor<6x9xf32>
  return %e, %s, %i, %p : tensor<2x4xf32>, tensor<2x3xf32>, tensor<5x5xf32>, tensor<6x9xf32>
}

// -----

// tensor.extract in a payload: at loop indices and constants a read, at an
// index computed from data a gather (out of range traps).
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @extracts
// CHECK: tang.comprehension (%[[I:.*]]) [8]
// CHECK: tang.read %{{.*}}[0] : tensor<8xf32>
// CHECK: %[[K:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: tang.gather %{{.*}}[symbol(%[[K]]), %[[I]]] : tensor<4x8xf32>
func.func @extracts(%X: tensor<8xf32>, %T: tensor<8xf32>, %tok: tensor<8xi32>, %E: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = tensor.empty() : tensor<8xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel"]}
      ins(%X, %tok : tensor<8xf32>, tensor<8xi32>) outs(%0 : tensor<8xf32>) {
  ^bb0(%in: f32, %k: i32, %out: f32):
    %c0 = arith.constant 0 : index
    %t = tensor.extract %T[%c0] : tensor<8xf32>
    %ki = arith.index_cast %k : i32 to index
    %i = linalg.index 0 : index
    %e = tensor.extract %E[%ki, %i] : tensor<4x8xf32>
    %r = arith.addf %in, %t : f32
    %s = arith.addf %r, %e : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
