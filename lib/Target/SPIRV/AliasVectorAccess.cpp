//===- AliasVectorAccess.cpp - vector access through aliases ----*- C++ -*-===//
//
// Replaces the pointer bitcasts of upstream's vector load and store
// lowering (invalid under logical addressing) by access chains into a
// second variable bound to the same buffer, whose runtime array holds the
// vectors (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Tang/Target/Passes.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVTypes.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGSPIRVALIASVECTORACCESS
#include "Tang/Target/Passes.h.inc"
} // namespace mlir::tang

#define DEBUG_TYPE "tang-spirv-alias-vector-access"

using namespace mlir;
using namespace mlir::tang;

namespace {

/// A storage buffer variable's array (runtime or sized): the struct's only
/// member, its element type and stride; null without one.
struct BufferArray {
  Type array, element;
  unsigned stride = 0;
  explicit operator bool() const { return bool(array); }
};
BufferArray getBufferArray(spirv::GlobalVariableOp var) {
  auto ptr = dyn_cast<spirv::PointerType>(var.getType());
  if (!ptr || ptr.getStorageClass() != spirv::StorageClass::StorageBuffer)
    return {};
  auto st = dyn_cast<spirv::StructType>(ptr.getPointeeType());
  if (!st || st.getNumElements() != 1)
    return {};
  Type t = st.getElementType(0);
  if (auto a = dyn_cast<spirv::RuntimeArrayType>(t))
    return {a, a.getElementType(), a.getArrayStride()};
  if (auto a = dyn_cast<spirv::ArrayType>(t))
    return {a, a.getElementType(), a.getArrayStride()};
  return {};
}

struct TangSpirvAliasVectorAccessPass
    : tang::impl::TangSpirvAliasVectorAccessBase<
          TangSpirvAliasVectorAccessPass> {
  using TangSpirvAliasVectorAccessBase::TangSpirvAliasVectorAccessBase;

  /// The variable aliasing `var` with an array of `vector`s (created once,
  /// beside `var`).
  spirv::GlobalVariableOp getAlias(spirv::GlobalVariableOp var,
                                   VectorType vector) {
    auto key = std::make_pair(var.getOperation(), Type(vector));
    auto it = aliases.find(key);
    if (it != aliases.end())
      return it->second;
    auto ptr = cast<spirv::PointerType>(var.getType());
    auto st = cast<spirv::StructType>(ptr.getPointeeType());
    BufferArray array = getBufferArray(var);
    SmallVector<spirv::StructType::OffsetInfo> offsets;
    for (unsigned i = 0; i < st.getNumElements(); ++i)
      offsets.push_back(st.getMemberOffset(i));
    SmallVector<spirv::StructType::MemberDecorationInfo> members;
    st.getMemberDecorations(members);
    SmallVector<spirv::StructType::StructDecorationInfo> decorations;
    st.getStructDecorations(decorations);
    unsigned stride = array.stride * vector.getNumElements();
    Type aliasArray =
        isa<spirv::ArrayType>(array.array)
            ? Type(spirv::ArrayType::get(
                  vector,
                  cast<spirv::ArrayType>(array.array).getNumElements() /
                      vector.getNumElements(),
                  stride))
            : Type(spirv::RuntimeArrayType::get(vector, stride));
    auto aliasStruct =
        spirv::StructType::get({aliasArray}, offsets, members, decorations);
    // Built detached; the symbol table places it after `var`, renamed if
    // its name is taken.
    OpBuilder b(&getContext());
    std::string name =
        (var.getSymName() + "_v" + Twine(vector.getNumElements())).str();
    auto alias = spirv::GlobalVariableOp::create(
        b, var.getLoc(),
        spirv::PointerType::get(aliasStruct,
                                spirv::StorageClass::StorageBuffer),
        name, *var.getDescriptorSet(), *var.getBinding());
    symbols->insert(alias, std::next(Block::iterator(var)));
    // An entry point listing `var` (SPIR-V 1.4 and later list every
    // global variable they use) lists its alias too.
    getOperation().walk([&](spirv::EntryPointOp entry) {
      ArrayAttr iface = entry.getInterface();
      if (!llvm::any_of(iface, [&](Attribute a) {
            return cast<FlatSymbolRefAttr>(a).getValue() == var.getSymName();
          }))
        return;
      SmallVector<Attribute> list(iface.begin(), iface.end());
      list.push_back(FlatSymbolRefAttr::get(alias.getSymNameAttr()));
      entry.setInterfaceAttr(ArrayAttr::get(&getContext(), list));
    });
    aliases[key] = alias;
    aliasesOf[var.getOperation()].push_back(alias);
    return alias;
  }

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] running on "
                            << getOperation()->getLoc() << "\n");
    spirv::ModuleOp module = getOperation();
    aliases.clear();
    aliasesOf.clear();
    SymbolTable table(module);
    symbols = &table;
    SmallVector<spirv::BitcastOp> casts;
    module.walk([&](spirv::BitcastOp c) {
      if (isa<spirv::PointerType>(c.getType()))
        casts.push_back(c);
    });
    for (spirv::BitcastOp c : casts)
      if (failed(rewrite(c)))
        return signalPassFailure();
    markAliased();
  }

  LogicalResult rewrite(spirv::BitcastOp c) {
    auto fail = [&](const Twine &why) {
      return c.emitOpError() << "is a pointer bitcast that "
                                "tang-spirv-alias-vector-access cannot "
                                "replace: "
                             << why;
    };
    auto to = cast<spirv::PointerType>(c.getType());
    auto vector = dyn_cast<VectorType>(to.getPointeeType());
    auto chain = c.getOperand().getDefiningOp<spirv::AccessChainOp>();
    if (!vector || !chain || chain.getIndices().size() != 2)
      return fail("not a vector pointer from an element of a buffer");
    auto address = chain.getBasePtr().getDefiningOp<spirv::AddressOfOp>();
    auto var =
        address ? SymbolTable::lookupNearestSymbolFrom<spirv::GlobalVariableOp>(
                      address, address.getVariableAttr())
                : nullptr;
    BufferArray array = var ? getBufferArray(var) : BufferArray();
    if (!array || !var.getDescriptorSet() || !var.getBinding())
      return fail("its base is not a bound storage buffer");
    auto sized = dyn_cast<spirv::ArrayType>(array.array);
    // The vector's components are contiguous: the elements must be.
    unsigned elementBytes =
        std::max<unsigned>(1, array.element.getIntOrFloatBitWidth() / 8);
    if (array.stride && array.stride != elementBytes)
      return fail("the buffer's elements are not contiguous (stride " +
                  Twine(array.stride) + ")");
    if (array.element != vector.getElementType() ||
        !llvm::isPowerOf2_64(vector.getNumElements()) ||
        (sized && sized.getNumElements() % vector.getNumElements()))
      return fail("the vector's elements are not the buffer's, or their "
                  "number is not a power of two dividing the buffer's");
    spirv::GlobalVariableOp alias = getAlias(var, vector);
    OpBuilder b(c);
    Location loc = c.getLoc();
    Value base = spirv::AddressOfOp::create(b, loc, alias);
    Value index = chain.getIndices()[1];
    Value shift = spirv::ConstantOp::create(
        b, loc, index.getType(),
        b.getIntegerAttr(index.getType(),
                         llvm::Log2_64(vector.getNumElements())));
    Value scaled = spirv::ShiftRightLogicalOp::create(b, loc, index.getType(),
                                                      index, shift);
    Value access = spirv::AccessChainOp::create(
        b, loc, base, ValueRange{chain.getIndices()[0], scaled});
    c.replaceAllUsesWith(access);
    c.erase();
    if (chain->use_empty())
      chain.erase();
    if (address->use_empty())
      address.erase();
    return success();
  }

  /// `Aliased` on a buffer's variables where one of them is written and
  /// more than one is used.
  void markAliased() {
    for (auto &[varOp, list] : aliasesOf) {
      auto var = cast<spirv::GlobalVariableOp>(varOp);
      SmallVector<spirv::GlobalVariableOp> all{var};
      llvm::append_range(all, list);
      bool written = false;
      unsigned used = 0;
      for (spirv::GlobalVariableOp v : all) {
        bool any = false;
        std::optional<SymbolTable::UseRange> uses =
            SymbolTable::getSymbolUses(v, getOperation());
        if (uses)
          for (SymbolTable::SymbolUse use : *uses)
            // Entry point interfaces name the variable but use nothing.
            if (auto address = dyn_cast<spirv::AddressOfOp>(use.getUser())) {
              any = true;
              for (Operation *user : address->getUsers())
                written |= writesThrough(user);
            }
        used += any;
      }
      if (!written || used < 2)
        continue;
      for (spirv::GlobalVariableOp v : all)
        v->setAttr("aliased", UnitAttr::get(&getContext()));
    }
  }

  /// Whether `op` (a user of a buffer's address, or of an access chain
  /// into it) may write the buffer: anything but a load, or a further
  /// access chain that only loads, counts as a write.
  static bool writesThrough(Operation *op) {
    if (isa<spirv::LoadOp>(op))
      return false;
    if (isa<spirv::AccessChainOp>(op))
      return llvm::any_of(op->getResult(0).getUsers(), writesThrough);
    return true;
  }

  // Per run (cleared by runOnOperation).
  SymbolTable *symbols = nullptr;
  DenseMap<std::pair<Operation *, Type>, spirv::GlobalVariableOp> aliases;
  llvm::MapVector<Operation *, SmallVector<spirv::GlobalVariableOp>> aliasesOf;
};

} // namespace
