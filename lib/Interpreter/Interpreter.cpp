//===- Interpreter.cpp - the float64 reference interpreter ------*- C++ -*-===//
//
// Evaluates tang functions in float64. Each comprehension body is compiled
// once into a list of closures over a flat frame of slots (one per scalar
// SSA value and per iteration index), then run for every point of the
// iteration domain: parallel points in row-major order, and for each of them
// the reduced points in row-major order, combined under the monoid from its
// identity. Views are materialised; reads index the materialised tensors.
//
// Scalars are float64 throughout. Integer values are held exactly up to 2^53
// (every i32, i8 and i1 value; i64 or index intermediates beyond 2^53 are
// rounded) and wrapped to their bit width (i1 as 0 or 1);
// `arith.truncf`/`arith.extf` are the identity, because the reference computes
// exact math and rounding to a storage type is a schedule's business.
//
// Every monoid is evaluated through its lift, its binary combine on two
// carriers, its identity and its finalisation (MonoidEval), so that
// checkMonoidLaws can test the laws on the very code that reduces.
//
//===----------------------------------------------------------------------===//

#include "Tang/Interpreter/Interpreter.h"

#include "Compiler.h"
#include "Tang/Dialect/Tang/IR/TangMonoids.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>

using namespace mlir;
using namespace mlir::tang;
using namespace mlir::tang::interp;

//===----------------------------------------------------------------------===//
// Function-level evaluation
//===----------------------------------------------------------------------===//

/// The interpreter materialises every tensor in float64; refuse anything
/// larger than this many elements (2 GiB) instead of exhausting memory.
static constexpr int64_t kMaxElements = int64_t(1) << 28;

/// Evaluates the function-level ops of `block` (a function's body or a
/// tensor monoid's combine) on `tensors`, which binds its arguments, up to
/// its terminator (`func.return` or `tang.yield`), whose operands it
/// returns.
static FailureOr<SmallVector<Tensor>>
evalBlock(Block &block, TensorMap &tensors, ArrayRef<int64_t> sizes,
          const InterpretOptions &options,
          const std::shared_ptr<Perturbation> &perturbation);

/// A zero-filled result tensor of `type`'s element type and `shape`.
static std::shared_ptr<Tensor> makeResult(Type type, ArrayRef<int64_t> shape) {
  auto r = std::make_shared<Tensor>();
  r->shape.assign(shape.begin(), shape.end());
  r->elementType = cast<RankedTensorType>(type).getElementType();
  r->data.resize(r->getNumElements());
  return r;
}

/// The column kernel `op` runs as (getColumnSchedule, the kernel form's
/// reading of its schedule) when its carriers are 32-bit or 16-bit floats
/// (computed in f32), else none.
static std::optional<ColumnSchedule>
getColumnKernel(ComprehensionOp op, ArrayRef<Type> carrierTypes) {
  if (!llvm::all_of(carrierTypes, [](Type t) {
        return isa<Float32Type, Float16Type, BFloat16Type>(t) ||
               t.isSignlessInteger(32);
      }))
    return std::nullopt;
  return getColumnSchedule(op);
}

/// The precision emulator's reduction order for `op` from its schedule
/// (InterpretOptions): split kernels' chunks, a SIMT kernel's threads along
/// the reduced row; tensor-core kernels and comprehensions without a
/// schedule in order.
static void setReductionOrder(ComprehensionOp op, Plan &plan) {
  ScheduleAttr s = op.getScheduleAttr();
  if (!s || !op.getNumReduced())
    return;
  unsigned last = op.getNumIndices() - 1;
  if (std::optional<ColumnSchedule> col =
          getColumnKernel(op, plan.monoid->carrierTypes)) {
    // The column kernel (lib/Conversion/TangToGPU/ColumnKernel.cpp): the
    // rows (the reduced points, row-major) in split_k chunks, each in
    // runs of a warp's, combined in warp order, then the chunks in order.
    plan.chunk = llvm::divideCeil(col->rows, col->splits);
    plan.subChunk = llvm::divideCeil(plan.chunk, col->warps);
    return;
  }
  int64_t extent = plan.extents[last];
  int64_t tile = s.getTile()[last];
  KernelKind kind = s.getKernel();
  bool split = s.getMapping()[last] == Mapping::BlockX && tile < extent;
  if (kind == KernelKind::SplitSoftmax ||
      (split && (kind == KernelKind::Auto || kind == KernelKind::Simt)))
    plan.chunk = std::max<int64_t>(1, tile);
  else if (kind == KernelKind::Auto || kind == KernelKind::Simt) {
    plan.partials = std::max<int64_t>(1, s.getThreads()[last]);
    plan.vector = std::max<int64_t>(1, s.getVector());
  }
}

/// The order of the reductions nested in `op` under the precision
/// emulator: a row kernel's threads (a block's along a whole last index,
/// or, with no row, the threads on the last index's tile of one) stride
/// them.
static void setNestedOrder(ComprehensionOp op, Precision &precision) {
  ScheduleAttr s = op.getScheduleAttr();
  if (!s)
    return;
  KernelKind k = s.getKernel();
  unsigned row = op.getNumIndices() - 1;
  bool rowless = isRowlessSchedule(op, s);
  if ((k == KernelKind::Auto || k == KernelKind::Simt) &&
      (s.getMapping()[row] == Mapping::Serial || rowless) &&
      s.getThreads()[row] > 1) {
    precision.nestedPartials = s.getThreads()[row];
    precision.nestedVector = std::max<int64_t>(1, s.getVector());
  }
}

static FailureOr<SmallVector<std::shared_ptr<Tensor>>>
evalComprehension(ComprehensionOp op, const TensorMap &tensors,
                  ArrayRef<int64_t> sizes, const InterpretOptions &options,
                  const std::shared_ptr<Perturbation> &perturbation) {
  ErrorState err;
  // Under the precision emulator: tf32 operands for an f32 comprehension on
  // tensor cores.
  Precision precision;
  ScheduleAttr schedule = op.getScheduleAttr();
  if (options.emulatePrecision)
    setNestedOrder(op, precision);
  precision.tf32Operands =
      schedule && schedule.getMma() != TensorCoreKind::None &&
      schedule.getStorage() && schedule.getStorage().isF32();
  Compiler compiler(tensors, err, sizes,
                    options.emulatePrecision ? &precision : nullptr);
  compiler.setPerturbation(perturbation);
  FailureOr<std::shared_ptr<Plan>> planOr = compiler.compileComprehension(op);
  if (failed(planOr))
    return failure();
  Plan &plan = **planOr;
  if (options.emulatePrecision)
    setReductionOrder(op, plan);
  SmallVector<Rounding> stored;
  for (Type t : op.getResultTypes())
    stored.push_back(options.emulatePrecision
                         ? getRounding(getElementTypeOrSelf(t))
                         : Rounding::None);
  // Monte Carlo arithmetic: the store's rounding too.
  SmallVector<double> storeUnit;
  for (Type t : op.getResultTypes())
    storeUnit.push_back(perturbation ? getUnitRoundoff(getElementTypeOrSelf(t))
                                     : 0.0);

  SmallVector<std::shared_ptr<Tensor>> results;
  std::optional<int64_t> points = getNumElementsChecked(
      ArrayRef(plan.extents).take_front(plan.numParallel));
  int64_t numPoints = points.value_or(kMaxElements + 1);
  if (numPoints > kMaxElements)
    return op.emitError() << "tang-run: the result has " << numPoints
                          << " elements, more than the reference "
                             "interpreter's limit of "
                          << kMaxElements;
  for (Type t : op.getResultTypes())
    results.push_back(
        makeResult(t, ArrayRef(plan.extents).take_front(plan.numParallel)));

  std::vector<double> frame(compiler.getNumSlots(), 0.0);
  SmallVector<double, 4> vals(plan.numResults);
  SmallVector<int64_t, 4> idx(plan.numParallel, 0);
  for (int64_t point = 0; point < numPoints; ++point) {
    // Decompose the row-major point into parallel indices.
    int64_t rest = point;
    for (int i = static_cast<int>(plan.numParallel) - 1; i >= 0; --i) {
      frame[plan.indexSlots[i]] = static_cast<double>(rest % plan.extents[i]);
      rest /= plan.extents[i];
    }
    plan.evalPoint(frame.data(), vals.data());
    for (unsigned k = 0; k < plan.numResults; ++k) {
      double v = roundValue(vals[k], stored[k]);
      results[k]->data[point] =
          storeUnit[k] > 0 ? perturbation->apply(v, storeUnit[k]) : v;
    }
    if (err.op)
      break;
  }
  if (err.op)
    return err.op->emitError() << "tang-run: " << err.message;
  return results;
}

/// A scatter: a copy of its base, then every point of its domain in
/// row-major order writes (or combines) its element. An out-of-range
/// coordinate under `trap` fails the run, under `drop` skips the write.
static FailureOr<std::shared_ptr<Tensor>>
evalScatter(ScatterOp op, const TensorMap &tensors, ArrayRef<int64_t> sizes,
            const std::shared_ptr<Perturbation> &perturbation) {
  ErrorState err;
  Compiler compiler(tensors, err, sizes);
  compiler.setPerturbation(perturbation);
  SmallVector<Slot> coordinateSlots;
  std::optional<MonoidEval> combine;
  FailureOr<std::shared_ptr<Plan>> planOr =
      compiler.compileScatter(op, coordinateSlots, combine);
  if (failed(planOr))
    return failure();
  const Plan &plan = **planOr;
  std::optional<int64_t> points = getNumElementsChecked(plan.extents);
  int64_t numPoints = points.value_or(kMaxElements + 1);
  if (numPoints > kMaxElements)
    return op.emitError() << "tang-run: the scatter has " << numPoints
                          << " points, more than the reference "
                             "interpreter's limit of "
                          << kMaxElements;
  auto result = std::make_shared<Tensor>(*tensors.lookup(op.getBase()));
  SmallVector<int64_t> strides = result->getStrides();
  PutOp put = op.getPut();
  // Symbols become dimensions after the indices.
  AffineMap map = put.getMap();
  unsigned numDims = map.getNumDims();
  SmallVector<AffineExpr> dims, symbols;
  for (unsigned d = 0; d < numDims; ++d)
    dims.push_back(getAffineDimExpr(d, op.getContext()));
  for (unsigned k = 0; k < map.getNumSymbols(); ++k)
    symbols.push_back(getAffineDimExpr(numDims + k, op.getContext()));
  map =
      map.replaceDimsAndSymbols(dims, symbols, dims.size() + symbols.size(), 0);

  std::vector<double> frame(compiler.getNumSlots(), 0.0);
  SmallVector<double, 4> acc(combine ? combine->carrierSize : 1),
      scratch(acc.size());
  double value;
  SmallVector<int64_t, 8> operands;
  for (int64_t point = 0; point < numPoints; ++point) {
    int64_t rest = point;
    for (int i = static_cast<int>(plan.numParallel) - 1; i >= 0; --i) {
      frame[plan.indexSlots[i]] = static_cast<double>(rest % plan.extents[i]);
      rest /= plan.extents[i];
    }
    plan.evalPoint(frame.data(), &value);
    if (err.op)
      return err.op->emitError() << "tang-run: " << err.message;
    operands.clear();
    for (Slot s : coordinateSlots)
      operands.push_back(static_cast<int64_t>(frame[s]));
    int64_t off = 0;
    bool inside = true;
    for (auto [r, expr] : llvm::enumerate(map.getResults())) {
      int64_t c = evaluateAffine(expr, operands), n = result->shape[r];
      if (c >= 0 && c < n) {
        off += c * strides[r];
        continue;
      }
      if (put.getPolicy() == OutOfRange::Trap)
        return put.emitError()
               << "tang-run: scatter coordinate #" << r << " is " << c
               << ", outside [0, " << n << ") (policy trap; drop on request)";
      inside = false;
    }
    if (!inside)
      continue;
    if (!combine) {
      result->data[off] = value;
      continue;
    }
    acc[0] = result->data[off];
    combine->accumulate(acc.data(), &value, scratch.data());
    combine->finalize(acc.data(), &result->data[off]);
  }
  return result;
}

/// A scan: for each parallel point (row-major), the body at scan positions
/// 0, 1, ... accumulated from the identity, each prefix finalised into the
/// results. O(n) per sequence.
static FailureOr<SmallVector<std::shared_ptr<Tensor>>>
evalScan(ScanOp op, const TensorMap &tensors, ArrayRef<int64_t> sizes,
         const std::shared_ptr<Perturbation> &perturbation) {
  ErrorState err;
  Compiler compiler(tensors, err, sizes);
  compiler.setPerturbation(perturbation);
  FailureOr<std::shared_ptr<Plan>> planOr = compiler.compileScan(op);
  if (failed(planOr))
    return failure();
  const Plan &plan = **planOr;
  int64_t numPoints =
      getNumElementsChecked(plan.extents).value_or(kMaxElements + 1);
  if (numPoints > kMaxElements)
    return op.emitError() << "tang-run: the scan has " << numPoints
                          << " elements, more than the reference "
                             "interpreter's limit of "
                          << kMaxElements;
  SmallVector<std::shared_ptr<Tensor>> results;
  for (Type t : op.getResultTypes())
    results.push_back(makeResult(t, cast<RankedTensorType>(t).getShape()));
  const MonoidEval &monoid = *plan.monoid;
  int64_t length = plan.extents.back();
  std::vector<double> frame(compiler.getNumSlots(), 0.0);
  SmallVector<double, 8> acc(monoid.carrierSize), scratch(monoid.carrierSize),
      yields(plan.yieldSlots.size()), out(plan.numResults);
  for (int64_t row = 0; row < numPoints / length; ++row) {
    int64_t rest = row;
    for (int i = static_cast<int>(plan.numParallel) - 1; i >= 0; --i) {
      frame[plan.indexSlots[i]] = static_cast<double>(rest % plan.extents[i]);
      rest /= plan.extents[i];
    }
    monoid.init(acc.data());
    for (int64_t t = 0; t < length; ++t) {
      frame[plan.indexSlots.back()] = static_cast<double>(t);
      for (const Instr &i : plan.body)
        i(frame.data());
      if (err.op)
        return err.op->emitError() << "tang-run: " << err.message;
      for (auto [k, s] : llvm::enumerate(plan.yieldSlots))
        yields[k] = frame[s];
      monoid.accumulate(acc.data(), yields.data(), scratch.data());
      monoid.finalize(acc.data(), out.data());
      for (unsigned k = 0; k < plan.numResults; ++k)
        results[k]->data[row * length + t] = out[k];
    }
  }
  return results;
}

static std::shared_ptr<Tensor> evalView(ViewOp op, const Tensor &src) {
  auto type = cast<RankedTensorType>(op.getType());
  auto r = std::make_shared<Tensor>();
  r->shape.assign(type.getShape().begin(), type.getShape().end());
  r->elementType = type.getElementType();
  int64_t n = r->getNumElements();
  r->data.resize(n);
  SmallVector<int64_t> srcStrides = src.getStrides();
  SmallVector<int64_t> coord(r->shape.size(), 0);
  AffineMap map = op.getMap();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i;
    for (int d = static_cast<int>(r->shape.size()) - 1; d >= 0; --d) {
      coord[d] = rest % r->shape[d];
      rest /= r->shape[d];
    }
    int64_t off = 0;
    for (auto [k, e] : llvm::enumerate(map.getResults()))
      off += evaluateAffine(e, coord) * srcStrides[k];
    r->data[i] = src.data[off]; // In bounds: checked by the verifier.
  }
  return r;
}

static FailureOr<std::shared_ptr<Tensor>> evalConstant(arith::ConstantOp op) {
  auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
  auto type = dyn_cast<RankedTensorType>(op.getType());
  if (!dense || !type)
    return op.emitError() << "tang-run: unsupported constant at function "
                             "level (expected a dense tensor)";
  auto r = std::make_shared<Tensor>();
  r->shape.assign(type.getShape().begin(), type.getShape().end());
  r->elementType = type.getElementType();
  if (isa<FloatType>(r->elementType)) {
    for (APFloat v : dense.getValues<APFloat>())
      r->data.push_back(v.convertToDouble());
  } else if (r->elementType.isIntOrIndex()) {
    unsigned w = getBitWidth(r->elementType);
    for (APInt v : dense.getValues<APInt>())
      r->data.push_back(fromBits(v.getZExtValue(), w));
  } else {
    return op.emitError() << "tang-run: unsupported constant element type";
  }
  return r;
}

void mlir::tang::roundToElementType(Tensor &t) {
  Rounding r = getRounding(t.elementType);
  if (r != Rounding::None)
    for (double &v : t.data)
      v = roundValue(v, r);
}

/// `shape` as text, e.g. `[2, 3]`.
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(shape, os);
  return s + "]";
}

FailureOr<SmallVector<Tensor>>
mlir::tang::interpret(func::FuncOp func, ArrayRef<Tensor> inputs,
                      const InterpretOptions &options) {
  if (func.isExternal())
    return func.emitError()
           << "tang-run: @" << func.getSymName() << " has no body";
  if (func.getNumArguments() != inputs.size())
    return func.emitError() << "tang-run: @" << func.getSymName() << " takes "
                            << func.getNumArguments() << " arguments, got "
                            << inputs.size() << " inputs";
  TensorMap tensors;
  for (auto [arg, in] : llvm::zip(func.getArguments(), inputs)) {
    if (arg.getType().isIndex()) {
      if (!in.shape.empty() || in.data.size() != 1 ||
          !in.elementType.isIntOrIndex())
        return func.emitError()
               << "tang-run: input #" << arg.getArgNumber()
               << " is an index argument (a size): give it one integer";
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return func.emitError()
             << "tang-run: argument #" << arg.getArgNumber()
             << " must be a ranked tensor or an index, got " << arg.getType();
    bool fits = in.shape.size() == static_cast<size_t>(type.getRank()) &&
                static_cast<int64_t>(in.data.size()) == in.getNumElements();
    for (auto [n, want] : llvm::zip(in.shape, type.getShape()))
      fits &= ShapedType::isDynamic(want) ? n >= 1 : n == want;
    if (!fits)
      return func.emitError()
             << "tang-run: input #" << arg.getArgNumber() << " has shape "
             << formatShape(in.shape) << ", which does not fit " << type
             << " (a '?' dimension takes any size >= 1)";
    tensors[arg] = std::make_shared<Tensor>(in);
    // The emulator stores inputs in their element types.
    if (options.emulatePrecision)
      roundToElementType(*tensors[arg]);
  }

  // Bind the size symbols and check what the verifier left to the run.
  SmallVector<SizeSymbol> symbols = getSizeSymbols(func);
  SmallVector<int64_t> sizes;
  for (SizeSymbol s : symbols) {
    const Tensor &in = inputs[s.argNumber];
    sizes.push_back(s.dim < 0 ? static_cast<int64_t>(in.data[0])
                              : in.shape[s.dim]);
  }
  for (const SizeRequirement &r : collectSizeRequirements(func)) {
    if (r.expr.evaluate(sizes) >= 0)
      continue;
    return r.op->emitError()
           << "tang-run: the sizes break a requirement: "
           << r.describeBroken(symbols, sizes) << "; nothing ran";
  }

  if (!func.getBody().hasOneBlock())
    return func.emitError() << "tang-run: functions must have one block";
  if (options.emulatePrecision && options.perturbSeed)
    return func.emitError() << "tang-run: the precision emulator and random "
                               "rounding errors do not combine";
  std::shared_ptr<Perturbation> perturbation;
  if (options.perturbSeed)
    perturbation = std::make_shared<Perturbation>(*options.perturbSeed);
  return evalBlock(func.getBody().front(), tensors, sizes, options,
                   perturbation);
}

/// Element `index` (row-major over the leading dimensions) of `t`: the
/// trailing `shape` slice, copied.
static std::shared_ptr<Tensor> sliceOf(const Tensor &t, int64_t index,
                                       RankedTensorType type) {
  auto out = makeResult(type, type.getShape());
  int64_t n = static_cast<int64_t>(out->data.size());
  std::copy(t.data.begin() + index * n, t.data.begin() + (index + 1) * n,
            out->data.begin());
  return out;
}

static FailureOr<SmallVector<std::shared_ptr<Tensor>>>
evalTensorScan(TensorScanOp op, const TensorMap &tensors,
               ArrayRef<int64_t> sizes, const InterpretOptions &options,
               const std::shared_ptr<Perturbation> &perturbation) {
  auto monoid =
      SymbolTable::lookupNearestSymbolFrom<MonoidOp>(op, op.getMonoidAttr());
  SmallVector<Type> carrier = monoid.getCarrierTypes();
  unsigned numParallel = op.getNumParallel(monoid);
  auto first = cast<RankedTensorType>(op.getElements()[0].getType());
  int64_t length = first.getDimSize(numParallel);
  int64_t points = 1;
  for (int64_t d : first.getShape().take_front(numParallel))
    points *= d;
  SmallVector<std::shared_ptr<Tensor>> results;
  for (Type t : op.getResultTypes()) {
    if (getNumElementsChecked(cast<RankedTensorType>(t).getShape())
            .value_or(kMaxElements + 1) > kMaxElements)
      return op.emitError() << "tang-run: the tensor scan has more elements "
                               "than the reference interpreter's limit of "
                            << kMaxElements;
    results.push_back(makeResult(t, cast<RankedTensorType>(t).getShape()));
  }
  Block &combine = monoid.getCombine().front();
  unsigned n = carrier.size();
  for (int64_t p = 0; p < points; ++p) {
    SmallVector<std::shared_ptr<Tensor>> acc;
    if (!op.getInit().empty())
      for (auto [v, c] : llvm::zip(op.getInit(), carrier))
        acc.push_back(
            sliceOf(*tensors.lookup(v), p, cast<RankedTensorType>(c)));
    for (int64_t t = 0; t < length; ++t) {
      SmallVector<std::shared_ptr<Tensor>> x;
      for (auto [v, c] : llvm::zip(op.getElements(), carrier))
        x.push_back(sliceOf(*tensors.lookup(v), p * length + t,
                            cast<RankedTensorType>(c)));
      if (acc.empty()) {
        acc = x;
      } else {
        TensorMap local;
        for (unsigned k = 0; k < n; ++k) {
          local[combine.getArgument(k)] = acc[k];
          local[combine.getArgument(n + k)] = x[k];
        }
        FailureOr<SmallVector<Tensor>> outs =
            evalBlock(combine, local, sizes, options, perturbation);
        if (failed(outs))
          return op.emitError() << "tang-run: in the combine of "
                                << op.getMonoidAttr() << " at element " << t;
        for (unsigned k = 0; k < n; ++k)
          acc[k] = std::make_shared<Tensor>((*outs)[k]);
      }
      for (unsigned k = 0; k < n; ++k) {
        size_t m = acc[k]->data.size();
        std::copy(acc[k]->data.begin(), acc[k]->data.end(),
                  results[k]->data.begin() + (p * length + t) * m);
      }
    }
  }
  return results;
}

/// Forward substitution, X[p, r] = Y[p, r] + sum_{s < r} L[p, r, s] X[p, s],
/// in float64; under Monte Carlo arithmetic each product and sum is
/// perturbed at the element type's unit roundoff, as a kernel rounds them.
static FailureOr<std::shared_ptr<Tensor>>
evalTriangularSolve(TriangularSolveOp op, const TensorMap &tensors,
                    const std::shared_ptr<Perturbation> &perturbation) {
  RankedTensorType type = op.getType();
  if (getNumElementsChecked(type.getShape()).value_or(kMaxElements + 1) >
      kMaxElements)
    return op.emitError() << "tang-run: the solve has more elements than the "
                             "reference interpreter's limit of "
                          << kMaxElements;
  const Tensor &lower = *tensors.lookup(op.getLower());
  const Tensor &rhs = *tensors.lookup(op.getRhs());
  auto out = makeResult(type, type.getShape());
  int64_t rank = type.getRank();
  int64_t c = type.getDimSize(rank - 2), n = type.getDimSize(rank - 1);
  int64_t points = type.getNumElements() / (c * n);
  double u = perturbation ? getUnitRoundoff(type.getElementType()) : 0.0;
  auto round = [&](double v) { return u > 0 ? perturbation->apply(v, u) : v; };
  for (int64_t p = 0; p < points; ++p) {
    const double *l = lower.data.data() + p * c * c;
    const double *y = rhs.data.data() + p * c * n;
    double *x = out->data.data() + p * c * n;
    for (int64_t r = 0; r < c; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double acc = y[r * n + j];
        for (int64_t q = 0; q < r; ++q)
          acc = round(acc + round(l[r * c + q] * x[q * n + j]));
        x[r * n + j] = acc;
      }
  }
  return out;
}

static FailureOr<SmallVector<Tensor>>
evalBlock(Block &block, TensorMap &tensors, ArrayRef<int64_t> sizes,
          const InterpretOptions &options,
          const std::shared_ptr<Perturbation> &perturbation) {
  for (Operation &op : block) {
    if (auto c = dyn_cast<ComprehensionOp>(op)) {
      auto rs = evalComprehension(c, tensors, sizes, options, perturbation);
      if (failed(rs))
        return failure();
      for (auto [v, t] : llvm::zip(c.getResults(), *rs))
        tensors[v] = t;
      continue;
    }
    if (auto scan = dyn_cast<ScanOp>(op)) {
      auto rs = evalScan(scan, tensors, sizes, perturbation);
      if (failed(rs))
        return failure();
      for (auto [v, t] : llvm::zip(scan.getResults(), *rs)) {
        tensors[v] = t;
        if (options.emulatePrecision)
          roundToElementType(*t);
      }
      continue;
    }
    if (auto scan = dyn_cast<TensorScanOp>(op)) {
      auto rs = evalTensorScan(scan, tensors, sizes, options, perturbation);
      if (failed(rs))
        return failure();
      for (auto [v, t] : llvm::zip(scan.getResults(), *rs)) {
        tensors[v] = t;
        if (options.emulatePrecision)
          roundToElementType(*t);
      }
      continue;
    }
    if (auto solve = dyn_cast<TriangularSolveOp>(op)) {
      FailureOr<std::shared_ptr<Tensor>> r =
          evalTriangularSolve(solve, tensors, perturbation);
      if (failed(r))
        return failure();
      if (options.emulatePrecision)
        roundToElementType(**r);
      tensors[solve.getResult()] = *r;
      continue;
    }
    if (auto sc = dyn_cast<ScatterOp>(op)) {
      FailureOr<std::shared_ptr<Tensor>> r =
          evalScatter(sc, tensors, sizes, perturbation);
      if (failed(r))
        return failure();
      tensors[sc.getResult()] = *r;
      if (options.emulatePrecision)
        roundToElementType(**r);
      continue;
    }
    if (auto v = dyn_cast<ViewOp>(op)) {
      if (getNumElementsChecked(v.getType().getShape())
              .value_or(kMaxElements + 1) > kMaxElements)
        return v.emitError() << "tang-run: the view has more elements than "
                                "the reference interpreter's limit of "
                             << kMaxElements;
      tensors[v.getResult()] = evalView(v, *tensors.lookup(v.getSource()));
      continue;
    }
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      if (getScalarConstant(c.getResult()))
        continue; // Captured by the bodies that use it.
      auto t = evalConstant(c);
      if (failed(t))
        return failure();
      tensors[c.getResult()] = *t;
      continue;
    }
    if (op.getNumResults() == 1 && op.getResult(0).getType().isIndex() &&
        succeeded(getSizeOf(op.getResult(0))))
      continue; // A size (tensor.dim, arithmetic on sizes): bound above.
    if (isa<func::ReturnOp, YieldOp>(op)) {
      SmallVector<Tensor> outs;
      for (Value v : op.getOperands()) {
        auto it = tensors.find(v);
        if (it == tensors.end())
          return op.emitError() << "tang-run: returned value is not a tensor";
        outs.push_back(*it->second);
      }
      return outs;
    }
    InFlightDiagnostic d = op.emitError()
                           << "tang-run: unsupported operation '"
                           << op.getName() << "' at function level";
    if (op.getName().getDialectNamespace() == "linalg" ||
        op.getName().getDialectNamespace() == "tensor")
      d << " (a linalg program: import it first, tang-opt "
           "--convert-linalg-to-tang, and run what it prints)";
    return d;
  }
  return block.getParentOp()->emitError()
         << "tang-run: the block has no terminator";
}
