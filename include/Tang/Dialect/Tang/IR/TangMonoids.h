//===- TangMonoids.h - the builtin monoids, defined once --------*- C++ -*-===//
//
// The semantics of every builtin monoid in one place: its carrier, its
// identity, how a body's yields are lifted into the carrier, how two
// carriers combine, and what the comprehension's results are (finalise).
// Lift, combine and finalise are built as arith/math IR at a builder, so
// that every consumer shares them exactly:
//
//  * the kernel emitters emit that IR into kernels (BodyEmitter);
//  * the reference interpreter compiles that same IR and evaluates it in
//    float64 (and checks the monoid laws on it);
//  * --tang-grad and the printers see only the IR the emitters made.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGMONOIDS_H
#define TANG_DIALECT_TANG_IR_TANGMONOIDS_H

#include "Tang/Dialect/Tang/IR/TangAttrs.h"

#include "mlir/IR/Builders.h"

namespace mlir::tang {

/// The carrier's component types of `kind` for a body yielding
/// `yieldTypes`: the yields themselves, but (max, sum) of the score for
/// softmax_norm and (max, sum, accumulator) for online_softmax.
SmallVector<Type> getBuiltinCarrierTypes(MonoidKind kind, TypeRange yieldTypes);

/// The identity of `kind`, one attribute per carrier component: 0 for add
/// and or, 1 for mul, all ones for and, the lowest (highest) value of the
/// type for max (min), (lowest, highest index) for argmax, (highest,
/// highest index) for argmin, (-inf, 0[, 0]) for the softmax monoids.
SmallVector<TypedAttr> getBuiltinIdentity(MonoidKind kind,
                                          TypeRange carrierTypes);

/// The carrier of the yields: (x, 1) for softmax_norm, (s, 1, v) for
/// online_softmax, the yields themselves otherwise.
SmallVector<Value> buildBuiltinLift(OpBuilder &b, Location loc, MonoidKind kind,
                                    TypeRange carrierTypes, ValueRange yields);

/// combine(x, y): add, mul, and, or; max and min propagating NaN; argmax and
/// argmin keeping the better value, NaN beating every number (as NumPy's),
/// ties to the smaller index; the softmax monoids rescaling both masses to
/// the larger maximum (a maximum of -inf scales by 1, so that masked scores
/// give the identity, never NaN). With `approximate`, exponentials may use
/// their fast approximation.
SmallVector<Value> buildBuiltinCombine(OpBuilder &b, Location loc,
                                       MonoidKind kind, ValueRange x,
                                       ValueRange y, bool approximate = false);

/// combine(carrier, lift(yields)), the way a reduction consumes one element:
/// for the softmax monoids with one exponential per element instead of the
/// two a general combine needs (a new maximum rescales the carrier by
/// exp(m - x), otherwise the element adds exp(x - m); a masked x = -inf adds
/// nothing); for the others exactly the combine.
SmallVector<Value> buildBuiltinAccumulate(OpBuilder &b, Location loc,
                                          MonoidKind kind,
                                          TypeRange carrierTypes,
                                          ValueRange carrier, ValueRange yields,
                                          bool approximate = false);

/// The point the softmax monoids take exponents from for a maximum `m`:
/// m, or 0 where m is -inf (so that an all -inf carrier, or a run of masked
/// scores, scales by exp(-inf) = 0 instead of giving NaN). Kernels that
/// join several elements at once to a carrier use it like the combine.
Value buildSoftmaxExponentBase(OpBuilder &b, Location loc, Value m);

/// The comprehension's results from the carrier: acc / l for
/// online_softmax, the carrier itself otherwise.
SmallVector<Value> buildBuiltinFinalize(OpBuilder &b, Location loc,
                                        MonoidKind kind, ValueRange carrier,
                                        bool approximate = false);

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGMONOIDS_H
