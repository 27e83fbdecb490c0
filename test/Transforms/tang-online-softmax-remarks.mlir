// RUN: tang-opt %s --tang-online-softmax --split-input-file -verify-diagnostics

// A weighted sum whose probability is exp(s - m) / l but whose max is taken
// over other scores (K2, not K): not attention's softmax. The remark names
// the step that failed.
func.func @max_of_other_scores(%Q: tensor<4x8xf32>, %K: tensor<16x8xf32>, %K2: tensor<16x8xf32>, %V: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{not an online-softmax reduction: the max is not over the same scores as the exponent}}
  %O = tang.comprehension (%i, %d) reduce (%j) [4, 8, 16] monoid(add) : tensor<4x8xf32> {
    %s = tang.comprehension reduce (%e) [8] monoid(add) : f32 {
      %q = tang.read %Q[%i, %e] : tensor<4x8xf32>
      %k = tang.read %K[%j, %e] : tensor<16x8xf32>
      %p = arith.mulf %q, %k : f32
      tang.yield %p : f32
    }
    %m = tang.comprehension reduce (%j2) [16] monoid(max) : f32 {
      %s2 = tang.comprehension reduce (%e) [8] monoid(add) : f32 {
        %q = tang.read %Q[%i, %e] : tensor<4x8xf32>
        %k = tang.read %K2[%j2, %e] : tensor<16x8xf32>
        %p = arith.mulf %q, %k : f32
        tang.yield %p : f32
      }
      tang.yield %s2 : f32
    }
    %l = tang.comprehension reduce (%j3) [16] monoid(add) : f32 {
      %s3 = tang.comprehension reduce (%e) [8] monoid(add) : f32 {
        %q = tang.read %Q[%i, %e] : tensor<4x8xf32>
        %k = tang.read %K[%j3, %e] : tensor<16x8xf32>
        %p = arith.mulf %q, %k : f32
        tang.yield %p : f32
      }
      %z = arith.subf %s3, %m : f32
      %ez = math.exp %z : f32
      tang.yield %ez : f32
    }
    %z = arith.subf %s, %m : f32
    %ez = math.exp %z : f32
    %p = arith.divf %ez, %l : f32
    %v = tang.read %V[%j, %d] : tensor<16x8xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %O : tensor<4x8xf32>
}

// -----

// The normaliser is a tensor read, not a nested sum of exp(s - m).
func.func @normaliser_read(%S: tensor<4x16xf32>, %L: tensor<4xf32>, %V: tensor<16x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @+1 {{not an online-softmax reduction: the factor exp(s - m) / l has an m that is not a nested max or an l that is not a nested sum}}
  %O = tang.comprehension (%i, %d) reduce (%j) [4, 8, 16] monoid(add) : tensor<4x8xf32> {
    %s = tang.read %S[%i, %j] : tensor<4x16xf32>
    %m = tang.comprehension reduce (%j2) [16] monoid(max) : f32 {
      %s2 = tang.read %S[%i, %j2] : tensor<4x16xf32>
      tang.yield %s2 : f32
    }
    %l = tang.read %L[%i] : tensor<4xf32>
    %z = arith.subf %s, %m : f32
    %ez = math.exp %z : f32
    %p = arith.divf %ez, %l : f32
    %v = tang.read %V[%j, %d] : tensor<16x8xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }
  return %O : tensor<4x8xf32>
}
