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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGTRAFFICBOUND
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

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
      if (!dim)
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

/// Whether a select of `op`'s bodies has a condition computed from indices
/// (a mask: a kernel may skip the masked work, so its operations are no
/// lower bound).
bool hasIndexMask(ComprehensionOp op) {
  bool masked = false;
  op.walk([&](arith::SelectOp s) {
    SmallVector<Value> work{s.getCondition()};
    llvm::DenseSet<Value> seen;
    while (!work.empty() && !masked) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      if (isa<IndexOp>(def))
        masked = true;
      else if (def->getNumRegions() == 0)
        work.append(def->operand_begin(), def->operand_end());
    }
  });
  return masked;
}

struct TangTrafficBoundPass
    : tang::impl::TangTrafficBoundBase<TangTrafficBoundPass> {
  using Base::Base;

  void runOnOperation() override {
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
        record["index_masked"] = hasIndexMask(op);
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
        // Compulsory: every tensor read, and the result, once.
        llvm::SmallPtrSet<void *, 8> seen;
        int64_t compulsory = 0;
        for (ReadOp r : op.getBodyBlock().getOps<ReadOp>()) {
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
