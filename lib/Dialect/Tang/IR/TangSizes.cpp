//===- TangSizes.cpp - symbolic sizes of a function -------------*- C++ -*-===//

#include "Tang/Dialect/Tang/IR/TangSizes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::tang;

//===----------------------------------------------------------------------===//
// Symbols and sizes
//===----------------------------------------------------------------------===//

SmallVector<SizeSymbol> mlir::tang::getSizeSymbols(FunctionOpInterface func) {
  SmallVector<SizeSymbol> symbols;
  for (auto [i, t] : llvm::enumerate(func.getArgumentTypes())) {
    if (t.isIndex()) {
      symbols.push_back({static_cast<unsigned>(i), -1});
      continue;
    }
    if (auto tt = dyn_cast<RankedTensorType>(t))
      for (auto [d, n] : llvm::enumerate(tt.getShape()))
        if (ShapedType::isDynamic(n))
          symbols.push_back({static_cast<unsigned>(i), static_cast<int>(d)});
  }
  return symbols;
}

std::string mlir::tang::getSizeSymbolName(SizeSymbol s) {
  std::string name = "%arg" + std::to_string(s.argNumber);
  if (s.dim < 0)
    return name;
  return "dim " + std::to_string(s.dim) + " of " + name;
}

LogicalResult mlir::tang::parseSizeSpec(FunctionOpInterface func,
                                        StringRef spec, SizeSymbol &symbol,
                                        int64_t &value) {
  auto [name, number] = spec.split('=');
  auto [argPart, dimPart] = name.split('.');
  unsigned arg = 0, dim = 0;
  if (!argPart.consume_front("arg") || argPart.getAsInteger(10, arg) ||
      arg >= func.getNumArguments() || number.getAsInteger(10, value) ||
      value < 0)
    return failure();
  Type type = func.getArgumentTypes()[arg];
  if (dimPart.empty()) {
    symbol = SizeSymbol{arg, -1};
    return success(type.isIndex());
  }
  auto t = dyn_cast<RankedTensorType>(type);
  if (dimPart.getAsInteger(10, dim) || !t || dim >= t.getRank() ||
      !t.isDynamicDim(dim) || value < 1)
    return failure();
  symbol = SizeSymbol{arg, static_cast<int>(dim)};
  return success();
}

Size Size::symbol(unsigned s) {
  Size r;
  r.coeffs.assign(s + 1, 0);
  r.coeffs[s] = 1;
  return r;
}

bool Size::isConstant() const {
  return llvm::all_of(coeffs, [](int64_t c) { return c == 0; });
}

Size Size::operator+(const Size &o) const {
  Size r = *this;
  r.constant += o.constant;
  if (r.coeffs.size() < o.coeffs.size())
    r.coeffs.resize(o.coeffs.size(), 0);
  for (auto [i, c] : llvm::enumerate(o.coeffs))
    r.coeffs[i] += c;
  return r;
}

Size Size::operator*(int64_t k) const {
  Size r = *this;
  r.constant *= k;
  for (int64_t &c : r.coeffs)
    c *= k;
  return r;
}

Size Size::operator-(const Size &o) const { return *this + o * -1; }

bool Size::operator==(const Size &o) const {
  if (constant != o.constant)
    return false;
  for (size_t i = 0, e = std::max(coeffs.size(), o.coeffs.size()); i < e; ++i)
    if (getCoeff(i) != o.getCoeff(i))
      return false;
  return true;
}

int64_t Size::evaluate(ArrayRef<int64_t> symbols) const {
  int64_t v = constant;
  for (auto [i, c] : llvm::enumerate(coeffs))
    if (c)
      v += c * symbols[i];
  return v;
}

bool Size::isProvablyNonNegative() const {
  // With every symbol >= 0 the minimum is the constant when no coefficient
  // is negative; a negative one makes the size unbounded below.
  return constant >= 0 &&
         llvm::all_of(coeffs, [](int64_t c) { return c >= 0; });
}

void Size::print(raw_ostream &os, ArrayRef<SizeSymbol> symbols) const {
  bool first = true;
  for (auto [i, c] : llvm::enumerate(coeffs)) {
    if (!c)
      continue;
    if (!first)
      os << (c < 0 ? " - " : " + ");
    else if (c < 0)
      os << "-";
    int64_t a = c < 0 ? -c : c;
    if (a != 1)
      os << a << " * ";
    os << (i < symbols.size() ? getSizeSymbolName(symbols[i])
                              : "s" + std::to_string(i));
    first = false;
  }
  if (first)
    os << constant;
  else if (constant)
    os << (constant < 0 ? " - " : " + ")
       << (constant < 0 ? -constant : constant);
}

std::string Size::str(ArrayRef<SizeSymbol> symbols) const {
  std::string s;
  llvm::raw_string_ostream os(s);
  print(os, symbols);
  return s;
}

std::string Size::strNonNegative(ArrayRef<SizeSymbol> symbols) const {
  // Negative terms move to the left: constant + P - N >= 0 is N <= P.
  Size pos, neg;
  (constant < 0 ? neg : pos).constant = constant < 0 ? -constant : constant;
  for (auto [i, c] : llvm::enumerate(coeffs))
    if (c)
      (c < 0 ? neg : pos) = (c < 0 ? neg : pos) + Size::symbol(i) * std::abs(c);
  return neg.str(symbols) + " <= " + pos.str(symbols);
}

std::string SizeRequirement::describeBroken(ArrayRef<SizeSymbol> symbols,
                                            ArrayRef<int64_t> sizes) const {
  std::string s = what + " only if " + expr.strNonNegative(symbols) + ", but ";
  bool first = true;
  for (auto [i, sym] : llvm::enumerate(symbols)) {
    if (!expr.getCoeff(i))
      continue;
    s += (first ? "" : ", ") + getSizeSymbolName(sym) + " = " +
         std::to_string(sizes[i]);
    first = false;
  }
  return s;
}
