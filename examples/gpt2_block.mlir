// A GPT-2 transformer block (pre-LayerNorm), written as a plain chain of
// comprehensions, one step each:
//
//   xn  = LayerNorm(x) * ln1_w + ln1_b
//   qkv = xn W_attn + b_attn                                (2x16x96, fused QKV)
//   split: Qh[b, h, l, d] = qkv[b, l, 8h + d]                (views, 4 heads of 8)
//          Kh[b, h, l, d] = qkv[b, l, 32 + 8h + d]
//          Vh[b, h, l, d] = qkv[b, l, 64 + 8h + d]
//   S[b, h, i, j] = scale * sum_d Qh[b,h,i,d] Kh[b,h,j,d]  if j <= i, else -inf
//   P = softmax_j(S),  Oh[b, h, i, d] = sum_j P[b,h,i,j] Vh[b,h,j,d]
//   merge: O[b, l, c] = Oh[b, c floordiv 8, l, c mod 8]       (a view)
//   h   = x + (O W_proj + b_proj)
//   hn  = LayerNorm(h) * ln2_w + ln2_b
//   out = h + (gelu(hn W_fc + b_fc) W_fc2 + b_fc2)
//
//   LayerNorm(v)[.., e] = (v[.., e] - mean_e v) * rsqrt(var_e v + 1e-5)
//   gelu(a) = 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))   (tanh approx.)
//   scale = 1/sqrt(8)
//
// Weights are stored [in, out] and applied as y = x W + b (the layout of
// GPT-2's Conv1D, i.e. the transpose of nn.Linear's [out, in] weight):
//   x, out: 2x16x32 (batch, length, model dim); ln1_w, ln1_b, ln2_w, ln2_b: 32;
//   W_attn: 32x96, b_attn: 96 (columns: Q 0..31, K 32..63, V 64..95);
//   W_proj: 32x32, b_proj: 32; W_fc: 32x128, b_fc: 128; W_fc2: 128x32, b_fc2: 32
func.func @main(%x: tensor<2x16x32xf32>,
                %ln1_w: tensor<32xf32>, %ln1_b: tensor<32xf32>,
                %W_attn: tensor<32x96xf32>, %b_attn: tensor<96xf32>,
                %W_proj: tensor<32x32xf32>, %b_proj: tensor<32xf32>,
                %ln2_w: tensor<32xf32>, %ln2_b: tensor<32xf32>,
                %W_fc: tensor<32x128xf32>, %b_fc: tensor<128xf32>,
                %W_fc2: tensor<128x32xf32>, %b_fc2: tensor<32xf32>) -> tensor<2x16x32xf32> {
  //===------------------------------------------------------------------===//
  // Attention sub-block: h = x + Attn(LayerNorm(x))
  //===------------------------------------------------------------------===//

  // ln_1: mean, variance, normalise
  %sum1 = tang.comprehension (%b, %l) reduce (%k) [2, 16, 32] monoid(add) : tensor<2x16xf32> {
    %v = tang.read %x[%b, %l, %k] : tensor<2x16x32xf32>
    tang.yield %v : f32
  }
  %mu1 = tang.comprehension (%b, %l) [2, 16] : tensor<2x16xf32> {
    %s = tang.read %sum1[%b, %l] : tensor<2x16xf32>
    %n = arith.constant 32.0 : f32
    %m = arith.divf %s, %n : f32
    tang.yield %m : f32
  }
  %var1 = tang.comprehension (%b, %l) reduce (%k) [2, 16, 32] monoid(add) : tensor<2x16xf32> {
    %v = tang.read %x[%b, %l, %k] : tensor<2x16x32xf32>
    %m = tang.read %mu1[%b, %l] : tensor<2x16xf32>
    %d = arith.subf %v, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %n = arith.constant 32.0 : f32
    %t = arith.divf %d2, %n : f32
    tang.yield %t : f32
  }
  %xn = tang.comprehension (%b, %l, %e) [2, 16, 32] : tensor<2x16x32xf32> {
    %v = tang.read %x[%b, %l, %e] : tensor<2x16x32xf32>
    %m = tang.read %mu1[%b, %l] : tensor<2x16xf32>
    %var = tang.read %var1[%b, %l] : tensor<2x16xf32>
    %g = tang.read %ln1_w[%e] : tensor<32xf32>
    %beta = tang.read %ln1_b[%e] : tensor<32xf32>
    %eps = arith.constant 1.0e-5 : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %v, %m : f32
    %dn = arith.mulf %d, %r : f32
    %dg = arith.mulf %dn, %g : f32
    %y = arith.addf %dg, %beta : f32
    tang.yield %y : f32
  }

  // c_attn: fused QKV projection [B, L, D] x [D, 3D], then the bias
  %qkv0 = tang.comprehension (%b, %l, %c) reduce (%e) [2, 16, 96, 32] monoid(add) : tensor<2x16x96xf32> {
    %v = tang.read %xn[%b, %l, %e] : tensor<2x16x32xf32>
    %w = tang.read %W_attn[%e, %c] : tensor<32x96xf32>
    %p = arith.mulf %v, %w : f32
    tang.yield %p : f32
  }
  %qkv = tang.comprehension (%b, %l, %c) [2, 16, 96] : tensor<2x16x96xf32> {
    %v = tang.read %qkv0[%b, %l, %c] : tensor<2x16x96xf32>
    %bias = tang.read %b_attn[%c] : tensor<96xf32>
    %y = arith.addf %v, %bias : f32
    tang.yield %y : f32
  }

  // Split into Q, K, V and into heads: [B, L, 3*H*Dh] viewed as [B, H, L, Dh]
  %Qh = tang.view %qkv by affine_map<(b, h, l, d) -> (b, l, h * 8 + d)> : tensor<2x16x96xf32> to tensor<2x4x16x8xf32>
  %Kh = tang.view %qkv by affine_map<(b, h, l, d) -> (b, l, h * 8 + d + 32)> : tensor<2x16x96xf32> to tensor<2x4x16x8xf32>
  %Vh = tang.view %qkv by affine_map<(b, h, l, d) -> (b, l, h * 8 + d + 64)> : tensor<2x16x96xf32> to tensor<2x4x16x8xf32>

  // Scores: QK^T, then scale and the causal mask (-inf where j > i)
  %QK = tang.comprehension (%b, %h, %i, %j) reduce (%d) [2, 4, 16, 16, 8] monoid(add) : tensor<2x4x16x16xf32> {
    %q = tang.read %Qh[%b, %h, %i, %d] : tensor<2x4x16x8xf32>
    %k = tang.read %Kh[%b, %h, %j, %d] : tensor<2x4x16x8xf32>
    %qk = arith.mulf %q, %k : f32
    tang.yield %qk : f32
  }
  %S = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %qk = tang.read %QK[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %dim = arith.constant 8.0 : f32
    %scale = math.rsqrt %dim : f32
    %s = arith.mulf %qk, %scale : f32
    %vi = tang.index %i : i32
    %vj = tang.index %j : i32
    %keep = arith.cmpi sle, %vj, %vi : i32
    %ninf = arith.constant 0xFF800000 : f32   // -inf
    %sm = arith.select %keep, %s, %ninf : f32
    tang.yield %sm : f32
  }

  // Softmax over j: max, exp(s - max), sum, divide
  %rowmax = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(max) : tensor<2x4x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    tang.yield %s : f32
  }
  %E = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %s = tang.read %S[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %mi = tang.read %rowmax[%b, %h, %i] : tensor<2x4x16xf32>
    %z = arith.subf %s, %mi : f32
    %ez = math.exp %z : f32
    tang.yield %ez : f32
  }
  %lsum = tang.comprehension (%b, %h, %i) reduce (%j) [2, 4, 16, 16] monoid(add) : tensor<2x4x16xf32> {
    %e = tang.read %E[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    tang.yield %e : f32
  }
  %P = tang.comprehension (%b, %h, %i, %j) [2, 4, 16, 16] : tensor<2x4x16x16xf32> {
    %e = tang.read %E[%b, %h, %i, %j] : tensor<2x4x16x16xf32>
    %li = tang.read %lsum[%b, %h, %i] : tensor<2x4x16xf32>
    %p = arith.divf %e, %li : f32
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

  // c_proj: output projection, then bias and residual
  %A = tang.comprehension (%b, %l, %e) reduce (%c) [2, 16, 32, 32] monoid(add) : tensor<2x16x32xf32> {
    %o = tang.read %O[%b, %l, %c] : tensor<2x16x32xf32>
    %w = tang.read %W_proj[%c, %e] : tensor<32x32xf32>
    %p = arith.mulf %o, %w : f32
    tang.yield %p : f32
  }
  %h = tang.comprehension (%b, %l, %e) [2, 16, 32] : tensor<2x16x32xf32> {
    %v = tang.read %x[%b, %l, %e] : tensor<2x16x32xf32>
    %a = tang.read %A[%b, %l, %e] : tensor<2x16x32xf32>
    %bias = tang.read %b_proj[%e] : tensor<32xf32>
    %ab = arith.addf %a, %bias : f32
    %r = arith.addf %v, %ab : f32
    tang.yield %r : f32
  }

  //===------------------------------------------------------------------===//
  // MLP sub-block: out = h + MLP(LayerNorm(h))
  //===------------------------------------------------------------------===//

  // ln_2: mean, variance, normalise
  %sum2 = tang.comprehension (%b, %l) reduce (%k) [2, 16, 32] monoid(add) : tensor<2x16xf32> {
    %v = tang.read %h[%b, %l, %k] : tensor<2x16x32xf32>
    tang.yield %v : f32
  }
  %mu2 = tang.comprehension (%b, %l) [2, 16] : tensor<2x16xf32> {
    %s = tang.read %sum2[%b, %l] : tensor<2x16xf32>
    %n = arith.constant 32.0 : f32
    %m = arith.divf %s, %n : f32
    tang.yield %m : f32
  }
  %var2 = tang.comprehension (%b, %l) reduce (%k) [2, 16, 32] monoid(add) : tensor<2x16xf32> {
    %v = tang.read %h[%b, %l, %k] : tensor<2x16x32xf32>
    %m = tang.read %mu2[%b, %l] : tensor<2x16xf32>
    %d = arith.subf %v, %m : f32
    %d2 = arith.mulf %d, %d : f32
    %n = arith.constant 32.0 : f32
    %t = arith.divf %d2, %n : f32
    tang.yield %t : f32
  }
  %hn = tang.comprehension (%b, %l, %e) [2, 16, 32] : tensor<2x16x32xf32> {
    %v = tang.read %h[%b, %l, %e] : tensor<2x16x32xf32>
    %m = tang.read %mu2[%b, %l] : tensor<2x16xf32>
    %var = tang.read %var2[%b, %l] : tensor<2x16xf32>
    %g = tang.read %ln2_w[%e] : tensor<32xf32>
    %beta = tang.read %ln2_b[%e] : tensor<32xf32>
    %eps = arith.constant 1.0e-5 : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    %d = arith.subf %v, %m : f32
    %dn = arith.mulf %d, %r : f32
    %dg = arith.mulf %dn, %g : f32
    %y = arith.addf %dg, %beta : f32
    tang.yield %y : f32
  }

  // c_fc: up projection D -> 4D, then bias and GELU (tanh approximation)
  %U = tang.comprehension (%b, %l, %f) reduce (%e) [2, 16, 128, 32] monoid(add) : tensor<2x16x128xf32> {
    %v = tang.read %hn[%b, %l, %e] : tensor<2x16x32xf32>
    %w = tang.read %W_fc[%e, %f] : tensor<32x128xf32>
    %p = arith.mulf %v, %w : f32
    tang.yield %p : f32
  }
  %G = tang.comprehension (%b, %l, %f) [2, 16, 128] : tensor<2x16x128xf32> {
    %u = tang.read %U[%b, %l, %f] : tensor<2x16x128xf32>
    %bias = tang.read %b_fc[%f] : tensor<128xf32>
    %y = arith.addf %u, %bias : f32
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %c = arith.constant 0.044715 : f32
    %k0 = arith.constant 0.7978845608028654 : f32   // sqrt(2 / pi)
    %y2 = arith.mulf %y, %y : f32
    %y3 = arith.mulf %y2, %y : f32
    %cy3 = arith.mulf %c, %y3 : f32
    %inner = arith.addf %y, %cy3 : f32
    %arg = arith.mulf %k0, %inner : f32
    %t = math.tanh %arg : f32
    %onept = arith.addf %one, %t : f32
    %hy = arith.mulf %half, %y : f32
    %z = arith.mulf %hy, %onept : f32
    tang.yield %z : f32
  }

  // c_proj (MLP): down projection 4D -> D, then bias and residual
  %Dn = tang.comprehension (%b, %l, %e) reduce (%f) [2, 16, 32, 128] monoid(add) : tensor<2x16x32xf32> {
    %g = tang.read %G[%b, %l, %f] : tensor<2x16x128xf32>
    %w = tang.read %W_fc2[%f, %e] : tensor<128x32xf32>
    %p = arith.mulf %g, %w : f32
    tang.yield %p : f32
  }
  %out = tang.comprehension (%b, %l, %e) [2, 16, 32] : tensor<2x16x32xf32> {
    %v = tang.read %h[%b, %l, %e] : tensor<2x16x32xf32>
    %dn = tang.read %Dn[%b, %l, %e] : tensor<2x16x32xf32>
    %bias = tang.read %b_fc2[%e] : tensor<32xf32>
    %db = arith.addf %dn, %bias : f32
    %r = arith.addf %v, %db : f32
    tang.yield %r : f32
  }
  return %out : tensor<2x16x32xf32>
}
