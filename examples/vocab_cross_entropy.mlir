// The cross-entropy loss of a language model's logits, per token:
//
//   m[i]    = max_j X[i, j]
//   l[i]    = sum_j exp(X[i, j] - m[i])
//   loss[i] = m[i] + log(l[i]) - X[i, labels[i]]
//
// written as the plain chain a user writes. --tang-fuse puts the two row
// reductions into the loss's body and --tang-online-softmax makes them one
// pass (the softmax normaliser monoid); with no row left to share, each
// token is a block whose threads split its vocabulary (a row kernel
// without a row). The label's logit is a gather (`clamp`: a label outside
// the vocabulary reads its first or last entry). The vocabulary, 2056 = 8 x
// 257, is no multiple of a block's threads times its vector: the threads'
// last pass is partial. X: 6x2056, labels: 6 (i32); loss: 6.
func.func @main(%X: tensor<6x2056xf32>, %labels: tensor<6xi32>) -> tensor<6xf32> {
  %m = tang.comprehension (%i) reduce (%j) [6, 2056] monoid(max) : tensor<6xf32> {
    %x = tang.read %X[%i, %j] : tensor<6x2056xf32>
    tang.yield %x : f32
  }
  %l = tang.comprehension (%i) reduce (%j) [6, 2056] monoid(add) : tensor<6xf32> {
    %x = tang.read %X[%i, %j] : tensor<6x2056xf32>
    %mi = tang.read %m[%i] : tensor<6xf32>
    %d = arith.subf %x, %mi : f32
    %e = math.exp %d : f32
    tang.yield %e : f32
  }
  %loss = tang.comprehension (%i) [6] : tensor<6xf32> {
    %mi = tang.read %m[%i] : tensor<6xf32>
    %li = tang.read %l[%i] : tensor<6xf32>
    %lab = tang.read %labels[%i] : tensor<6xi32>
    %k = arith.index_cast %lab : i32 to index
    %xl = tang.gather %X[%i, symbol(%k)] clamp : tensor<6x2056xf32>
    %g = math.log %li : f32
    %lse = arith.addf %mi, %g : f32
    %r = arith.subf %lse, %xl : f32
    tang.yield %r : f32
  }
  return %loss : tensor<6xf32>
}
