//===- Passes.td - tang rewrites ---------------------------*- tablegen -*-===//
//
// Rewrites that stay in the tang dialect.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_TRANSFORMS_PASSES_TD
#define TANG_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TangFuse : Pass<"tang-fuse", "::mlir::ModuleOp"> {
  let summary = "Fuse comprehensions by substituting producers' bodies into reads";
  let description = [{
    One rule, applied to a fixed point: a `tang.read` of a tensor produced by
    a function-level comprehension is replaced by the producer's body at the
    read's index expressions. The producer's reduced indices become a nested
    comprehension in the consumer's body; a producer without reduced indices
    is inlined. Reads of views compose their affine maps first.

    ```mlir
    // Before: m is materialised.
    %m = tang.comprehension (%i) reduce (%j) [8, 32] monoid(max) : tensor<8xf32> {
      %x = tang.read %X[%i, %j] : tensor<8x32xf32>
      tang.yield %x : f32
    }
    %y = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
      %x = tang.read %X[%i, %j] : tensor<8x32xf32>
      %mi = tang.read %m[%i] : tensor<8xf32>
      ...
    }
    // After: the max is a nested comprehension in %y's body.
    %y = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
      %x = tang.read %X[%i, %j] : tensor<8x32xf32>
      %mi = tang.comprehension reduce (%k) [32] monoid(max) : f32 {
        %x2 = tang.read %X[%i, %k] : tensor<8x32xf32>
        tang.yield %x2 : f32
      }
      ...
    }
    ```

    Policy is separate from the rule. A producer stays materialised when
    fusing it would recompute its elements: the recompute factor of a read
    is the number of distinct evaluations of the substituted body (the
    product of the extents of the indices the read's expressions use: a
    schedule evaluates a nested reduction once per distinct value of the
    indices it depends on) divided by the producer's number of elements.
    A producer that contains a reduction is moreover fused only where the
    consumer needs its value across at most `max-broadcast` points of its
    parallel domain, or where the consumer already reads every tensor the
    producer reads (a row reduction shared across its row, as in softmax).
    A fusion that would grow the consumer's body past `max-body-ops`
    (producers read at several points are copied once per point, which
    multiplies along chains) is not made. A producer that contains a
    reduction and stays materialised whatever fusion decides (returned, or
    read by a scatter, a scan, a padded read, or a comprehension of symbolic
    sizes when it has none or the other way round, which fusion does not
    take) is fused nowhere: its reduction would
    run twice, once for the materialised copy and once in the consumer (a
    decode step's q/k/v product, whose values also go into the KV cache,
    would be recomputed in the norms of q and k). A producer marked `tang.saved`
    (a value `--tang-grad` chose to save) stays materialised. A producer
    whose result is no longer read is erased.

    The work bound: fusion must not make the program do much more work.
    After fusing to a fixed point the pass counts, for every function-level
    comprehension, the scalar operations the kernel form executes for it
    (`getExecutedWork`: each body operation once per point of the domains
    around it, what does not depend on the reduced indices once per parallel
    point, and what does not depend on the last parallel index once per row
    for maps and online-softmax reductions, as the row and flash kernels
    compute it), with `--tang-online-softmax`'s rewrites applied, since they
    are what makes fused attention quadratic. While a comprehension's count
    exceeds `max-work-factor` times the sum of the unfused counts of the
    comprehensions fused into it, the pass tries keeping each of those
    producers materialised, keeps the one that lowers the program's count
    most (or, if none does, fuses nothing into that comprehension), and
    says so in a remark. `report-work` remarks every function-level
    comprehension's count next to the unfused one. A symbolic extent (a
    size known when the program runs, such as a decode step's context
    length) counts as 1024 points in these counts and in the recompute and
    broadcast factors; a nested reduction keeps its symbolic extents.
    Comprehensions of symbolic sizes fuse among themselves only (a decode
    step's attention: scores, max, sum and weighted sum over the context),
    which keeps a model's layers from fusing into one another through them.
  }];
  let options = [
    Option<"maxRecompute", "max-recompute", "double", "1.0",
           "Largest recompute factor a fusion may incur">,
    Option<"maxBroadcast", "max-broadcast", "int64_t", "256",
                      "Largest number of consumer points (parallel indices the read does "
           "not use) that may share a fused reduction the consumer does not "
           "otherwise read the inputs of">,
    Option<"maxBodyOps", "max-body-ops", "int64_t", "4096",
           "Largest consumer body (operations, nested ones included) a fusion "
           "may produce: producers read at several points are copied once per "
           "point, which multiplies along chains">,
    Option<"maxWorkFactor", "max-work-factor", "double", "2.0",
           "Largest factor by which fusion may multiply the operations a "
           "comprehension executes (counted from extents) over those of the "
           "comprehensions fused into it">,
    Option<"reportWork", "report-work", "bool", "false",
           "Remark each function-level comprehension's executed operations, "
           "fused and unfused">,
  ];
  let statistics = [
    Statistic<"numFused", "fused-reads", "Reads replaced by a producer's body">,
    Statistic<"numKeptRecompute", "kept-recompute",
              "Reads not fused: recompute factor above max-recompute">,
        Statistic<"numKeptBroadcast", "kept-broadcast",
              "Reads not fused: reduction broadcast above max-broadcast">,
    Statistic<"numKeptSize", "kept-size",
              "Reads not fused: the consumer would exceed max-body-ops">,
    Statistic<"numKeptShared", "kept-shared",
              "Reads not fused: the producer's reduction stays materialised "
              "for a use fusion does not take">,
    Statistic<"numKeptWork", "kept-work",
              "Reads not fused: the consumer would exceed max-work-factor">,
    Statistic<"numErased", "erased-producers",
              "Producers erased after every read was fused">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect"];
}

def TangSpecializeSizes : Pass<"tang-specialize-sizes", "::mlir::ModuleOp"> {
  let summary = "Give a function's symbolic sizes values: a static function";
  let description = [{
    Replaces the size symbols of a function (its `index` arguments and the
    `?` dimensions of its tensor arguments) by the values `sizes` gives, in
    tang-run's `--size` syntax (`arg5=9`, `arg0.1=128`):

    ```
    tang-opt examples/kv_cache_decode.mlir \
      --tang-specialize-sizes="sizes=arg5=9" --tang-grad
    ```

    The index arguments go (their uses become constants), `?` dimensions
    become static, and symbolic extents become the static extents they
    evaluate to, with the result types that follow. What passes need
    static extents for then runs on the result: `--tang-grad`, the fusion
    and schedules of a size class, a bundle for one known shape. Every
    size must get a value, and the function's size requirements (the
    bounds the verifier could not prove for every size) must hold at those
    values: a broken one is an error naming it, as a run would report.
  }];
  let options = [
    ListOption<"sizes", "sizes", "std::string",
               "The value of every size: argK=N for the index argument #K, "
               "argK.D=N for the '?' dimension D of tensor argument #K">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to specialise (default: every function with "
           "symbolic sizes)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TangTriangularScan : Pass<"tang-triangular-scan", "::mlir::ModuleOp"> {
  let summary = "Rewrite prefix reductions over a triangular mask into scans";
  let description = [{
    The triangular form users write for a prefix reduction,

    ```mlir
    // y[i] = sum_k select(k <= i, x[k], 0): O(n^2) work
    %y = tang.comprehension (%i) reduce (%k) [64, 64] monoid(add) : tensor<64xf32> {
      %xk = tang.read %x[%k] : tensor<64xf32>
      %vi = tang.index %i : i32
      %vk = tang.index %k : i32
      %keep = arith.cmpi sle, %vk, %vi : i32
      %zero = arith.constant 0.0 : f32
      %v = arith.select %keep, %xk, %zero : f32
      tang.yield %v : f32
    }
    ```

    becomes `tang.scan along (%k) [64] monoid(add) { ...; tang.yield %xk }`
    (O(n) work), when: the reduction is over one index `k` under a builtin
    monoid of one component (add, mul, max, min, and, or) or a `tang.monoid`
    (commutative or not: a scan keeps the order); every yield is
    `select(k <= i, v, identity)` with one mask (`sle`/`ule`, or
    `sge`/`uge` with the operands swapped, on `tang.index` of the two
    indices) and the identity's component, `i` the last parallel index, of
    the same extent as `k`; and no `v` depends on `i` (the linear
    recurrence of examples/linear_recurrence.mlir is one). Other comprehensions are left alone. The interpreter runs the
    triangular form as written: the rewrite is checked against it
    (test_translation_validation.py).
  }];
  let statistics = [
    Statistic<"numScans", "scans", "Triangular reductions rewritten to scans">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect"];
}

def TangChunkAffineScan : Pass<"tang-chunk-affine-scan", "::mlir::ModuleOp"> {
  let summary = "Chunk a scan of matrix states whose steps are diagonal plus "
                "rank one (the gated delta rule) into the WY form";
  let description = [{
    A linear recurrence with a matrix state, `S_t = A_t S_{t-1} + B_t`,
    written as `tang.tensor_scan` under the composition of affine maps,
    costs a K x K by K x V product per step and keeps every step's state.
    When every transition is a scalar decay plus a rank-one update and
    every input is rank one,

        A_t = d_t I + u_t w_t^T,    B_t = p_t v_t^T

    (the gated delta rule: `d = alpha`, `u = -alpha beta k`, `w = k`,
    `p = beta k`; DeltaNet with `d = 1`, linear attention with `u = 0`),
    this pass rewrites it into the chunked form: within each chunk of `C`
    steps, the rows `x_t = S_{t-1}^T w_t` solve a unit lower-triangular
    system, `X = (I - L)^-1 (diag(gamma) W S_0 + L_p V)`, solved by
    forward substitution (`tang.triangular_solve`: `C^2 / 2` multiply-adds
    a column of `diag(gamma) W` and of `L_p V`); each chunk becomes one
    dense affine step
    `(A_c, B_c)`, a `tang.tensor_scan` of `T / C` chunk steps (attribute
    `tang.chunked`) carries the state across chunks, and each step's state
    is `gamma_t S_start + sum_{s <= t} Gamma_{t,s} (u_s x_s^T + p_s v_s^T)`
    (fusion substitutes it into its readers). A reader that contracts each
    state with a vector over its row, `o_t = S_t^T q_t` (plain indices, in
    any order, `q` not varying along the column), gets it reassociated:
    `(q_t . u_s)` and `(q_t . p_s)` per chunk, then `o` from three products
    per chunk, K + 2C products an element instead of K C. A read of the
    last step's state (the final state) reads the last chunk's. Every
    product of the plan is a contraction of its own, scaled and masked by
    maps, so that each runs as a tiled product. Decays enter as their logs
    (`exp(g)` gives `g`; any other `d` its `log`: `d` must be positive),
    and every decay between two steps of a chunk is `exp` of their log
    decays summed directly, <= 0 where it is used (not a difference of
    cumulative sums: f32 holds those to |G| u, and |G| reaches hundreds
    over a chunk of strong decays). Work per chunk: O(C^3 + C^2 (K + V) + C K V +
    K^2 V) instead of C K^2 V.

    Matched: a `tang.tensor_scan` whose monoid's combine is, term by term,
    `(A2 A1, A2 B1 + B2)` (comprehensions of products and sums of its
    arguments, read in place), whose transition elements come from a map
    comprehension whose yield separates over the two matrix indices into
    `d I + u w^T` (products, sums, negations, `select(i == j, d, 0)`), its
    inputs into `p v^T`, and whose transition results are unused (only the
    states are). Other tensor scans are left as they are; one whose monoid
    is the affine composition but whose elements do not separate gets a
    remark saying why. The chunk length is `chunk` (it must divide the
    scan's length) or, by default, the largest divisor of the length up
    to 64. With the default, a scan of one step (a decode update) becomes
    its map, `S = d S0 + u (w^T S0) + p v^T` (no transition formed, no
    scan), its contracting readers `d (q^T S0) + (q . u) (w^T S0) + (q .
    p) v` (`q^T S0` beside `w^T S0`: one pass over S0), and a scan no chunk
    of 2 to 64 steps divides (a prime length) is left as it is, with a
    remark.
  }];
  let options = [
    Option<"chunk", "chunk", "int64_t", "0",
           "Steps per chunk (0: the largest divisor of the length <= 64)">,
    Option<"plainOperands", "plain-operands", "bool", "false",
           "Keep the factors that compute (u = -exp(g) beta k, p = beta k, "
           "a widened v) materialised, so that every product of the plan "
           "reads plain operands of one element type, what tensor cores "
           "take (--tang-lower-cuda sets it with tf32)">,
  ];
  let statistics = [
    Statistic<"numChunked", "chunked", "Tensor scans rewritten to chunks">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def TangOnlineSoftmax : Pass<"tang-online-softmax", "::mlir::ModuleOp"> {
  let summary = "Rewrite softmax-normalised reductions into single-pass monoids";
  let description = [{
    Recognises, by the algebra of the graph and never by op names, the chain
    max-reduction, `exp(s - m)`, sum, divide, weighted sum that attention is
    made of, and rewrites it into one comprehension under the
    `online_softmax` monoid (running max, running sum, running weighted
    accumulator). Scales, causal masks through `select` and grouped-query
    views are part of the score expression `s` and carry over unchanged.
    Pairs of a max-reduction and a sum of `exp(s - max)` over the same
    scores that remain (softmax, logsumexp, softmax cross-entropy) become
    one `softmax_norm` comprehension with two results.

    ```mlir
    // Before (after --tang-fuse): O = sum_j exp(s_j - max s) / (sum exp(s - max s)) * v_j
    // After:
    %o = tang.comprehension (%b, %h, %i, %d) reduce (%j) [...] monoid(online_softmax) : tensor<...> {
      %s = ...            // the score at j
      %v = tang.read %V[%b, %h, %j, %d] : ...
      tang.yield %s, %v : f32, f32
    }
    ```
  }];
  let statistics = [
    Statistic<"numOnlineSoftmax", "online-softmax",
              "Weighted sums rewritten to the online-softmax monoid">,
    Statistic<"numSoftmaxNorm", "softmax-norm",
              "Max/sum-of-exp pairs rewritten to the softmax_norm monoid">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect"];
}

def TangGrad : Pass<"tang-grad", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation: the vector-Jacobian product of a function, as tang ops";
  let description = [{
    For a function `@f(inputs) -> results` made of function-level
    comprehensions and views, adds `@f_grad(inputs, cotangents) ->
    gradients`: one cotangent per floating-point result, one gradient per
    differentiated argument (`wrt`, default every floating-point tensor
    argument). The gradient is built only from tang ops, so it goes through
    `--tang-fuse`, scheduling and every backend like a forward program.

    * The forward program is recomputed first (its intermediate tensors are
      saved). With `fuse-forward` (the default) it is the forward as
      `--tang-fuse` and `--tang-online-softmax` leave it, so attention
      written as scores, max, sum, probabilities and product is
      differentiated as one online-softmax reduction. A comprehension nested in another's body is hoisted to a
      function-level tensor over the outer indices it uses (saved;
      statistic `saved-nested`) or, for a sum whose tensor would be large
      (`policy`), recomputed inside the gradient's bodies (statistic
      `recomputed-nested`): the gradients of fused attention hold no
      L x L tensor.
    * The cotangent of a tensor read at `X[f(i)]` in a comprehension is a
      comprehension over X's index space: each coordinate of `f` that is a
      unit index plus other terms solves for that index; the indices left
      free are summed over (add monoid); solved indices that may leave
      their range, and coordinates nothing solved (diagonals, strides), are
      masked, reading at coordinates taken modulo the extent so that every
      read stays in bounds. Contributions of several reads add up. A read
      whose coordinates combine indices the read determines (a head's
      columns of a concatenated projection, `h * 64 + e` with e in [0, 64);
      a reshape's `(c floordiv 64, c mod 64)`) or that covers part of the
      tensor (`AU[b, l, f + F]`) gets its gradient over its own indices
      instead, gathered into the tensor through the inverse map (masked to
      the part it covers): no sum over the head index, no masked half.
      A cotangent that only widens another tensor (f32 for a product
      computed in f32) is read as that tensor, so the gradient's products
      keep 16-bit operands.
    * The body's derivative is reverse-mode over its scalar graph
      (recomputed in the gradient's body): add, sub, mul, div, neg, exp,
      log, tanh, erf, rsqrt, sqrt, abs, pow, sin, cos, max/min (the larger
      / smaller operand takes the cotangent, the first on ties), select
      (the chosen branch), float casts. Comparisons only steer selects.
      Reductions under `add` pass the cotangent to every term; under `max`
      and `min` (and the value of `argmax` and `argmin`, whose index has
      no cotangent) to the terms equal to the result, shared equally among
      ties (as torch.amax does).
    * A gather's cotangent is a scatter-add into the gathered tensor at
      the same coordinates (its policy kept: `zero` drops, `clamp` adds to
      the clamped element).
    * A scatter's base gets the result's cotangent (an insert zeroes the
      elements it overwrote); the values it writes get the result's
      cotangent gathered at their coordinates (a dropped write none). An
      insert whose points might write one element twice (an index that is
      not a coordinate of its own) is refused: only the last write's value
      would have a gradient. Scatters under other monoids are refused.
    * A scan `y[t] = f(y[t-1], x[t])` gives its elements
      `(df/dx)^T G[t]`, where the cotangents of the prefixes follow the
      reverse recurrence `G[t] = dy[t] + (df/dy at t+1)^T G[t+1]`: a
      reverse scan of `dy` under `add` for an `add` scan, and for `mul`,
      `max`, `min` and user monoids a reverse scan under the composition
      of affine maps of R^n (a generated `tang.monoid
      @tang_grad_affine<n>_<type>`, carrier n*n + n), O(n^2) work per
      element and still O(T) along the scan.
    * A `tang.tensor_scan` under the composition of affine maps, `S_t =
      A_t S_{t-1} + B_t` (its states; one that uses the products of its
      transitions is refused): the states' cotangent `L_t = dS_t +
      A_{t+1}^T L_{t+1}` is a tensor scan under the same monoid of the
      transposed transitions, run backwards; `dB_t = L_t`, `dA_t = L_t
      S_{t-1}^T`, the init's state `A_0^T L_0`. (The backward scan's
      transitions read the forward's: --tang-chunk-affine-scan does not
      chunk it yet.)
    * A `tang.triangular_solve`, `X = (I - L)^-1 Y`: `dY = (I - L)^-T dX`
      (a solve with its rows reversed) and `dL = dY X^T` below the
      diagonal.
    * What a scatter writes and what a scan folds are first moved to a
      comprehension over their domain, so their reads are differentiated
      by the rules above.
    * An online-softmax reduction `O = sum_j p(i, j) v(j, e)` (p the
      softmax of scores s over j) has the flash-attention backward: its
      statistics (m, l) are recomputed by a softmax_norm reduction over
      the indices the scores use, `D(i) = sum_e dO(i, e) O(i, e)` is
      computed once, the values get `dO p` and the scores
      `p (sum_e dO(i, e) v(j, e) - D(i))`, a nested dot product: attention's
      dQ, dK and dV are each one sum over keys (or queries) of dot-product
      scores, which `--tang-lower-cuda` emits on tensor cores. Statistics
      are kept in f32 for 16-bit programs.
    * Saved comprehensions (hoisted nested ones, softmax statistics, D, tie
      counts, the output D reads) carry the unit attribute `tang.saved`:
      `--tang-fuse` keeps them materialised.

    ```mlir
    // C = A B  gives  dA[i, k] = sum_j dC[i, j] B[k, j],  dB[k, j] = sum_i dC[i, j] A[i, k]
    func.func @main_grad(%A: tensor<16x32xf32>, %B: tensor<32x24xf32>, %dC: tensor<16x24xf32>)
        -> (tensor<16x32xf32>, tensor<32x24xf32>) {
      ...
      %dA = tang.comprehension (%i, %k) reduce (%j) [16, 32, 24] monoid(add) : tensor<16x32xf32> {
        %b = tang.read %B[%k, %j] : tensor<32x24xf32>
        %dc = tang.read %dC[%i, %j] : tensor<16x24xf32>
        %g = arith.mulf %dc, %b : f32
        tang.yield %g : f32
      }
      ...
    }
    ```

    Differentiating through an operation with no rule (integer arithmetic
    on the path, `fptosi`, a reduction under a user monoid) is a
    diagnostic naming the operation; nothing is treated as constant
    silently. Functions with symbolic sizes are refused
    (`--tang-specialize-sizes` makes them static first).
  }];
  let options = [
    ListOption<"wrt", "wrt", "int64_t",
               "The arguments to differentiate, by position (default: every "
               "floating-point tensor argument)">,
    Option<"policy", "policy", "std::string", /*default=*/"\"auto\"",
           "Nested sums in a comprehension's body: `save` hoists every "
           "nested comprehension to a tensor the gradient reads; "
           "`recompute` keeps nested sums (add monoid, indices and "
           "function-level tensors only) in the gradient's bodies and "
           "recomputes them there; `auto` saves a nested comprehension "
           "unless its tensor would be larger than the function's largest "
           "argument or result, which it recomputes; the scores of an "
           "online-softmax reduction are always recomputed (the flash "
           "backward)">,
    Option<"function", "function", "std::string", /*default=*/"\"\"",
           "The function to differentiate (default: every function of tang "
           "ops that has no `_grad` companion yet)">,
    Option<"split", "split", "bool", /*default=*/"false",
           "Also emit @f_fwd(inputs) -> (results, residuals) and "
           "@f_bwd(inputs, results, residuals, cotangents) -> gradients: the "
           "forward computes what the backward reuses (attention's output "
           "and softmax statistics) once, for a training step">,
    Option<"fuseForward", "fuse-forward", "bool", /*default=*/"true",
           "Differentiate the forward program as --tang-fuse and "
           "--tang-online-softmax leave it (the function itself is left "
           "as it is)">,
  ];
  let statistics = [
    Statistic<"numGradients", "gradient-comprehensions",
              "Comprehensions built for cotangents of reads">,
    Statistic<"numSavedNested", "saved-nested",
              "Nested comprehensions hoisted to saved tensors">,
    Statistic<"numRecomputedNested", "recomputed-nested",
              "Nested sums recomputed in the gradient's bodies">,
    Statistic<"numResiduals", "residuals",
              "Tensors @f_fwd passes to @f_bwd (split)">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def TangTrafficBound : Pass<"tang-traffic-bound", "::mlir::ModuleOp"> {
  let summary = "Certified lower bounds on memory traffic (an LP per comprehension and memory level)";
  let description = [{
    For every function-level comprehension and every memory level of the
    `levels` option, a remark with a lower bound on the elements that must
    move between that level (capacity M elements) and the slower memory,
    for any order and tiling of the iterations, and its certificate: the
    HBL-type LP of `Tang/Analysis/TrafficBound.h` solved with GLPK, its
    dual (s per access, t per index) rounded to rationals and its tile
    rounded to integers, both checked exactly (GMP): every footprint of the
    tile fits in M, the dual covers every index, and weak duality holds.
    The remark also gives the compulsory traffic (every element read and
    written once), which any level at least moves from DRAM.

    ```
    matmul.mlir:8:8: remark: traffic bound at shared (M = 58368 elements of
      4 bytes): >= 0 elements moved (0 bytes); compulsory 1280 elements; the
      largest tile that fits runs M^1.07 iterations: tile [16, 24, 32];
      dual s = [1/2, 1/2, 1/2], t = [...]; certificate checked
    ```

    A read whose coordinates are not all single indices (a sliding window
    `x[i + r]`, a stride, a reshape) enters the LP through its
    single-index coordinates only, with a remark saying so: distinct values
    of those coordinates are distinct elements, so the bound stays valid,
    possibly weaker than the exact general-affine one (for a 1-d
    convolution it is M (ceil(N / 2M) - 1), for a 2-d convolution layer
    that of its weights and output). Comprehensions the LP cannot express
    (nested comprehensions) get a warning naming why.
  }];
  let options = [
    Option<"levels", "levels", "std::string",
           /*default=*/"\"registers=262144,shared=233472,l2=52428800\"",
           "Memory levels as name=bytes, comma-separated (defaults: an "
           "H100/H200 multiprocessor's register file and shared memory, "
           "the L2 cache)">,
    Option<"summary", "summary", "std::string", /*default=*/"\"\"",
           "Also write, to this file, one JSON object per function-level "
           "comprehension (every one, nested or not): its function and "
           "location, compulsory DRAM bytes (the distinct elements its "
           "projective reads touch, and its results, at their element "
           "sizes), arithmetic operations (each body operation once per "
           "distinct evaluation), its shape class, whether it reads 16-bit "
           "floats, the share of iterations its index masks keep (causal "
           "attention: about half; counted exactly), and the "
           "certified lower bound in elements per "
           "level where the LP applies: what bench/floor_report.py turns "
           "into time floors">,
  ];
  let statistics = [
    Statistic<"numBounds", "bounds", "Bounds computed and certified">,
    Statistic<"numRefused", "refused",
              "Comprehensions the LP cannot express">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect"];
}

def TangRejectOption : Pass<"tang-reject-option", "::mlir::ModuleOp"> {
  let summary = "Fail with a message (how a pipeline reports a bad option)";
  let description = [{
    A pipeline builder cannot fail by itself: given an option it cannot
    honour (`--tang-lower-cuda="format=ptx"`), it builds a pipeline of this
    one pass, which reports `message` as an error at the module and fails.

    ```mlir
    // --tang-reject-option="message='format must be isa, bin or fatbin'":
    // error: format must be isa, bin or fatbin
    ```
  }];
  let options = [
    Option<"message", "message", "std::string", /*default=*/"\"\"",
           "The error to report">,
  ];
}

def TangAttachTarget : Pass<"tang-attach-target", "::mlir::ModuleOp"> {
  let summary = "Attach the device model (#tang.target) of a known chip to the module";
  let description = [{
    Puts the facts of chip `chip` (`lib/Dialect/Tang/IR/TangTargets.cpp`:
    multiprocessors, shared memory, registers, warp size, tensor cores, TMA,
    clusters, cache size and peaks) on the module as the discardable
    attribute `tang.target`, which `--tang-schedule` and
    `--convert-tang-to-gpu` read. A module that already has a target keeps
    it (a device the table does not know, or other facts for a known
    chip), provided its chip is `chip`. An unknown chip is an error that
    lists the known ones. `--tang-lower-cuda` runs this pass with its own
    `chip=` option.

    ```mlir
    // Before:
    module { ... }
    // After --tang-attach-target="chip=sm_80":
    module attributes {tang.target = #tang.target<chip = "sm_80",
        device = "NVIDIA A100-SXM4-80GB", sm_count = 108,
        shared_per_block = 166912, shared_per_sm = 167936, ...>} { ... }
    ```
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_90a\"",
           "The chip whose facts to attach (sm_75, sm_80, sm_86, sm_89, "
           "sm_90, sm_90a)">,
    Option<"vectorBytes", "vector-bytes", "int64_t", "0",
           "The widest access in bytes instead of the chip's (0: the "
           "chip's; --tang-lower-spirv takes 8 for the portable chip: its "
           "vector loads alias the buffers, tang-spirv-alias-vector-access)">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect"];
}

def TangSchedule : Pass<"tang-schedule", "::mlir::ModuleOp"> {
  let summary = "Attach a #tang.schedule to every function-level comprehension";
  let description = [{
    Classifies every function-level comprehension that has no schedule by
    the shape of its graph (pointwise, row reduction, column reduction,
    narrow matrix-vector, matmul-like, online-softmax; see
    `Tang/Analysis/ShapeClass.h`) and attaches a schedule from a heuristic
    for that class, sized by the module's device model (`tang.target`, see
    `--tang-attach-target`; the default chip's without one), where the
    options below, when given, override single facts. The class
    is recorded in the discardable attribute `tang.shape_class`. A
    comprehension that already has a schedule keeps it.

    With `tensor-cores` other than `none`, the pass also chooses every
    function-level comprehension's kernel (`chooseKernel` in
    `Tang/Analysis/KernelChoice.h`): sums over several adjacent indices
    become one where that makes a tensor-core contraction (a weight
    gradient), then each schedule that leaves its kernel `auto` gets the
    kernel kind and all its parameters (tiles, warps, ring depth, bulk
    copies, warp specialisation, persistent grid), the fields
    `--convert-tang-to-gpu` builds from. A comprehension a tensor-core
    kernel refuses gets a remark saying why. `--tang-lower-cuda` runs it so.

    With `cache=FILE`, schedules come from measurement where the tuning
    cache has them (docs/Tuning.md, `Tang/Transforms/ScheduleTuning.h`);
    with `candidates=FILE`, the pass also writes each comprehension's
    search space, which bench/tune.py compiles and measures.

    ```mlir
    // Before: a row softmax after --tang-fuse.
    %y = tang.comprehension (%i, %j) [32768, 4096] : tensor<32768x4096xbf16> {...}
    // After: one block per row, 512 threads striding the row 8 elements
    // (16 bytes) at a time.
    %y = tang.comprehension (%i, %j) [32768, 4096] attributes {
        schedule = #tang.schedule<tile = [1, 4096], mapping = [block_x, serial],
                                  threads = [1, 512], vector = 8, ...>,
        tang.shape_class = "row_reduction"} : tensor<32768x4096xbf16> {...}
    ```
  }];
  let options = [
    Option<"smCount", "sm-count", "int64_t", "0",
           "Streaming multiprocessors on the device (0: the target's "
           "sm_count)">,
    Option<"sharedMemory", "shared-memory", "int64_t", "0",
           "Shared memory a block may use, in bytes (0: the target's "
           "shared_per_block)">,
    Option<"warpSize", "warp-size", "int64_t", "0",
           "Threads per warp (subgroup) (0: the target's warp_size)">,
    Option<"maxThreads", "max-threads", "int64_t", "0",
           "Threads a block may have (0: the target's max_threads)">,
    Option<"tileSource", "tile-source", "::mlir::tang::TileSource",
           "::mlir::tang::TileSource::Heuristic",
           "Where matmul-like output tiles come from: `heuristic` (128 x "
           "256 on tensor cores, narrowed until the grid fills the "
           "device) or `traffic-bound` (the certified tile of "
           "--tang-traffic-bound's LP at shared memory, kept as the "
           "attribute `tang.traffic_tile`, rounded down to powers of two "
           "within the kernels' limits; programs the LP cannot express "
           "keep the heuristic's)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tang::TileSource::Heuristic, "heuristic",
                        "the shape class's heuristic"),
             clEnumValN(::mlir::tang::TileSource::TrafficBound,
                        "traffic-bound", "the traffic bound's certified tile"))}]>,
    Option<"tensorCores", "tensor-cores", "::mlir::tang::TensorCoreOption",
           /*default=*/"::mlir::tang::TensorCoreOption::None",
           "The tensor-core kernels to choose among. With `none` every "
           "schedule leaves its kernel `auto` (--convert-tang-to-gpu chooses "
           "with its own options); otherwise every schedule names its "
           "kernel and all its parameters (Tang/Analysis/KernelChoice.h)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tang::TensorCoreOption::None, "none",
                        "kernels left to the conversion"),
             clEnumValN(::mlir::tang::TensorCoreOption::MmaSync, "mma-sync",
                        "mma.sync kernels, sm_80 and up"),
             clEnumValN(::mlir::tang::TensorCoreOption::Wgmma, "wgmma",
                        "wgmma kernels, sm_90a"),
             clEnumValN(::mlir::tang::TensorCoreOption::Target, "target",
                        "the tensor_cores of the module's #tang.target"))}]>,
    Option<"tma", "tma", "bool", /*default=*/"true",
           "With wgmma: operands by bulk tensor copies where their views "
           "allow">,
    Option<"warpSpecialize", "warp-specialize", "bool", /*default=*/"true",
           "With tma: warp-specialised, persistent contractions where they "
           "pay (256-column tiles), and a persistent flash-attention grid">,
    Option<"tf32", "tf32", "bool", /*default=*/"false",
           "Contractions of f32 operands on tensor cores too, as tf32">,
    Option<"cache", "cache", "std::string", /*default=*/"\"\"",
           "A tuning cache (docs/Tuning.md): a comprehension without a "
           "schedule whose key it holds takes the measured schedule "
           "(exactly by key; a tensor-core kernel's also from the nearest "
           "sizes of its size class) instead of the heuristic's, marked "
           "`tang.schedule_source = \"cache\"`; an entry its kernel "
           "cannot honour is reported and the heuristic's kept">,
    Option<"candidates", "candidates", "std::string", /*default=*/"\"\"",
           "Write each scheduled comprehension's candidate schedules "
           "(ScheduleTuning.h; the heuristic's first) to this JSON file "
           "for bench/tune.py">,
    Option<"maxCandidates", "max-candidates", "int64_t", /*default=*/"24",
           "With candidates: at most this many per comprehension">,
    Option<"prune", "prune", "double", /*default=*/"2.0",
           "With candidates: drop those whose modelled time exceeds this "
           "many times the best modelled (0: keep all)">,
  ];
  let statistics = [
    Statistic<"numScheduled", "scheduled", "Comprehensions given a schedule">,
    Statistic<"numCached", "cached",
              "Comprehensions given a schedule from the tuning cache">,
    Statistic<"numKernels", "kernels-chosen",
              "Comprehensions whose schedule names their kernel">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect"];
}

#endif // TANG_TRANSFORMS_PASSES_TD
