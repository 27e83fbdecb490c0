// Greedy decoding's last step for a batch of 2 sequences: the token of
// the largest logit over a 50000-entry vocabulary, and that logit:
//
//   tok[b]   = the smallest n with logits[b, n] = max_n' logits[b, n']
//   best[b]  = max_n logits[b, n]              logits: 2x50000; tok: 2 (i32)
//
// Two rows cannot fill a GPU: the CUDA pipeline splits each row among
// blocks (their (value, index) pairs combined by the argmax monoid in a
// second kernel).
func.func @main(%logits: tensor<2x50000xf32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %best, %tok = tang.comprehension (%b) reduce (%n) [2, 50000] monoid(argmax) : tensor<2xf32>, tensor<2xi32> {
    %x = tang.read %logits[%b, %n] : tensor<2x50000xf32>
    %i = tang.index %n : i32
    tang.yield %x, %i : f32, i32
  }
  return %best, %tok : tensor<2xf32>, tensor<2xi32>
}
