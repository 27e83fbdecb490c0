// RUN: tang-opt %s --convert-linalg-to-tang | tang-run - --print-values | FileCheck %s

// The import against the reference interpreter, on constants so every value
// is exact (worked out by hand below).
//   A = [[1, 2, 3], [4, 5, 6]], B = [[7, 8], [9, 10], [11, 12]]

// matmul over a zero fill: [[1*7 + 2*9 + 3*11, 1*8 + 2*10 + 3*12], [4*7 + 5*9 + 6*11, 4*8 + 5*10 + 6*12]].
// CHECK: output #0  tensor<2x2xf32>
// CHECK: [58, 64, 139, 154]
// matmul over a fill of 1 (not add's identity): the init is added once.
// CHECK: output #1  tensor<2x2xf32>
// CHECK: [59, 65, 140, 155]
// row max over a -inf fill.
// CHECK: output #2  tensor<2xf32>
// CHECK: [3, 6]
// i32 row sums (6, 15) into a non-splat init [10, 20].
// CHECK: output #3  tensor<2xi32>
// CHECK: [16, 35]
// transpose of A.
// CHECK: output #4  tensor<3x2xf32>
// CHECK: [1, 4, 2, 5, 3, 6]
// masked iota: 3i + j where j <= i, else -1.
// CHECK: output #5  tensor<3x3xf32>
// CHECK: [0, -1, -1, 3, 4, -1, 6, 7, 8]
// 1-D convolution of [1, 2, 3, 4] with [2, 1]: [2 + 2, 4 + 3, 6 + 4].
// CHECK: output #6  tensor<3xf32>
// CHECK: [4, 7, 10]
// softmax of [[0, 0], [1, 3]]: [0.5, 0.5], [1, e^2] / (1 + e^2).
// CHECK: output #7  tensor<2x2xf32>
// CHECK: [0.5, 0.5, 0.119203, 0.880797]
// A reshaped (2x3 -> 6 -> 3x2, expand and collapse as views), then
// transposed: [[1, 3, 5], [2, 4, 6]].
// CHECK: output #8  tensor<2x3xf32>
// CHECK: [1, 3, 5, 2, 4, 6]
// Slices of A: row 1 from column 1 ([5, 6]); columns 0 and 2 of every row
// ([[1, 3], [4, 6]]).
// CHECK: output #9  tensor<2xf32>
// CHECK: [5, 6]
// CHECK: output #10  tensor<2x2xf32>
// CHECK: [1, 3, 4, 6]
// [7, 8] inserted into row 0 of A at column 1: [[1, 7, 8], [4, 5, 6]].
// CHECK: output #11  tensor<2x3xf32>
// CHECK: [1, 7, 8, 4, 5, 6]
// A padded by one -1 before each row: [[-1, 1, 2, 3], [-1, 4, 5, 6]].
// CHECK: output #12  tensor<2x4xf32>
// CHECK: [-1, 1, 2, 3, -1, 4, 5, 6]
// Row sums subtracted from 10 (acc - x): [10 - 6, 10 - 15]; from a zero
// fill: [-6, -15].
// CHECK: output #13  tensor<2xf32>
// CHECK: [4, -5]
// CHECK: output #14  tensor<2xf32>
// CHECK: [-6, -15]
// An embedding lookup (tensor.extract at a token from the input: a
// gather): rows 2, 0, 1 of B = [[7, 8], [9, 10], [11, 12]].
// CHECK: output #15  tensor<3x2xf32>
// CHECK: [11, 12, 7, 8, 9, 10]
#iota = affine_map<(d0, d1) -> (d0, d1)>
func.func @main() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<3x2xf32>, tensor<3x3xf32>, tensor<3xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>) {
  %A = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %B = arith.constant dense<[[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]> : tensor<3x2xf32>
  %Ai = arith.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %init = arith.constant dense<[10, 20]> : tensor<2xi32>
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32

  %e22 = tensor.empty() : tensor<2x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e22 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %C = linalg.matmul ins(%A, %B : tensor<2x3xf32>, tensor<3x2xf32>)
                     outs(%z : tensor<2x2xf32>) -> tensor<2x2xf32>
  %o = linalg.fill ins(%one : f32) outs(%e22 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %C1 = linalg.matmul ins(%A, %B : tensor<2x3xf32>, tensor<3x2xf32>)
                      outs(%o : tensor<2x2xf32>) -> tensor<2x2xf32>

  %e2 = tensor.empty() : tensor<2xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %max = linalg.reduce { arith.maximumf } ins(%A : tensor<2x3xf32>) outs(%m0 : tensor<2xf32>) dimensions = [1]

  %sum = linalg.reduce ins(%Ai : tensor<2x3xi32>) outs(%init : tensor<2xi32>) dimensions = [1]
    (%in: i32, %acc: i32) {
      %s = arith.addi %in, %acc : i32
      linalg.yield %s : i32
    }

  %e32 = tensor.empty() : tensor<3x2xf32>
  %T = linalg.transpose ins(%A : tensor<2x3xf32>) outs(%e32 : tensor<3x2xf32>) permutation = [1, 0]

  %e33 = tensor.empty() : tensor<3x3xf32>
  %mask = linalg.generic {indexing_maps = [#iota], iterator_types = ["parallel", "parallel"]}
      outs(%e33 : tensor<3x3xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i32 = arith.index_cast %i : index to i32
    %j32 = arith.index_cast %j : index to i32
    %c3 = arith.constant 3 : i32
    %i3 = arith.muli %i32, %c3 : i32
    %v = arith.addi %i3, %j32 : i32
    %vf = arith.sitofp %v : i32 to f32
    %keep = arith.cmpi sle, %j32, %i32 : i32
    %m1 = arith.constant -1.000000e+00 : f32
    %r = arith.select %keep, %vf, %m1 : f32
    linalg.yield %r : f32
  } -> tensor<3x3xf32>

  %I = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %K = arith.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %conv = linalg.conv_1d ins(%I, %K : tensor<4xf32>, tensor<2xf32>) outs(%z3 : tensor<3xf32>) -> tensor<3xf32>

  %S = arith.constant dense<[[0.0, 0.0], [1.0, 3.0]]> : tensor<2x2xf32>
  %sm = linalg.softmax dimension(1) ins(%S : tensor<2x2xf32>) outs(%e22 : tensor<2x2xf32>) -> tensor<2x2xf32>

  %flat = tensor.collapse_shape %A [[0, 1]] : tensor<2x3xf32> into tensor<6xf32>
  %A32 = tensor.expand_shape %flat [[0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
  %e23 = tensor.empty() : tensor<2x3xf32>
  %AT = linalg.transpose ins(%A32 : tensor<3x2xf32>) outs(%e23 : tensor<2x3xf32>) permutation = [1, 0]

  %row = tensor.extract_slice %A[1, 1] [1, 2] [1, 1] : tensor<2x3xf32> to tensor<2xf32>
  %cols = tensor.extract_slice %A[0, 0] [2, 2] [1, 2] : tensor<2x3xf32> to tensor<2x2xf32>
  %new = arith.constant dense<[7.0, 8.0]> : tensor<2xf32>
  %ins = tensor.insert_slice %new into %A[0, 1] [1, 2] [1, 1] : tensor<2xf32> into tensor<2x3xf32>
  %m1 = arith.constant -1.0 : f32
  %pad = tensor.pad %A low[0, 1] high[0, 0] {
  ^bb0(%pi: index, %pj: index):
    tensor.yield %m1 : f32
  } : tensor<2x3xf32> to tensor<2x4xf32>

  %ten = arith.constant 10.0 : f32
  %e2f = tensor.empty() : tensor<2xf32>
  %f10 = linalg.fill ins(%ten : f32) outs(%e2f : tensor<2xf32>) -> tensor<2xf32>
  %minus = linalg.reduce ins(%A : tensor<2x3xf32>) outs(%f10 : tensor<2xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %d = arith.subf %acc, %in : f32
      linalg.yield %d : f32
    }
  %f0 = linalg.fill ins(%zero : f32) outs(%e2f : tensor<2xf32>) -> tensor<2xf32>
  %neg = linalg.reduce ins(%A : tensor<2x3xf32>) outs(%f0 : tensor<2xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %d = arith.subf %acc, %in : f32
      linalg.yield %d : f32
    }

  %tok = arith.constant dense<[2, 0, 1]> : tensor<3xi32>
  %eemb = tensor.empty() : tensor<3x2xf32>
  %emb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%tok : tensor<3xi32>) outs(%eemb : tensor<3x2xf32>) {
  ^bb0(%t: i32, %out: f32):
    %ti = arith.index_cast %t : i32 to index
    %tj = linalg.index 1 : index
    %v = tensor.extract %B[%ti, %tj] : tensor<3x2xf32>
    linalg.yield %v : f32
  } -> tensor<3x2xf32>

  return %C, %C1, %max, %sum, %T, %mask, %conv, %sm, %AT, %row, %cols, %ins, %pad, %minus, %neg, %emb : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<3x2xf32>, tensor<3x3xf32>, tensor<3xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<2x3xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<3x2xf32>
}
