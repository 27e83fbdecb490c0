//===- ScheduleTuning.cpp - keys, the tuning cache, candidates --*- C++ -*-===//
//
// See Tang/Transforms/ScheduleTuning.h and docs/Tuning.md.
//
//===----------------------------------------------------------------------===//

#include "Tang/Transforms/ScheduleTuning.h"

#include "Tang/Analysis/ShapeClass.h"
#include "Tang/Analysis/TrafficBound.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangTargets.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::tang;

//===----------------------------------------------------------------------===//
// Keys
//===----------------------------------------------------------------------===//

namespace {

/// `t` without its shape: `tensor<2xbf16>` (rank 2), else `t` as printed.
std::string printShapeless(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto r = dyn_cast<RankedTensorType>(t))
    os << "tensor<" << r.getRank() << "x" << r.getElementType() << ">";
  else
    os << t;
  return s;
}

std::string joinSizes(ArrayRef<int64_t> sizes) {
  return llvm::join(llvm::map_range(sizes,
                                    [](int64_t s) {
                                      return ShapedType::isDynamic(s) || s < 0
                                                 ? std::string("?")
                                                 : std::to_string(s);
                                    }),
                    "x");
}

/// The tensors `op` reads from outside itself, in order of first use.
SmallVector<Value> getOutsideValues(ComprehensionOp op) {
  SmallVector<Value> values;
  llvm::DenseSet<Value> seen;
  op->walk<WalkOrder::PreOrder>([&](Operation *inner) {
    for (Value v : inner->getOperands()) {
      Region *r = v.getParentRegion();
      Operation *owner = r ? r->getParentOp() : nullptr;
      bool inside =
          owner && (owner == op.getOperation() || op->isProperAncestor(owner));
      if (!inside && seen.insert(v).second)
        values.push_back(v);
    }
  });
  return values;
}

} // namespace

std::string mlir::tang::getStructureText(ComprehensionOp root) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DenseMap<Value, unsigned> inside;
  llvm::DenseMap<Value, unsigned> outside;
  auto printValue = [&](Value v) {
    auto it = inside.find(v);
    if (it != inside.end()) {
      os << "%" << it->second;
      return;
    }
    auto [pos, added] = outside.try_emplace(v, outside.size());
    os << "arg" << pos->second << ":" << printShapeless(v.getType());
  };
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    os << op->getName() << "(";
    llvm::interleaveComma(op->getOperands(), os, printValue);
    os << ")";
    bool comprehension = isa<ComprehensionOp>(op);
    for (NamedAttribute a : op->getAttrs()) {
      StringRef name = a.getName().getValue();
      if (name.starts_with("tang.") ||
          (comprehension && (name == "parallel_extents" ||
                             name == "reduced_extents" || name == "schedule")))
        continue;
      os << " " << name << "=" << a.getValue();
    }
    for (Region &region : op->getRegions())
      for (Block &block : region) {
        os << " {";
        for (BlockArgument arg : block.getArguments()) {
          inside.try_emplace(arg, inside.size());
          os << " %" << inside[arg] << ":" << printShapeless(arg.getType());
        }
        os << " }";
      }
    os << " ->";
    for (Value r : op->getResults()) {
      inside.try_emplace(r, inside.size());
      os << " %" << inside[r] << ":" << printShapeless(r.getType());
    }
    os << "\n";
  });
  return text;
}

ScheduleKey mlir::tang::getScheduleKey(ComprehensionOp op) {
  ScheduleKey key;
  std::string text = getStructureText(op);
  key.structure = llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true,
                                  /*Width=*/16);
  key.chip = getTarget(op).getChip().str();
  for (unsigned i = 0; i < op.getNumIndices(); ++i)
    key.extents.push_back(op.isSymbolicExtent(i) ? -1 : op.getExtent(i));
  SmallVector<std::string> shapes;
  for (Value v : getOutsideValues(op))
    if (auto t = dyn_cast<RankedTensorType>(v.getType()))
      shapes.push_back(joinSizes(t.getShape()));
  key.sizes = joinSizes(key.extents) + ";" + llvm::join(shapes, ",");
  SmallVector<int64_t> rounded;
  for (int64_t e : key.extents)
    rounded.push_back(e < 0 ? e : int64_t(llvm::PowerOf2Ceil(e)));
  key.sizeClass = joinSizes(rounded);
  return key;
}

//===----------------------------------------------------------------------===//
// Schedules as text
//===----------------------------------------------------------------------===//

static std::string printAttr(Attribute a) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << a;
  return s;
}

/// The comprehensions nested in `op`, in pre-order.
static SmallVector<ComprehensionOp> getNested(ComprehensionOp op) {
  SmallVector<ComprehensionOp> nested;
  op.getBodyBlock().walk<WalkOrder::PreOrder>(
      [&](ComprehensionOp inner) { nested.push_back(inner); });
  return nested;
}

namespace {
/// The schedules of a comprehension and of those nested in it, to put back.
class SavedSchedules {
public:
  explicit SavedSchedules(ComprehensionOp op)
      : op(op), top(op.getScheduleAttr()) {
    for (ComprehensionOp n : getNested(op))
      nested.push_back({n, n.getScheduleAttr()});
  }
  void restore() {
    set(op, top);
    for (auto [n, s] : nested)
      set(n, s);
  }
  /// `s` as `c`'s schedule (none: removed).
  static void set(ComprehensionOp c, ScheduleAttr s) {
    if (s)
      c.setScheduleAttr(s);
    else
      c->removeAttr("schedule");
  }

private:
  ComprehensionOp op;
  ScheduleAttr top;
  SmallVector<std::pair<ComprehensionOp, ScheduleAttr>> nested;
};
} // namespace

ScheduleText mlir::tang::getScheduleText(ComprehensionOp op) {
  ScheduleText text;
  if (ScheduleAttr s = op.getScheduleAttr())
    text.schedule = printAttr(s);
  for (ComprehensionOp inner : getNested(op)) {
    ScheduleAttr s = inner.getScheduleAttr();
    text.nested.push_back(s ? printAttr(s) : "");
  }
  return text;
}

LogicalResult mlir::tang::applyScheduleText(ComprehensionOp op,
                                            const ScheduleText &text,
                                            std::string &why) {
  MLIRContext *ctx = op.getContext();
  // Parse errors and the kernel's refusal are captured, not printed.
  std::string diagnostics;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      diagnostics = d.str();
    return success();
  });
  auto parse = [&](StringRef s) -> ScheduleAttr {
    if (s.empty())
      return {};
    size_t read = 0;
    Attribute a = parseAttribute(s, ctx, Type(), &read);
    if (!a || read != s.size()) {
      why = "`" + s.str() + "` is not a schedule" +
            (diagnostics.empty() ? "" : ": " + diagnostics);
      return {};
    }
    auto schedule = dyn_cast<ScheduleAttr>(a);
    if (!schedule)
      why = "`" + s.str() + "` is not a #tang.schedule";
    return schedule;
  };
  auto fail = [&](const Twine &message) {
    why = message.str();
    return failure();
  };
  ScheduleAttr top = parse(text.schedule);
  if (!top)
    return fail(why.empty() ? "no schedule" : why);
  SmallVector<ComprehensionOp> nested = getNested(op);
  if (nested.size() != text.nested.size())
    return fail("it has schedules for " + Twine(text.nested.size()) +
                " nested comprehensions, not " + Twine(nested.size()));
  SmallVector<ScheduleAttr> inner;
  for (const std::string &s : text.nested) {
    inner.push_back(parse(s));
    if (!s.empty() && !inner.back())
      return failure();
  }
  if (top.getTile().size() != op.getNumIndices())
    return fail("its tile has " + Twine(top.getTile().size()) + " sizes for " +
                Twine(op.getNumIndices()) + " indices");
  SavedSchedules saved(op);
  op.setScheduleAttr(top);
  for (auto [n, sched] : llvm::zip(nested, inner))
    SavedSchedules::set(n, sched);
  KernelKind kind = top.getKernel();
  if (kind != KernelKind::Auto && kind != KernelKind::Simt &&
      kind != KernelKind::SubgroupMma && failed(getScheduledKernel(op))) {
    saved.restore();
    return fail(diagnostics);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The cache
//===----------------------------------------------------------------------===//

FailureOr<ScheduleCache> ScheduleCache::load(StringRef path,
                                             std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file) {
    error = "cannot read the schedule cache '" + path.str() +
            "': " + file.getError().message();
    return failure();
  }
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*file)->getBuffer());
  if (!json) {
    error = "the schedule cache '" + path.str() +
            "' is not JSON: " + llvm::toString(json.takeError());
    return failure();
  }
  auto bad = [&](const Twine &what) {
    error = ("the schedule cache '" + path + "': " + what).str();
    return failure();
  };
  const llvm::json::Object *top = json->getAsObject();
  if (!top)
    return bad("not a JSON object");
  std::optional<int64_t> version = top->getInteger("version");
  if (!version || *version != 1)
    return bad("`version` must be 1");
  const llvm::json::Array *list = top->getArray("entries");
  if (!list)
    return bad("no `entries` array");
  ScheduleCache cache;
  for (auto [i, v] : llvm::enumerate(*list)) {
    std::string at = "entry " + std::to_string(i);
    const llvm::json::Object *o = v.getAsObject();
    if (!o)
      return bad(at + " is not an object");
    Entry e;
    auto str = [&](StringRef name, std::string &to) {
      std::optional<StringRef> s = o->getString(name);
      if (s)
        to = s->str();
      return s.has_value();
    };
    if (!str("structure", e.structure) || !str("chip", e.chip) ||
        !str("sizes", e.sizes) || !str("schedule", e.text.schedule))
      return bad(at + " needs the strings `structure`, `chip`, `sizes` and "
                      "`schedule`");
    const llvm::json::Array *extents = o->getArray("extents");
    if (!extents)
      return bad(at + " needs `extents` (integers, -1 for a symbolic one)");
    for (const llvm::json::Value &x : *extents) {
      std::optional<int64_t> n = x.getAsInteger();
      if (!n)
        return bad(at + ": `extents` holds a non-integer");
      e.extents.push_back(*n);
    }
    SmallVector<int64_t> rounded;
    for (int64_t x : e.extents)
      rounded.push_back(x < 0 ? x : int64_t(llvm::PowerOf2Ceil(x)));
    e.sizeClass = joinSizes(rounded);
    if (const llvm::json::Array *nested = o->getArray("nested"))
      for (const llvm::json::Value &x : *nested) {
        std::optional<StringRef> s = x.getAsString();
        if (!s)
          return bad(at + ": `nested` holds a non-string");
        e.text.nested.push_back(s->str());
      }
    cache.entries.push_back(std::move(e));
  }
  return cache;
}

SmallVector<const ScheduleCache::Entry *>
ScheduleCache::lookup(const ScheduleKey &key, bool similar) const {
  SmallVector<const Entry *> exact, near;
  for (const Entry &e : entries) {
    if (e.structure != key.structure || e.chip != key.chip)
      continue;
    if (e.sizes == key.sizes)
      exact.push_back(&e);
    else if (similar && e.sizeClass == key.sizeClass &&
             e.extents.size() == key.extents.size())
      near.push_back(&e);
  }
  // Nearest first: the sum of |log2| of the extents' ratios.
  auto distance = [&](const Entry *e) {
    double d = 0;
    for (auto [a, b] : llvm::zip(e->extents, key.extents))
      if (a > 0 && b > 0)
        d += std::abs(std::log2(double(a) / double(b)));
    return d;
  };
  // Ties in the file's order (the entries' addresses).
  llvm::sort(near, [&](const Entry *a, const Entry *b) {
    return std::make_pair(distance(a), a) < std::make_pair(distance(b), b);
  });
  exact.append(near.begin(), near.end());
  return exact;
}

//===----------------------------------------------------------------------===//
// Candidates
//===----------------------------------------------------------------------===//

namespace {

/// The device facts the models read.
struct Model {
  double sms, sharedPerSm, registersPerSm, bytesPerS, tensorOpsPerS;
  explicit Model(TargetAttr t)
      : sms(t.getSmCount()), sharedPerSm(t.getSharedPerSm()),
        registersPerSm(t.getRegistersPerSm()), bytesPerS(t.getDramBytesPerS()),
        tensorOpsPerS(t.getTensorOpsPerS()) {}
  bool known() const { return bytesPerS > 0 && tensorOpsPerS > 0; }

  /// The time of `tiles` equal tiles of `tileSeconds` each (at a whole
  /// multiprocessor's rate) when `resident` run together on each
  /// multiprocessor: full waves, then the busiest multiprocessor's share of
  /// the last.
  double waves(double tiles, double resident, double tileSeconds) const {
    double slots = sms * resident;
    double full = std::floor(tiles / slots);
    double rest = tiles - full * slots;
    return (full * resident + std::ceil(rest / sms)) * tileSeconds;
  }
};

/// The bytes of the tensors `op` reads from outside and writes.
double getTensorBytes(ComprehensionOp op) {
  double bytes = 0;
  auto add = [&](Type t) {
    auto r = dyn_cast<RankedTensorType>(t);
    if (!r || !r.hasStaticShape())
      return;
    bytes += double(r.getNumElements()) *
             std::max<unsigned>(1, r.getElementTypeBitWidth() / 8);
  };
  for (Value v : getOutsideValues(op))
    add(v.getType());
  for (Type t : op.getResultTypes())
    add(t);
  return bytes;
}

/// The latency of a k step's operand copies (L2 under load), which a ring
/// of `stages` hides `stages - 1` deep: a modelling assumption.
constexpr double kCopyLatency = 0.5e-6;
/// L2's rate over DRAM's: a modelling assumption.
constexpr double kL2Rate = 2;
/// A dependent kernel's launch in a stream or graph: a modelling
/// assumption.
constexpr double kLaunchLatency = 2e-6;

/// A tensor-core contraction's modelled time (a crude model: it ranks and
/// prunes candidates, measurement chooses). Per block, each k step takes
/// the longer of its products (at the tensor cores' peak shared by the
/// blocks resident on the multiprocessor; mma.sync at 60% of it) and the
/// copy latency over the ring's depth; a tile adds the ring's fill and its
/// results' write at a multiprocessor's share of DRAM's rate (overlapped
/// with the next tile on a persistent, warp-specialised grid). Tiles go in
/// waves of the resident blocks (shared memory, the accumulators'
/// registers), the last one partial. No faster than the operands from L2
/// (each read once per tile row or column, at twice DRAM's rate) or
/// the unique bytes from DRAM.
double modelContraction(ComprehensionOp op, const MmaContraction &c,
                        const MmaConfig &cfg, const Model &model) {
  if (!model.known())
    return 0;
  double m = c.extentM, n = c.extentN, k = c.extentK;
  double batch = 1;
  for (unsigned i = 0; i < op.getNumParallel(); ++i)
    if (i != c.m && i != c.n)
      batch *= op.getExtent(i);
  double tilesM = std::ceil(m / cfg.bm), tilesN = std::ceil(n / cfg.bn);
  // With split k every tile is splitK blocks of a run of k steps each.
  double tiles = batch * tilesM * tilesN * cfg.splitK;
  double kSteps = cfg.stepsPerSplit(c.extentK);
  double computing = cfg.wgmma ? cfg.bm / 64.0 * 128 : cfg.threads();
  double threads = computing + (cfg.warpSpecialized ? 128 : 0);
  double regs = std::min(255.0, 40 + cfg.bm * cfg.bn / computing);
  double resident =
      std::floor(std::min(model.sharedPerSm / (cfg.sharedBytes() + 2048.0),
                          model.registersPerSm / (threads * regs)));
  if (resident < 1)
    return std::numeric_limits<double>::infinity();
  if (cfg.warpSpecialized)
    resident = 1;
  double rate = model.tensorOpsPerS / model.sms * (cfg.wgmma ? 1.0 : 0.6) /
                (cfg.eb == 4 ? 2 : 1);
  double stepCompute = 2 * cfg.bm * cfg.bn * cfg.bk / rate;
  double stepLatency = kCopyLatency / std::max(1, int(cfg.stages) - 1);
  auto outBytes = [&] {
    Type t =
        cast<RankedTensorType>(op.getResultTypes().front()).getElementType();
    return std::max<double>(1, t.getIntOrFloatBitWidth() / 8);
  };
  double tileOverhead = kCopyLatency + cfg.bm * cfg.bn * outBytes() /
                                           (model.bytesPerS / model.sms);
  // A block's tile when `together` blocks share its multiprocessor.
  auto tileTime = [&](double together) {
    return kSteps * std::max(together * stepCompute, stepLatency);
  };
  double compute;
  if (cfg.warpSpecialized) {
    compute = std::ceil(tiles / model.sms) * tileTime(1) + tileOverhead;
  } else {
    double slots = model.sms * resident;
    double full = std::floor(tiles / slots);
    double rest = tiles - full * slots;
    compute = full * (tileTime(resident) + tileOverhead);
    if (rest > 0)
      compute += tileTime(std::ceil(rest / model.sms)) + tileOverhead;
  }
  double l2 = batch * (m * k * tilesN + k * n * tilesM) * cfg.eb /
              (kL2Rate * model.bytesPerS);
  double dram = getTensorBytes(op) / model.bytesPerS;
  // Split k's second kernel: a launch, the f32 partial sums written and
  // read back, the results written.
  double combine = 0;
  if (cfg.splitK > 1)
    combine = kLaunchLatency + batch * m * n *
                                   (2.0 * 4 * cfg.splitK + outBytes()) /
                                   model.bytesPerS;
  return std::max({compute, l2, dram}) + combine;
}

/// Flash attention's modelled time: its query tiles in waves at the
/// tensor cores' peak (half the keys under a causal limit), no faster than
/// its tensors from DRAM.
double modelFlash(ComprehensionOp op, const FlashMatch &m,
                  const FlashConfig &cfg, const Model &model) {
  if (!model.known())
    return 0;
  double batch = 1;
  for (unsigned i = 0; i < op.getNumParallel(); ++i)
    if (i != m.i && i != m.d)
      batch *= op.getExtent(i);
  double tiles = batch * std::ceil(double(m.lq) / cfg.bm);
  double keys = std::ceil(double(m.lk) / cfg.bn) * cfg.bn;
  if (m.keyLimit)
    keys = keys / 2 + cfg.bn;
  double rate = model.tensorOpsPerS / model.sms * (cfg.wgmma ? 1.0 : 0.6);
  double tileSeconds = 2.0 * cfg.bm * keys * (m.dqk + m.dv) / rate;
  double resident = std::max(
      1.0, std::floor(model.sharedPerSm / (cfg.sharedBytes(m) + 2048.0)));
  double compute = cfg.persistent ? std::ceil(tiles / model.sms) * tileSeconds
                                  : model.waves(tiles, resident, tileSeconds);
  return std::max(compute, getTensorBytes(op) / model.bytesPerS);
}

/// A memory-bound kernel's modelled time: its tensors from DRAM.
double modelTraffic(ComprehensionOp op, const Model &model) {
  return model.bytesPerS > 0 ? getTensorBytes(op) / model.bytesPerS : 0;
}

/// The latency of a load from device memory under load (crude, like
/// kCopyLatency).
constexpr double kLoadLatency = 1.0e-6;

/// A SIMT kernel of schedule `s` for `op`: its traffic at the copy rate,
/// unless the loads its multiprocessors keep in flight (Little's law:
/// resident threads x a vector's bytes x `stages` vectors per thread, the
/// row kernel's loads in flight) sustain less; then at that rate. Resident
/// threads: at most one per 32 registers, at most the grid's share.
double modelSimt(ComprehensionOp op, ScheduleAttr s, const Model &model) {
  double traffic = modelTraffic(op, model);
  if (!s || traffic <= 0 || model.sms <= 0)
    return traffic;
  double threads = 1, blocks = 1;
  for (auto [i, t] : llvm::enumerate(s.getThreads()))
    threads *= double(t);
  for (unsigned i = 0; i < op.getNumParallel(); ++i)
    blocks *= std::ceil(double(op.getExtent(i)) / double(s.getTile()[i]));
  int64_t readBytes = 1;
  op.getBodyBlock().walk([&](ReadOp r) {
    readBytes = std::max<int64_t>(
        readBytes,
        std::max<unsigned>(1, cast<RankedTensorType>(r.getTensor().getType())
                                      .getElementTypeBitWidth() /
                                  8));
  });
  double resident =
      std::min(model.registersPerSm / 32, blocks * threads / model.sms);
  double inFlight = resident *
                    double(std::min<int64_t>(16, s.getVector() * readBytes)) *
                    double(std::max<int64_t>(1, s.getStages()));
  double rate = inFlight * model.sms / kLoadLatency;
  return std::max(traffic, getTensorBytes(op) / rate);
}

/// Collects candidates: each is `op`'s schedule as set by `apply`, read
/// back as text, and the original schedule is put back at the end.
class CandidateSet {
public:
  explicit CandidateSet(ComprehensionOp op) : op(op), original(op) {}
  ~CandidateSet() { original.restore(); }

  /// Adds the schedule `apply` sets (unless it is there already); its
  /// position in the list.
  size_t add(function_ref<void()> apply, double model, std::string label) {
    apply();
    ScheduleText text = getScheduleText(op);
    for (auto [i, c] : llvm::enumerate(list))
      if (c.text.schedule == text.schedule && c.text.nested == text.nested)
        return i;
    list.push_back({std::move(text), model, std::move(label), ""});
    return list.size() - 1;
  }

  SmallVector<ScheduleCandidate> list;

private:
  ComprehensionOp op;
  SavedSchedules original;
};

std::string contractionLabel(const MmaConfig &c) {
  std::string s = std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" +
                  std::to_string(c.bk) + " s" + std::to_string(c.stages);
  if (!c.wgmma)
    s += " w" + std::to_string(c.warpsM) + "x" + std::to_string(c.warpsN);
  if (c.tma)
    s += " tma";
  if (c.warpSpecialized)
    s += " ws";
  if (c.splitK > 1)
    s += " k" + std::to_string(c.splitK);
  return s + " g" + std::to_string(c.groupM);
}

/// Split k's counts worth trying for tiles `cfg` of `c` (a few tiles, a
/// long reduction): runs of at least two k steps, every split with one,
/// at most four blocks per multiprocessor in all.
SmallVector<int64_t> getSplitCounts(ComprehensionOp op, const MmaContraction &c,
                                    const MmaConfig &cfg, const Model &model) {
  SmallVector<int64_t> counts;
  if (cfg.warpSpecialized || model.sms <= 0)
    return counts;
  double tiles = std::ceil(double(c.extentM) / cfg.bm) *
                 std::ceil(double(c.extentN) / cfg.bn);
  for (unsigned i = 0; i < op.getNumParallel(); ++i)
    if (i != c.m && i != c.n)
      tiles *= op.getExtent(i);
  if (tiles >= model.sms)
    return counts;
  for (int64_t s : {2, 3, 4, 6, 8, 12, 16, 24, 32}) {
    MmaConfig split = cfg;
    split.splitK = s;
    if (split.stepsPerSplit(c.extentK) >= 2 &&
        split.splitsNonEmpty(c.extentK) && tiles * s <= 4 * model.sms)
      counts.push_back(s);
  }
  return counts;
}

void addContractionCandidates(ComprehensionOp op, const KernelChoice &base,
                              const Model &model, CandidateSet &set) {
  const MmaContraction &c = *base.contraction;
  const MmaConfig &b = base.mma;
  bool boxes = isMmaBox(op, c, c.a, true) && isMmaBox(op, c, c.b, false);
  SmallVector<int64_t> bms = b.wgmma ? SmallVector<int64_t>{64, 128}
                                     : SmallVector<int64_t>{64, 128, 256};
  SmallVector<int64_t> bks =
      b.eb == 2 ? SmallVector<int64_t>{32, 64} : SmallVector<int64_t>{32};
  SmallVector<int64_t> stages = b.wgmma ? SmallVector<int64_t>{3, 4, 5, 6}
                                        : SmallVector<int64_t>{2, 3, 4};
  SmallVector<std::pair<int64_t, int64_t>> warps =
      b.wgmma
          ? SmallVector<std::pair<int64_t, int64_t>>{{0, 1}}
          : SmallVector<std::pair<int64_t, int64_t>>{{2, 2}, {2, 4}, {4, 2}};
  // The traffic bound's LP tile at shared memory seeds the search: the
  // valid tiles nearest its rows and columns (in log2), the heuristic's
  // other parameters where they fit.
  std::optional<std::pair<double, double>> lp;
  std::string why;
  if (c.red == op)
    if (FailureOr<LoopNest> nest = getLoopNest(op, why); succeeded(nest))
      if (FailureOr<TrafficBound> bound = computeTrafficBound(
              *nest, b.maxShared / std::max<int64_t>(1, nest->elementBytes),
              why);
          succeeded(bound) && bound->tile.size() == op.getNumIndices())
        lp = {double(bound->tile[c.m]), double(bound->tile[c.n])};
  std::optional<MmaConfig> nearest;
  // The best-modelled whole-k tile that split k applies to.
  std::optional<std::pair<double, MmaConfig>> bestWhole;
  auto lpDistance = [&](const MmaConfig &cfg) {
    double d = std::abs(std::log2(cfg.bm / lp->first)) +
               std::abs(std::log2(cfg.bn / lp->second));
    // Then the fewest parameters changed from the heuristic's.
    return d * 16 + (cfg.bk != b.bk) + (cfg.stages != b.stages) +
           (cfg.tma != b.tma) + (cfg.warpSpecialized != b.warpSpecialized) +
           (cfg.warpsN != b.warpsN);
  };
  for (int64_t bm : bms)
    for (int64_t bn : {64, 128, 256})
      for (int64_t bk : bks)
        for (int64_t s : stages)
          for (auto [wm, wn] : warps)
            for (int copies = 0; copies < 3; ++copies) {
              MmaConfig cfg = b;
              cfg.bm = bm;
              cfg.bn = bn;
              cfg.bk = bk;
              cfg.stages = s;
              cfg.warpsM = b.wgmma ? bm / 16 : wm;
              cfg.warpsN = wn;
              // 0: cp.async; 1: bulk copies; 2: and a producer warpgroup
              // on a persistent grid.
              cfg.tma = copies >= 1;
              cfg.warpSpecialized = copies == 2;
              if (cfg.tma && (!b.wgmma || !boxes || cfg.rowBytes() != 128))
                continue;
              if (!cfg.isValid())
                continue;
              KernelChoice choice = base;
              choice.mma = cfg;
              choice.mma.splitK = 1;
              double t = modelContraction(op, c, choice.mma, model);
              if (std::isinf(t))
                continue;
              set.add([&] { setKernelSchedule(op, choice); }, t,
                      contractionLabel(choice.mma));
              SmallVector<int64_t> splitCounts =
                  getSplitCounts(op, c, choice.mma, model);
              if (!splitCounts.empty() && (!bestWhole || t < bestWhole->first))
                bestWhole = {t, choice.mma};
              for (int64_t splits : splitCounts) {
                KernelChoice split = choice;
                split.mma.splitK = splits;
                set.add([&] { setKernelSchedule(op, split); },
                        modelContraction(op, c, split.mma, model),
                        contractionLabel(split.mma));
              }
              if (lp && (!nearest || lpDistance(cfg) < lpDistance(*nearest)))
                nearest = cfg;
            }
  // Split k of every tile shape (the heuristic's k step, ring and copies)
  // and of the best-modelled whole-k tile, kept whatever the model says of
  // them: the model's second kernel (a launch, the partial sums through
  // DRAM) and its L2 term rank split products poorly where measurement
  // finds them faster.
  auto seedSplits = [&](MmaConfig whole) {
    whole.splitK = 1;
    for (int64_t splits : getSplitCounts(op, c, whole, model)) {
      KernelChoice split = base;
      split.mma = whole;
      split.mma.splitK = splits;
      size_t i = set.add([&] { setKernelSchedule(op, split); },
                         modelContraction(op, c, split.mma, model),
                         contractionLabel(split.mma));
      if (set.list[i].seed.empty())
        set.list[i].seed = "split-k";
    }
  };
  for (int64_t bm : bms)
    for (int64_t bn : {64, 128, 256}) {
      MmaConfig cfg = b;
      cfg.bm = bm;
      cfg.bn = bn;
      cfg.warpsM = b.wgmma ? bm / 16 : b.warpsM;
      cfg.warpSpecialized = false;
      if (cfg.isValid())
        seedSplits(cfg);
    }
  if (bestWhole)
    seedSplits(bestWhole->second);
  if (nearest) {
    KernelChoice choice = base;
    choice.mma = *nearest;
    size_t i = set.add([&] { setKernelSchedule(op, choice); },
                       modelContraction(op, c, *nearest, model),
                       contractionLabel(*nearest));
    ScheduleCandidate &seeded = set.list[i];
    seeded.seed += seeded.seed.empty() ? "traffic-bound" : "+traffic-bound";
    seeded.label += " (LP tile " + std::to_string(int64_t(lp->first)) + " x " +
                    std::to_string(int64_t(lp->second)) + ")";
  }
}

void addFlashCandidates(ComprehensionOp op, const KernelChoice &base,
                        const Model &model, CandidateSet &set) {
  const FlashMatch &m = *base.flash;
  ComprehensionOp red = m.red;
  const FlashConfig &b = base.flashConfig;
  if (!b.wgmma)
    return;
  int64_t maxShared = getTarget(op).getSharedPerBlock();
  for (int64_t bn : {64, 128})
    for (int copies = 0; copies < 3; ++copies)
      for (int64_t slots = 2; slots <= (copies ? 4 : 2); ++slots) {
        FlashConfig cfg = b;
        cfg.bn = bn;
        cfg.slots = slots;
        cfg.tmaKV = copies >= 1;
        cfg.persistent = copies == 2;
        if (cfg.tmaKV && (!isFlashBox(op, m, m.k, red.getIndex(0), bn) ||
                          !isFlashBox(op, m, m.v, op.getIndex(m.d), bn)))
          continue;
        if (cfg.sharedBytes(m) + 1024 > maxShared)
          continue;
        KernelChoice choice = base;
        choice.flashConfig = cfg;
        std::string label = "128x" + std::to_string(bn) + " s" +
                            std::to_string(slots) + (cfg.tmaKV ? " tma" : "") +
                            (cfg.persistent ? " persistent" : "");
        set.add([&] { setKernelSchedule(op, choice); },
                modelFlash(op, m, cfg, model), label);
      }
}

void addSplitCandidates(ComprehensionOp op, const KernelChoice &base,
                        const Model &model, CandidateSet &set) {
  unsigned key = op.getNumParallel();
  if (op.isSymbolicExtent(key))
    return;
  int64_t keys = op.getExtent(key);
  for (int64_t splits = 1; splits <= 64 && splits * 64 <= keys; splits *= 2) {
    KernelChoice choice = base;
    choice.splits = splits;
    set.add([&] { setKernelSchedule(op, choice); }, modelTraffic(op, model),
            std::to_string(splits) + (splits == 1 ? " split" : " splits"));
  }
}

/// `s` with other tiles, threads and vector width (a SIMT variant).
ScheduleAttr withSimtFields(ScheduleAttr s, ArrayRef<int64_t> tile,
                            ArrayRef<int64_t> threads, int64_t vector) {
  return ScheduleAttr::get(s.getContext(), tile, s.getMapping(), threads,
                           vector, s.getStages(), s.getStorage(),
                           s.getAccumulate(), s.getMemory(), s.getKernel(),
                           s.getMma(), s.getTma(), s.getWarpSpecialize(),
                           s.getPersistent(), s.getGroupM(), s.getSplitK());
}

/// `s` with `stages` pipeline stages (in global memory: a SIMT kernel's
/// loads in flight).
ScheduleAttr withStages(ScheduleAttr s, int64_t stages) {
  return ScheduleAttr::get(
      s.getContext(), s.getTile(), s.getMapping(), s.getThreads(),
      s.getVector(), stages, s.getStorage(), s.getAccumulate(),
      SmallVector<MemoryLevel>(stages, MemoryLevel::Global), s.getKernel(),
      s.getMma(), s.getTma(), s.getWarpSpecialize(), s.getPersistent(),
      s.getGroupM(), s.getSplitK());
}

/// Row and pointwise SIMT kernels: the threads along the one index that
/// has several (a pointwise kernel's tile follows them) and the vector
/// width.
void addSimtCandidates(ComprehensionOp op, const Model &model,
                       CandidateSet &set) {
  ScheduleAttr s = op.getScheduleAttr();
  auto cls = op->getAttrOfType<StringAttr>(kShapeClassAttrName);
  if (!cls ||
      (cls.getValue() != "pointwise" && cls.getValue() != "row_reduction"))
    return;
  SmallVector<unsigned> threaded;
  for (auto [i, t] : llvm::enumerate(s.getThreads()))
    if (t > 1)
      threaded.push_back(i);
  if (threaded.size() != 1)
    return;
  unsigned i = threaded.front();
  if (op.isSymbolicExtent(i))
    return;
  bool pointwise = cls.getValue() == "pointwise";
  int64_t extent = op.getExtent(i);
  Type storage = s.getStorage()
                     ? s.getStorage()
                     : cast<RankedTensorType>(op.getResultTypes().front())
                           .getElementType();
  int64_t bytes = std::max<int64_t>(1, storage.getIntOrFloatBitWidth() / 8);
  // The heuristic's vector may be wider than the storage's (reads of a
  // narrower type than the result).
  int64_t mostVector = std::max<int64_t>(16 / bytes, s.getVector());
  if (!pointwise && isRowlessSchedule(op, s)) {
    // A row kernel without a row: the threads share the body's nested
    // reductions.
    std::optional<RowlessWork> work = getRowlessWork(op);
    if (!work)
      return;
    extent = work->length;
  }
  TargetAttr target = getTarget(op);
  for (int64_t threads = target.getWarpSize();
       threads <= target.getMaxThreads(); threads *= 2)
    for (int64_t v = 1; v <= mostVector; v *= 2) {
      if (extent % v || threads * v > extent)
        continue;
      SmallVector<int64_t> tile(s.getTile()), th(s.getThreads());
      th[i] = threads;
      if (pointwise)
        tile[i] = threads * v;
      ScheduleAttr next = withSimtFields(s, tile, th, v);
      std::string label =
          std::to_string(threads) + " threads v" + std::to_string(v);
      set.add([&] { op.setScheduleAttr(next); }, modelSimt(op, next, model),
              label);
      // A row kernel's vectors in flight per thread (RowVectors.cpp), where
      // a thread's share of the row is long enough to unroll.
      if (pointwise)
        continue;
      for (int64_t stages : {2, 4}) {
        if (extent < 2 * stages * threads * v)
          continue;
        ScheduleAttr staged = withStages(next, stages);
        set.add([&] { op.setScheduleAttr(staged); },
                modelSimt(op, staged, model),
                label + " s" + std::to_string(stages));
      }
    }
}

/// A narrow matrix-vector kernel (a warp per output, Schedule.cpp's
/// scheduleMatVec): the outputs (warps) per block and the vector width of
/// its lanes' loads.
void addMatVecCandidates(ComprehensionOp op, const Model &model,
                         CandidateSet &set) {
  ScheduleAttr s = op.getScheduleAttr();
  auto cls = op->getAttrOfType<StringAttr>(kShapeClassAttrName);
  unsigned np = op.getNumParallel();
  if (!cls || cls.getValue() != "narrow_matvec" || np == 0)
    return;
  unsigned n = np - 1;
  ArrayRef<int64_t> tile = s.getTile(), threads = s.getThreads();
  // The form the heuristic writes: `w` outputs over block_x, a warp each
  // (w threads and 32 lanes at the reduced index, or 32 w threads with the
  // reductions nested).
  bool reduced = op.getNumReduced() == 1;
  int64_t w = tile[n];
  if (s.getMapping()[n] != Mapping::BlockX ||
      (reduced ? threads[n] != w || threads[np] != 32 : threads[n] != 32 * w))
    return;
  int64_t most = getTarget(op).getMaxThreads() / 32;
  for (int64_t warps = 1; warps <= most; warps *= 2)
    for (int64_t v = s.getVector(); v >= 1 && v * 4 >= s.getVector(); v /= 2) {
      if (!op.isSymbolicExtent(n) && warps > op.getExtent(n))
        continue;
      SmallVector<int64_t> t(tile), th(threads);
      t[n] = warps;
      th[n] = reduced ? warps : 32 * warps;
      ScheduleAttr next = withSimtFields(s, t, th, v);
      set.add([&] { op.setScheduleAttr(next); }, modelTraffic(op, model),
              std::to_string(warps) +
                  (warps == 1 ? " output a block v" : " outputs a block v") +
                  std::to_string(v));
    }
}

} // namespace

SmallVector<ScheduleCandidate>
mlir::tang::getScheduleCandidates(ComprehensionOp op,
                                  const KernelOptions &options, double prune,
                                  int64_t limit) {
  Model model(getTarget(op));
  CandidateSet set(op);
  KernelChoice base;
  ScheduleAttr s = op.getScheduleAttr();
  bool named = s && s.getKernel() != KernelKind::Auto;
  if (named) {
    ScopedDiagnosticHandler quiet(op.getContext(),
                                  [](Diagnostic &) { return success(); });
    FailureOr<KernelChoice> k = getScheduledKernel(op);
    if (succeeded(k))
      base = *k;
  } else {
    base = chooseKernel(op, options, /*remarks=*/false);
  }
  // The heuristic's schedule first.
  double heuristic = 0;
  if (base.kind == KernelKind::Contraction && base.contraction)
    heuristic = modelContraction(op, *base.contraction, base.mma, model);
  else if (base.kind == KernelKind::Flash && base.flash)
    heuristic = modelFlash(op, *base.flash, base.flashConfig, model);
  else
    heuristic = modelSimt(op, s, model);
  set.add([] {}, heuristic, "heuristic");
  set.list.front().seed = "heuristic";
  switch (base.kind) {
  case KernelKind::Contraction:
    if (base.contraction)
      addContractionCandidates(op, base, model, set);
    break;
  case KernelKind::Flash:
    if (base.flash)
      addFlashCandidates(op, base, model, set);
    break;
  case KernelKind::SplitSoftmax:
    if (base.splitSoftmax)
      addSplitCandidates(op, base, model, set);
    break;
  case KernelKind::Auto:
  case KernelKind::Simt:
    if (s) {
      addSimtCandidates(op, model, set);
      addMatVecCandidates(op, model, set);
    }
    break;
  default:
    break;
  }
  SmallVector<ScheduleCandidate> list = std::move(set.list);
  // Best modelled first (the heuristic stays first). Then the pruning and
  // the limit.
  SmallVector<size_t> order =
      llvm::to_vector(llvm::seq<size_t>(1, list.size()));
  // Among equal models, those nearest the heuristic's first: the fewest
  // fields of the schedule's text that differ from its.
  auto fields = [](const ScheduleCandidate &c) {
    SmallVector<StringRef> f;
    StringRef(c.text.schedule).split(f, ", ");
    for (const std::string &n : c.text.nested)
      StringRef(n).split(f, ", ");
    return f;
  };
  SmallVector<StringRef> heuristicFields = fields(list.front());
  auto distance = [&](const ScheduleCandidate &c) {
    SmallVector<StringRef> f = fields(c);
    size_t d = std::max(f.size(), heuristicFields.size()) -
               std::min(f.size(), heuristicFields.size());
    for (auto [a, b] : llvm::zip(f, heuristicFields))
      d += a != b;
    return d;
  };
  SmallVector<size_t> distances = llvm::to_vector(llvm::map_range(
      list, [&](const ScheduleCandidate &c) { return distance(c); }));
  llvm::sort(order, [&](size_t a, size_t b) {
    return std::make_tuple(list[a].modelSeconds, distances[a], a) <
           std::make_tuple(list[b].modelSeconds, distances[b], b);
  });
  order.insert(order.begin(), 0);
  double best = std::numeric_limits<double>::infinity();
  for (const ScheduleCandidate &c : list)
    if (c.modelSeconds > 0)
      best = std::min(best, c.modelSeconds);
  SmallVector<ScheduleCandidate> kept;
  for (size_t i : order) {
    ScheduleCandidate &c = list[i];
    if (c.seed.empty() &&
        (int64_t(kept.size()) >= limit ||
         (c.modelSeconds > 0 && prune > 0 && c.modelSeconds > prune * best)))
      continue;
    kept.push_back(std::move(c));
  }
  return kept;
}

llvm::json::Object
mlir::tang::getCandidatesJson(ComprehensionOp op,
                              ArrayRef<ScheduleCandidate> candidates) {
  ScheduleKey key = getScheduleKey(op);
  std::string loc;
  llvm::raw_string_ostream os(loc);
  os << op.getLoc();
  llvm::json::Array list;
  for (const ScheduleCandidate &c : candidates) {
    llvm::json::Array nested;
    for (const std::string &s : c.text.nested)
      nested.push_back(s);
    list.push_back(llvm::json::Object{{"label", c.label},
                                      {"schedule", c.text.schedule},
                                      {"nested", std::move(nested)},
                                      {"model_s", c.modelSeconds},
                                      {"seed", c.seed}});
  }
  llvm::json::Array extents;
  for (int64_t e : key.extents)
    extents.push_back(e);
  std::string kernel = "auto";
  if (ScheduleAttr s = op.getScheduleAttr())
    kernel = stringifyKernelKind(s.getKernel()).str();
  return llvm::json::Object{
      {"structure", key.structure},    {"chip", key.chip}, {"sizes", key.sizes},
      {"extents", std::move(extents)}, {"location", loc},  {"kernel", kernel},
      {"candidates", std::move(list)}};
}
