//===- TrafficBound.cpp - --tang-traffic-bound ------------------*- C++ -*-===//
//
// Remarks with the certified traffic lower bounds of
// Tang/Analysis/TrafficBound.h, per function-level comprehension and
// memory level.
//
//===----------------------------------------------------------------------===//

#include "Tang/Analysis/TrafficBound.h"
#include "Tang/Analysis/ShapeClass.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGTRAFFICBOUND
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-traffic-bound"

using namespace mlir;
using namespace mlir::tang;

namespace {

std::string join(ArrayRef<Fraction> fs) {
  std::string s;
  for (auto [i, f] : llvm::enumerate(fs)) {
    s += i ? ", " : "";
    s += f.den == 1 ? std::to_string(f.num)
                    : std::to_string(f.num) + "/" + std::to_string(f.den);
  }
  return "[" + s + "]";
}

/// The extent of index `v` (a block argument of a comprehension).
int64_t extentOf(Value v) {
  auto arg = cast<BlockArgument>(v);
  return cast<ComprehensionOp>(arg.getOwner()->getParentOp())
      .getExtent(arg.getArgNumber());
}

int64_t bytesOf(Type t) {
  return std::max<int64_t>(1,
                           getElementTypeOrSelf(t).getIntOrFloatBitWidth() / 8);
}

/// The bytes any execution of `op` moves from DRAM at least: per tensor, the
/// most distinct elements one of its projective reads touches (through
/// views), and the results, at their element sizes. Reads whose
/// coordinates are not single indices count nothing (a safe lower bound).
int64_t getCompulsoryBytes(ComprehensionOp op) {
  llvm::DenseMap<Value, int64_t> elements;
  op.getBodyBlock().walk([&](ReadOp read) {
    Value tensor = read.getTensor();
    AffineMap map = read.getMap();
    while (auto view = tensor.getDefiningOp<ViewOp>()) {
      map = view.getMap().compose(map);
      tensor = view.getSource();
    }
    llvm::SmallSetVector<Value, 4> support;
    for (AffineExpr e : map.getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      // (A padded read's index may run past the tensor.)
      if (!dim || read.getFill())
        return;
      support.insert(read.getIndices()[dim.getPosition()]);
    }
    int64_t n = 1;
    for (Value v : support)
      n *= extentOf(v);
    elements[tensor] = std::max(elements[tensor], n);
  });
  int64_t bytes = 0;
  for (auto &[tensor, n] : elements)
    bytes += n * bytesOf(tensor.getType());
  for (Type t : op.getResultTypes())
    if (auto r = dyn_cast<RankedTensorType>(t))
      bytes += r.getNumElements() * bytesOf(r);
  return bytes;
}

/// The arithmetic operations of `op`: each floating-point operation of a
/// body (not constants, conversions or selects) once per distinct
/// evaluation (the product of the extents of the indices it depends on:
/// those of its comprehension and the enclosing ones used inside it), plus
/// one combine per reduced element.
double getArithmeticOps(ComprehensionOp op) {
  double total = 0;
  op.walk([&](ComprehensionOp c) {
    llvm::SmallSetVector<Value, 8> indices;
    for (BlockArgument a : c.getBodyBlock().getArguments())
      indices.insert(a);
    c.walk([&](Operation *inner) {
      for (Value v : inner->getOperands())
        if (isa<BlockArgument>(v) && isa<IndexType>(v.getType()) &&
            !c->isAncestor(v.getParentRegion()->getParentOp()))
          indices.insert(v);
    });
    double evaluations = 1;
    for (Value v : indices)
      evaluations *= double(extentOf(v));
    int64_t ops = c.getNumReduced() ? 1 : 0;
    for (Operation &inner : c.getBodyBlock())
      if (inner.getNumResults() == 1 &&
          isa<FloatType>(inner.getResult(0).getType()) &&
          !isa<arith::ConstantOp, arith::ExtFOp, arith::TruncFOp,
               arith::SelectOp>(inner) &&
          isa<arith::ArithDialect, math::MathDialect>(inner.getDialect()))
        ++ops;
    total += evaluations * ops;
  });
  return total;
}

/// Whether a read of `op` is of 16-bit floats.
bool readsSixteenBit(ComprehensionOp op) {
  bool sixteen = false;
  op.getBodyBlock().walk([&](ReadOp r) {
    Type e = r.getType();
    sixteen |= e.isF16() || e.isBF16();
  });
  return sixteen;
}

/// The share of iterations a select keeps working, given the share where
/// its condition holds: the masked-out side is the constant one (-inf, 0);
/// with no constant side, the smaller share.
double keptShare(arith::SelectOp s, double share) {
  bool falseMasked = s.getFalseValue().getDefiningOp<arith::ConstantOp>();
  bool trueMasked = s.getTrueValue().getDefiningOp<arith::ConstantOp>();
  if (falseMasked && !trueMasked)
    return share;
  if (trueMasked && !falseMasked)
    return 1.0 - share;
  return std::min(share, 1.0 - share);
}

/// Index masks: selects whose condition is computed from indices only
/// (causal attention's `j <= i`). A kernel may skip the iterations a mask
/// drops, so only the ones it keeps are a lower bound on the work: the
/// fraction kept, counted exactly over the indices the conditions use (the
/// least over several masks), 1 without masks; 0 (no compute floor) when a
/// condition is too large to count or uses operations this count does not
/// evaluate.
/// Long by design (about 200 lines): the conditions' grammar (comparisons,
/// conjunctions, selects, index arithmetic) and their exact count in one
/// function, so that what is counted and what falls back to 0 is read in
/// one place.
double getKeptFraction(ComprehensionOp op) {
  double kept = 1.0;
  op.walk([&](arith::SelectOp s) {
    if (kept == 0.0)
      return;
    // The condition's slice, in program order; data-dependent conditions
    // are not masks.
    llvm::SetVector<Operation *> slice;
    SmallVector<Value> work{s.getCondition()};
    bool pure = true, usesIndex = false;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def) {
        pure = false;
        break;
      }
      if (!slice.insert(def))
        continue;
      if (isa<IndexOp>(def)) {
        usesIndex = true;
        continue;
      }
      if (!isa<arith::ConstantOp, arith::CmpIOp, arith::AndIOp, arith::OrIOp,
               arith::XOrIOp, arith::AddIOp, arith::SubIOp, arith::MulIOp,
               arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
               arith::IndexCastOp>(def)) {
        pure = false;
        break;
      }
      work.append(def->operand_begin(), def->operand_end());
    }
    if (!pure || !usesIndex)
      return;
    // Counted when the condition is computed in the select's block.
    SmallVector<Operation *> ordered(slice.begin(), slice.end());
    if (llvm::any_of(ordered, [&](Operation *o) {
          return o->getBlock() != s->getBlock();
        })) {
      kept = 0.0;
      return;
    }
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    // The common mask, cmpi(f(x), g(y)) of two different indices: counted
    // over sorted values in O(n log n) (causal attention at L = 8192).
    auto indexOf = [](Value v) -> IndexOp {
      while (Operation *d = v.getDefiningOp()) {
        if (auto i = dyn_cast<IndexOp>(d))
          return i.getIndices().size() == 1 ? i : IndexOp();
        if (!isa<arith::ExtSIOp, arith::IndexCastOp>(d))
          return IndexOp();
        v = d->getOperand(0);
      }
      return IndexOp();
    };
    if (auto cmp = s.getCondition().getDefiningOp<arith::CmpIOp>()) {
      IndexOp fx = indexOf(cmp.getLhs()), gy = indexOf(cmp.getRhs());
      if (fx && gy && fx.getIndices()[0] != gy.getIndices()[0] &&
          cmp.getPredicate() != arith::CmpIPredicate::eq &&
          cmp.getPredicate() != arith::CmpIPredicate::ne) {
        auto values = [&](IndexOp i) {
          SmallVector<int64_t> v;
          for (int64_t a = 0; a < extentOf(i.getIndices()[0]); ++a)
            v.push_back(evaluateAffine(i.getMap().getResult(0), {a}));
          return v;
        };
        SmallVector<int64_t> xs = values(fx), ys = values(gy);
        llvm::sort(ys);
        double count = 0;
        using P = arith::CmpIPredicate;
        for (int64_t x : xs) {
          // How many y make `x pred y` true.
          auto lower = llvm::lower_bound(ys, x) - ys.begin();
          auto upper = llvm::upper_bound(ys, x) - ys.begin();
          int64_t n = ys.size();
          switch (cmp.getPredicate()) {
          case P::slt:
          case P::ult:
            count += n - upper;
            break; // x < y
          case P::sle:
          case P::ule:
            count += n - lower;
            break; // x <= y
          case P::sgt:
          case P::ugt:
            count += lower;
            break; // x > y
          default:
            count += upper;
            break; // x >= y
          }
        }
        kept = std::min(kept, keptShare(s, count / (double(xs.size()) *
                                                    double(ys.size()))));
        return;
      }
    }
    // Otherwise every combination of the indices the condition reads.
    llvm::SetVector<Value> indices;
    for (Operation *o : ordered)
      if (auto i = dyn_cast<IndexOp>(o))
        indices.insert(i.getIndices().begin(), i.getIndices().end());
    double combos = 1;
    for (Value v : indices)
      combos *= double(extentOf(v));
    if (combos > double(1 << 24)) {
      kept = 0.0;
      return;
    }
    int64_t total = 0, count = 0;
    SmallVector<int64_t> at(indices.size(), 0);
    llvm::DenseMap<Value, int64_t> value;
    bool ok = true;
    for (;;) {
      for (Operation *o : ordered) {
        int64_t r = 0;
        auto in = [&](unsigned k) { return value.lookup(o->getOperand(k)); };
        if (auto i = dyn_cast<IndexOp>(o)) {
          SmallVector<int64_t> dims;
          for (Value v : i.getIndices())
            dims.push_back(at[llvm::find(indices, v) - indices.begin()]);
          r = evaluateAffine(i.getMap().getResult(0), dims);
        } else if (auto c = dyn_cast<arith::ConstantOp>(o)) {
          auto attr = dyn_cast<IntegerAttr>(c.getValue());
          if (!attr) {
            ok = false;
            break;
          }
          r = attr.getType().isInteger(1) ? attr.getValue().getBoolValue()
                                          : attr.getInt();
        } else if (auto c = dyn_cast<arith::CmpIOp>(o)) {
          using P = arith::CmpIPredicate;
          int64_t a = in(0), b = in(1);
          switch (c.getPredicate()) {
          case P::eq:
            r = a == b;
            break;
          case P::ne:
            r = a != b;
            break;
          case P::slt:
          case P::ult:
            r = a < b;
            break;
          case P::sle:
          case P::ule:
            r = a <= b;
            break;
          case P::sgt:
          case P::ugt:
            r = a > b;
            break;
          case P::sge:
          case P::uge:
            r = a >= b;
            break;
          }
        } else if (isa<arith::AndIOp>(o)) {
          r = in(0) & in(1);
        } else if (isa<arith::OrIOp>(o)) {
          r = in(0) | in(1);
        } else if (isa<arith::XOrIOp>(o)) {
          r = in(0) ^ in(1);
        } else if (isa<arith::AddIOp>(o)) {
          r = in(0) + in(1);
        } else if (isa<arith::SubIOp>(o)) {
          r = in(0) - in(1);
        } else if (isa<arith::MulIOp>(o)) {
          r = in(0) * in(1);
        } else {
          r = in(0); // extensions, truncations and casts of small values
        }
        value[o->getResult(0)] = r;
      }
      if (!ok)
        break;
      ++total;
      count += value.lookup(s.getCondition()) != 0;
      // The next combination.
      unsigned k = 0;
      for (; k < at.size(); ++k) {
        if (++at[k] < extentOf(indices[k]))
          break;
        at[k] = 0;
      }
      if (k == at.size())
        break;
    }
    if (!ok) {
      kept = 0.0;
      return;
    }
    kept = std::min(kept, keptShare(s, double(count) / double(total)));
  });
  return kept;
}

struct TangTrafficBoundPass
    : tang::impl::TangTrafficBoundBase<TangTrafficBoundPass> {
  using Base::Base;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    ModuleOp module = getOperation();
    // name=bytes, comma-separated.
    SmallVector<std::pair<std::string, int64_t>> memory;
    SmallVector<StringRef> items;
    StringRef(levels).split(items, ',', -1, /*KeepEmpty=*/false);
    for (StringRef item : items) {
      auto [name, bytes] = item.trim().split('=');
      int64_t value = 0;
      if (name.empty() || bytes.trim().getAsInteger(10, value) || value <= 0) {
        module.emitError() << "--tang-traffic-bound: levels must be "
                              "name=bytes, comma-separated; got '"
                           << item << "'";
        return signalPassFailure();
      }
      memory.emplace_back(name.str(), value);
    }
    llvm::json::Array records;
    module.walk([&](func::FuncOp f) {
      for (auto op : f.getBody().getOps<ComprehensionOp>()) {
        if (hasSymbolicSizes(op)) {
          op.emitWarning() << "no traffic bound: the comprehension has "
                              "symbolic sizes (bounds are for static extents)";
          continue;
        }
        llvm::json::Object record;
        std::string location;
        llvm::raw_string_ostream los(location);
        op.getLoc().print(los);
        record["function"] = f.getName().str();
        record["location"] = location;
        record["compulsory_bytes"] = getCompulsoryBytes(op);
        record["arithmetic_ops"] = getArithmeticOps(op);
        ShapeClass shape = classifyComprehension(op);
        record["shape_class"] = stringifyShapeClass(shape).str();
        record["sixteen_bit"] = readsSixteenBit(op);
        record["kept_fraction"] = getKeptFraction(op);
        llvm::json::Object levelWords;
        std::string why;
        FailureOr<LoopNest> nest = getLoopNest(op, why);
        if (failed(nest)) {
          op.emitWarning() << "no traffic bound: " << why;
          ++numRefused;
          record["refused"] = why;
          record["lower_bound_elements"] = std::move(levelWords);
          records.push_back(std::move(record));
          continue;
        }
        record["element_bytes"] = nest->elementBytes;
        if (!nest->relaxed.empty()) {
          op.emitRemark() << "traffic bound relaxed: "
                          << llvm::join(nest->relaxed, "; ")
                          << " bounded through single-index coordinates "
                             "only (a valid, possibly weaker bound)";
          llvm::json::Array relaxed;
          for (const std::string &r : nest->relaxed)
            relaxed.push_back(r);
          record["relaxed"] = std::move(relaxed);
        }
        // Compulsory: every tensor read, and the result, once (a padded
        // read may touch part of its tensor: it counts nothing).
        llvm::SmallPtrSet<void *, 8> seen;
        int64_t compulsory = 0;
        for (ReadOp r : op.getBodyBlock().getOps<ReadOp>()) {
          if (r.getFill())
            continue;
          Value t = r.getTensor();
          while (auto view = t.getDefiningOp<ViewOp>())
            t = view.getSource();
          if (seen.insert(t.getAsOpaquePointer()).second)
            compulsory += cast<RankedTensorType>(t.getType()).getNumElements();
        }
        for (Type t : op.getResultTypes())
          if (auto r = dyn_cast<RankedTensorType>(t))
            compulsory += r.getNumElements();
        for (auto &[name, bytes] : memory) {
          int64_t capacity = bytes / nest->elementBytes;
          FailureOr<TrafficBound> bound =
              computeTrafficBound(*nest, capacity, why);
          if (failed(bound)) {
            op.emitError() << "traffic bound at " << name << ": " << why;
            return signalPassFailure();
          }
          ++numBounds;
          SmallVector<std::string> tile;
          for (int64_t b : bound->tile)
            tile.push_back(std::to_string(b));
          levelWords[name] = bound->words;
          op.emitRemark() << llvm::formatv(
              "traffic bound at {0} (M = {1} elements of {2} bytes): >= {3:F0} "
              "elements moved ({4:F0} bytes); compulsory {5} elements; the "
              "largest tile that fits runs M^{6:F3} iterations: tile [{7}]; "
              "dual s = {8}, t = {9}; certificate checked",
              name, capacity, nest->elementBytes, bound->words,
              bound->words * nest->elementBytes, compulsory, bound->kappa,
              llvm::join(tile, ", "), join(bound->s), join(bound->t));
        }
        record["lower_bound_elements"] = std::move(levelWords);
        records.push_back(std::move(record));
      }
    });
    if (summary.empty())
      return;
    std::error_code ec;
    llvm::raw_fd_ostream out(summary, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      module.emitError() << "--tang-traffic-bound: cannot write '" << summary
                         << "': " << ec.message();
      return signalPassFailure();
    }
    out << llvm::formatv("{0:2}", llvm::json::Value(std::move(records)))
        << "\n";
  }
};

} // namespace
