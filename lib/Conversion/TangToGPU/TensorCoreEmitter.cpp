//===- TensorCoreEmitter.cpp - what tensor-core kernels share ---*- C++ -*-===//
//
// The building blocks of TensorCoreEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "TensorCoreEmitter.h"

#include "BodyEmitter.h"
#include "Tang/Analysis/KernelMatchers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tang;

//===----------------------------------------------------------------------===//
// Shared by the tensor-core emitters
//===----------------------------------------------------------------------===//

Value TensorCoreEmitterBase::packPair(Value lo, Value hi) {
  Type e = elementType;
  Value pair = vector::FromElementsOp::create(
      b, loc, VectorType::get({2}, b.getF32Type()), ValueRange{lo, hi});
  pair = arith::TruncFOp::create(b, loc, VectorType::get({2}, e), pair);
  if (!e.isBF16())
    return pair;
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
}

Value TensorCoreEmitterBase::rowReduce(Value v, bool max) {
  for (int32_t offset : {1, 2}) {
    Value o = gpu::ShuffleOp::create(
                  b, loc, v,
                  arith::ConstantIntOp::create(b, loc, b.getI32Type(), offset),
                  arith::ConstantIntOp::create(b, loc, b.getI32Type(), 32),
                  gpu::ShuffleMode::XOR)
                  .getShuffleResult();
    v = max ? arith::MaximumFOp::create(b, loc, v, o).getResult()
            : arith::AddFOp::create(b, loc, v, o).getResult();
  }
  return v;
}

SmallVector<Value> TensorCoreEmitterBase::emitWgmma(
    ArrayRef<Value> acc, int64_t n, int64_t steps, bool accumulate,
    bool bTransposed, int64_t bRows,
    function_ref<std::pair<Value, Value>(int64_t)> descs) {
  Value st = issueWgmma(acc, n, steps, accumulate, bTransposed, bRows, descs);
  waitWgmma();
  return takeWgmma(st, n);
}

void TensorCoreEmitterBase::waitWgmma(int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, b.getI64IntegerAttr(pending));
}

SmallVector<Value> TensorCoreEmitterBase::takeWgmma(Value st, int64_t n) {
  SmallVector<Value> out;
  for (int64_t i = 0; i < n / 2; ++i)
    out.push_back(
        LLVM::ExtractValueOp::create(b, loc, st, ArrayRef<int64_t>{i}));
  return out;
}

Value TensorCoreEmitterBase::issueWgmma(
    ArrayRef<Value> acc, int64_t n, int64_t steps, bool accumulate,
    bool bTransposed, int64_t bRows,
    function_ref<std::pair<Value, Value>(int64_t)> descs) {
  MLIRContext *ctx = b.getContext();
  auto accType = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(n / 2, b.getF32Type()));
  Value st = LLVM::ZeroOp::create(b, loc, accType);
  if (accumulate)
    for (int64_t i = 0; i < n / 2; ++i)
      st =
          LLVM::InsertValueOp::create(b, loc, st, acc[i], ArrayRef<int64_t>{i});
  auto type = NVVM::WGMMATypesAttr::get(ctx, elementType.isBF16()
                                                 ? NVVM::WGMMATypes::bf16
                                                 : NVVM::WGMMATypes::f16);
  auto one = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (int64_t step = 0; step < steps; ++step) {
    auto [a, bAddr] = descs(step);
    Value da = emitWgmmaDescriptor(b, loc, a, 16, 1024, 128);
    // A [k, n] operand: 64-column blocks of bn rows.
    Value db = bTransposed
                   ? emitWgmmaDescriptor(b, loc, bAddr, bRows * 128, 1024, 128)
                   : emitWgmmaDescriptor(b, loc, bAddr, 16, 1024, 128);
    st = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, accType, st, da, db, NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
        type, type, NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, accumulate || step
                                              ? NVVM::WGMMAScaleOut::one
                                              : NVVM::WGMMAScaleOut::zero),
        one, one, NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::MMALayoutAttr::get(ctx, bTransposed ? NVVM::MMALayout::row
                                                  : NVVM::MMALayout::col),
        /*satfinite=*/nullptr);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return st;
}

static Value toI32(OpBuilder &b, Location loc, Value index) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), index);
}

void TensorCoreEmitterBase::syncNamedBarrier(Value id, int64_t threads) {
  NVVM::BarrierOp::create(
      b, loc, Type(), toI32(b, loc, id),
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), threads),
      NVVM::BarrierReductionAttr(), Value());
}

void TensorCoreEmitterBase::arriveNamedBarrier(Value id, int64_t threads) {
  NVVM::BarrierArriveOp::create(
      b, loc, toI32(b, loc, id),
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), threads));
}

Value TensorCoreEmitterBase::packOperand(Value lo, Value hi) {
  Value pair = packPair(lo, hi);
  if (pair.getType().isInteger(32))
    return pair;
  Value word = vector::BitCastOp::create(
      b, loc, VectorType::get({1}, b.getI32Type()), pair);
  return vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
}

Value TensorCoreEmitterBase::issueKeyProduct(ArrayRef<Value> o,
                                             ArrayRef<Value> a, int64_t bn,
                                             int64_t n, Value smemAddr,
                                             int64_t wOffset, Value slot) {
  // o += G W, G from registers, W as the [k, n] operand: a k16 step is 16
  // rows of W, 64-column blocks bn rows long.
  Value wAt = add(smemAddr, add(cst(wOffset), mul(slot, bn * n * 2)));
  return issueWgmmaRegA(o, n, a, /*bTransposed=*/true, bn, [&](int64_t kk) {
    return add(wAt, cst(kk * 16 * 128));
  });
}

SmallVector<Value> TensorCoreEmitterBase::packKeyOperand(ArrayRef<Value> g,
                                                         int64_t bn) {
  // Accumulator tiles 2 kk and 2 kk + 1 (keys 16 kk .. 16 kk + 15): rows r
  // and r + 8 of the first, then of the second.
  SmallVector<Value> a;
  for (int64_t i = 0; i < bn / 4; ++i)
    a.push_back(packOperand(g[2 * i], g[2 * i + 1]));
  return a;
}

Value TensorCoreEmitterBase::issueWgmmaRegA(
    ArrayRef<Value> acc, int64_t n, ArrayRef<Value> a, bool bTransposed,
    int64_t bRows, function_ref<Value(int64_t)> bAddress) {
  // NVVM's wgmma op takes A by descriptor only: the register form is PTX
  // (inline assembly), one instruction per k16 step, the accumulators
  // tied in and out. scale-d is a predicate: always accumulate.
  MLIRContext *ctx = b.getContext();
  int64_t nAcc = n / 2;
  auto accType = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(nAcc, b.getF32Type()));
  StringRef type = elementType.isBF16() ? "bf16" : "f16";
  std::string text, constraints;
  {
    llvm::raw_string_ostream os(text), cs(constraints);
    os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << nAcc + 5
       << ", 0;\nwgmma.mma_async.sync.aligned.m64n" << n << "k16.f32." << type
       << "." << type << " {";
    for (int64_t i = 0; i < nAcc; ++i) {
      os << (i ? ", $" : "$") << i;
      cs << "=f,";
    }
    os << "}, {$" << nAcc << ", $" << nAcc + 1 << ", $" << nAcc + 2 << ", $"
       << nAcc + 3 << "}, $" << nAcc + 4 << ", p, 1, 1, "
       << (bTransposed ? 1 : 0) << ";\n}";
    cs << "r,r,r,r,l,r";
    for (int64_t i = 0; i < nAcc; ++i)
      cs << "," << i;
  }
  auto asmText = b.getStringAttr(text);
  auto asmConstraints = b.getStringAttr(constraints);
  Value accumulate = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 1);
  SmallVector<Value> d(acc);
  Value st;
  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  for (int64_t step = 0; step < static_cast<int64_t>(a.size()) / 4; ++step) {
    Value db = bTransposed
                   ? emitWgmmaDescriptor(b, loc, bAddress(step), bRows * 128,
                                         1024, 128)
                   : emitWgmmaDescriptor(b, loc, bAddress(step), 16, 1024, 128);
    SmallVector<Value> operands(a.slice(step * 4, 4));
    operands.push_back(db);
    operands.push_back(accumulate);
    operands.append(d);
    st = LLVM::InlineAsmOp::create(
             b, loc, accType, operands, asmText, asmConstraints,
             /*has_side_effects=*/b.getUnitAttr(), /*is_align_stack=*/nullptr,
             LLVM::TailCallKindAttr::get(
                 ctx, LLVM::tailcallkind::TailCallKind::None),
             LLVM::AsmDialectAttr::get(ctx, LLVM::AsmDialect::AD_ATT),
             /*operand_attrs=*/nullptr)
             .getResult(0);
    d = takeWgmma(st, n);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  return st;
}

Value TensorCoreEmitterBase::swizzle(Value row, Value chunk) {
  return arith::XOrIOp::create(b, loc, chunk, rem(row, 8));
}

SmallVector<Value> TensorCoreEmitterBase::decomposeBatch(
    ComprehensionOp op, function_ref<bool(unsigned)> skip, Value linear) {
  SmallVector<Value> batch(op.getNumParallel());
  Value rest =
      linear ? linear : gpu::BlockIdOp::create(b, loc, gpu::Dimension::z);
  for (int p = static_cast<int>(op.getNumParallel()) - 1; p >= 0; --p) {
    if (skip(p))
      continue;
    batch[p] = rem(rest, op.getExtent(p));
    rest = div(rest, op.getExtent(p));
  }
  return batch;
}

void TensorCoreEmitterBase::accumulateKeyProduct(MutableArrayRef<Value> o,
                                                 ArrayRef<Value> g, int64_t bn,
                                                 int64_t n, bool wgmma,
                                                 Value smemAddr, Value wTile,
                                                 int64_t wOffset, Value slot,
                                                 Value lane) {
  if (wgmma) {
    Value st = issueKeyProduct(o, packKeyOperand(g, bn), bn, n, smemAddr,
                               wOffset, slot);
    waitWgmma();
    llvm::copy(takeWgmma(st, n), o.begin());
    return;
  }
  // G's tiles 2 t2 and 2 t2 + 1 are the m16k16 operand of keys
  // 16 t2 .. 16 t2 + 15.
  for (int64_t t2 = 0; t2 < bn / 16; ++t2) {
    SmallVector<Value> a{packPair(g[t2 * 8 + 0], g[t2 * 8 + 1]),
                         packPair(g[t2 * 8 + 2], g[t2 * 8 + 3]),
                         packPair(g[t2 * 8 + 4], g[t2 * 8 + 5]),
                         packPair(g[t2 * 8 + 6], g[t2 * 8 + 7])};
    for (int64_t d2 = 0; d2 < n / 16; ++d2) {
      Value row =
          add(cst(t2 * 16), add(rem(lane, 8), mul(rem(div(lane, 8), 2), 8)));
      Value chunk = add(cst(d2 * 2), div(lane, 16));
      SmallVector<Value> wr =
          loadMatrix(wTile, {slot, row, mul(swizzle(row, chunk), 8)}, true);
      mmaSync(a, {wr[0], wr[1]}, o.slice(d2 * 8, 4));
      mmaSync(a, {wr[2], wr[3]}, o.slice(d2 * 8 + 4, 4));
    }
  }
}

FailureOr<Value> mlir::tang::emitConstantFactors(OpBuilder &b,
                                                 BodyEmitter &emitter,
                                                 ComprehensionOp red,
                                                 ArrayRef<Value> factors) {
  Value product;
  IRMapping none;
  Block &body = red.getBodyBlock();
  for (Value f : factors) {
    // The factor's defining operations, in body order.
    for (Operation &inner : body.without_terminator())
      if (inner.getNumResults() &&
          (inner.getResult(0) == f || dependsOn(f, inner.getResult(0), body)) &&
          failed(emitter.emit(b, &inner, none)))
        return failure();
    Value fv = none.lookupOrNull(f);
    if (!fv) {
      auto c = f.getDefiningOp<arith::ConstantOp>();
      if (!c || failed(emitter.emit(b, c, none)))
        return red.emitOpError()
               << "a factor of the dot product is not computed in its body";
      fv = none.lookup(f);
    }
    product =
        product
            ? arith::MulFOp::create(b, red.getLoc(), product, fv).getResult()
            : fv;
  }
  return product;
}

TensorCoreEmitterBase::SharedMemory
TensorCoreEmitterBase::getSharedMemory(bool align1024) {
  auto wg =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  SharedMemory s;
  s.memory = gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), AffineMap(), wg));
  s.base = cst(0);
  if (align1024) {
    Value addr =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, s.memory);
    s.base =
        rem(arith::SubIOp::create(b, loc, cst(1024), rem(addr, 1024)), 1024);
    s.address = add(addr, s.base);
  }
  return s;
}

Value TensorCoreEmitterBase::SharedMemory::view(TensorCoreEmitterBase &e,
                                                ArrayRef<int64_t> shape,
                                                int64_t offset) const {
  auto wg = gpu::AddressSpaceAttr::get(e.b.getContext(),
                                       gpu::AddressSpace::Workgroup);
  return memref::ViewOp::create(
             e.b, e.loc, MemRefType::get(shape, e.elementType, AffineMap(), wg),
             memory, e.add(base, e.cst(offset)), ValueRange{})
      .getResult();
}

void TensorCoreEmitterBase::fenceProxyAsync() {
  MLIRContext *ctx = b.getContext();
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
}

Value TensorCoreEmitterBase::cst(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value TensorCoreEmitterBase::add(Value x, Value y) {
  return arith::AddIOp::create(b, loc, x, y);
}
Value TensorCoreEmitterBase::mul(Value x, int64_t y) {
  return arith::MulIOp::create(b, loc, x, cst(y));
}
Value TensorCoreEmitterBase::div(Value x, int64_t y) {
  return arith::DivUIOp::create(b, loc, x, cst(y));
}
Value TensorCoreEmitterBase::rem(Value x, int64_t y) {
  return arith::RemUIOp::create(b, loc, x, cst(y));
}
Value TensorCoreEmitterBase::lt(Value x, int64_t y) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, cst(y));
}
Value TensorCoreEmitterBase::minU(Value x, int64_t y) {
  return arith::MinUIOp::create(b, loc, x, cst(y));
}

SmallVector<Value> TensorCoreEmitterBase::loadMatrix(Value tile,
                                                     ValueRange indices,
                                                     bool transpose) {
  Type e = cast<MemRefType>(tile.getType()).getElementType();
  Value m = nvgpu::LdMatrixOp::create(b, loc, VectorType::get({4, 2}, e), tile,
                                      indices, transpose, 4);
  SmallVector<Value> regs;
  for (int64_t i = 0; i < 4; ++i) {
    Value pair = vector::ExtractOp::create(b, loc, m, ArrayRef<int64_t>{i});
    if (e.isBF16()) {
      // mma.sync takes bf16 pairs as 32-bit registers.
      Value word = vector::BitCastOp::create(
          b, loc, VectorType::get({1}, b.getI32Type()), pair);
      pair = vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
    }
    regs.push_back(pair);
  }
  return regs;
}

void TensorCoreEmitterBase::mmaSync(ArrayRef<Value> a, ArrayRef<Value> bFrag,
                                    MutableArrayRef<Value> acc) {
  MLIRContext *ctx = b.getContext();
  Type f = b.getF32Type();
  NVVM::MMATypes t = elementType.isBF16()  ? NVVM::MMATypes::bf16
                     : elementType.isF32() ? NVVM::MMATypes::tf32
                                           : NVVM::MMATypes::f16;
  int64_t k = elementType.isF32() ? 8 : 16;
  auto res = NVVM::MmaOp::create(
      b, loc, LLVM::LLVMStructType::getLiteral(ctx, {f, f, f, f}), a, bFrag,
      acc, {16, 8, k}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{t, t},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t i = 0; i < 4; ++i)
    acc[i] = LLVM::ExtractValueOp::create(b, loc, res.getResult(),
                                          ArrayRef<int64_t>{i});
}

Value TensorCoreEmitterBase::toSharedPointer(Value address) {
  MLIRContext *ctx = b.getContext();
  Value i = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(ctx, 3),
                                  i);
}

void TensorCoreEmitterBase::waitBarrier(Value at, Value slot, Value parity) {
  Type i32 = b.getI32Type();
  NVVM::MBarrierTryWaitParityOp::create(
      b, loc, toSharedPointer(add(at, mul(slot, 8))),
      arith::IndexCastOp::create(b, loc, i32, parity),
      arith::ConstantIntOp::create(b, loc, i32, 10000000));
}

void TensorCoreEmitterBase::arriveBarrier(Value at, Value slot) {
  NVVM::MBarrierArriveOp::create(
      b, loc, Type(), toSharedPointer(add(at, mul(slot, 8))), Value(),
      NVVM::MemScopeKindAttr::get(b.getContext(), NVVM::MemScopeKind::CTA));
}

void TensorCoreEmitterBase::initBarriers(Value tid, Value at, int64_t n,
                                         int64_t count) {
  auto first =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, cst(0));
  auto ifOp = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value c = arith::ConstantIntOp::create(b, loc, b.getI32Type(), count);
  for (int64_t s = 0; s < n; ++s)
    NVVM::MBarrierInitOp::create(b, loc, toSharedPointer(add(at, cst(8 * s))),
                                 c, Value());
  NVVM::FenceMbarrierInitOp::create(b, loc);
}

void TensorCoreEmitterBase::releaseByWarpgroup(Value tid, Value at,
                                               Value slot) {
  auto leader =
      scf::IfOp::create(b, loc,
                        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              rem(tid, 128), cst(0)),
                        /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&leader.getThenRegion().front());
  arriveBarrier(at, slot);
}

void TensorCoreEmitterBase::bulkTensorCopy(Value map, ArrayRef<Value> coords,
                                           Value dst, Value bar) {
  MLIRContext *ctx = b.getContext();
  // The copy takes coordinates innermost first, as i32.
  SmallVector<Value> box;
  for (Value v : llvm::reverse(coords))
    box.push_back(arith::IndexCastOp::create(b, loc, b.getI32Type(), v));
  Value cluster = LLVM::AddrSpaceCastOp::create(
      b, loc, LLVM::LLVMPointerType::get(ctx, 7), toSharedPointer(dst));
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, loc, cluster, map, box, bar, ValueRange(), Value(), Value(),
      NVVM::TMALoadModeAttr::get(ctx, NVVM::TMALoadMode::TILE),
      b.getBoolAttr(false), NVVM::CTAGroupKindAttr(), Value());
}

Value mlir::tang::emitWgmmaDescriptor(OpBuilder &b, Location loc,
                                      Value byteAddress, int64_t lbo,
                                      int64_t sbo, int64_t swizzleBytes) {
  // Bits 0-13: address / 16; 16-29: leading byte offset / 16; 32-45:
  // stride byte offset / 16; 62-63: the swizzle, 1 = 128 bytes, 2 = 64.
  Type i64 = b.getI64Type();
  Value a = arith::IndexCastOp::create(b, loc, i64, byteAddress);
  a = arith::ShRUIOp::create(
      b, loc,
      arith::AndIOp::create(b, loc, a,
                            arith::ConstantIntOp::create(b, loc, i64, 0x3FFFF)),
      arith::ConstantIntOp::create(b, loc, i64, 4));
  uint64_t fields = (uint64_t(lbo / 16) << 16) | (uint64_t(sbo / 16) << 32) |
                    (uint64_t(swizzleBytes == 128 ? 1 : 2) << 62);
  return arith::OrIOp::create(
      b, loc, a,
      arith::ConstantIntOp::create(b, loc, i64, static_cast<int64_t>(fields)));
}
