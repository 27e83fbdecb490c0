//===- ChunkAffineScan.cpp - --tang-chunk-affine-scan -------------*- C++
//-*-===//
//
// Rewrites a tang.tensor_scan of affine maps S -> A_t S + B_t whose
// transitions are a scalar decay plus a rank-one update and whose inputs are
// rank one (the gated delta rule) into the chunked WY form. See Passes.td
// for the math and the conditions.
//
// The rewrite has three parts: recognising the monoid as the composition of
// affine maps (a term analysis of its combine); separating the element
// producers' yields into d I + u w^T and p v^T (a monomial analysis over
// the two matrix indices) and materialising the factors d (as its log), u,
// w, p and v as comprehensions cloned from those bodies; and the plan, the
// chunked algorithm written in tang IR (kPlan below), instantiated at the
// scan's shape, parsed and cloned in place of the scan.
//
//===----------------------------------------------------------------------===//

#include "Tang/Analysis/KernelMatchers.h"
#include "Tang/Dialect/Tang/IR/TangOps.h"
#include "Tang/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/StringExtras.h"

namespace mlir::tang {
#define GEN_PASS_DEF_TANGCHUNKAFFINESCAN
#include "Tang/Transforms/Passes.h.inc"
} // namespace mlir::tang

using namespace mlir;
using namespace mlir::tang;

namespace {

//===----------------------------------------------------------------------===//
// The elements: d I + u w^T and p v^T
//===----------------------------------------------------------------------===//

/// sign * prod(scalars) * prod(rowFactors)(i) * prod(colFactors)(j), times
/// the identity's element when `diagonal`.
struct Monomial {
  SmallVector<Value> scalars, rowFactors, colFactors;
  bool diagonal = false, negated = false;
};
using Form = SmallVector<Monomial>;

enum : unsigned { kRow = 1, kCol = 2 };

/// Separates a body's yield over its last two indices (row i, column j).
class Separator {
public:
  Separator(Value row, Value col) : row(row), col(col) {}

  /// Which of the row and column indices `v` depends on.
  unsigned deps(Value v) {
    if (v == row)
      return kRow;
    if (v == col)
      return kCol;
    auto it = memo.find(v);
    if (it != memo.end())
      return it->second;
    // The operands of the defining op and of the ops nested in it, those
    // defined outside it.
    unsigned d = 0;
    if (Operation *def = v.getDefiningOp())
      def->walk([&](Operation *inner) {
        for (Value o : inner->getOperands())
          if (!def->isAncestor(o.getParentRegion()->getParentOp()))
            d |= deps(o);
      });
    return memo[v] = d;
  }

  FailureOr<Form> separate(Value v) {
    switch (deps(v)) {
    case 0:
      return Form{Monomial{{v}, {}, {}}};
    case kRow:
      return Form{Monomial{{}, {v}, {}}};
    case kCol:
      return Form{Monomial{{}, {}, {v}}};
    default:
      break;
    }
    Operation *def = v.getDefiningOp();
    if (!def)
      return fail("it is an index");
    if (isa<arith::AddFOp, arith::SubFOp>(def)) {
      auto l = separate(def->getOperand(0));
      auto r = separate(def->getOperand(1));
      if (failed(l) || failed(r))
        return failure();
      for (Monomial m : *r) {
        m.negated ^= isa<arith::SubFOp>(def);
        l->push_back(m);
      }
      return l;
    }
    if (auto neg = dyn_cast<arith::NegFOp>(def)) {
      auto f = separate(neg.getOperand());
      if (succeeded(f))
        for (Monomial &m : *f)
          m.negated = !m.negated;
      return f;
    }
    if (auto mul = dyn_cast<arith::MulFOp>(def)) {
      auto l = separate(mul.getLhs());
      auto r = separate(mul.getRhs());
      if (failed(l) || failed(r))
        return failure();
      Form out;
      for (const Monomial &a : *l)
        for (const Monomial &b : *r) {
          Monomial m = a;
          llvm::append_range(m.scalars, b.scalars);
          llvm::append_range(m.rowFactors, b.rowFactors);
          llvm::append_range(m.colFactors, b.colFactors);
          m.diagonal |= b.diagonal;
          m.negated ^= b.negated;
          if (m.diagonal && (!m.rowFactors.empty() || !m.colFactors.empty()))
            return fail("its diagonal varies along the row (only a scalar "
                        "decay times the identity is chunked)");
          out.push_back(m);
        }
      return out;
    }
    if (auto sel = dyn_cast<arith::SelectOp>(def)) {
      if (!isIdentityMask(sel.getCondition()) ||
          !matchPattern(sel.getFalseValue(), m_AnyZeroFloat()))
        return fail("a select that is not select(i == j, d, 0)");
      auto f = separate(sel.getTrueValue());
      if (failed(f))
        return failure();
      for (Monomial &m : *f) {
        if (!m.rowFactors.empty() || !m.colFactors.empty())
          return fail("its diagonal varies along the row");
        m.diagonal = true;
      }
      return f;
    }
    return fail(Twine("'") + def->getName().getStringRef() +
                "' of both matrix indices");
  }

  std::string why;

private:
  FailureOr<Form> fail(const Twine &msg) {
    if (why.empty())
      why = msg.str();
    return failure();
  }

  /// `cmpi eq` of tang.index of the row and of the column.
  bool isIdentityMask(Value cond) {
    auto cmp = cond.getDefiningOp<arith::CmpIOp>();
    if (!cmp || cmp.getPredicate() != arith::CmpIPredicate::eq)
      return false;
    auto indexOf = [](Value v) -> Value {
      auto index = v.getDefiningOp<IndexOp>();
      if (!index || index.getIndices().size() != 1 ||
          !index.getMap().isIdentity())
        return {};
      return index.getIndices()[0];
    };
    Value a = indexOf(cmp.getLhs()), b = indexOf(cmp.getRhs());
    return (a == row && b == col) || (a == col && b == row);
  }

  Value row, col;
  DenseMap<Value, unsigned> memo;
};

/// A body value that the factor comprehension clones, and how: the
/// producer's row or column index becomes the factor's last index.
struct FactorPart {
  SmallVector<Value> values;
  Value index; // The producer's row or column index, or null.
};

//===----------------------------------------------------------------------===//
// The plan: the chunked algorithm, in tang IR
//===----------------------------------------------------------------------===//

// Placeholders: {PI} parallel indices ("%p0, %p1, "), {PX} their extents
// ("2, 4, "), {PS} the shape prefix ("2x4x"), {T} steps, {N} chunks, {C}
// steps per chunk, {CL} C - 1, {K} and {V} the state's shape, {E} the
// element type, {M} the monoid. Arguments: la (log decays), u, w, p, v (the
// factors), S0 (the initial state) and A0 (the transition's init, unused
// but by the chunks' scan).
/// A product of the plan, P[c, r, s] = Gamma (row_r . col_s) where s <
/// r (`slt`) or s <= r (`sle`): the decay exp(%{D}) and the mask its
/// epilogue; {DECAY} computes %d from %h = Dh[c, s, r] where needed.
constexpr const char *kDecayedProduct = R"mlir(
  %{P} = tang.comprehension ({PI}%c, %r, %s) [{PX}{N}, {C}, {C}] attributes {tang.saved} : tensor<{PS}{N}x{C}x{C}x{E}> {
    %h = tang.read %Dh[{PI}%c, %s, %r] : tensor<{PS}{N}x{C}x{C}x{E}>
{DECAY}    %e = math.exp %{D} : {E}
    %sum = tang.comprehension reduce (%k) [{K}] monoid(add) : {E} {
      %a = tang.read %{ROW}[{PI}%c * {C} + %r, %k] : tensor<{PS}{T}x{K}x{E}>
      %b = tang.read %{COL}[{PI}%c * {C} + %s, %k] : tensor<{PS}{T}x{K}x{E}>
      %m = arith.mulf %a, %b : {E}
      tang.yield %m : {E}
    }
    %ri = tang.index %r : i32
    %si = tang.index %s : i32
    %in = arith.cmpi {MASK}, %si, %ri : i32
    %zero = arith.constant 0.0 : {E}
    %x = arith.mulf %e, %sum : {E}
    %o = arith.select %in, %x, %zero : {E}
    tang.yield %o : {E}
  }
)mlir";

/// Qu and Qp's decay: exp(G[r] - G[s]) = exp(Dh[c, s, r] + la[r]) for s <
/// r, 1 at s = r.
constexpr const char *kOutputDecay =
    R"mlir(    %lr = tang.read %la[{PI}%c * {C} + %r] : tensor<{PS}{T}x{E}>
    %hl = arith.addf %h, %lr : {E}
    %rb = tang.index %r : i32
    %sb = tang.index %s : i32
    %before = arith.cmpi slt, %sb, %rb : i32
    %none = arith.constant 0.0 : {E}
    %d = arith.select %before, %hl, %none : {E}
)mlir";

constexpr const char *kPlan = R"mlir(
func.func @plan(%la: tensor<{PS}{T}x{E}>, %u: tensor<{PS}{T}x{K}x{E}>, %w: tensor<{PS}{T}x{K}x{E}>, %pp: tensor<{PS}{T}x{K}x{E}>, %v: tensor<{PS}{T}x{V}x{E}>, %S0: tensor<{PS}{K}x{V}x{E}>, %A0: tensor<{PS}{K}x{K}x{E}>{QARGS}) -> (tensor<{PS}{T}x{K}x{V}x{E}>, tensor<{PS}{N}x{K}x{V}x{E}>{OTYPES}) {
  // G[c, r]: the cumulative log decay of chunk c up to step r.
  %G = tang.scan ({PI}%c) along (%r) [{PX}{N}, {C}] monoid(add) : tensor<{PS}{N}x{C}x{E}> {
    %x = tang.read %la[{PI}%c * {C} + %r] : tensor<{PS}{T}x{E}>
    tang.yield %x : {E}
  }
  // Dh[c, s, r] = G[c, r - 1] - G[c, s] for s < r (0 for s >= r - 1), the
  // log decay from step s to step r - 1, summed directly: the difference of
  // the cumulative sums cancels (f32 holds G to |G| u, and |G| reaches
  // hundreds over a chunk where Dh is a few units). Measured at 4096
  // tokens on an H100, this masked sum takes 0.216 ms and a scan along r
  // (a thread a row, stores C apart) 0.200 ms: neither is cheap, the fix
  // is not to form Dh (a compensated cumulative sum in the epilogues). The
  // decay from s to r is Dh[c, s, r] + la[r] for s < r.
  %Dh = tang.comprehension ({PI}%c, %s, %r) reduce (%t) [{PX}{N}, {C}, {C}, {C}] monoid(add) attributes {tang.saved} : tensor<{PS}{N}x{C}x{C}x{E}> {
    %x = tang.read %la[{PI}%c * {C} + %t] : tensor<{PS}{T}x{E}>
    %ti = tang.index %t : i32
    %si = tang.index %s : i32
    %ri = tang.index %r : i32
    %after = arith.cmpi slt, %si, %ti : i32
    %before = arith.cmpi slt, %ti, %ri : i32
    %in = arith.andi %after, %before : i1
    %zero = arith.constant 0.0 : {E}
    %y = arith.select %in, %x, %zero : {E}
    tang.yield %y : {E}
  }
  // L[r, s] = Gamma (w_r . u_s), Lp[r, s] = Gamma (w_r . p_s) for s < r,
  // Gamma = exp(G[r - 1] - G[s]) = exp(Dh[s, r]). Every product of the
  // plan is a contraction of plain reads (tensor cores take those), its
  // scale and mask the product's epilogue.
{LPRODUCTS}  // x_r = E_r S_start + F_r: E = (I - L)^-1 diag(exp(G[r - 1])) W and
  // F = (I - L)^-1 Lp V, each by forward substitution (C^2 / 2
  // multiply-adds a column).
  %Wd = tang.comprehension ({PI}%c, %s, %k) [{PX}{N}, {C}, {K}] attributes {tang.saved} : tensor<{PS}{N}x{C}x{K}x{E}> {
    %gs = tang.read %G[{PI}%c, %s] : tensor<{PS}{N}x{C}x{E}>
    %ls = tang.read %la[{PI}%c * {C} + %s] : tensor<{PS}{T}x{E}>
    %ws = tang.read %w[{PI}%c * {C} + %s, %k] : tensor<{PS}{T}x{K}x{E}>
    %h = arith.subf %gs, %ls : {E}
    %e = math.exp %h : {E}
    %b = arith.mulf %e, %ws : {E}
    tang.yield %b : {E}
  }
  %E = tang.triangular_solve %Lu, %Wd : tensor<{PS}{N}x{C}x{C}x{E}>, tensor<{PS}{N}x{C}x{K}x{E}>
  %LpV = tang.comprehension ({PI}%c, %r, %j) reduce (%s) [{PX}{N}, {C}, {V}, {C}] monoid(add) attributes {tang.saved} : tensor<{PS}{N}x{C}x{V}x{E}> {
    %l = tang.read %Lp[{PI}%c, %r, %s] : tensor<{PS}{N}x{C}x{C}x{E}>
    %vs = tang.read %v[{PI}%c * {C} + %s, %j] : tensor<{PS}{T}x{V}x{E}>
    %b = arith.mulf %l, %vs : {E}
    tang.yield %b : {E}
  }
  %F = tang.triangular_solve %Lu, %LpV : tensor<{PS}{N}x{C}x{C}x{E}>, tensor<{PS}{N}x{C}x{V}x{E}>
  // The chunk as one affine step: A_c = exp(G[C-1]) I + Ug^T E,
  // B_c = Ug^T F + Pg^T V, with Ug = diag(Gamma) U and Pg = diag(Gamma) P,
  // Gamma = exp(G[C-1] - G[s]) = exp(Dh[s, C-1] + la[C-1]) for s < C-1,
  // 1 at s = C-1. Ug and Pg are stored transposed, [i, s]: the left
  // operands of products over s, contiguous in s.
  %Ug, %Pg = tang.comprehension ({PI}%c, %i, %s) [{PX}{N}, {K}, {C}] attributes {tang.saved} : tensor<{PS}{N}x{K}x{C}x{E}>, tensor<{PS}{N}x{K}x{C}x{E}> {
    %h = tang.read %Dh[{PI}%c, %s, {CL}] : tensor<{PS}{N}x{C}x{C}x{E}>
    %ll = tang.read %la[{PI}%c * {C} + {CL}] : tensor<{PS}{T}x{E}>
    %us = tang.read %u[{PI}%c * {C} + %s, %i] : tensor<{PS}{T}x{K}x{E}>
    %ps = tang.read %pp[{PI}%c * {C} + %s, %i] : tensor<{PS}{T}x{K}x{E}>
    %si = tang.index %s : i32
    %last = arith.constant {CL} : i32
    %before = arith.cmpi slt, %si, %last : i32
    %dl = arith.addf %h, %ll : {E}
    %zero = arith.constant 0.0 : {E}
    %d = arith.select %before, %dl, %zero : {E}
    %e = math.exp %d : {E}
    %a = arith.mulf %e, %us : {E}
    %b = arith.mulf %e, %ps : {E}
    tang.yield %a, %b : {E}, {E}
  }
  %Ac = tang.comprehension ({PI}%c, %i, %k) [{PX}{N}, {K}, {K}] attributes {tang.saved} : tensor<{PS}{N}x{K}x{K}x{E}> {
    %gl = tang.read %G[{PI}%c, {CL}] : tensor<{PS}{N}x{C}x{E}>
    %sum = tang.comprehension reduce (%s) [{C}] monoid(add) : {E} {
      %us = tang.read %Ug[{PI}%c, %i, %s] : tensor<{PS}{N}x{K}x{C}x{E}>
      %es = tang.read %E[{PI}%c, %s, %k] : tensor<{PS}{N}x{C}x{K}x{E}>
      %b = arith.mulf %us, %es : {E}
      tang.yield %b : {E}
    }
    %ii = tang.index %i : i32
    %ki = tang.index %k : i32
    %eq = arith.cmpi eq, %ii, %ki : i32
    %el = math.exp %gl : {E}
    %zero = arith.constant 0.0 : {E}
    %d = arith.select %eq, %el, %zero : {E}
    %x = arith.addf %d, %sum : {E}
    tang.yield %x : {E}
  }
  %UF = tang.comprehension ({PI}%c, %i, %j) reduce (%s) [{PX}{N}, {K}, {V}, {C}] monoid(add) attributes {tang.saved} : tensor<{PS}{N}x{K}x{V}x{E}> {
    %us = tang.read %Ug[{PI}%c, %i, %s] : tensor<{PS}{N}x{K}x{C}x{E}>
    %fs = tang.read %F[{PI}%c, %s, %j] : tensor<{PS}{N}x{C}x{V}x{E}>
    %x = arith.mulf %us, %fs : {E}
    tang.yield %x : {E}
  }
  %Bc = tang.comprehension ({PI}%c, %i, %j) [{PX}{N}, {K}, {V}] attributes {tang.saved} : tensor<{PS}{N}x{K}x{V}x{E}> {
    %uf = tang.read %UF[{PI}%c, %i, %j] : tensor<{PS}{N}x{K}x{V}x{E}>
    %sum = tang.comprehension reduce (%s) [{C}] monoid(add) : {E} {
      %ps = tang.read %Pg[{PI}%c, %i, %s] : tensor<{PS}{N}x{K}x{C}x{E}>
      %vs = tang.read %v[{PI}%c * {C} + %s, %j] : tensor<{PS}{T}x{V}x{E}>
      %x = arith.mulf %ps, %vs : {E}
      tang.yield %x : {E}
    }
    %x = arith.addf %uf, %sum : {E}
    tang.yield %x : {E}
  }
  // The state across chunks, and each chunk's starting state.
  %PA, %Sc = tang.tensor_scan {M}(%Ac, %Bc : tensor<{PS}{N}x{K}x{K}x{E}>, tensor<{PS}{N}x{K}x{V}x{E}>) init(%A0, %S0 : tensor<{PS}{K}x{K}x{E}>, tensor<{PS}{K}x{V}x{E}>) {tang.chunked} -> tensor<{PS}{N}x{K}x{K}x{E}>, tensor<{PS}{N}x{K}x{V}x{E}>
  %Ss = tang.comprehension ({PI}%c, %i, %j) [{PX}{N}, {K}, {V}] attributes {tang.saved} : tensor<{PS}{N}x{K}x{V}x{E}> {
    %s0 = tang.read %S0[{PI}%i, %j] : tensor<{PS}{K}x{V}x{E}>
    %sp = tang.read %Sc[{PI}%c - 1, %i, %j] fill(0.0) : tensor<{PS}{N}x{K}x{V}x{E}>
    %ci = tang.index %c : i32
    %z = arith.constant 0 : i32
    %first = arith.cmpi eq, %ci, %z : i32
    %x = arith.select %first, %s0, %sp : {E}
    tang.yield %x : {E}
  }
  %X = tang.comprehension ({PI}%c, %r, %j) [{PX}{N}, {C}, {V}] attributes {tang.saved} : tensor<{PS}{N}x{C}x{V}x{E}> {
    %f = tang.read %F[{PI}%c, %r, %j] : tensor<{PS}{N}x{C}x{V}x{E}>
    %sum = tang.comprehension reduce (%k) [{K}] monoid(add) : {E} {
      %e = tang.read %E[{PI}%c, %r, %k] : tensor<{PS}{N}x{C}x{K}x{E}>
      %s = tang.read %Ss[{PI}%c, %k, %j] : tensor<{PS}{N}x{K}x{V}x{E}>
      %m = arith.mulf %e, %s : {E}
      tang.yield %m : {E}
    }
    %x = arith.addf %sum, %f : {E}
    tang.yield %x : {E}
  }
  // Each step's state: exp(G[r]) S_start + sum_{s <= r} Gamma (u_s x_s + p_s v_s).
  %S = tang.comprehension ({PI}%t, %i, %j) [{PX}{T}, {K}, {V}] : tensor<{PS}{T}x{K}x{V}x{E}> {
    %gr = tang.read %G[{PI}%t floordiv {C}, %t mod {C}] : tensor<{PS}{N}x{C}x{E}>
    %ss = tang.read %Ss[{PI}%t floordiv {C}, %i, %j] : tensor<{PS}{N}x{K}x{V}x{E}>
    %er = math.exp %gr : {E}
    %base = arith.mulf %er, %ss : {E}
    %sum = tang.comprehension reduce (%s) [{C}] monoid(add) : {E} {
      %h = tang.read %Dh[{PI}%t floordiv {C}, %s, %t mod {C}] : tensor<{PS}{N}x{C}x{C}x{E}>
      %lr = tang.read %la[{PI}%t] : tensor<{PS}{T}x{E}>
      %hl = arith.addf %h, %lr : {E}
      %sb = tang.index %s : i32
      %tb = tang.index [%t mod {C}] : i32
      %before = arith.cmpi slt, %sb, %tb : i32
      %none = arith.constant 0.0 : {E}
      %d = arith.select %before, %hl, %none : {E}
      %us = tang.read %u[{PI}(%t floordiv {C}) * {C} + %s, %i] : tensor<{PS}{T}x{K}x{E}>
      %xs = tang.read %X[{PI}%t floordiv {C}, %s, %j] : tensor<{PS}{N}x{C}x{V}x{E}>
      %ps = tang.read %pp[{PI}(%t floordiv {C}) * {C} + %s, %i] : tensor<{PS}{T}x{K}x{E}>
      %vs = tang.read %v[{PI}(%t floordiv {C}) * {C} + %s, %j] : tensor<{PS}{T}x{V}x{E}>
      %e = math.exp %d : {E}
      %a = arith.mulf %us, %xs : {E}
      %b = arith.mulf %ps, %vs : {E}
      %ab = arith.addf %a, %b : {E}
      %x = arith.mulf %e, %ab : {E}
      %le = arith.cmpi sle, %sb, %tb : i32
      %y = arith.select %le, %x, %none : {E}
      tang.yield %y : {E}
    }
    %x = arith.addf %base, %sum : {E}
    tang.yield %x : {E}
  }
{OUTPUTS}
  return %S, %Sc{ORETS} : tensor<{PS}{T}x{K}x{V}x{E}>, tensor<{PS}{N}x{K}x{V}x{E}>{OTYPES}
}
)mlir";

/// One reader that contracts each step's state with a vector over its row,
/// o_r = S_r^T q_r, reassociated: exp(G[r]) S_start^T q_r + sum_{s <= r}
/// Gamma ((q_r . u_s) x_s + (q_r . p_s) v_s), K + 2C products an element
/// instead of the K C of the state substituted into the reader.
constexpr const char *kOutput = R"mlir(
{QPRODUCTS}  // Per chunk: q_r S_start, Qu X and Qp V.
  %O1{n} = tang.comprehension ({PI}%c, %r, %j) reduce (%k) [{PX}{N}, {C}, {V}, {K}] monoid(add) attributes {tang.saved} : tensor<{PS}{N}x{C}x{V}x{E}> {
    %a = tang.read %q{n}[{PI}%c * {C} + %r, %k] : tensor<{PS}{T}x{K}x{E}>
    %b = tang.read %Ss[{PI}%c, %k, %j] : tensor<{PS}{N}x{K}x{V}x{E}>
    %m = arith.mulf %a, %b : {E}
    tang.yield %m : {E}
  }
  %O2{n} = tang.comprehension ({PI}%c, %r, %j) reduce (%s) [{PX}{N}, {C}, {V}, {C}] monoid(add) attributes {tang.saved} : tensor<{PS}{N}x{C}x{V}x{E}> {
    %a = tang.read %Qu{n}[{PI}%c, %r, %s] : tensor<{PS}{N}x{C}x{C}x{E}>
    %b = tang.read %X[{PI}%c, %s, %j] : tensor<{PS}{N}x{C}x{V}x{E}>
    %m = arith.mulf %a, %b : {E}
    tang.yield %m : {E}
  }
  %O3{n} = tang.comprehension ({PI}%c, %r, %j) reduce (%s) [{PX}{N}, {C}, {V}, {C}] monoid(add) attributes {tang.saved} : tensor<{PS}{N}x{C}x{V}x{E}> {
    %a = tang.read %Qp{n}[{PI}%c, %r, %s] : tensor<{PS}{N}x{C}x{C}x{E}>
    %b = tang.read %v[{PI}%c * {C} + %s, %j] : tensor<{PS}{T}x{V}x{E}>
    %m = arith.mulf %a, %b : {E}
    tang.yield %m : {E}
  }
  %O{n} = tang.comprehension ({PI}%t, %j) [{PX}{T}, {V}] : tensor<{PS}{T}x{V}x{E}> {
    %gr = tang.read %G[{PI}%t floordiv {C}, %t mod {C}] : tensor<{PS}{N}x{C}x{E}>
    %er = math.exp %gr : {E}
    %o1 = tang.read %O1{n}[{PI}%t floordiv {C}, %t mod {C}, %j] : tensor<{PS}{N}x{C}x{V}x{E}>
    %o2 = tang.read %O2{n}[{PI}%t floordiv {C}, %t mod {C}, %j] : tensor<{PS}{N}x{C}x{V}x{E}>
    %o3 = tang.read %O3{n}[{PI}%t floordiv {C}, %t mod {C}, %j] : tensor<{PS}{N}x{C}x{V}x{E}>
    %base = arith.mulf %er, %o1 : {E}
    %x2 = arith.addf %o2, %o3 : {E}
    %x = arith.addf %base, %x2 : {E}
    tang.yield %x : {E}
  }
)mlir";

// One step (a decode update): S = d S0 + u (w^T S0) + p v^T, the
// transition never formed: w^T S0 a reduction of its own (saved: read by
// every row), the state a map fusion puts into its readers.
constexpr const char *kOneStep = R"mlir(
func.func @step(%la: tensor<{PS}1x{E}>, %u: tensor<{PS}1x{K}x{E}>, %w: tensor<{PS}1x{K}x{E}>, %pp: tensor<{PS}1x{K}x{E}>, %v: tensor<{PS}1x{V}x{E}>, %S0: tensor<{PS}{K}x{V}x{E}>{QARGS}) -> (tensor<{PS}1x{K}x{V}x{E}>{OTYPES}) {
  %wS = tang.comprehension ({PI}%t, %j) reduce (%m) [{PX}1, {V}, {K}] monoid(add) attributes {tang.saved} : tensor<{PS}1x{V}x{E}> {
    %a = tang.read %w[{PI}%t, %m] : tensor<{PS}1x{K}x{E}>
    %b = tang.read %S0[{PI}%m, %j] : tensor<{PS}{K}x{V}x{E}>
    %x = arith.mulf %a, %b : {E}
    tang.yield %x : {E}
  }
  %S = tang.comprehension ({PI}%t, %i, %j) [{PX}1, {K}, {V}] : tensor<{PS}1x{K}x{V}x{E}> {
    %l = tang.read %la[{PI}%t] : tensor<{PS}1x{E}>
    %d = math.exp %l : {E}
    %s = tang.read %S0[{PI}%i, %j] : tensor<{PS}{K}x{V}x{E}>
    %ui = tang.read %u[{PI}%t, %i] : tensor<{PS}1x{K}x{E}>
    %ws = tang.read %wS[{PI}%t, %j] : tensor<{PS}1x{V}x{E}>
    %pi = tang.read %pp[{PI}%t, %i] : tensor<{PS}1x{K}x{E}>
    %vj = tang.read %v[{PI}%t, %j] : tensor<{PS}1x{V}x{E}>
    %x = arith.mulf %d, %s : {E}
    %y = arith.mulf %ui, %ws : {E}
    %z = arith.mulf %pi, %vj : {E}
    %xy = arith.addf %x, %y : {E}
    %r = arith.addf %xy, %z : {E}
    tang.yield %r : {E}
  }
{OUTPUTS}  return %S{ORETS} : tensor<{PS}1x{K}x{V}x{E}>{OTYPES}
}
)mlir";

// A reader o = S^T q of the one step, reassociated: d (q^T S0) + (q . u)
// (w^T S0) + (q . p) v; q^T S0 reads S0 beside w^T S0 (one pass for both).
constexpr const char *kOneStepOutput = R"mlir(
  %qS{n} = tang.comprehension ({PI}%t, %j) reduce (%m) [{PX}1, {V}, {K}] monoid(add) attributes {tang.saved} : tensor<{PS}1x{V}x{E}> {
    %a = tang.read %q{n}[{PI}%t, %m] : tensor<{PS}1x{K}x{E}>
    %b = tang.read %S0[{PI}%m, %j] : tensor<{PS}{K}x{V}x{E}>
    %x = arith.mulf %a, %b : {E}
    tang.yield %x : {E}
  }
  %qu{n} = tang.comprehension ({PI}%t) reduce (%m) [{PX}1, {K}] monoid(add) : tensor<{PS}1x{E}> {
    %a = tang.read %q{n}[{PI}%t, %m] : tensor<{PS}1x{K}x{E}>
    %b = tang.read %u[{PI}%t, %m] : tensor<{PS}1x{K}x{E}>
    %x = arith.mulf %a, %b : {E}
    tang.yield %x : {E}
  }
  %qp{n} = tang.comprehension ({PI}%t) reduce (%m) [{PX}1, {K}] monoid(add) : tensor<{PS}1x{E}> {
    %a = tang.read %q{n}[{PI}%t, %m] : tensor<{PS}1x{K}x{E}>
    %b = tang.read %pp[{PI}%t, %m] : tensor<{PS}1x{K}x{E}>
    %x = arith.mulf %a, %b : {E}
    tang.yield %x : {E}
  }
  %O{n} = tang.comprehension ({PI}%t, %j) [{PX}1, {V}] : tensor<{PS}1x{V}x{E}> {
    %l = tang.read %la[{PI}%t] : tensor<{PS}1x{E}>
    %d = math.exp %l : {E}
    %s = tang.read %qS{n}[{PI}%t, %j] : tensor<{PS}1x{V}x{E}>
    %a = tang.read %qu{n}[{PI}%t] : tensor<{PS}1x{E}>
    %ws = tang.read %wS[{PI}%t, %j] : tensor<{PS}1x{V}x{E}>
    %c = tang.read %qp{n}[{PI}%t] : tensor<{PS}1x{E}>
    %vj = tang.read %v[{PI}%t, %j] : tensor<{PS}1x{V}x{E}>
    %x = arith.mulf %d, %s : {E}
    %y = arith.mulf %a, %ws : {E}
    %z = arith.mulf %c, %vj : {E}
    %xy = arith.addf %x, %y : {E}
    %r = arith.addf %xy, %z : {E}
    tang.yield %r : {E}
  }
)mlir";

std::string substitute(std::string text,
                       ArrayRef<std::pair<StringRef, std::string>> values) {
  for (const auto &[key, value] : values) {
    size_t at = 0;
    while ((at = text.find(key.str(), at)) != std::string::npos) {
      text.replace(at, key.size(), value);
      at += value.size();
    }
  }
  return text;
}

/// `text` with the reassociated outputs' placeholders filled: for each of
/// `outputs` contracting readers an argument q{n} ({QARGS}: `steps` x K)
/// and a result O{n} ({OTYPES}, {ORETS}: `steps` x V) computed by
/// `outputTemplate` ({OUTPUTS}).
std::string withOutputs(StringRef text, StringRef outputTemplate,
                        unsigned outputs, StringRef steps) {
  std::string qArgs, oTypes, oRets, oBodies;
  for (unsigned n = 0; n < outputs; ++n) {
    std::string id = std::to_string(n);
    qArgs += (", %q" + id + ": tensor<{PS}" + steps + "x{K}x{E}>").str();
    oTypes += (", tensor<{PS}" + steps + "x{V}x{E}>").str();
    oRets += ", %O" + id;
    oBodies += substitute(outputTemplate.str(), {{"{n}", id}});
  }
  return substitute(text.str(), {{"{QARGS}", qArgs},
                                 {"{OTYPES}", oTypes},
                                 {"{ORETS}", oRets},
                                 {"{OUTPUTS}", oBodies}});
}

/// The shape placeholders every template takes: {PI}, {PX}, {PS} of the
/// parallel extents, {K}, {V} and the element type {E}.
SmallVector<std::pair<StringRef, std::string>>
shapeValues(ArrayRef<int64_t> parallel, int64_t k, int64_t v, Type element) {
  std::string pi, px, ps, e;
  for (auto [n, x] : llvm::enumerate(parallel)) {
    pi += "%p" + std::to_string(n) + ", ";
    px += std::to_string(x) + ", ";
    ps += std::to_string(x) + "x";
  }
  llvm::raw_string_ostream(e) << element;
  return {{"{PI}", pi},
          {"{PX}", px},
          {"{PS}", ps},
          {"{K}", std::to_string(k)},
          {"{V}", std::to_string(v)},
          {"{E}", e}};
}

/// The plan's text at this shape.
std::string instantiatePlan(ArrayRef<int64_t> parallel, int64_t steps,
                            int64_t chunk, int64_t k, int64_t v, Type element,
                            StringRef monoid, unsigned outputs) {
  // L and Lp (s < r, Gamma = exp(Dh[c, s, r])); Qu and Qp of each reader
  // (s <= r).
  auto product = [](StringRef name, StringRef row, StringRef col,
                    StringRef mask, StringRef decay, StringRef d) {
    return substitute(kDecayedProduct, {{"{P}", name.str()},
                                        {"{ROW}", row.str()},
                                        {"{COL}", col.str()},
                                        {"{MASK}", mask.str()},
                                        {"{DECAY}", decay.str()},
                                        {"{D}", d.str()}});
  };
  std::string plan = substitute(
      kPlan, {{"{LPRODUCTS}", product("Lu", "w", "u", "slt", "", "h") +
                                  product("Lp", "w", "pp", "slt", "", "h")}});
  std::string output = substitute(
      kOutput,
      {{"{QPRODUCTS}",
        product("Qu{n}", "q{n}", "u", "sle", kOutputDecay, "d") +
            product("Qp{n}", "q{n}", "pp", "sle", kOutputDecay, "d")}});
  std::string text = withOutputs(plan, output, outputs, "{T}");
  text = substitute(text, {{"{T}", std::to_string(steps)},
                           {"{N}", std::to_string(steps / chunk)},
                           {"{CL}", std::to_string(chunk - 1)},
                           {"{C}", std::to_string(chunk)},
                           {"{M}", ("@" + monoid).str()}});
  return substitute(text, shapeValues(parallel, k, v, element));
}

/// The one-step form's text at this shape, with `outputs` reassociated
/// readers.
std::string instantiateOneStep(ArrayRef<int64_t> parallel, int64_t k, int64_t v,
                               Type element, unsigned outputs) {
  return substitute(withOutputs(kOneStep, kOneStepOutput, outputs, "1"),
                    shapeValues(parallel, k, v, element));
}

//===----------------------------------------------------------------------===//
// The rewrite
//===----------------------------------------------------------------------===//

/// Builds `tensor[P..., t, x] = prod(parts)` (negated when asked) as a map
/// comprehension before `at`, cloning each part's slice of `producer`'s
/// body with its row or column index as the new last index. Parts with no
/// index give `[P..., t]` (the log decays when `logs`: the log of each
/// value, `exp(x)` giving x, summed).
Value buildFactor(OpBuilder &b, Location loc, ComprehensionOp producer,
                  ArrayRef<FactorPart> parts, int64_t extent, bool negated,
                  bool logs) {
  Block &src = producer.getBodyBlock();
  unsigned rank = producer.getNumParallel();
  SmallVector<int64_t> shape(
      producer.getParallelExtents().take_front(rank - 2));
  if (extent)
    shape.push_back(extent);
  Type element = producer.getYield().getValues()[0].getType();
  auto type = RankedTensorType::get(shape, element);
  auto c =
      ComprehensionOp::create(b, loc, TypeRange{type}, shape,
                              ArrayRef<int64_t>{}, Attribute(), ScheduleAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&c.getBody());
  SmallVector<Value> idx;
  for (size_t i = 0; i < shape.size(); ++i)
    idx.push_back(body->addArgument(b.getIndexType(), loc));
  Value acc;
  auto combineWith = [&](Value x) {
    if (!acc)
      acc = x;
    else if (logs)
      acc = arith::AddFOp::create(b, loc, acc, x);
    else
      acc = arith::MulFOp::create(b, loc, acc, x);
  };
  for (const FactorPart &given : parts) {
    // Factors of 1 drop out; in a log, exp(x) is x.
    FactorPart part{{}, given.index};
    SmallVector<bool> needsLog;
    for (Value x : given.values) {
      if (matchPattern(x, m_OneFloat()))
        continue;
      auto exp = x.getDefiningOp<math::ExpOp>();
      part.values.push_back(logs && exp ? exp.getOperand() : x);
      needsLog.push_back(logs && !exp);
    }
    IRMapping map;
    for (unsigned i = 0; i + 2 < rank; ++i)
      map.map(src.getArgument(i), idx[i]);
    if (part.index)
      map.map(part.index, idx.back());
    // The slice of the values, in body order.
    llvm::SetVector<Operation *> slice;
    SmallVector<Value> work(part.values.begin(), part.values.end());
    while (!work.empty()) {
      Value x = work.pop_back_val();
      Operation *def = x.getDefiningOp();
      if (!def || def->getBlock() != &src || !slice.insert(def))
        continue;
      def->walk([&](Operation *inner) {
        for (Value o : inner->getOperands())
          work.push_back(o);
      });
    }
    for (Operation &op : src.without_terminator())
      if (slice.contains(&op))
        b.clone(op, map);
    for (auto [x, log] : llvm::zip(part.values, needsLog)) {
      Value y = map.lookupOrDefault(x);
      combineWith(log ? math::LogOp::create(b, loc, y).getResult() : y);
    }
  }
  if (!acc)
    acc = arith::ConstantOp::create(b, loc,
                                    b.getFloatAttr(element, logs ? 0.0 : 1.0));
  if (negated)
    acc = arith::NegFOp::create(b, loc, acc);
  YieldOp::create(b, loc, ValueRange{acc});
  return c.getResult(0);
}

/// Keeps a factor of the chunked plan materialised (tang.saved) unless it
/// is a view of a tensor of its own element type or a constant: the plan's
/// products take plain reads of one element type as operands (what tensor
/// cores load), and a factor fused into a product would be recomputed for
/// every term of its sum.
void keepFactor(Value factor) {
  auto c = factor.getDefiningOp<ComprehensionOp>();
  if (!c)
    return;
  Value y = c.getYield().getValues()[0];
  auto read = y.getDefiningOp<ReadOp>();
  if ((read && !read.getFill()) || matchPattern(y, m_Constant()))
    return;
  c->setAttr(kSavedAttrName, UnitAttr::get(c.getContext()));
}

/// A map comprehension of `shape` yielding the identity's element (or
/// zero, when `!identity`).
Value buildConstantMatrix(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                          Type element, bool identity) {
  auto type = RankedTensorType::get(shape, element);
  auto c =
      ComprehensionOp::create(b, loc, TypeRange{type}, shape,
                              ArrayRef<int64_t>{}, Attribute(), ScheduleAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&c.getBody());
  SmallVector<Value> idx;
  for (size_t i = 0; i < shape.size(); ++i)
    idx.push_back(body->addArgument(b.getIndexType(), loc));
  Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 0));
  Value v = zero;
  if (identity) {
    Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(element, 1));
    auto index = [&](Value i) {
      return IndexOp::create(b, loc, b.getI32Type(), i);
    };
    Value eq =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                              index(idx[idx.size() - 2]), index(idx.back()));
    v = arith::SelectOp::create(b, loc, eq, one, zero);
  }
  YieldOp::create(b, loc, ValueRange{v});
  return c.getResult(0);
}

/// A reader of the states that contracts each with a vector over its row,
/// o[P..., t, j] = sum_i S[P..., t, i, j] q(P..., t, i) (indices plain, in
/// any order): the plan computes it reassociated (kOutput).
struct StateContraction {
  ComprehensionOp op;
  ReadOp read;
  /// q, a value of op's body.
  Value factor;
  /// For each of the states' dimensions (P..., t, i, j), op's index.
  SmallVector<unsigned> position;
};

/// True if every value that `ops` use from outside `body` is defined
/// before `point` in its block (or in an enclosing one).
bool usesDefinedBefore(Block &body, ArrayRef<Operation *> ops,
                       Operation *point) {
  bool ok = true;
  for (Operation *op : ops)
    op->walk([&](Operation *inner) {
      for (Value o : inner->getOperands()) {
        Region *r = o.getParentRegion();
        if (body.getParent()->isAncestor(r))
          continue;
        Operation *def = o.getDefiningOp();
        if (def && def->getBlock() == point->getBlock() &&
            !def->isBeforeInBlock(point))
          ok = false;
      }
    });
  return ok;
}

std::optional<StateContraction> matchContraction(Operation *user, Value states,
                                                 Operation *scan) {
  auto op = dyn_cast<ComprehensionOp>(user);
  auto type = cast<RankedTensorType>(states.getType());
  unsigned rank = type.getRank();
  if (!op || isInIterationBody(op) || op.getNumResults() != 1 ||
      op.getNumReduced() != 1 || op.getNumParallel() != rank - 1 ||
      op.hasSymbolicExtents() || op.getBuiltinMonoid() != MonoidKind::Add)
    return std::nullopt;
  Block &body = op.getBodyBlock();
  auto mul = op.getYield().getValues()[0].getDefiningOp<arith::MulFOp>();
  if (!mul || mul->getBlock() != &body || !mul->hasOneUse())
    return std::nullopt;
  StateContraction m{op, {}, {}, {}};
  for (auto [x, y] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())}) {
    auto read = x.getDefiningOp<ReadOp>();
    if (read && read.getTensor() == states && read->getBlock() == &body &&
        !read.getFill() && x.hasOneUse()) {
      m.read = read;
      m.factor = y;
      break;
    }
  }
  if (!m.read || m.factor.getType() != type.getElementType())
    return std::nullopt;
  // The states are read once, at plain distinct indices, the row reduced.
  bool once = llvm::all_of(states.getUses(), [&](OpOperand &use) {
    return use.getOwner() == m.read || !op->isAncestor(use.getOwner());
  });
  if (!once)
    return std::nullopt;
  llvm::SmallBitVector seen(op.getNumIndices());
  for (auto [d, expr] : llvm::enumerate(m.read.getMap().getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    auto arg =
        dim ? dyn_cast<BlockArgument>(m.read.getIndices()[dim.getPosition()])
            : BlockArgument();
    if (!arg || arg.getOwner() != &body || seen.test(arg.getArgNumber()) ||
        op.getExtent(arg.getArgNumber()) != type.getDimSize(d))
      return std::nullopt;
    seen.set(arg.getArgNumber());
    m.position.push_back(arg.getArgNumber());
  }
  if (m.position[rank - 2] != op.getNumParallel())
    return std::nullopt;
  // q does not vary along the column, and what it reads exists before the
  // scan (the plan replaces the scan where it stands).
  BlockArgument col = body.getArgument(m.position.back());
  if (llvm::any_of(col.getUsers(),
                   [&](Operation *u) { return u != m.read.getOperation(); }))
    return std::nullopt;
  SmallVector<Operation *> ops;
  for (Operation &o : body.without_terminator())
    if (&o != m.read && &o != mul)
      ops.push_back(&o);
  if (!usesDefinedBefore(body, ops, scan))
    return std::nullopt;
  return m;
}

/// q of a contraction as a tensor [P..., t, i]: its body cloned, the state
/// read and the product left out.
Value buildContractionFactor(OpBuilder &b, Location loc, StateContraction m,
                             RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape().drop_back());
  auto factorType = RankedTensorType::get(shape, type.getElementType());
  auto c =
      ComprehensionOp::create(b, loc, TypeRange{factorType}, shape,
                              ArrayRef<int64_t>{}, Attribute(), ScheduleAttr());
  OpBuilder::InsertionGuard guard(b);
  Block &src = m.op.getBodyBlock();
  Block *body = b.createBlock(&c.getBody());
  IRMapping map;
  for (size_t d = 0; d < shape.size(); ++d)
    map.map(src.getArgument(m.position[d]),
            body->addArgument(b.getIndexType(), loc));
  Operation *mul = m.factor.getUses().begin()->getOwner();
  for (Operation &op : src.without_terminator())
    if (&op != m.read.getOperation() && &op != mul)
      b.clone(op, map);
  YieldOp::create(b, loc, ValueRange{map.lookupOrDefault(m.factor)});
  return c.getResult(0);
}

/// The contraction's result read from the plan's O [P..., t, j].
Value buildContractionResult(OpBuilder &b, Location loc, StateContraction m,
                             Value o) {
  auto resultType = m.op.getResult(0).getType();
  auto c = ComprehensionOp::create(
      b, loc, TypeRange{resultType}, m.op.getParallelExtents(),
      ArrayRef<int64_t>{}, Attribute(), ScheduleAttr());
  OpBuilder::InsertionGuard guard(b);
  Block *body = b.createBlock(&c.getBody());
  SmallVector<Value> idx;
  for (unsigned i = 0; i < m.op.getNumParallel(); ++i)
    idx.push_back(body->addArgument(b.getIndexType(), loc));
  SmallVector<AffineExpr> exprs;
  for (auto [d, pos] : llvm::enumerate(m.position))
    if (d + 2 != m.position.size())
      exprs.push_back(b.getAffineDimExpr(pos));
  auto map = AffineMap::get(idx.size(), 0, exprs, b.getContext());
  Value x = ReadOp::create(b, loc, o, map, idx);
  YieldOp::create(b, loc, ValueRange{x});
  return c.getResult(0);
}

/// The readers of `scan`'s states that contract each state with a vector
/// over its row (matchContraction), each once.
SmallVector<StateContraction> findContractions(TensorScanOp scan) {
  Value states = scan.getResult(1);
  SmallVector<StateContraction> contractions;
  SmallPtrSet<Operation *, 4> users;
  for (Operation *reader : states.getUsers())
    if (Operation *user = scan->getBlock()->findAncestorOpInBlock(*reader);
        user && users.insert(user).second)
      if (auto m = matchContraction(user, states, scan))
        contractions.push_back(*m);
  return contractions;
}

/// Parses `text` (one function: the plan or the one-step form), replaces
/// its arguments by `args`, moves its operations before `scan` (at the
/// scan's location) and returns what it returns.
FailureOr<SmallVector<Value>>
inlineTemplate(StringRef text, ArrayRef<Value> args, TensorScanOp scan) {
  ParserConfig config(scan.getContext(), /*verifyAfterParse=*/false);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, config);
  if (!module)
    return scan.emitError() << "tang-chunk-affine-scan: internal error: "
                               "its template does not parse";
  Block &body =
      cast<func::FuncOp>(module->getBody()->front()).getBody().front();
  for (auto [arg, val] : llvm::zip_equal(body.getArguments(), args))
    arg.replaceAllUsesWith(val);
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> results(ret.getOperands());
  ret->erase();
  for (Operation &op : llvm::make_early_inc_range(body)) {
    op.moveBefore(scan);
    op.walk([&](Operation *o) { o->setLoc(scan.getLoc()); });
  }
  return results;
}

/// Replaces each matched reader by a read of its reassociated output.
void replaceContractions(OpBuilder &b, ArrayRef<StateContraction> contractions,
                         ArrayRef<Value> outputs) {
  for (auto [m, o] : llvm::zip_equal(contractions, outputs)) {
    ComprehensionOp reader = m.op;
    b.setInsertionPoint(reader);
    reader.getResult(0).replaceAllUsesWith(
        buildContractionResult(b, reader.getLoc(), m, o));
    reader.erase();
  }
}

struct ChunkAffineScanPass
    : tang::impl::TangChunkAffineScanBase<ChunkAffineScanPass> {
  using TangChunkAffineScanBase::TangChunkAffineScanBase;

  /// Replaces the states of a one-step `scan` by kOneStep's map of the
  /// factors `args` (la, u, w, p, v, S0); erases the scan and the element
  /// producers left unused.
  LogicalResult rewriteOneStep(TensorScanOp scan, ArrayRef<Value> args,
                               ArrayRef<int64_t> parallel, int64_t k, int64_t v,
                               Type element,
                               ArrayRef<ComprehensionOp> producers) {
    // The readers that contract the state with a vector get it
    // reassociated (kOneStepOutput).
    OpBuilder b(scan);
    auto statesType = cast<RankedTensorType>(scan.getResult(1).getType());
    SmallVector<StateContraction> contractions = findContractions(scan);
    SmallVector<Value> allArgs(args);
    for (const StateContraction &m : contractions)
      allArgs.push_back(
          buildContractionFactor(b, scan.getLoc(), m, statesType));
    FailureOr<SmallVector<Value>> results = inlineTemplate(
        instantiateOneStep(parallel, k, v, element, contractions.size()),
        allArgs, scan);
    if (failed(results))
      return failure();
    Value states = results->front();
    replaceContractions(b, contractions, ArrayRef(*results).drop_front());
    scan.getResult(1).replaceAllUsesWith(states);
    scan.erase();
    if (states.use_empty())
      states.getDefiningOp()->erase();
    for (ComprehensionOp prod : producers)
      if (prod && prod->use_empty())
        prod.erase();
    ++numChunked;
    return success();
  }

  /// Rewrites `scan` if it matches; a remark says why an affine scan does
  /// not. Fails only on a bad option.
  LogicalResult rewrite(TensorScanOp scan) {
    auto monoid = SymbolTable::lookupNearestSymbolFrom<MonoidOp>(
        scan, scan.getMonoidAttr());
    if (scan->hasAttr(kChunkedAttrName) || !monoid ||
        !isAffineComposition(monoid))
      return success();
    auto skip = [&](const Twine &why) {
      scan.emitRemark() << "tang-chunk-affine-scan: not chunked: " << why;
      return success();
    };
    if (!scan.getResult(0).use_empty())
      return skip("the products of the transitions are used (only the "
                  "states are kept)");
    auto aType = cast<RankedTensorType>(scan.getElements()[0].getType());
    auto bType = cast<RankedTensorType>(scan.getElements()[1].getType());
    unsigned rank = aType.getRank();
    int64_t steps = aType.getDimSize(rank - 3);
    int64_t k = aType.getDimSize(rank - 1), v = bType.getDimSize(rank - 1);
    Type element = aType.getElementType();
    // The producers: map comprehensions over (P..., t, i, j).
    auto producerOf = [](Value e) -> std::pair<ComprehensionOp, Value> {
      auto r = dyn_cast<OpResult>(e);
      auto c = r ? dyn_cast<ComprehensionOp>(r.getOwner()) : nullptr;
      if (!c || c.getNumReduced() || isInIterationBody(c))
        return {};
      return {c, c.getYield().getValues()[r.getResultNumber()]};
    };
    auto [aProd, aYield] = producerOf(scan.getElements()[0]);
    if (!aProd)
      return skip("its transitions are not a map comprehension");
    Block &aBody = aProd.getBodyBlock();
    Separator aSep(aBody.getArgument(rank - 2), aBody.getArgument(rank - 1));
    FailureOr<Form> aForm = aSep.separate(aYield);
    if (failed(aForm))
      return skip("the transition is not d I + u w^T: " + aSep.why);
    SmallVector<Monomial> diagonal, lowRank;
    for (const Monomial &m : *aForm)
      (m.diagonal ? diagonal : lowRank).push_back(m);
    if (diagonal.size() != 1 || diagonal[0].negated)
      return skip("the transition's diagonal is not one positive decay "
                  "(d I with d a product)");
    if (lowRank.size() > 1)
      return skip("the transition's update has rank " + Twine(lowRank.size()) +
                  " (rank one is chunked)");
    auto [bProd, bYield] = producerOf(scan.getElements()[1]);
    if (!bProd)
      return skip("its inputs are not a map comprehension");
    Block &bBody = bProd.getBodyBlock();
    Separator bSep(bBody.getArgument(rank - 2), bBody.getArgument(rank - 1));
    FailureOr<Form> bForm = bSep.separate(bYield);
    if (failed(bForm))
      return skip("the input is not p v^T: " + bSep.why);
    if (bForm->size() != 1 || bForm->front().diagonal)
      return skip("the input is not rank one");
    for (const Monomial &m :
         llvm::concat<const Monomial>(diagonal, lowRank, *bForm))
      for (Value x :
           llvm::concat<const Value>(m.scalars, m.rowFactors, m.colFactors))
        if (x.getType() != element) {
          std::string type;
          llvm::raw_string_ostream(type) << x.getType();
          return skip("a factor has type " + type + ", not the state's");
        }

    int64_t c = chunk;
    if (c == 0)
      for (c = std::min<int64_t>(64, steps); steps % c; --c)
        ;
    // One step a chunk is the scan itself with the plan's overhead: a
    // prime length is left as it is; one step (a decode update) becomes
    // its map (kOneStep).
    bool oneStep = chunk == 0 && steps == 1;
    if (chunk == 0 && c == 1 && !oneStep)
      return skip("no chunk of 2 to 64 steps divides its " + Twine(steps) +
                  " steps");
    if (c < 1 || steps % c)
      return scan.emitError()
             << "tang-chunk-affine-scan: chunk=" << c
             << " does not divide the scan's " << steps << " steps";

    OpBuilder b(scan);
    Location loc = scan.getLoc();
    Value ai = aBody.getArgument(rank - 2), aj = aBody.getArgument(rank - 1);
    Value bi = bBody.getArgument(rank - 2), bj = bBody.getArgument(rank - 1);
    Value la = buildFactor(b, loc, aProd, {FactorPart{diagonal[0].scalars, {}}},
                           0, false, /*logs=*/true);
    Value u, w;
    if (lowRank.empty()) {
      SmallVector<int64_t> shape(aType.getShape().drop_back());
      u = buildConstantMatrix(b, loc, shape, element, false);
      w = u;
    } else {
      const Monomial &m = lowRank[0];
      u = buildFactor(b, loc, aProd,
                      {FactorPart{m.scalars, {}}, FactorPart{m.rowFactors, ai}},
                      k, m.negated, false);
      w = buildFactor(b, loc, aProd, {FactorPart{m.colFactors, aj}}, k, false,
                      false);
    }
    const Monomial &bm = bForm->front();
    Value p =
        buildFactor(b, loc, bProd,
                    {FactorPart{bm.scalars, {}}, FactorPart{bm.rowFactors, bi}},
                    k, bm.negated, false);
    Value vv = buildFactor(b, loc, bProd, {FactorPart{bm.colFactors, bj}}, v,
                           false, false);
    ArrayRef<int64_t> parallel = aType.getShape().take_front(rank - 3);
    Value s0, a0;
    if (!scan.getInit().empty()) {
      a0 = scan.getInit()[0];
      s0 = scan.getInit()[1];
    } else {
      SmallVector<int64_t> sShape(parallel), aShape(parallel);
      sShape.append({k, v});
      aShape.append({k, k});
      s0 = buildConstantMatrix(b, loc, sShape, element, false);
      a0 = buildConstantMatrix(b, loc, aShape, element, true);
    }

    if (oneStep) {
      // The transition's init (the identity) is the scan's alone.
      auto aInit = a0.getDefiningOp<ComprehensionOp>();
      if (failed(rewriteOneStep(scan, {la, u, w, p, vv, s0}, parallel, k, v,
                                element, {aProd, bProd})))
        return failure();
      if (aInit && aInit->use_empty())
        aInit.erase();
      return success();
    }

    // The readers that contract each state with a vector get it
    // reassociated (the state substituted into them would cost K C a
    // value).
    auto statesType = cast<RankedTensorType>(scan.getResult(1).getType());
    SmallVector<StateContraction> contractions = findContractions(scan);
    SmallVector<Value> args = {la, u, w, p, vv, s0, a0};
    for (const StateContraction &m : contractions)
      args.push_back(buildContractionFactor(b, loc, m, statesType));
    if (plainOperands) {
      for (Value factor : {u, w, p, vv})
        keepFactor(factor);
      for (Value q : ArrayRef(args).drop_front(7))
        keepFactor(q);
    }
    // The plan's ops move into the function, its arguments replaced by the
    // factors: (the states, the chunks' states, the outputs).
    FailureOr<SmallVector<Value>> results = inlineTemplate(
        instantiatePlan(parallel, steps, c, k, v, element, monoid.getSymName(),
                        contractions.size()),
        args, scan);
    if (failed(results))
      return failure();
    Value states = (*results)[0], chunkStates = (*results)[1];
    replaceContractions(b, contractions, ArrayRef(*results).drop_front(2));
    // A read of the last step's state (the final state) reads the last
    // chunk's, which the chunks' scan computed.
    for (OpOperand &use :
         llvm::make_early_inc_range(scan.getResult(1).getUses())) {
      auto read = dyn_cast<ReadOp>(use.getOwner());
      if (!read || read.getFill())
        continue;
      AffineMap map = read.getMap();
      auto t = dyn_cast<AffineConstantExpr>(map.getResult(rank - 3));
      if (!t || t.getValue() != steps - 1)
        continue;
      SmallVector<AffineExpr> coords(map.getResults());
      coords[rank - 3] = b.getAffineConstantExpr(steps / c - 1);
      read.setMapAttr(AffineMapAttr::get(AffineMap::get(
          map.getNumDims(), map.getNumSymbols(), coords, b.getContext())));
      use.set(chunkStates);
    }
    scan.getResult(1).replaceAllUsesWith(states);
    scan.erase();
    if (states.use_empty())
      states.getDefiningOp()->erase();
    for (ComprehensionOp prod : {aProd, bProd})
      if (prod && prod->use_empty())
        prod.erase();
    ++numChunked;
    return success();
  }

  void runOnOperation() override {
    SmallVector<TensorScanOp> scans;
    getOperation().walk([&](TensorScanOp s) { scans.push_back(s); });
    for (TensorScanOp s : scans)
      if (failed(rewrite(s)))
        return signalPassFailure();
  }
};

} // namespace
