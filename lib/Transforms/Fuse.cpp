//===- Fuse.cpp - fusion as one substitution rule ---------------*- C++ -*-===//
//
// --tang-fuse applies one rule to a fixed point: a `tang.read` of a tensor
// produced by a function-level comprehension is replaced by the producer's
// body at the read's index expressions. The producer's parallel indices are
// substituted by those (affine) expressions in every `tang.read` and
// `tang.index` of the cloned body; its reduced indices become the indices of
// a nested comprehension under the producer's monoid. Reads of views are
// composed first (the ReadOp folder), so fusion sees through views.
//
// The rule (substituteProducer) is separate from the policy (FusionPolicy),
// which decides from the recompute factor and the broadcast extent whether a
// producer stays materialised.
//
//===----------------------------------------------------------------------===//

#include "Tang/Transforms/Passes.h"

#include "Tang/Analysis/ShapeClass.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/Format.h"

#define DEBUG_TYPE "tang-fuse"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGFUSE
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {

/// What a symbolic extent counts for in the work model (fusion compares
/// the work of trials; a size known only when the program runs counts as
/// this many points).
constexpr int64_t kNominalExtent = 1024;

/// The extent of index `pos` of `op` for the work model: its static extent,
/// or kNominalExtent for a symbolic one.
double getWorkExtent(ComprehensionOp op, unsigned pos) {
  return static_cast<double>(op.isSymbolicExtent(pos) ? kNominalExtent
                                                      : op.getExtent(pos));
}

//===----------------------------------------------------------------------===//
// The rule
//===----------------------------------------------------------------------===//

/// The (dimension operands, map) of a cloned tang.read, tang.index or
/// tang.gather after every use of a producer parallel index `p_i` becomes
/// `subst.getResult(i)` over `substOperands`. Unused operands are dropped;
/// the map's symbols (a gather's data) are kept as they are.
std::pair<SmallVector<Value>, AffineMap>
substituteDims(ValueRange indices, AffineMap oldMap,
               ArrayRef<BlockArgument> producerIndices, AffineMap subst,
               ValueRange substOperands) {
  SmallVector<Value> operands;
  auto positionOf = [&](Value v) {
    auto it = llvm::find(operands, v);
    if (it != operands.end())
      return static_cast<unsigned>(it - operands.begin());
    operands.push_back(v);
    return static_cast<unsigned>(operands.size() - 1);
  };
  MLIRContext *ctx = oldMap.getContext();
  // Where the substitution's operands land in the new operand list.
  SmallVector<AffineExpr> substDims;
  for (Value v : substOperands)
    substDims.push_back(getAffineDimExpr(positionOf(v), ctx));

  SmallVector<AffineExpr> dimReplacements;
  for (Value v : indices) {
    auto it = llvm::find(producerIndices, v);
    if (it != producerIndices.end()) {
      AffineExpr e = subst.getResult(it - producerIndices.begin());
      dimReplacements.push_back(e.replaceDims(substDims));
    } else {
      dimReplacements.push_back(getAffineDimExpr(positionOf(v), ctx));
    }
  }
  unsigned numSymbols = oldMap.getNumSymbols();
  SmallVector<AffineExpr> symbols;
  for (unsigned k = 0; k < numSymbols; ++k)
    symbols.push_back(getAffineSymbolExpr(k, ctx));
  AffineMap map = oldMap.replaceDimsAndSymbols(dimReplacements, symbols,
                                               operands.size(), numSymbols);

  // Drop operands the new map does not use.
  SmallVector<Value> used;
  SmallVector<AffineExpr> renumber;
  for (auto [pos, v] : llvm::enumerate(operands)) {
    if (map.isFunctionOfDim(pos)) {
      renumber.push_back(getAffineDimExpr(used.size(), ctx));
      used.push_back(v);
    } else {
      renumber.push_back(getAffineConstantExpr(0, ctx));
    }
  }
  // No simplifyAffineMap: it rewrites `mod` into floordiv arithmetic that
  // interval bounds checks cannot follow.
  return {used, map.replaceDimsAndSymbols(renumber, symbols, used.size(),
                                          numSymbols)};
}

/// Rewrites a cloned tang.read or tang.index by substituteDims.
template <typename OpT>
void substituteIndices(OpT op, ArrayRef<BlockArgument> producerIndices,
                       AffineMap subst, ValueRange substOperands) {
  auto [used, map] = substituteDims(op.getIndices(), op.getMap(),
                                    producerIndices, subst, substOperands);
  op.getIndicesMutable().assign(used);
  op.setMap(map);
}

/// Rewrites a cloned tang.gather by substituteDims: its dimensions as a
/// read's, its data operands after them.
void substituteIndices(GatherOp op, ArrayRef<BlockArgument> producerIndices,
                       AffineMap subst, ValueRange substOperands) {
  auto [used, map] = substituteDims(op.getIndices(), op.getMap(),
                                    producerIndices, subst, substOperands);
  SmallVector<Value> data(op.getValues());
  used.append(data);
  op.getMapOperandsMutable().assign(used);
  op.setMap(map);
}

/// Replaces `read` (of result #n of `producer`) by the producer's body at
/// the read's index expressions. Returns the scalar that replaces the read.
Value substituteProducer(ReadOp read, ComprehensionOp producer,
                         RewriterBase &rewriter) {
  unsigned resultNo = cast<OpResult>(read.getTensor()).getResultNumber();
  Block &body = producer.getBodyBlock();
  auto producerIndices =
      body.getArguments().take_front(producer.getNumParallel());
  AffineMap subst = read.getMap();
  SmallVector<Value> substOperands(read.getIndices());

  IRMapping mapping;
  auto cloneBody = [&](OpBuilder &b, bool withTerminator) {
    for (Operation &op : body) {
      if (!withTerminator && op.hasTrait<OpTrait::IsTerminator>())
        break;
      Operation *clone = b.clone(op, mapping);
      clone->walk([&](Operation *nested) {
        if (auto r = dyn_cast<ReadOp>(nested))
          substituteIndices(r, producerIndices, subst, substOperands);
        else if (auto g = dyn_cast<GatherOp>(nested))
          substituteIndices(g, producerIndices, subst, substOperands);
        else if (auto i = dyn_cast<IndexOp>(nested))
          substituteIndices(i, producerIndices, subst, substOperands);
      });
    }
  };

  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(read);
  if (producer.getNumReduced() == 0) {
    // A map: inline its body.
    cloneBody(rewriter, /*withTerminator=*/false);
    // The yielded value may be a constant hoisted out of the body.
    return mapping.lookupOrDefault(producer.getYield().getValues()[resultNo]);
  }

  // A reduction: a nested comprehension over the producer's reduced indices.
  SmallVector<Type> scalarTypes =
      llvm::map_to_vector(producer.getResultTypes(), [](Type t) {
        return cast<RankedTensorType>(t).getElementType();
      });
  // Symbolic reduced extents stay the producer's sizes (function-level
  // values, defined before the producer and so before the consumer).
  SmallVector<Value> dynamicExtents;
  for (unsigned i = producer.getNumParallel(); i < producer.getNumIndices();
       ++i)
    if (producer.isSymbolicExtent(i))
      dynamicExtents.push_back(producer.getDynamicExtent(i));
  auto nested = ComprehensionOp::create(
      rewriter, producer.getLoc(), scalarTypes, dynamicExtents,
      rewriter.getDenseI64ArrayAttr({}), producer.getReducedExtentsAttr(),
      producer.getMonoidAttr(), /*schedule=*/ScheduleAttr());
  Block *nestedBody = new Block();
  nested.getBody().push_back(nestedBody);
  for (BlockArgument a :
       body.getArguments().drop_front(producer.getNumParallel()))
    mapping.map(a, nestedBody->addArgument(a.getType(), a.getLoc()));
  OpBuilder b = OpBuilder::atBlockBegin(nestedBody);
  cloneBody(b, /*withTerminator=*/true);
  return nested.getResult(resultNo);
}

//===----------------------------------------------------------------------===//
// The policy
//===----------------------------------------------------------------------===//

/// Why a read of a producer is fused or kept.
enum class Decision {
  Fuse,
  KeepRecompute,
  KeepBroadcast,
  KeepSize,
  KeepSaved,
  KeepShared,
  KeepWork
};

/// A count of operations, in four significant digits.
std::string formatCount(double n) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.4g", n);
  return text;
}

/// Programs of at most this many function-level comprehensions settle the
/// work bound one comprehension at a time, each candidate judged by the
/// whole program's work; larger ones batch independent decisions.
constexpr size_t kExactWorkBoundLimit = 64;

/// Trials of the work bound whose work is within this fraction of each
/// other's are ties.
constexpr double kWorkTie = 0.01;

int64_t getFuseId(Operation *op) {
  auto id = op->getAttrOfType<IntegerAttr>(kFuseIdAttrName);
  return id ? id.getInt() : -1;
}

/// The function-level comprehensions whose reads of producers with
/// reductions stay (the work bound), and, per function-level
/// comprehension, the original ones whose bodies it holds.
struct WorkState {
  /// Producers that stay materialised for every reader.
  llvm::DenseSet<int64_t> kept;
  /// Consumers into which nothing is fused.
  llvm::DenseSet<int64_t> closed;
  /// Per function-level comprehension, the original ones whose bodies it
  /// holds after fusion.
  llvm::DenseMap<int64_t, llvm::SetVector<int64_t>> origins;
  /// The original comprehensions with symbolic sizes, found once: fusion
  /// never changes the answer (they fuse among themselves only), and
  /// asking per read walks the consumer's whole body each time.
  llvm::DenseSet<int64_t> symbolic;
  /// The original comprehensions that reduce (themselves or in their
  /// bodies).
  llvm::DenseSet<int64_t> reducing;

  /// Whether `op` (a function-level comprehension) has symbolic sizes.
  bool isSymbolic(Operation *op) const {
    int64_t id = getFuseId(op);
    return id >= 0 ? symbolic.contains(id) : hasSymbolicSizes(op);
  }
};

/// The tensors read anywhere in `op`'s body (nested bodies included).
llvm::SetVector<Value> getTensorsRead(Operation *op, ReadOp except = {}) {
  llvm::SetVector<Value> tensors;
  op->walk([&](Operation *o) {
    if (auto r = dyn_cast<ReadOp>(o); r && r != except)
      tensors.insert(r.getTensor());
    else if (auto g = dyn_cast<GatherOp>(o))
      tensors.insert(g.getTensor());
  });
  return tensors;
}

struct FusionPolicy {
  double maxRecompute;
  int64_t maxBroadcast;
  int64_t maxBodyOps;
  const WorkState *work = nullptr;

  /// The number of distinct evaluations of the substituted body: the product
  /// of the extents of the indices the read's expressions use.
  static double getEvaluations(ReadOp read) {
    double evaluations = 1;
    for (auto [pos, v] : llvm::enumerate(read.getIndices())) {
      if (!read.getMap().isFunctionOfDim(pos))
        continue;
      auto arg = cast<BlockArgument>(v);
      evaluations *=
          getWorkExtent(getOwningComprehension(v), arg.getArgNumber());
    }
    return evaluations;
  }

  static double getRecomputeFactor(ReadOp read, ComprehensionOp producer) {
    double elements = 1;
    for (unsigned i = 0; i < producer.getNumParallel(); ++i)
      elements *= getWorkExtent(producer, i);
    return getEvaluations(read) / elements;
  }

  /// The number of operations in `op`'s body, nested bodies included.
  static int64_t countOps(ComprehensionOp op) {
    int64_t n = 0;
    op.getBodyBlock().walk([&](Operation *) { ++n; });
    return n;
  }

  /// The consumer's size once every distinct read of `producer` in it (same
  /// map on the same indices counts once: CSE shares them) is substituted.
  static int64_t getFusedSize(ComprehensionOp producer,
                              ComprehensionOp consumer) {
    SmallVector<std::pair<AffineMap, SmallVector<Value>>> reads;
    consumer.walk([&](ReadOp r) {
      if (r.getTensor().getDefiningOp() != producer.getOperation())
        return;
      std::pair<AffineMap, SmallVector<Value>> key{
          r.getMap(), SmallVector<Value>(r.getIndices())};
      if (!llvm::is_contained(reads, key))
        reads.push_back(key);
    });
    return countOps(consumer) +
           static_cast<int64_t>(reads.size()) * countOps(producer);
  }

  /// The number of points of the outermost consumer's parallel domain that
  /// need the same value of the read (its parallel indices the read does not
  /// use).
  static double getBroadcastExtent(ReadOp read, ComprehensionOp consumer) {
    double extent = 1;
    for (unsigned i = 0, e = consumer.getNumParallel(); i < e; ++i) {
      Value index = consumer.getIndex(i);
      bool used = llvm::any_of(llvm::enumerate(read.getIndices()), [&](auto p) {
        return p.value() == index && read.getMap().isFunctionOfDim(p.index());
      });
      if (!used)
        extent *= getWorkExtent(consumer, i);
    }
    return extent;
  }

  bool isSymbolic(Operation *op) const {
    return work ? work->isSymbolic(op) : hasSymbolicSizes(op);
  }

  static bool hasReduction(ComprehensionOp producer) {
    if (producer.getNumReduced())
      return true;
    bool nested = false;
    producer.getBodyBlock().walk([&](ComprehensionOp) { nested = true; });
    return nested;
  }

  /// Whether `producer` stays materialised whatever fusion decides: it is
  /// returned, or read where fusion does not substitute (a scatter's or a
  /// scan's body, a padded read, a gather, a comprehension of symbolic
  /// sizes when it has none, or the other way round).
  bool staysMaterialised(ComprehensionOp producer) const {
    // Reads through views count as reads of the producer (fusion folds
    // them).
    SmallVector<Operation *> users(producer->getUsers());
    while (!users.empty()) {
      Operation *user = users.pop_back_val();
      if (isa<ViewOp>(user)) {
        llvm::append_range(users, user->getUsers());
        continue;
      }
      auto read = dyn_cast<ReadOp>(user);
      if (!read || read.getFill() || read->getParentOfType<ScatterOp>() ||
          read->getParentOfType<ScanOp>())
        return true;
      auto consumer = read->getParentOfType<ComprehensionOp>();
      if (!consumer)
        return true;
      while (auto outer = consumer->getParentOfType<ComprehensionOp>())
        consumer = outer;
      if (isSymbolic(producer) != isSymbolic(consumer))
        return true;
    }
    return false;
  }

  Decision decide(ReadOp read, ComprehensionOp producer) const {
    if (producer->hasAttr(kSavedAttrName))
      return Decision::KeepSaved;
    // The outermost (function-level) comprehension around the read.
    auto consumer = read->getParentOfType<ComprehensionOp>();
    while (auto outer = consumer->getParentOfType<ComprehensionOp>())
      consumer = outer;
    if (work && (work->kept.contains(getFuseId(producer)) ||
                 work->closed.contains(getFuseId(consumer))))
      return Decision::KeepWork;
    // A producer read at several points is copied once per point: along a
    // chain of such producers the copies multiply. Bound the body's size.
    if (getFusedSize(producer, consumer) > maxBodyOps)
      return Decision::KeepSize;
    double factor = getRecomputeFactor(read, producer);
    LLVM_DEBUG(llvm::dbgs() << "tang-fuse: " << read << ": recompute factor "
                            << factor << "\n");
    if (factor > maxRecompute)
      return Decision::KeepRecompute;
    if (!hasReduction(producer))
      return Decision::Fuse;
    // Its reduction runs anyway, for the copy that stays: fusing would
    // run it a second time.
    if (staysMaterialised(producer))
      return Decision::KeepShared;
    double broadcast = getBroadcastExtent(read, consumer);
    LLVM_DEBUG(llvm::dbgs()
               << "tang-fuse:   broadcast extent " << broadcast << "\n");
    if (broadcast <= maxBroadcast)
      return Decision::Fuse;
    // A reduction over data the consumer streams anyway (a row max shared
    // across its row) is shared by the schedule: no extra traffic.
    llvm::SetVector<Value> consumerReads = getTensorsRead(consumer, read);
    for (Value t : getTensorsRead(producer))
      if (!consumerReads.contains(t))
        return Decision::KeepBroadcast;
    return Decision::Fuse;
  }
};

/// Pattern: read(comprehension(p) reduce(r) {body})[e]
///            -> body[p := e]   (nested comprehension over r if any)
struct ReadOfComprehension_Fuse : OpRewritePattern<ReadOp> {
  ReadOfComprehension_Fuse(
      MLIRContext *ctx, FusionPolicy policy, int64_t &numFused,
      llvm::DenseMap<int64_t, llvm::SetVector<int64_t>> *origins)
      : OpRewritePattern(ctx), policy(policy), numFused(numFused),
        origins(origins) {}

  LogicalResult matchAndRewrite(ReadOp read,
                                PatternRewriter &rewriter) const override {
    auto producer = read.getTensor().getDefiningOp<ComprehensionOp>();
    if (!producer)
      return rewriter.notifyMatchFailure(
          read, "the tensor read is not produced by a comprehension");
    if (read.getFill())
      return rewriter.notifyMatchFailure(
          read, "the read is padded (the producer would run outside its "
                "domain: not fused yet)");
    if (read->getParentOfType<ScatterOp>() || read->getParentOfType<ScanOp>())
      return rewriter.notifyMatchFailure(
          read, "the consumer is a scatter or a scan (not fused yet)");
    Operation *consumer = read->getParentOfType<ComprehensionOp>();
    while (auto outer = consumer->getParentOfType<ComprehensionOp>())
      consumer = outer;
    if (policy.isSymbolic(producer) != policy.isSymbolic(consumer))
      return rewriter.notifyMatchFailure(
          read, "one of the producer and the consumer has symbolic sizes "
                "(fused only among comprehensions of symbolic sizes)");
    switch (policy.decide(read, producer)) {
    case Decision::KeepRecompute:
      return rewriter.notifyMatchFailure(
          read, "fusing would recompute producer elements (recompute factor "
                "above max-recompute)");
    case Decision::KeepBroadcast:
      return rewriter.notifyMatchFailure(
          read, "the producer's reduction would be recomputed across more "
                "than max-broadcast consumer points over inputs the consumer "
                "does not read");
    case Decision::KeepSize:
      return rewriter.notifyMatchFailure(
          read, "the consumer's body would exceed max-body-ops");
    case Decision::KeepSaved:
      return rewriter.notifyMatchFailure(
          read, "the producer is marked materialised (tang.saved: a value "
                "--tang-grad saved, or the program's mark)");
    case Decision::KeepShared:
      return rewriter.notifyMatchFailure(
          read, "the producer's reduction stays materialised for a use "
                "fusion does not take: fusing would run it twice");
    case Decision::KeepWork:
      return rewriter.notifyMatchFailure(
          read, "fusing reductions into the consumer exceeded "
                "max-work-factor");
    case Decision::Fuse:
      break;
    }
    if (origins) {
      Operation *consumer = read->getParentOfType<ComprehensionOp>();
      while (auto outer = consumer->getParentOfType<ComprehensionOp>())
        consumer = outer;
      auto &into = (*origins)[getFuseId(consumer)];
      into.insert(getFuseId(producer));
      llvm::SetVector<int64_t> from = (*origins)[getFuseId(producer)];
      into.insert(from.begin(), from.end());
    }
    Value replacement = substituteProducer(read, producer, rewriter);
    rewriter.replaceOp(read, replacement);
    ++numFused;
    return success();
  }

  FusionPolicy policy;
  int64_t &numFused;
  llvm::DenseMap<int64_t, llvm::SetVector<int64_t>> *origins;
};

struct TangFusePass : tang::impl::TangFuseBase<TangFusePass> {
  using TangFuseBase::TangFuseBase;

  void runOnOperation() override {
    if (maxRecompute < 0 || maxBroadcast < 1 || maxBodyOps < 1 ||
        maxWorkFactor < 1) {
      getOperation().emitError()
          << "tang-fuse: max-recompute must be >= 0, max-work-factor >= 1 "
             "and max-broadcast, max-body-ops >= 1";
      return signalPassFailure();
    }
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Name the function-level comprehensions and count their work unfused.
    llvm::DenseMap<int64_t, double> unfused;
    llvm::DenseMap<int64_t, Operation *> original;
    WorkState state;
    int64_t next = 0;
    module.walk([&](ComprehensionOp c) {
      if (isInIterationBody(c))
        return;
      c->setAttr(kFuseIdAttrName,
                 IntegerAttr::get(IntegerType::get(ctx, 64), next));
      unfused[next] = getExecutedWork(c);
      original[next] = c;
      if (hasSymbolicSizes(c))
        state.symbolic.insert(next);
      if (FusionPolicy::hasReduction(c))
        state.reducing.insert(next);
      ++next;
    });
    int64_t before = countComprehensions(module);

    // Fuse to a fixed point and count the work; while a comprehension
    // exceeds the bound, keep materialised the producer whose keeping
    // lowers the program's work most (tried one by one), or, if none does,
    // fuse nothing into it.
    FusionPolicy policy{maxRecompute, maxBroadcast, maxBodyOps, &state};
    // Emitted once the pass's own attributes are gone.
    SmallVector<std::pair<Location, std::string>> remarks;
    SmallVector<Measure> measures;
    double total = 0;
    if (failed(measure(module, policy, state, unfused, measures, total)))
      return signalPassFailure();
    // One round per pass over the comprehensions above the bound. In a
    // program of at most kExactWorkBoundLimit comprehensions, one per
    // round: every candidate is tried alone and the program's work decides.
    // In a larger one (a model repeats its layers), measuring the whole
    // program per candidate is quadratic in its size: the independent ones
    // are taken together, their candidates tried together (the k-th of
    // each in the k-th trial), and each judged by the work of the
    // comprehensions its comprehension held (itself, and those it fused,
    // which keeping one materialises).
    for (;;) {
      // The first comprehension over the bound, and the others whose
      // comprehensions (held and fused) are disjoint from those already
      // taken (the rest wait for the next round: keeping a producer for
      // one may bring another under the bound).
      SmallVector<Measure> over;
      llvm::DenseSet<int64_t> taken;
      for (const Measure &m : measures) {
        if (m.executed <= maxWorkFactor * m.bound ||
            state.closed.contains(m.id))
          continue;
        // Held maps without reductions (a residual add fused into the next
        // layer's products) are cheap to recompute either way: sharing one
        // does not make two decisions depend on each other, and a model's
        // layers would otherwise be settled one per round.
        SmallVector<int64_t> held{m.id};
        for (int64_t o : state.origins.lookup(m.id))
          if (state.reducing.contains(o))
            held.push_back(o);
        if (llvm::any_of(held, [&](int64_t id) { return taken.contains(id); }))
          continue;
        taken.insert_range(held);
        over.push_back(m);
        if (measures.size() <= kExactWorkBoundLimit)
          break;
      }
      if (over.empty())
        break;
      // Per comprehension over the bound: its candidates, the ids whose
      // work judges them, and the best trial so far.
      struct Choice {
        Measure worst;
        SmallVector<int64_t> candidates;
        llvm::DenseSet<int64_t> judged;
        double best = 0;
        std::optional<int64_t> keep;
        /// The work with nothing more kept, and the best trial's count of
        /// materialised comprehensions.
        double initial = 0;
        size_t kernels = 0;
      };
      SmallVector<Choice> choices;
      for (const Measure &m : over) {
        Choice c{m, {}, {}, 0, std::nullopt, 0, 0};
        for (int64_t candidate : state.origins.lookup(m.id))
          if (!state.kept.contains(candidate))
            c.candidates.push_back(candidate);
        c.judged.insert(m.id);
        for (int64_t o : state.origins.lookup(m.id))
          c.judged.insert(o);
        // The work to beat: the program's, or the judged comprehensions'.
        c.best = over.size() == 1 ? total : 0;
        if (over.size() > 1)
          for (const Measure &b : measures)
            if (c.judged.contains(b.id))
              c.best += b.executed;
        c.initial = c.best;
        choices.push_back(std::move(c));
      }
      size_t trials = 0;
      for (const Choice &c : choices)
        trials = std::max(trials, c.candidates.size());
      for (size_t k = 0; k < trials; ++k) {
        WorkState trial = state;
        for (const Choice &c : choices)
          if (k < c.candidates.size())
            trial.kept.insert(c.candidates[k]);
        FusionPolicy trialPolicy = policy;
        trialPolicy.work = &trial;
        SmallVector<Measure> trialMeasures;
        double trialTotal = 0;
        if (failed(measure(module, trialPolicy, trial, unfused, trialMeasures,
                           trialTotal)))
          return signalPassFailure();
        for (Choice &c : choices) {
          if (k >= c.candidates.size())
            continue;
          double score = over.size() == 1 ? trialTotal : 0;
          size_t kernels = over.size() == 1 ? trialMeasures.size() : 0;
          if (over.size() > 1)
            for (const Measure &m : trialMeasures)
              if (c.judged.contains(m.id)) {
                score += m.executed;
                ++kernels;
              }
          // Less work wins; work within kWorkTie of the best is a tie,
          // won by fewer materialised comprehensions (launches and
          // intermediates: an epilogue stays with its product).
          bool better =
              score < c.initial &&
              (!c.keep || score < c.best * (1 - kWorkTie) ||
               (score <= c.best * (1 + kWorkTie) && kernels < c.kernels));
          if (better) {
            c.keep = c.candidates[k];
            c.best = score;
            c.kernels = kernels;
          }
        }
      }
      for (const Choice &c : choices) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << "tang-fuse: fusing into this comprehension would execute "
           << formatCount(c.worst.executed) << " operations, more than "
           << formatCount(maxWorkFactor) << " x the "
           << formatCount(c.worst.bound)
           << " of the comprehensions fused into it (max-work-factor): ";
        if (c.keep) {
          state.kept.insert(*c.keep);
          os << "the comprehension at ";
          Location at = original[*c.keep]->getLoc();
          if (auto flc = dyn_cast<FileLineColLoc>(at))
            os << flc.getFilename().getValue() << ":" << flc.getLine() << ":"
               << flc.getColumn();
          else
            at.print(os);
          os << " stays materialised";
        } else {
          state.closed.insert(c.worst.id);
          os << "nothing is fused into it";
        }
        remarks.push_back({original[c.worst.id]->getLoc(), text});
      }
      if (failed(measure(module, policy, state, unfused, measures, total)))
        return signalPassFailure();
    }
    if (reportWork)
      for (const Measure &m : measures)
        remarks.push_back({original[m.id]->getLoc(),
                           "tang-fuse: executes " + formatCount(m.executed) +
                               " operations fused (" + formatCount(m.bound) +
                               " unfused)"});
    // The decisions are made: fuse the module itself (whose operations
    // callers may hold).
    int64_t fused = 0;
    if (failed(fuse(module, policy, fused, &state.origins)))
      return signalPassFailure();
    numFused += fused;
    // Why the remaining reads of producers stay.
    module.walk([&](ReadOp read) {
      auto producer = read.getTensor().getDefiningOp<ComprehensionOp>();
      // (A scatter's or a scan's body is not a consumer fusion takes.)
      if (!producer || read->getParentOfType<ScatterOp>() ||
          read->getParentOfType<ScanOp>())
        return;
      Decision d = policy.decide(read, producer);
      if (d == Decision::KeepRecompute)
        ++numKeptRecompute;
      else if (d == Decision::KeepBroadcast)
        ++numKeptBroadcast;
      else if (d == Decision::KeepSize)
        ++numKeptSize;
      else if (d == Decision::KeepShared)
        ++numKeptShared;
      else if (d == Decision::KeepWork)
        ++numKeptWork;
    });
    module.walk([](ComprehensionOp c) { c->removeAttr(kFuseIdAttrName); });
    // At the comprehensions' locations (some were fused away).
    for (auto &[loc, text] : remarks)
      emitRemark(loc) << text;
    numErased += before - countComprehensions(module);
  }

  /// A function-level comprehension's work after fusion, and the bound:
  /// the unfused work of the comprehensions it holds.
  struct Measure {
    int64_t id;
    double executed, bound;
  };

  /// Fuses a copy of `module` under `policy` (recording the origins in
  /// `state`), applies the online-softmax rewrites (which make fused
  /// attention quadratic) and counts each function-level comprehension's
  /// work; `total` is the program's.
  LogicalResult measure(ModuleOp module, const FusionPolicy &policy,
                        WorkState &state,
                        const llvm::DenseMap<int64_t, double> &unfused,
                        SmallVector<Measure> &measures, double &total) {
    OwningOpRef<ModuleOp> work = module.clone();
    state.origins.clear();
    int64_t fused = 0;
    if (failed(fuse(*work, policy, fused, &state.origins)))
      return failure();
    int64_t online = 0, pairs = 0;
    (void)applyOnlineSoftmax(*work, online, pairs);
    measures.clear();
    total = 0;
    SmallVector<ComprehensionOp> functionLevel;
    llvm::DenseSet<int64_t> materialised;
    work->walk([&](ComprehensionOp c) {
      int64_t id = getFuseId(c);
      if (id < 0 || isInIterationBody(c))
        return;
      functionLevel.push_back(c);
      materialised.insert(id);
    });
    for (ComprehensionOp c : functionLevel) {
      int64_t id = getFuseId(c);
      Measure m{id, getExecutedWork(c), unfused.lookup(id)};
      // A producer fused in but still materialised for other consumers
      // saves none of its work: it does not raise the bound (its
      // reduction recomputed inside a norm's sum of squares would double
      // the product's work).
      for (int64_t o : state.origins.lookup(id))
        if (!materialised.contains(o))
          m.bound += unfused.lookup(o);
      total += m.executed;
      measures.push_back(m);
    }
    return success();
  }

  /// One fusion to a fixed point under `policy`, then CSE.
  LogicalResult
  fuse(ModuleOp module, const FusionPolicy &policy, int64_t &fused,
       llvm::DenseMap<int64_t, llvm::SetVector<int64_t>> *origins) {
    RewritePatternSet patterns(module.getContext());
    patterns.add<ReadOfComprehension_Fuse>(module.getContext(), policy, fused,
                                           origins);
    // The driver also folds views into reads (ReadOp::fold), so fusion sees
    // through views, and erases producers left without readers.
    GreedyRewriteConfig config;
    config.setMaxIterations(GreedyRewriteConfig::kNoLimit);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(module, std::move(patterns), config))) {
      getOperation().emitError() << "tang-fuse: did not reach a fixed point";
      return failure();
    }
    // Reads of several results of one producer, or of one producer at the
    // same indices, got a copy of its body each: share them.
    IRRewriter rewriter(module.getContext());
    DominanceInfo dominance(module);
    eliminateCommonSubExpressions(rewriter, dominance, module);
    return success();
  }

  /// The number of function-level comprehensions.
  static int64_t countComprehensions(ModuleOp module) {
    int64_t n = 0;
    module.walk([&](ComprehensionOp c) {
      if (!isInIterationBody(c))
        ++n;
    });
    return n;
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// The work model
//===----------------------------------------------------------------------===//

/// The operations one execution of `block` runs: one per operation, and a
/// nested comprehension its body once per point of its reduced domain.
static double getBlockWork(Block &block) {
  double work = 0;
  for (Operation &op : block.without_terminator()) {
    work += 1;
    if (auto nested = dyn_cast<ComprehensionOp>(op)) {
      double points = 1;
      for (unsigned i = 0; i < nested.getNumIndices(); ++i)
        points *= getWorkExtent(nested, i);
      work += points * getBlockWork(nested.getBodyBlock());
    }
  }
  return work;
}

/// How many times each operation of `op`'s body (in order) runs: once per
/// point of `op`'s domain, except that what does not depend on the reduced
/// indices runs once per parallel point (before the reduction's loops), and
/// with `sharesRow`, what depends on neither them nor the last parallel
/// index once per row (the row kernel's per-block values, the flash
/// kernel's scores shared across the head dimension).
static SmallVector<double> getBodyCounts(ComprehensionOp op, bool sharesRow) {
  double parallel = 1, reduced = 1;
  for (unsigned i = 0; i < op.getNumIndices(); ++i)
    (op.isReducedIndex(i) ? reduced : parallel) *= getWorkExtent(op, i);
  sharesRow &= op.getNumParallel() > 0;
  unsigned last = op.getNumParallel() - 1;
  llvm::DenseSet<Value> onReduced, onRow;
  for (unsigned i = op.getNumParallel(); i < op.getNumIndices(); ++i)
    onReduced.insert(op.getIndex(i));
  if (sharesRow)
    onRow.insert(op.getIndex(last));
  double rows = sharesRow ? parallel / getWorkExtent(op, last) : parallel;
  SmallVector<double> counts;
  for (Operation &inner : op.getBodyBlock().without_terminator()) {
    bool reducedDep = false, rowDep = !sharesRow;
    inner.walk([&](Operation *o) {
      for (Value v : o->getOperands()) {
        reducedDep |= onReduced.contains(v);
        rowDep |= onRow.contains(v);
      }
    });
    if (reducedDep)
      onReduced.insert(inner.result_begin(), inner.result_end());
    if (rowDep && sharesRow)
      onRow.insert(inner.result_begin(), inner.result_end());
    counts.push_back((rowDep ? parallel : rows) * (reducedDep ? reduced : 1));
  }
  return counts;
}

/// The points of a nested comprehension's domain.
static double getPoints(ComprehensionOp nested) {
  double points = 1;
  for (unsigned i = 0; i < nested.getNumIndices(); ++i)
    points *= getWorkExtent(nested, i);
  return points;
}

double mlir::tang::getExecutedWork(ComprehensionOp op) {
  // A row's shared values are computed once only by the kernels that
  // share them: the row kernel (what a comprehension of no reduction of
  // its own and of the row-reduction class gets) and the flash kernel. A
  // comprehension whose nested reductions make it matmul-like gets a tiled
  // kernel that evaluates its body per element, nested reductions and all.
  bool sharesRow = (op.getNumReduced() == 0 &&
                    classifyComprehension(op) == ShapeClass::RowReduction) ||
                   op.getBuiltinMonoid() == MonoidKind::OnlineSoftmax;
  SmallVector<double> counts = getBodyCounts(op, sharesRow);
  double work = 0;
  for (auto [inner, count] :
       llvm::zip(op.getBodyBlock().without_terminator(), counts)) {
    double ops = 1;
    if (auto nested = dyn_cast<ComprehensionOp>(inner))
      ops += getPoints(nested) * getBlockWork(nested.getBodyBlock());
    work += ops * count;
  }
  return work;
}
