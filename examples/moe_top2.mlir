// Mixture-of-experts routing, top 2 of 8 experts, for 32 tokens of width 16
// and experts of width 24:
//
//   logits[t, e] = x[t] . Wg[:, e]
//   (v1, e1)     = max, argmax_e logits[t, e]
//   (v2, e2)     = the same over e != e1
//   g1, g2       = softmax(v1, v2):  g1 = 1 / (1 + exp(v2 - v1)), g2 = 1 - g1
//   y[t, j]      = g1 x[t] . W[e1][:, j] + g2 x[t] . W[e2][:, j]
//   load[e]      = the number of tokens routed to expert e (both choices)
//
// The experts' weights are gathered by the routed index (tang.gather of W
// at symbol(e1)); the load is a scatter-add of ones at the routed experts,
// whose colliding tokens add in index order. An argmax over 8 experts is
// always one of them, so the gathers' clamp and the put's drop never act:
// they are the policies kernels run (trap needs a device error channel).
func.func @main(%x: tensor<32x16xf32>, %Wg: tensor<16x8xf32>,
                %W: tensor<8x16x24xf32>)
    -> (tensor<32x24xf32>, tensor<8xf32>) {
  %logits = tang.comprehension (%t, %e) reduce (%d) [32, 8, 16] monoid(add) : tensor<32x8xf32> {
    %a = tang.read %x[%t, %d] : tensor<32x16xf32>
    %b = tang.read %Wg[%d, %e] : tensor<16x8xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  %v1, %e1 = tang.comprehension (%t) reduce (%e) [32, 8] monoid(argmax) : tensor<32xf32>, tensor<32xi32> {
    %l = tang.read %logits[%t, %e] : tensor<32x8xf32>
    %i = tang.index %e : i32
    tang.yield %l, %i : f32, i32
  }
  %v2, %e2 = tang.comprehension (%t) reduce (%e) [32, 8] monoid(argmax) : tensor<32xf32>, tensor<32xi32> {
    %l = tang.read %logits[%t, %e] : tensor<32x8xf32>
    %i = tang.index %e : i32
    %first = tang.read %e1[%t] : tensor<32xi32>
    %same = arith.cmpi eq, %i, %first : i32
    %ninf = arith.constant 0xFF800000 : f32
    %m = arith.select %same, %ninf, %l : f32
    tang.yield %m, %i : f32, i32
  }
  %y = tang.comprehension (%t, %j) [32, 24] : tensor<32x24xf32> {
    %a = tang.read %v1[%t] : tensor<32xf32>
    %b = tang.read %v2[%t] : tensor<32xf32>
    %diff = arith.subf %b, %a : f32
    %ex = math.exp %diff : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %ex : f32
    %g1 = arith.divf %one, %den : f32
    %g2 = arith.subf %one, %g1 : f32
    %k1 = tang.read %e1[%t] : tensor<32xi32>
    %k2 = tang.read %e2[%t] : tensor<32xi32>
    %r1 = arith.index_cast %k1 : i32 to index
    %r2 = arith.index_cast %k2 : i32 to index
    %o1 = tang.comprehension reduce (%d) [16] monoid(add) : f32 {
      %xv = tang.read %x[%t, %d] : tensor<32x16xf32>
      %w = tang.gather %W[symbol(%r1), %d, %j] clamp : tensor<8x16x24xf32>
      %p = arith.mulf %xv, %w : f32
      tang.yield %p : f32
    }
    %o2 = tang.comprehension reduce (%d) [16] monoid(add) : f32 {
      %xv = tang.read %x[%t, %d] : tensor<32x16xf32>
      %w = tang.gather %W[symbol(%r2), %d, %j] clamp : tensor<8x16x24xf32>
      %p = arith.mulf %xv, %w : f32
      tang.yield %p : f32
    }
    %s1 = arith.mulf %g1, %o1 : f32
    %s2 = arith.mulf %g2, %o2 : f32
    %s = arith.addf %s1, %s2 : f32
    tang.yield %s : f32
  }
  %zeros = tang.comprehension (%e) [8] : tensor<8xf32> {
    %z = arith.constant 0.0 : f32
    tang.yield %z : f32
  }
  %load = tang.scatter (%t, %c) [32, 2] into %zeros monoid(add) : tensor<8xf32> {
    %k1 = tang.read %e1[%t] : tensor<32xi32>
    %k2 = tang.read %e2[%t] : tensor<32xi32>
    %ci = tang.index %c : i32
    %zero = arith.constant 0 : i32
    %isFirst = arith.cmpi eq, %ci, %zero : i32
    %k = arith.select %isFirst, %k1, %k2 : i32
    %row = arith.index_cast %k : i32 to index
    %one = arith.constant 1.0 : f32
    tang.put %one at [symbol(%row)] drop : f32
  }
  return %y, %load : tensor<32x24xf32>, tensor<8xf32>
}
