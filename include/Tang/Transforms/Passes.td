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
    multiplies along chains) is not made. A producer whose result is no
    longer read is erased.
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
  ];
  let statistics = [
    Statistic<"numFused", "fused-reads", "Reads replaced by a producer's body">,
    Statistic<"numKeptRecompute", "kept-recompute",
              "Reads not fused: recompute factor above max-recompute">,
        Statistic<"numKeptBroadcast", "kept-broadcast",
              "Reads not fused: reduction broadcast above max-broadcast">,
    Statistic<"numKeptSize", "kept-size",
              "Reads not fused: the consumer would exceed max-body-ops">,
    Statistic<"numErased", "erased-producers",
              "Producers erased after every read was fused">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect"];
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

def TangSchedule : Pass<"tang-schedule", "::mlir::ModuleOp"> {
  let summary = "Attach a #tang.schedule to every function-level comprehension";
  let description = [{
    Classifies every function-level comprehension that has no schedule by
    the shape of its graph (pointwise, row reduction, column reduction,
    narrow matrix-vector, matmul-like, online-softmax; see
    `Tang/Analysis/ShapeClass.h`) and attaches a schedule from a heuristic
    for that class, sized by the device facts given as options. The class
    is recorded in the discardable attribute `tang.shape_class`. A
    comprehension that already has a schedule keeps it.

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
    Option<"smCount", "sm-count", "int64_t", "132",
           "Streaming multiprocessors on the device">,
    Option<"sharedMemory", "shared-memory", "int64_t", "232448",
           "Shared memory a block may use, in bytes">,
    Option<"warpSize", "warp-size", "int64_t", "32",
           "Threads per warp (subgroup)">,
    Option<"maxThreads", "max-threads", "int64_t", "1024",
           "Threads a block may have">,
  ];
  let statistics = [
    Statistic<"numScheduled", "scheduled", "Comprehensions given a schedule">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect"];
}

#endif // TANG_TRANSFORMS_PASSES_TD
