//===- TangOps.h - tang operations ------------------------------*- C++ -*-===//

#ifndef TANG_DIALECT_TANG_IR_TANGOPS_H
#define TANG_DIALECT_TANG_IR_TANGOPS_H

#include "Tang/Dialect/Tang/IR/TangAffine.h"
#include "Tang/Dialect/Tang/IR/TangAttrs.h"
#include "Tang/Dialect/Tang/IR/TangDialect.h"
#include "Tang/Dialect/Tang/IR/TangSizes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::tang {
class ComprehensionOp;
class MonoidOp;
class YieldOp;
} // namespace mlir::tang

#define GET_OP_CLASSES
#include "Tang/Dialect/Tang/IR/TangOps.h.inc"

namespace mlir::tang {

/// The comprehension that owns `index` as an iteration index, or null if
/// `index` is not a comprehension's block argument.
ComprehensionOp getOwningComprehension(Value index);

/// Whether `op` is in the body of a comprehension or of a scatter (not at a
/// function's level).
bool isInIterationBody(Operation *op);

/// Whether schedule `s` of `op` makes a row kernel without a row (the
/// `simt` kernel of TangAttrs.td): `op` is a map (no reduced index) whose
/// body holds nested reductions and whose last index is one per block
/// (tile 1, not serial; an extent of 1 too): each point a block, its
/// threads sharing the nested reductions (a logsumexp per row of a
/// vocabulary). The one spelling of it for the schedule, the kernel form,
/// the tuner and the precision emulator.
bool isRowlessSchedule(ComprehensionOp op, ScheduleAttr s);

/// A column reduction's column kernel, read off its schedule: the last
/// parallel index `c` in strips of 32 `vector` columns along block_x (32
/// threads, a lane `vector` columns); the other parallel indices,
/// `outer`, one point per block along block_z (their points row-major,
/// `outerPoints` of them, at most 65535); the reduced indices whole,
/// `warps` threads on the last (a warp per sub-run of the `rows`: every
/// reduced point, row-major), split among `splits` blocks along block_y
/// (split_k). On a target with 32-lane warps only, static sizes, no
/// nested reductions. The one reading of it for the kernel form
/// (ColumnKernel.cpp, which also needs carriers of 32 bits) and the
/// precision emulator.
struct ColumnSchedule {
  unsigned c;
  SmallVector<unsigned> outer;
  int64_t vector, warps, splits, rows;
  int64_t outerPoints = 1;
};
std::optional<ColumnSchedule> getColumnSchedule(ComprehensionOp op);

//===----------------------------------------------------------------------===//
// Sizes: what extents and dimensions denote (Size, TangSizes.h)
//===----------------------------------------------------------------------===//

/// The function whose size symbols `v`'s sizes are written in.
FunctionOpInterface getSizeScope(Value v);

/// The size an `index` value denotes, when it is a function-level size
/// expression: an `index` argument of the function, `tensor.dim` of a
/// tensor at a constant dimension, an `arith.constant`, or
/// `arith.addi`/`arith.subi` of sizes and `arith.muli` by a constant. Fails
/// otherwise, with the reason in `why`.
FailureOr<Size> getSizeOf(Value v, std::string *why = nullptr);

/// The size of dimension `d` of the ranked tensor `tensor`: a constant for a
/// static dimension, a symbol for a `?` dimension of a function argument,
/// the extent behind a `?` dimension of a comprehension's result. Fails
/// for a `?` dimension of anything else.
FailureOr<Size> getDimSize(Value tensor, unsigned d);

/// The extent of iteration index `index` (a block argument of a
/// comprehension, scan or scatter body).
FailureOr<Size> getIndexExtent(Value index);

/// The bounds conditions of an access at coordinates `map` (dimensions are
/// `indices`, iteration indices in scope; symbols, if any, data values that
/// are not checked here) into `tensor`: for each coordinate with symbolic
/// parts, lowest >= 0 and highest <= dim - 1. Fails, with a diagnostic at
/// `op`, on a coordinate over a symbolic extent that is not linear.
/// Coordinates whose range is fully static are not listed (the verifier
/// checks them exactly).
FailureOr<SmallVector<SizeRequirement>>
getSymbolicBoundsConditions(Operation *op, AffineMap map, ValueRange indices,
                            Value tensor);

/// The conditions on `func`'s size symbols that the verifier could not
/// prove for every size: reads and gathers in bounds, symbolic extents
/// positive. A run checks them first and refuses sizes that break one.
SmallVector<SizeRequirement> collectSizeRequirements(FunctionOpInterface func);

/// True if `op` (a function, comprehension, scan or scatter) has a symbolic
/// extent, reads, writes or produces a tensor with a `?` dimension, or
/// computes with a size in a body, anywhere in it (a function: or takes an
/// `index` argument).
bool hasSymbolicSizes(Operation *op);

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGOPS_H
