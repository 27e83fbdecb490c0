// A pre-norm (Llama-style) transformer block with causal multi-head attention
// and a SwiGLU feed-forward network:
//
//   xn = RMSNorm(x) * wn1
//   Q = xn Wq,  K = xn Wk,  V = xn Wv                     (2x16x32 each)
//   split heads: Qh[b, h, l, d] = Q[b, l, 8h + d]          (views, 4 heads of 8)
//   S[b, h, i, j] = scale * sum_d Qh[b,h,i,d] Kh[b,h,j,d]  if j <= i, else -inf
//   P = softmax_j(S),  Oh[b, h, i, d] = sum_j P[b,h,i,j] Vh[b,h,j,d]
//   merge heads: O[b, l, c] = Oh[b, c floordiv 8, l, c mod 8]   (a view)
//   h = x + O Wo
//   hn = RMSNorm(h) * wn2
//   out = h + (silu(hn W1) * (hn W3)) W2
//
//   RMSNorm(v)[.., e] = v[.., e] * rsqrt(mean_e v[.., e]^2 + 1e-6);
//   silu(a) = a / (1 + exp(-a));  scale = 1/sqrt(8)
//   x, out: 2x16x32 (batch, length, model dim); wn1, wn2: 32;
//   Wq, Wk, Wv, Wo: 32x32; W1, W3: 32x64; W2: 64x32
func.func @main(%x: tensor<2x16x32xf32>, %wn1: tensor<32xf32>,
                %Wq: tensor<32x32xf32>, %Wk: tensor<32x32xf32>,
                %Wv: tensor<32x32xf32>, %Wo: tensor<32x32xf32>,
                %wn2: tensor<32xf32>, %W1: tensor<32x64xf32>,
                %W3: tensor<32x64xf32>, %W2: tensor<64x32xf32>) -> tensor<2x16x32xf32> {
  //===------------------------------------------------------------------===//
  // Attention sub-block: h = x + Attn(RMSNorm(x))
  //===------------------------------------------------------------------===//

  // xn = RMSNorm(x) * wn1 (mean square as a nested scalar reduction)
  %xn = tang.comprehension (%b, %l, %e) [2, 16, 32] : tensor<2x16x32xf32> {
    %ss = tang.comprehension reduce (%k) [32] monoid(add) : f32 {
      %v = tang.read %x[%b, %l, %k] : tensor<2x16x32xf32>
      %v2 = arith.mulf %v, %v : f32
      tang.yield %v2 : f32
    }
    %n = arith.constant 32.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %ms = arith.divf %ss, %n : f32
    %mse = arith.addf %ms, %eps : f32
    %r = math.rsqrt %mse : f32
    %v = tang.read %x[%b, %l, %e] : tensor<2x16x32xf32>
    %w = tang.read %wn1[%e] : tensor<32xf32>
    %vr = arith.mulf %v, %r : f32
    %y = arith.mulf %vr, %w : f32
    tang.yield %y : f32
  }

  // Q, K, V projections: [B, L, D] x [D, D]
  %Q = tang.comprehension (%b, %l, %c) reduce (%e) [2, 16, 32, 32] monoid(add) : tensor<2x16x32xf32> {
    %v = tang.read %xn[%b, %l, %e] : tensor<2x16x32xf32>
    %w = tang.read %Wq[%e, %c] : tensor<32x32xf32>
    %p = arith.mulf %v, %w : f32
    tang.yield %p : f32
  }
  %K = tang.comprehension (%b, %l, %c) reduce (%e) [2, 16, 32, 32] monoid(add) : tensor<2x16x32xf32> {
    %v = tang.read %xn[%b, %l, %e] : tensor<2x16x32xf32>
    %w = tang.read %Wk[%e, %c] : tensor<32x32xf32>
    %p = arith.mulf %v, %w : f32
    tang.yield %p : f32
  }
  %V = tang.comprehension (%b, %l, %c) reduce (%e) [2, 16, 32, 32] monoid(add) : tensor<2x16x32xf32> {
    %v = tang.read %xn[%b, %l, %e] : tensor<2x16x32xf32>
    %w = tang.read %Wv[%e, %c] : tensor<32x32xf32>
    %p = arith.mulf %v, %w : f32
    tang.yield %p : f32
  }

  // Split heads: [B, L, H*Dh] viewed as [B, H, L, Dh] (no copy)
  %Qh = tang.view %Q by affine_map<(b, h, l, d) -> (b, l, h * 8 + d)> : tensor<2x16x32xf32> to tensor<2x4x16x8xf32>
  %Kh = tang.view %K by affine_map<(b, h, l, d) -> (b, l, h * 8 + d)> : tensor<2x16x32xf32> to tensor<2x4x16x8xf32>
  %Vh = tang.view %V by affine_map<(b, h, l, d) -> (b, l, h * 8 + d)> : tensor<2x16x32xf32> to tensor<2x4x16x8xf32>

  // Causal scores: S = scale * Qh Kh^T where j <= i, -inf elsewhere
  %S = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %dot = tang.comprehension reduce (%d) [8] monoid(add) : f32 {
      %q = tang.read %Qh[%b, %h, %i, %d] : tensor<2x4x16x8xf32>
      %k = tang.read %Kh[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
      %qk = arith.mulf %q, %k : f32
      tang.yield %qk : f32
    }
    %dim = arith.constant 8.0 : f32
    %scale = math.rsqrt %dim : f32
    %s = arith.mulf %dot, %scale : f32
    %vi = tang.index %i : i32
    %vj = tang.index %j : i32
    %keep = arith.cmpi sle, %vj, %vi : i32
    %ninf = arith.constant 0xFF800000 : f32   // -inf
    %sm = arith.select %keep, %s, %ninf : f32
    tang.yield %sm : f32
  }

  // Softmax over j: max, sum of exp, divide
  %m = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(max) : tensor<2x4x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    tang.yield %s : f32
  }
  %lsum = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(add) : tensor<2x4x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %mi = tang.read %m[%b, %h, %i] : tensor<2x4x16xf32>
    %z = arith.subf %s, %mi : f32
    %ez = math.exp %z : f32
    tang.yield %ez : f32
  }
  %P = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %mi = tang.read %m[%b, %h, %i] : tensor<2x4x16xf32>
    %li = tang.read %lsum[%b, %h, %i] : tensor<2x4x16xf32>
    %z = arith.subf %s, %mi : f32
    %ez = math.exp %z : f32
    %p = arith.divf %ez, %li : f32
    tang.yield %p : f32
  }

  // Oh = P Vh
  %Oh = tang.comprehension (%b, %h, %i, %d) reduce (%j) [2, 4, 16, 8, 16] monoid(add) : tensor<2x4x16x8xf32> {
    %p = tang.read %P[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %v = tang.read %Vh[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
    %pv = arith.mulf %p, %v : f32
    tang.yield %pv : f32
  }

  // Merge heads: [B, H, L, Dh] viewed as [B, L, H*Dh]
  %O = tang.view %Oh by affine_map<(b, l, c) -> (b, c floordiv 8, l, c mod 8)> : tensor<2x4x16x8xf32> to tensor<2x16x32xf32>

  // h = x + O Wo (output projection as a nested reduction, plus the residual)
  %h = tang.comprehension (%b, %l, %e) [2, 16, 32] : tensor<2x16x32xf32> {
    %proj = tang.comprehension reduce (%c) [32] monoid(add) : f32 {
      %o = tang.read %O[%b, %l, %c] : tensor<2x16x32xf32>
      %w = tang.read %Wo[%c, %e] : tensor<32x32xf32>
      %p = arith.mulf %o, %w : f32
      tang.yield %p : f32
    }
    %v = tang.read %x[%b, %l, %e] : tensor<2x16x32xf32>
    %r = arith.addf %v, %proj : f32
    tang.yield %r : f32
  }

  //===------------------------------------------------------------------===//
  // Feed-forward sub-block: out = h + SwiGLU(RMSNorm(h))
  //===------------------------------------------------------------------===//

  // hn = RMSNorm(h) * wn2
  %hn = tang.comprehension (%b, %l, %e) [2, 16, 32] : tensor<2x16x32xf32> {
    %ss = tang.comprehension reduce (%k) [32] monoid(add) : f32 {
      %v = tang.read %h[%b, %l, %k] : tensor<2x16x32xf32>
      %v2 = arith.mulf %v, %v : f32
      tang.yield %v2 : f32
    }
    %n = arith.constant 32.0 : f32
    %eps = arith.constant 1.0e-6 : f32
    %ms = arith.divf %ss, %n : f32
    %mse = arith.addf %ms, %eps : f32
    %r = math.rsqrt %mse : f32
    %v = tang.read %h[%b, %l, %e] : tensor<2x16x32xf32>
    %w = tang.read %wn2[%e] : tensor<32xf32>
    %vr = arith.mulf %v, %r : f32
    %y = arith.mulf %vr, %w : f32
    tang.yield %y : f32
  }

  // G = silu(hn W1) * (hn W3): both projections as nested reductions
  %G = tang.comprehension (%b, %l, %f) [2, 16, 64] : tensor<2x16x64xf32> {
    %a = tang.comprehension reduce (%e) [32] monoid(add) : f32 {
      %v = tang.read %hn[%b, %l, %e] : tensor<2x16x32xf32>
      %w = tang.read %W1[%e, %f] : tensor<32x64xf32>
      %p = arith.mulf %v, %w : f32
      tang.yield %p : f32
    }
    %u = tang.comprehension reduce (%e) [32] monoid(add) : f32 {
      %v = tang.read %hn[%b, %l, %e] : tensor<2x16x32xf32>
      %w = tang.read %W3[%e, %f] : tensor<32x64xf32>
      %p = arith.mulf %v, %w : f32
      tang.yield %p : f32
    }
    %one = arith.constant 1.0 : f32
    %na = arith.negf %a : f32
    %ena = math.exp %na : f32
    %den = arith.addf %one, %ena : f32
    %silu = arith.divf %a, %den : f32
    %g = arith.mulf %silu, %u : f32
    tang.yield %g : f32
  }

  // out = h + G W2
  %out = tang.comprehension (%b, %l, %e) [2, 16, 32] : tensor<2x16x32xf32> {
    %down = tang.comprehension reduce (%f) [64] monoid(add) : f32 {
      %g = tang.read %G[%b, %l, %f] : tensor<2x16x64xf32>
      %w = tang.read %W2[%f, %e] : tensor<64x32xf32>
      %p = arith.mulf %g, %w : f32
      tang.yield %p : f32
    }
    %v = tang.read %h[%b, %l, %e] : tensor<2x16x32xf32>
    %r = arith.addf %v, %down : f32
    tang.yield %r : f32
  }
  return %out : tensor<2x16x32xf32>
}
