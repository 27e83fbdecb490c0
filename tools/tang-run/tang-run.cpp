//===- tang-run.cpp - the reference interpreter driver ----------*- C++ -*-===//
//
// Parses and verifies a tang program, evaluates one function in float64 on
// inputs read from .npy files or seeded random values, and prints a summary
// of the outputs and/or writes them as .npy files. With --check-monoid-laws it
// instead checks the laws of the builtin monoids and the program's
// tang.monoid ops on random samples.
//
//===----------------------------------------------------------------------===//

#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangSizes.h"
#include "Tang/Interpreter/Interpreter.h"
#include "Tang/Interpreter/Npy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tang;
namespace cl = llvm::cl;

static cl::OptionCategory category("tang-run options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<tang program .mlir>"),
                                          cl::init("-"), cl::cat(category));
static cl::opt<std::string>
    entry("entry",
          cl::desc("Function to run (default: @main, or the only function)"),
          cl::value_desc("name"), cl::cat(category));
static cl::list<std::string>
    inputs("input",
           cl::desc("A .npy file per function argument, in order (without "
                    "any, inputs are seeded random values)"),
           cl::value_desc("file.npy"), cl::cat(category));
static cl::list<std::string>
    sizeArgs("size",
             cl::desc("The value of a size: argK=N for the index argument "
                      "#K, argK.D=N for the '?' dimension D of tensor "
                      "argument #K (random inputs need every size; with "
                      "--input files, index arguments)"),
             cl::value_desc("argK[.D]=N"), cl::cat(category));
static cl::opt<uint64_t> seed("seed",
                              cl::desc("Seed of the random inputs (default 0)"),
                              cl::init(0), cl::cat(category));
static cl::opt<std::string>
    outputDir("output-dir",
              cl::desc("Write output #i to DIR/output_<i>.npy (float types as "
                       "float64)"),
              cl::value_desc("DIR"), cl::cat(category));
static cl::opt<std::string>
    dumpInputs("dump-inputs",
               cl::desc("Write the inputs used to DIR/input_<i>.npy"),
               cl::value_desc("DIR"), cl::cat(category));
static cl::opt<bool> checkLaws(
    "check-monoid-laws",
    cl::desc("Check the laws of every builtin monoid and of every "
             "tang.monoid in the program on random samples (seeded by "
             "--seed) instead of running a function"),
    cl::init(false), cl::cat(category));
static cl::opt<unsigned>
    lawSamples("law-samples",
               cl::desc("Random samples per monoid for --check-monoid-laws "
                        "(default 1000)"),
               cl::init(1000), cl::cat(category));
enum class PrecisionMode { Exact, Schedule, Perturbed };
static cl::opt<PrecisionMode> precisionMode(
    "precision",
    cl::desc("How the run rounds: `exact` (float64, the reference), "
             "`schedule` (the precision emulator: the roundings and "
             "accumulation orders of the program's schedules; run it on "
             "the output of tang-opt --tang-schedule; docs/Tuning.md) or "
             "`perturbed` (Monte Carlo arithmetic: float64 with a random "
             "relative error of each rounding result's unit roundoff, from "
             "--perturb-seed)"),
    cl::values(clEnumValN(PrecisionMode::Exact, "exact", "float64"),
               clEnumValN(PrecisionMode::Schedule, "schedule",
                          "the schedules' roundings"),
               clEnumValN(PrecisionMode::Perturbed, "perturbed",
                          "random rounding errors")),
    cl::init(PrecisionMode::Exact), cl::cat(category));
static cl::opt<uint64_t>
    perturbSeed("perturb-seed",
                cl::desc("The seed of --precision=perturbed's errors "
                         "(default 1)"),
                cl::init(1), cl::cat(category));
static cl::opt<bool> precisionReport(
    "precision-report",
    cl::desc("Run both exactly and under the precision emulator on the same "
             "inputs and report each output's error against float64 (the "
             "outputs written are the emulator's)"),
    cl::init(false), cl::cat(category));
static cl::opt<double> precisionBudget(
    "precision-budget",
    cl::desc("With --precision-report: fail when an output's largest error "
             "exceeds this fraction of its largest element, or its NaN/inf "
             "pattern differs from float64's (0: no budget)"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> printValues("print-values",
                                 cl::desc("Print every output element"),
                                 cl::init(false), cl::cat(category));

namespace {

/// Whether a .npy dtype can feed a tensor of element type `t` exactly.
bool isCompatible(StringRef dtype, Type t) {
  if (isa<FloatType>(t))
    return dtype == "f2" || dtype == "f4" || dtype == "f8";
  if (t.isInteger(1))
    return dtype == "b1";
  return dtype == "i1" || dtype == "i2" || dtype == "i4" || dtype == "i8" ||
         dtype == "u1";
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "(";
  for (auto [i, d] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(d);
  return s + (shape.size() == 1 ? ",)" : ")");
}

/// Whether `shape` fits `type`'s (a `?` takes any size >= 1).
bool fitsShape(ArrayRef<int64_t> shape, RankedTensorType type) {
  if (shape.size() != static_cast<size_t>(type.getRank()))
    return false;
  for (auto [n, want] : llvm::zip(shape, type.getShape()))
    if (ShapedType::isDynamic(want) ? n < 1 : n != want)
      return false;
  return true;
}

/// Loads input #i for `arg` from `path`, checking shape and dtype.
FailureOr<Tensor> loadInput(BlockArgument arg, StringRef path) {
  auto type = cast<RankedTensorType>(arg.getType());
  llvm::Expected<NpyArray> arr = readNpy(path);
  if (!arr)
    return emitError(arg.getLoc()) << "input #" << arg.getArgNumber() << ": "
                                   << llvm::toString(arr.takeError());
  if (!fitsShape(arr->shape, type))
    return emitError(arg.getLoc())
           << "input #" << arg.getArgNumber() << ": " << path << " has shape "
           << shapeString(arr->shape) << " but the argument is " << type;
  if (!isCompatible(arr->dtype, type.getElementType()))
    return emitError(arg.getLoc())
           << "input #" << arg.getArgNumber() << ": " << path << " has dtype "
           << npyDtypeName(arr->dtype) << " (.npy '" << arr->dtype
           << "'), which cannot feed " << type;
  if (auto it = dyn_cast<IntegerType>(type.getElementType())) {
    unsigned w = it.getWidth();
    double lo = w == 1 ? 0 : -std::ldexp(1.0, w - 1);
    double hi = w == 1 ? 1 : std::ldexp(1.0, w - 1) - 1;
    for (double v : arr->data)
      if (v < lo || v > hi)
        return emitError(arg.getLoc())
               << "input #" << arg.getArgNumber() << ": " << path << " holds "
               << static_cast<int64_t>(v) << ", which does not fit "
               << type.getElementType();
  }
  Tensor t;
  t.shape = arr->shape;
  t.elementType = type.getElementType();
  t.data = std::move(arr->data);
  return t;
}

/// The --size values by name (argK, argK.D), each naming a size of `func`.
FailureOr<llvm::StringMap<int64_t>> parseSizes(func::FuncOp func) {
  llvm::StringMap<int64_t> sizes;
  for (StringRef spec : sizeArgs) {
    tang::SizeSymbol symbol;
    int64_t n = 0;
    if (failed(tang::parseSizeSpec(func, spec, symbol, n)))
      return emitError(func.getLoc())
             << "--size " << spec << ": expected " << tang::kSizeSpecSyntax;
    StringRef name = spec.split('=').first;
    sizes[name] = n;
  }
  return sizes;
}

/// Prints each emulated output's error against the float64 one: its
/// largest error over its largest element, its RMS error over its RMS,
/// where the largest error is, and elements whose NaN or infinity differ;
/// an error past --precision-budget.
LogicalResult reportPrecision(llvm::raw_ostream &os, func::FuncOp func,
                              ArrayRef<Tensor> emulated,
                              ArrayRef<Tensor> exact) {
  bool over = false;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(emulated, exact))) {
    const auto &[got, ref] = pair;
    double maxErr = 0, maxRef = 0, sqErr = 0, sqRef = 0;
    int64_t worst = -1, pattern = 0;
    for (auto [k, g, r] : llvm::enumerate(got.data, ref.data)) {
      if (!std::isfinite(r) || !std::isfinite(g)) {
        bool same = (std::isnan(r) && std::isnan(g)) || g == r;
        pattern += !same;
        continue;
      }
      double e = std::abs(g - r);
      if (e > maxErr) {
        maxErr = e;
        worst = static_cast<int64_t>(k);
      }
      maxRef = std::max(maxRef, std::abs(r));
      sqErr += e * e;
      sqRef += r * r;
    }
    double rel = maxRef > 0 ? maxErr / maxRef : maxErr;
    double rms = sqRef > 0 ? std::sqrt(sqErr / sqRef) : std::sqrt(sqErr);
    os << "  output #" << i << " against float64: largest error "
       << llvm::format("%.3e", maxErr) << " = " << llvm::format("%.3e", rel)
       << " of its largest element, RMS " << llvm::format("%.3e", rms)
       << " of its RMS";
    if (worst >= 0 && maxErr > 0) {
      os << ", at [";
      int64_t rest = worst;
      SmallVector<int64_t> at(ref.shape.size());
      for (int d = static_cast<int>(ref.shape.size()) - 1; d >= 0; --d) {
        at[d] = rest % ref.shape[d];
        rest /= ref.shape[d];
      }
      llvm::interleaveComma(at, os);
      os << "]";
    }
    os << "; " << pattern << " of " << ref.data.size()
       << " elements with NaN or infinity unlike float64\n";
    if (precisionBudget > 0 && (rel > precisionBudget || pattern)) {
      emitError(func.getLoc())
          << "output #" << i << " is past the precision budget "
          << llvm::formatv("{0}", precisionBudget.getValue()).str()
          << ": its largest error is " << llvm::formatv("{0:e3}", rel).str()
          << " of its largest element"
          << (pattern ? " and " + std::to_string(pattern) +
                            " elements' NaN or infinity differ from float64"
                      : std::string());
      over = true;
    }
  }
  return failure(over);
}

void printSummary(llvm::raw_ostream &os, StringRef label, const Tensor &t,
                  RankedTensorType type) {
  double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
  int64_t nans = 0;
  for (double v : t.data) {
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
    sq += v * v;
  }
  int64_t n = static_cast<int64_t>(t.data.size());
  os << "  " << label << "  " << type;
  if (!type.hasStaticShape()) {
    os << " (shape ";
    llvm::interleave(t.shape, os, "x");
    os << ")";
  }
  os << "\n";
  os << llvm::format("    min %.6g  max %.6g  mean %.6g  rms %.6g", mn, mx,
                     n ? sum / n : 0.0, n ? std::sqrt(sq / n) : 0.0);
  if (nans)
    os << "  NaN " << nans;
  os << "\n    [";
  int64_t shown = printValues ? n : std::min<int64_t>(n, 6);
  for (int64_t i = 0; i < shown; ++i)
    os << (i ? ", " : "") << llvm::format("%.6g", t.data[i]);
  os << (shown < n ? ", ...]" : "]") << "\n";
}

LogicalResult writeAll(StringRef dir, StringRef stem, ArrayRef<Tensor> ts,
                       Location loc) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return emitError(loc) << "cannot create '" << dir << "': " << ec.message();
  for (auto [i, t] : llvm::enumerate(ts)) {
    SmallString<128> path(dir);
    llvm::sys::path::append(path, (stem + "_" + Twine(i) + ".npy").str());
    if (llvm::Error e = writeNpy(path, t))
      return emitError(loc) << llvm::toString(std::move(e));
  }
  return success();
}

FailureOr<func::FuncOp> findEntry(ModuleOp module) {
  SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
  auto names = [&] {
    std::string s;
    for (func::FuncOp f : funcs)
      s += " @" + f.getSymName().str();
    return s;
  };
  if (!entry.empty()) {
    for (func::FuncOp f : funcs)
      if (f.getSymName() == entry)
        return f;
    return emitError(module.getLoc())
           << "no function @" << entry << " (functions:" << names() << ")";
  }
  for (func::FuncOp f : funcs)
    if (f.getSymName() == "main")
      return f;
  if (funcs.size() == 1)
    return funcs.front();
  if (funcs.empty())
    return emitError(module.getLoc()) << "the program has no function to run";
  return emitError(module.getLoc())
         << "several functions and none is @main; pick one with --entry "
            "(functions:"
         << names() << ")";
}

LogicalResult run(ModuleOp module, llvm::raw_ostream &os) {
  FailureOr<func::FuncOp> funcOr = findEntry(module);
  if (failed(funcOr))
    return failure();
  func::FuncOp func = *funcOr;

  // One --input per tensor argument; index arguments come from --size.
  unsigned numTensors = llvm::count_if(func.getArgumentTypes(),
                                       [](Type t) { return !t.isIndex(); });
  if (!inputs.empty() && inputs.size() != numTensors)
    return emitError(func.getLoc())
           << "@" << func.getSymName() << " takes " << numTensors
           << " tensor arguments but " << inputs.size()
           << " --input files were given";

  FailureOr<llvm::StringMap<int64_t>> sizes = parseSizes(func);
  if (failed(sizes))
    return failure();
  SmallVector<Tensor> args;
  unsigned nextInput = 0;
  for (BlockArgument arg : func.getArguments()) {
    std::string name = "arg" + std::to_string(arg.getArgNumber());
    if (arg.getType().isIndex()) {
      auto it = sizes->find(name);
      if (it == sizes->end())
        return emitError(arg.getLoc())
               << "argument #" << arg.getArgNumber()
               << " is a size (index): give its value with --size " << name
               << "=N";
      Tensor t;
      t.elementType = arg.getType();
      t.data.push_back(static_cast<double>(it->second));
      args.push_back(std::move(t));
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return emitError(arg.getLoc())
             << "argument #" << arg.getArgNumber()
             << " must be a ranked tensor or an index, got " << arg.getType();
    if (inputs.empty()) {
      SmallVector<int64_t> shape(type.getShape());
      for (auto [d, n] : llvm::enumerate(shape)) {
        if (!ShapedType::isDynamic(n))
          continue;
        std::string dimName = name + "." + std::to_string(d);
        auto it = sizes->find(dimName);
        if (it == sizes->end())
          return emitError(arg.getLoc())
                 << "dimension " << d << " of argument #" << arg.getArgNumber()
                 << " is '?': give its size with --size " << dimName << "=N";
        n = it->second;
      }
      type = RankedTensorType::get(shape, type.getElementType());
    }
    if (type.hasStaticShape() &&
        getNumElementsChecked(type.getShape()).value_or(INT64_MAX) >
            (int64_t(1) << 28))
      return emitError(arg.getLoc())
             << "argument #" << arg.getArgNumber() << " (" << type
             << ") is too large for the reference interpreter";
    if (inputs.empty()) {
      args.push_back(makeRandomTensor(type, seed, arg.getArgNumber()));
      continue;
    }
    FailureOr<Tensor> t = loadInput(arg, inputs[nextInput++]);
    if (failed(t))
      return failure();
    args.push_back(std::move(*t));
  }
  if (!dumpInputs.empty() &&
      failed(writeAll(dumpInputs, "input",
                      llvm::filter_to_vector(args,
                                             [](const Tensor &t) {
                                               return !t.shape.empty() ||
                                                      !t.elementType.isIndex();
                                             }),
                      func.getLoc())))
    return failure();

  bool report = precisionReport || precisionBudget > 0;
  InterpretOptions options;
  if (report && precisionMode == PrecisionMode::Perturbed)
    return emitError(func.getLoc())
           << "--precision-report compares the schedules' "
              "roundings with float64; it does not take "
              "--precision=perturbed";
  options.emulatePrecision = report || precisionMode == PrecisionMode::Schedule;
  if (precisionMode == PrecisionMode::Perturbed)
    options.perturbSeed = perturbSeed;
  FailureOr<SmallVector<Tensor>> outs = interpret(func, args, options);
  if (failed(outs))
    return failure();
  // The error against float64 on the same inputs, as their types hold
  // them (the emulator's error, not the inputs' rounding).
  std::optional<SmallVector<Tensor>> exact;
  if (report) {
    SmallVector<Tensor> stored(args);
    for (Tensor &t : stored)
      if (!t.shape.empty() || !t.elementType.isIndex())
        roundToElementType(t);
    FailureOr<SmallVector<Tensor>> e = interpret(func, stored);
    if (failed(e))
      return failure();
    exact = std::move(*e);
  }

  os << "tang-run: @" << func.getSymName() << ", " << args.size()
     << " input(s) "
     << (inputs.empty() ? "random (seed " + std::to_string(seed) + ")"
                        : std::string("from .npy files"))
     << ", " << outs->size() << " output(s), "
     << (options.emulatePrecision ? "the schedules' precision"
         : options.perturbSeed ? "float64 with random rounding errors (seed " +
                                     std::to_string(*options.perturbSeed) + ")"
                               : std::string("float64"))
     << "\n";
  TypeRange resultTypes = func.getFunctionType().getResults();
  for (auto [i, t] : llvm::enumerate(*outs))
    printSummary(os, ("output #" + Twine(i)).str(), t,
                 cast<RankedTensorType>(resultTypes[i]));
  if (exact && failed(reportPrecision(os, func, *outs, *exact)))
    return failure();
  if (!outputDir.empty()) {
    if (failed(writeAll(outputDir, "output", *outs, func.getLoc())))
      return failure();
    os << "  wrote " << outs->size() << " output(s) to " << outputDir << "\n";
  }
  return success();
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tang-run: the float64 reference interpreter for tang programs\n\n"
      "  tang-run prog.mlir                       random inputs, seed 0\n"
      "  tang-run prog.mlir --input a.npy --input b.npy --output-dir out\n"
      "  tang-run decode.mlir --size arg5=9        index argument #5 = 9\n"
      "  tang-run rows.mlir --size arg0.0=7        random input #0 of 7 "
      "rows\n"
      "  tang-run prog.mlir --check-monoid-laws    monoid laws, 1000 "
      "samples\n");

  DialectRegistry registry;
  // linalg parses so that a linalg program gets told to import first.
  registry.insert<TangDialect, arith::ArithDialect, math::MathDialect,
                  func::FuncDialect, tensor::TensorDialect,
                  linalg::LinalgDialect>();
  MLIRContext context(registry);

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &error);
  if (!file) {
    llvm::errs() << "tang-run: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  if (checkLaws)
    return failed(checkMonoidLaws(*module, llvm::outs(), lawSamples, seed)) ? 1
                                                                            : 0;
  return failed(run(*module, llvm::outs())) ? 1 : 0;
}
