//===- TangDialect.h - tang dialect -----------------------------*- C++ -*-===//
//
// The tang dialect: views and comprehensions.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGDIALECT_H
#define TANG_DIALECT_TANG_IR_TANGDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "Tang/Dialect/Tang/IR/TangOpsDialect.h.inc"

namespace mlir::tang {

/// The names of the dialect's discardable attributes (TangDialect.td says
/// where each belongs; the dialect verifies them).
inline constexpr StringLiteral kSavedAttrName =
    TangDialect::SavedAttrHelper::getNameStr();
inline constexpr StringLiteral kChunkedAttrName =
    TangDialect::ChunkedAttrHelper::getNameStr();
inline constexpr StringLiteral kFuseIdAttrName =
    TangDialect::FuseIdAttrHelper::getNameStr();
inline constexpr StringLiteral kShapeClassAttrName =
    TangDialect::ShapeClassAttrHelper::getNameStr();
inline constexpr StringLiteral kTrafficTileAttrName =
    TangDialect::TrafficTileAttrHelper::getNameStr();
inline constexpr StringLiteral kScheduleSourceAttrName =
    TangDialect::ScheduleSourceAttrHelper::getNameStr();
inline constexpr StringLiteral kKernelFormAttrName =
    TangDialect::KernelFormAttrHelper::getNameStr();
inline constexpr StringLiteral kNumInputsAttrName =
    TangDialect::NumInputsAttrHelper::getNameStr();
inline constexpr StringLiteral kTensorMapParamsAttrName =
    TangDialect::TensorMapParamsAttrHelper::getNameStr();
inline constexpr StringLiteral kSizesAttrName =
    TangDialect::SizesAttrHelper::getNameStr();
inline constexpr StringLiteral kShapeAttrName =
    TangDialect::ShapeAttrHelper::getNameStr();
inline constexpr StringLiteral kSizesBufferAttrName =
    TangDialect::SizesBufferAttrHelper::getNameStr();
inline constexpr StringLiteral kDonateAttrName =
    TangDialect::DonateAttrHelper::getNameStr();
inline constexpr StringLiteral kAliasesAttrName =
    TangDialect::AliasesAttrHelper::getNameStr();
inline constexpr StringLiteral kIndexChecksAttrName =
    TangDialect::IndexChecksAttrHelper::getNameStr();
inline constexpr StringLiteral kDataAttrName =
    TangDialect::DataAttrHelper::getNameStr();
inline constexpr StringLiteral kSubgroupLocalBarrierAttrName =
    TangDialect::SubgroupLocalAttrHelper::getNameStr();

} // namespace mlir::tang

#endif // TANG_DIALECT_TANG_IR_TANGDIALECT_H
