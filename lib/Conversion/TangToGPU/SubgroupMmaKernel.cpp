//===- SubgroupMmaKernel.cpp - contractions on portable matrix units -----===//
//
// The contraction of MmaKernel.cpp's matcher, emitted with the target-neutral
// subgroup matrix operations of the gpu dialect (gpu.subgroup_mma_*) for the
// portable backends whose hardware has matrix units: SPIR-V
// KHR_cooperative_matrix (through upstream convert-gpu-to-spirv) and Metal
// simdgroup_matrix (through the printer). One subgroup per workgroup, for
// rm x rn T x T tiles of the result (register blocking: the schedule's
// tile when it names this kernel, else the largest of 4 x 4, 4 x 2, ..., 1 x 1
// dividing the tiles that leaves 256 workgroups): the accumulators start at
// zero, each step of T along the reduced index loads rm T x T tiles of A and rn
// of B straight from their buffers (row stride: the operand's leading
// dimension; a [n, k] operand loads transposed) and multiplies-accumulates
// every pair, and each tile is stored once.
//
// It takes what the loads can address: operands whose views are boxes of
// their tensors (getBoxRowCoordinate), extents that are multiples of T, a
// result whose last two indices are the rows and columns, no epilogue.
// Anything else is a remark and the plain kernels.
//
//===----------------------------------------------------------------------===//

#include "BodyEmitter.h"
#include "KernelForm.h"

#include "Tang/Analysis/ShapeClass.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// One operand of the product as the loads see it.
struct TileOperand {
  ReadOp read;
  /// The indices along the tile's rows and columns in the buffer.
  Value row, col;
  /// The buffer's elements between consecutive tile rows.
  int64_t leadDimension;
  /// Whether the buffer holds the tile transposed ([n, k] for B).
  bool transpose;
};

/// `read` as a tile operand along `row` x `col` (possibly stored the other
/// way round, `transpose`), or a reason it is not one.
std::optional<TileOperand> getTileOperand(ComprehensionOp op, ReadOp read,
                                          Value row, Value col, bool transpose,
                                          function_ref<bool(Value)> isBatch,
                                          std::string &why) {
  Value bufferRow = transpose ? col : row, bufferCol = transpose ? row : col;
  std::optional<unsigned> rowCoord =
      getBoxRowCoordinate(read, bufferRow, bufferCol, isBatch);
  if (!rowCoord) {
    why = "an operand's view is not a box of its tensor (the tile index in "
          "the last coordinate, the other in one more, batch indices "
          "elsewhere)";
    return std::nullopt;
  }
  auto type = cast<RankedTensorType>(read.getTensor().getType());
  int64_t lead = 1;
  for (int64_t d = *rowCoord + 1; d < type.getRank(); ++d)
    lead *= type.getDimSize(d);
  return TileOperand{read, row, col, lead, transpose};
}

/// Emits `op` on subgroup matrix operations in `tile` x `tile` tiles, one
/// subgroup of `subgroupSize` threads per tile: f32 operands, and f16 ones
/// with `allowF16`; std::nullopt with `why` set if `op` is not a
/// contraction those loads can address.
std::optional<LogicalResult>
emitSubgroupMmaKernel(OpBuilder &b, ComprehensionOp op, IRMapping &tensors,
                      ValueRange outputs, Kernel &k, int64_t tile,
                      bool allowF16, int64_t subgroupSize, std::string &why) {
  std::optional<MmaContraction> c =
      matchMmaContraction(op, why, /*allowTransposedA=*/false,
                          /*allowTf32=*/true);
  if (!c)
    return std::nullopt;
  auto fail = [&](const Twine &reason) -> std::optional<LogicalResult> {
    why = reason.str();
    return std::nullopt;
  };
  Type resultType = getElementTypeOrSelf(op.getResultTypes()[0]);
  if (!(c->elementType.isF32() || (allowF16 && c->elementType.isF16())))
    return fail(allowF16 ? "subgroup matrices take f32 or f16 operands"
                         : "the target's subgroup matrices take f32 operands");
  // The sum stored as it is, or staged through workgroup memory for an
  // epilogue (the rest of the body around a nested sum) or a result type
  // other than f32.
  bool staged = c->red != op || !resultType.isF32();
  if (staged && (tile * tile) % subgroupSize)
    return fail("a " + Twine(tile) + "x" + Twine(tile) +
                " tile is no whole number of elements a thread");
  if (c->extentM % tile || c->extentN % tile || c->extentK % tile)
    return fail("an extent is not a multiple of the " + Twine(tile) + "x" +
                Twine(tile) + " tile");
  unsigned numParallel = op.getNumParallel();
  if (c->m != numParallel - 2 || c->n != numParallel - 1)
    return fail("the result's last two indices are not its rows and columns");

  auto isBatch = [&](Value v) {
    for (unsigned p = 0; p + 2 < numParallel; ++p)
      if (op.getIndex(p) == v)
        return true;
    return false;
  };
  Value kIndex = c->red.getIndex(c->red.getNumIndices() - 1);
  Value mIndex = op.getIndex(c->m), nIndex = op.getIndex(c->n);
  std::optional<TileOperand> a = getTileOperand(
      op, c->a, mIndex, kIndex, /*transpose=*/false, isBatch, why);
  if (!a)
    return std::nullopt;
  std::optional<TileOperand> bOperand = getTileOperand(
      op, c->b, kIndex, nIndex, /*transpose=*/c->bKContiguous, isBatch, why);
  if (!bOperand)
    return std::nullopt;
  int64_t batchCount = 1;
  for (unsigned p = 0; p + 2 < numParallel; ++p)
    batchCount *= op.getExtent(p);
  int64_t tilesM = c->extentM / tile, tilesN = c->extentN / tile;

  // The tiles one subgroup computes: rm x rn of them, each operand tile
  // loaded once per step and used rn (A) or rm (B) times. A schedule
  // naming this kernel gives them (its tile along the rows and columns, in
  // elements); otherwise the first of 4 x 4, 4 x 2, 2 x 4, 2 x 2, 2 x 1,
  // 1 x 2 that divides the tiles and leaves kMinGroups workgroups.
  int64_t rm = 1, rn = 1;
  ScheduleAttr s = op.getScheduleAttr();
  if (s && s.getKernel() == KernelKind::SubgroupMma) {
    ArrayRef<int64_t> t = s.getTile();
    if (t.size() != op.getNumIndices())
      return fail("its schedule's tile has " + Twine(t.size()) + " sizes for " +
                  Twine(op.getNumIndices()) + " indices");
    int64_t tm = t[c->m], tn = t[c->n], tk = t.back();
    if (tm <= 0 || tn <= 0 || tk <= 0 || tm % tile || tn % tile || tk % tile ||
        c->extentM % tm || c->extentN % tn)
      return fail("its schedule's tile [" + Twine(tm) + ", " + Twine(tn) +
                  ", " + Twine(tk) + "] (rows, columns, reduced) is not " +
                  "whole " + Twine(tile) + "x" + Twine(tile) +
                  " tiles dividing the extents");
    rm = tm / tile;
    rn = tn / tile;
    // Their accumulators live in registers: at most 16 tiles of 16 x 16.
    if (rm * rn * tile * tile > 16 * 256)
      return fail("its schedule asks for " + Twine(rm * rn) + " " +
                  Twine(tile) + "x" + Twine(tile) +
                  " tiles a subgroup (at most 4096 accumulated elements)");
  } else {
    constexpr int64_t kMinGroups = 256;
    for (auto [m, n] : {std::pair<int64_t, int64_t>{4, 4},
                        {4, 2},
                        {2, 4},
                        {2, 2},
                        {2, 1},
                        {1, 2}}) {
      if (tilesM % m == 0 && tilesN % n == 0 &&
          (tilesM / m) * (tilesN / n) * batchCount >= kMinGroups) {
        rm = m;
        rn = n;
        break;
      }
    }
  }
  if (tilesN / rn > 65535 || tilesM / rm > 65535 || batchCount > 65535)
    return fail("more tiles or batch points than the grid holds");

  // The grid: column blocks over x, row blocks over y, batch points over
  // z; one subgroup per workgroup.
  k.grid = {tilesN / rn, tilesM / rm, batchCount};
  k.block = {subgroupSize, 1, 1};
  Location loc = op.getLoc();
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value row0 = arith::MulIOp::create(
      b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::y),
      cst(tile * rm));
  Value col0 = arith::MulIOp::create(
      b, loc, gpu::BlockIdOp::create(b, loc, gpu::Dimension::x),
      cst(tile * rn));
  IRMapping at;
  Value rest = gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  SmallVector<Value> resultIndices(numParallel);
  for (int p = static_cast<int>(numParallel) - 3; p >= 0; --p) {
    Value extent = cst(op.getExtent(p));
    resultIndices[p] = arith::RemUIOp::create(b, loc, rest, extent);
    at.map(op.getIndex(p), resultIndices[p]);
    rest = arith::DivUIOp::create(b, loc, rest, extent);
  }
  auto offset = [&](Value base, int64_t i) {
    return i ? arith::AddIOp::create(b, loc, base, cst(i * tile)).getResult()
             : base;
  };
  SmallVector<Value> rows, cols;
  for (int64_t i = 0; i < rm; ++i)
    rows.push_back(offset(row0, i));
  for (int64_t j = 0; j < rn; ++j)
    cols.push_back(offset(col0, j));

  MLIRContext *ctx = b.getContext();
  auto matrixType = [&](Type element, StringRef operand) {
    return gpu::MMAMatrixType::get({tile, tile}, element, operand);
  };
  Type accType = matrixType(b.getF32Type(), "COp");
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0));
  Value acc0 = gpu::SubgroupMmaConstantMatrixOp::create(b, loc, accType, zero);
  // The accumulators row-major: tile (i, j) is acc[i * rn + j].
  auto loop = scf::ForOp::create(b, loc, cst(0), cst(c->extentK), cst(tile),
                                 SmallVector<Value>(rm * rn, acc0));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    at.map(kIndex, loop.getInductionVar());
    auto load = [&](TileOperand o, StringRef kind) -> Value {
      SmallVector<Value> operands = llvm::map_to_vector(
          o.read.getIndices(), [&](Value v) { return at.lookup(v); });
      SmallVector<Value> indices(
          *affine::expandAffineMap(b, loc, o.read.getMap(), operands));
      return gpu::SubgroupMmaLoadMatrixOp::create(
          b, loc, matrixType(c->elementType, kind),
          tensors.lookup(o.read.getTensor()), indices,
          b.getIndexAttr(o.leadDimension),
          o.transpose ? UnitAttr::get(ctx) : UnitAttr());
    };
    SmallVector<Value> lhs, rhs, sums;
    for (Value r : rows) {
      at.map(mIndex, r);
      lhs.push_back(load(*a, "AOp"));
    }
    for (Value cIndex : cols) {
      at.map(nIndex, cIndex);
      rhs.push_back(load(*bOperand, "BOp"));
    }
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t j = 0; j < rn; ++j)
        sums.push_back(gpu::SubgroupMmaComputeOp::create(
            b, loc, accType, lhs[i], rhs[j],
            loop.getRegionIterArgs()[i * rn + j], UnitAttr(), UnitAttr()));
    scf::YieldOp::create(b, loc, sums);
  }
  if (!staged) {
    for (int64_t i = 0; i < rm; ++i)
      for (int64_t j = 0; j < rn; ++j) {
        resultIndices[c->m] = rows[i];
        resultIndices[c->n] = cols[j];
        gpu::SubgroupMmaStoreMatrixOp::create(
            b, loc, loop.getResult(i * rn + j), outputs[0], resultIndices,
            b.getIndexAttr(c->extentN), UnitAttr());
      }
    return success();
  }

  // Through workgroup memory: each tile stored into a tile x tile f32
  // buffer, then every thread takes tile^2 / subgroupSize of its elements
  // (consecutive threads along a row), applies the epilogue (the body
  // around the nested sum, the sum in its place) and stores the result in
  // its type. One subgroup per workgroup: the barriers order the
  // subgroup's own store and loads (`tang.subgroup_local`: a launcher that
  // runs the work items in turn, each storing the whole tile, needs none).
  auto wgSpace = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  Value stage = k.func.addWorkgroupAttribution(
      MemRefType::get({tile, tile}, b.getF32Type(), AffineMap(), wgSpace), loc);
  BodyEmitter emitter(tensors, &k.func.getBody().front());
  emitter.setApproximate(isLowPrecision(op));
  Value lane = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
  auto barrier = [&] {
    gpu::BarrierOp::create(b, loc)->setAttr(kSubgroupLocalBarrierAttrName,
                                            UnitAttr::get(ctx));
  };
  Type storage = cast<MemRefType>(outputs[0].getType()).getElementType();
  for (int64_t i = 0; i < rm; ++i)
    for (int64_t j = 0; j < rn; ++j) {
      gpu::SubgroupMmaStoreMatrixOp::create(b, loc, loop.getResult(i * rn + j),
                                            stage, ValueRange{cst(0), cst(0)},
                                            b.getIndexAttr(tile), UnitAttr());
      barrier();
      for (int64_t q = 0; q * subgroupSize < tile * tile; ++q) {
        Value e = arith::AddIOp::create(b, loc, lane, cst(q * subgroupSize));
        Value r = arith::DivUIOp::create(b, loc, e, cst(tile));
        Value cc = arith::RemUIOp::create(b, loc, e, cst(tile));
        Value sum = memref::LoadOp::create(b, loc, stage, ValueRange{r, cc});
        Value row = arith::AddIOp::create(b, loc, rows[i], r);
        Value col = arith::AddIOp::create(b, loc, cols[j], cc);
        Value result = sum;
        if (c->red != op) {
          IRMapping m = at;
          m.map(mIndex, row);
          m.map(nIndex, col);
          for (Operation &inner : op.getBodyBlock().without_terminator()) {
            if (&inner == c->red.getOperation()) {
              m.map(c->red.getResult(0), sum);
              continue;
            }
            if (failed(emitter.emit(b, &inner, m)))
              return failure();
          }
          if (failed(emitter.materialize(op.getYield(), m)))
            return failure();
          result = m.lookup(op.getYield().getValues()[0]);
        }
        resultIndices[c->m] = row;
        resultIndices[c->n] = col;
        memref::StoreOp::create(b, loc, toStorage(b, loc, result, storage),
                                outputs[0], resultIndices);
      }
      barrier();
    }
  return success();
}

/// A contraction on portable subgroup matrix operations.
struct SubgroupMmaKernelPattern : KernelPattern {
  SubgroupMmaKernelPattern(const KernelOptions &options)
      : KernelPattern("subgroup-mma"), options(options) {}

  KernelMatch matchAndBuild(KernelRequest &r) const override {
    if (r.choice.kind != KernelKind::SubgroupMma)
      return notifyMatchFailure(r.op, "not a subgroup matrix kernel");
    std::string why = "--convert-tang-to-gpu has no matrix-units tile";
    std::optional<LogicalResult> built;
    if (options.matrixUnits)
      built = emitSubgroupMmaKernel(r.b, r.op, r.tensors, r.outputs, r.k,
                                    options.matrixUnits, options.matrixUnitsF16,
                                    options.subgroupSize, why);
    if (built)
      return succeeded(*built) ? KernelMatch::Built : KernelMatch::Error;
    // Asked for by the schedule: an error; chosen as an attempt
    // (chooseKernel with matrix units): a remark, and SIMT kernels.
    ScheduleAttr s = r.op.getScheduleAttr();
    if (s && s.getKernel() == KernelKind::SubgroupMma) {
      r.op.emitOpError() << "has a schedule asking for a subgroup_mma kernel, "
                            "but "
                         << why;
      return KernelMatch::Error;
    }
    return remarkMatchFailure(r.op, "not on matrix units: " + why);
  }

  KernelOptions options;
};

} // namespace

void mlir::tang::populateSubgroupMmaKernelPatterns(
    KernelPatternSet &patterns, const KernelOptions &options) {
  patterns.push_back(std::make_unique<SubgroupMmaKernelPattern>(options));
}
