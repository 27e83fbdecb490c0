//===- TangOps.td - tang operations ------------------------*- tablegen -*-===//
//
// tang.comprehension, tang.read, tang.view, tang.index, tang.yield and
// tang.monoid.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGOPS_TD
#define TANG_DIALECT_TANG_IR_TANGOPS_TD

include "Tang/Dialect/Tang/IR/TangDialect.td"
include "Tang/Dialect/Tang/IR/TangAttrs.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// ComprehensionOp
//===----------------------------------------------------------------------===//

def Tang_ComprehensionOp : Tang_Op<"comprehension", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "a reduction under a monoid over an iteration domain";
  let description = [{
    A comprehension has an iteration domain of **parallel** indices, which
    index its result, and **reduced** indices, whose values are combined under
    a monoid. The body's block arguments are the indices (parallel first);
    its operations compute one element of the domain as a scalar expression
    graph and `tang.yield` it. Extents are listed after the index names,
    parallel indices first.

    ```mlir
    // C[i, j] = sum_k A[i, k] * B[k, j]
    %C = tang.comprehension (%i, %j) reduce (%k) [64, 32, 128] monoid(add)
           : tensor<64x32xf32> {
      %a = tang.read %A[%i, %k] : tensor<64x128xf32>
      %b = tang.read %B[%k, %j] : tensor<128x32xf32>
      %p = arith.mulf %a, %b : f32
      tang.yield %p : f32
    }
    ```

    * Without reduced indices a comprehension is a map and takes no monoid.
    * A comprehension without parallel indices nested in another
      comprehension's body yields scalars, e.g. the mean square in RMSNorm:
      `%ss = tang.comprehension reduce (%k) [64] monoid(add) : f32 {...}`.
      Nested comprehensions may use the indices of every enclosing one.
    * The monoid is a builtin (`monoid(add)`, see `#tang.monoid`) or a
      user-defined `tang.monoid` symbol (`monoid(@welford)`). Monoids with a
      tuple carrier (argmax, the softmax normaliser, user-defined tuples)
      give several results.
    * An optional `schedule` attribute (`#tang.schedule`) says how to tile
      and map the domain; it never changes the result beyond rounding.
    * An extent may be a size: an SSA `index` value at function level (an
      `index` argument, `tensor.dim` of a tensor, constants and sums of
      those, see TangSizes.h). The result's dimension is then `?`:

      ```mlir
      // Decode attention's scores over a context of %len positions.
      func.func @scores(%q: tensor<64xf32>, %K: tensor<4096x64xf32>,
                        %len: index) -> tensor<?xf32> {
        %s = tang.comprehension (%t) reduce (%d) [%len, 64] monoid(add)
               : tensor<?xf32> { ... tang.read %K[%t, %d] ... }
        return %s : tensor<?xf32>
      }
      ```

      The verifier proves reads in bounds for every size where it can
      (`%t` over a `?` dimension whose size is that extent); what it
      cannot prove (here `%len <= 4096`) is a size requirement that every
      run checks before anything executes, naming the size and its value.
  }];

  let arguments = (ins
    Variadic<Index>:$dynamic_extents,
    DenseI64ArrayAttr:$parallel_extents,
    DenseI64ArrayAttr:$reduced_extents,
    OptionalAttr<AnyAttrOf<[Tang_MonoidAttr, FlatSymbolRefAttr]>>:$monoid,
    OptionalAttr<Tang_ScheduleAttr>:$schedule
  );
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let builders = [
    // A comprehension of static extents.
    OpBuilder<(ins "::mlir::TypeRange":$results,
                   "::llvm::ArrayRef<int64_t>":$parallel_extents,
                   "::llvm::ArrayRef<int64_t>":$reduced_extents,
                   CArg<"::mlir::Attribute", "{}">:$monoid,
                   CArg<"::mlir::tang::ScheduleAttr", "{}">:$schedule), [{
      build($_builder, $_state, results, ::mlir::ValueRange(),
            parallel_extents, reduced_extents, monoid, schedule);
    }]>
  ];

  let extraClassDeclaration = [{
    /// Number of parallel / reduced / all iteration indices.
    unsigned getNumParallel() { return getParallelExtents().size(); }
    unsigned getNumReduced() { return getReducedExtents().size(); }
    unsigned getNumIndices() { return getNumParallel() + getNumReduced(); }

    /// The static extent of iteration index `pos` (parallel indices first),
    /// or ShapedType::kDynamic for a symbolic one. What a symbolic extent
    /// denotes is answered by getIndexExtent/getSizeOf (TangSizes.h).
    int64_t getExtent(unsigned pos);

    /// True if the extent of index `pos` is an SSA value (a size).
    bool isSymbolicExtent(unsigned pos) {
      return ::mlir::ShapedType::isDynamic(getExtent(pos));
    }
    /// The size value of the symbolic extent of index `pos`.
    ::mlir::Value getDynamicExtent(unsigned pos);
    /// True if some extent is symbolic.
    bool hasSymbolicExtents() { return !getDynamicExtents().empty(); }

    /// The block argument of iteration index `pos`.
    ::mlir::BlockArgument getIndex(unsigned pos) {
      return getBody().front().getArgument(pos);
    }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }

    /// True if index `pos` is a reduced index.
    bool isReducedIndex(unsigned pos) { return pos >= getNumParallel(); }

    /// The terminator of the body.
    YieldOp getYield();

    /// The builtin monoid, if the monoid is one.
    std::optional<MonoidKind> getBuiltinMonoid();
  }];
}

//===----------------------------------------------------------------------===//
// ReadOp
//===----------------------------------------------------------------------===//

def Tang_ReadOp : Tang_Op<"read", [Pure]> {
  let summary = "read a tensor element at affine expressions of indices";
  let description = [{
    Reads one element of a function-level tensor. The coordinates are affine
    expressions of the iteration indices of enclosing comprehensions (written
    like `affine.load`'s), so every access function is visible to analysis.
    The number of expressions equals the tensor's rank, and every expression
    must stay in bounds over the whole iteration domain, unless the read
    declares a fill value: a padded read yields it wherever a coordinate
    falls outside the tensor (a convolution's zero padding, a max-pool's
    `-inf`). The fill is a literal converted to the element type; write a
    non-finite one as a typed hexadecimal float (`fill(0xFF800000 : f32)`).

    ```mlir
    %x = tang.read %X[%i, %k * 2 + 1] : tensor<16x33xf32>
    // A causal convolution's window: x[t + k - 3], zero before the start.
    %w = tang.read %X[%t + %k - 3] fill(0.0) : tensor<64xf32>
    ```

    A view folds into a padded read only when it permutes coordinates (then
    "outside" means the same thing for the view and its source); other
    views stay, and the kernel form asks for the padding on the source.
  }];
  let arguments = (ins Tang_Tensor:$tensor, Variadic<Index>:$indices,
                       AffineMapAttr:$map, OptionalAttr<TypedAttrInterface>:$fill);
  let results = (outs Tang_ElementType:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasFolder = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$tensor, "::mlir::AffineMap":$map,
                   "::mlir::ValueRange":$indices,
                   CArg<"::mlir::TypedAttr", "{}">:$fill)>
  ];
}

//===----------------------------------------------------------------------===//
// GatherOp
//===----------------------------------------------------------------------===//

def Tang_GatherOp : Tang_Op<"gather", [Pure]> {
  let summary = "read a tensor element at coordinates that depend on data";
  let description = [{
    Reads one element of a function-level tensor at coordinates that are
    affine expressions of iteration indices (dimensions, as in `tang.read`)
    and of index values computed in the body (symbols, written
    `symbol(%v)`: typically an integer read from another tensor and cast
    with `arith.index_cast`). An embedding lookup, a top-k routing's
    expert, a cross-entropy's target column.

    The coordinates that use no symbol are proved in bounds by the verifier,
    like a read's. The others are checked when the program runs, by the
    out-of-range policy:

    * `trap` (the default, not printed): the run fails, naming the gather,
      the coordinate and its value, and writes no result;
    * `clamp`: the coordinate is clamped into the dimension;
    * `zero`: the gather yields zero.

    A gather with no symbol is a `tang.read`; the verifier says so. Fusion
    substitutes a producer that gathers like one that reads; the traffic
    bound leaves data coordinates out of its LP (a weaker, valid bound);
    the online-softmax rewrite leaves comprehensions with gathers alone.
    `--tang-grad` differentiates a gather: its gradient is a `tang.scatter`
    adding into the gathered tensor. The reference interpreter runs every
    policy; the kernel form (every backend) runs `clamp` and `zero`, and
    `trap` when the data coordinate is an element of an integer input, as
    read (token ids): the runtime checks that input before the run
    (`tang.index_checks`, docs/Bundle.md) and the kernel clamps; it
    refuses `trap` on a coordinate computed from the data.

    ```mlir
    // Embedding lookup: E[tokens[b, t], d].
    %tok = tang.read %Tokens[%b, %t] : tensor<2x128xi32>
    %row = arith.index_cast %tok : i32 to index
    %e = tang.gather %E[symbol(%row), %d] : tensor<32000x64xf32>
    // Out-of-range tokens read row 0 or the last row instead of failing.
    %c = tang.gather %E[symbol(%row), %d] clamp : tensor<32000x64xf32>
    ```
  }];
  let arguments = (ins Tang_Tensor:$tensor, Variadic<Index>:$mapOperands,
                       AffineMapAttr:$map, Tang_OutOfRange:$policy);
  let results = (outs Tang_ElementType:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The iteration indices (the map's dimensions).
    ::mlir::OperandRange getIndices() {
      return getMapOperands().take_front(getMap().getNumDims());
    }
    /// The data values (the map's symbols).
    ::mlir::OperandRange getValues() {
      return getMapOperands().drop_front(getMap().getNumDims());
    }
  }];
}

//===----------------------------------------------------------------------===//
// ScanOp
//===----------------------------------------------------------------------===//

def Tang_ScanOp : Tang_Op<"scan", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "every prefix of a reduction along one index";
  let description = [{
    A reduction that keeps its partial results: the body is evaluated at
    every point of the domain (parallel indices, then the scan index, last)
    and, for each parallel point, the result at scan position `t` is the
    monoid's fold of the body's values at positions `0..t`, in that order
    (so a monoid that is not commutative keeps its meaning: a linear
    recurrence as the composition of affine maps). Each result has the
    domain's shape: the parallel extents, then the scan's.

    ```mlir
    // y[b, t] = sum_{k <= t} x[b, k]
    %y = tang.scan (%b) along (%t) [4, 1024] monoid(add)
           : tensor<4x1024xf32> {
      %x = tang.read %X[%b, %t] : tensor<4x1024xf32>
      tang.yield %x : f32
    }
    ```

    The interpreter runs it in O(n) per sequence; the kernel form runs one
    thread per parallel point, carrying the monoid's carrier along the scan
    index. It is a function-level op (fusion does not fuse into its body).
    `--tang-grad` differentiates scans of floats under add (a reverse scan
    of the cotangent), mul, max, min and user monoids (a reverse scan under
    the composition of affine maps, the Jacobians of the combine). The triangular form
    (`select(k <= t, x, identity)` reduced over `k`) means the same in
    O(n^2) work.
  }];

  let arguments = (ins
    DenseI64ArrayAttr:$extents,
    AnyAttrOf<[Tang_MonoidAttr, FlatSymbolRefAttr]>:$monoid
  );
  let results = (outs Variadic<Tang_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    /// The parallel indices (all but the last, the scan index).
    unsigned getNumParallel() { return getExtents().size() - 1; }
    unsigned getNumIndices() { return getExtents().size(); }
    int64_t getExtent(unsigned pos) { return getExtents()[pos]; }
    ::mlir::BlockArgument getIndex(unsigned pos) {
      return getBody().front().getArgument(pos);
    }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    YieldOp getYield();
    std::optional<MonoidKind> getBuiltinMonoid();
  }];
}

//===----------------------------------------------------------------------===//
// TensorScanOp
//===----------------------------------------------------------------------===//

def Tang_TensorScanOp : Tang_Op<"tensor_scan", [
    Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "every prefix of a sequence of tensors under a tensor monoid";
  let description = [{
    A scan whose elements are tensors: the monoid (a `tang.monoid` whose
    carrier components are tensors, its combine a graph of comprehensions)
    folds whole tensors, in order. Operand `k` holds the carrier's
    component `k` at every point: its dimensions are the parallel ones,
    then the scan's, then the component's own (`[P..., T, C_k...]`); the
    parallel dimensions are those the component's shape leaves. Result `k`
    has operand `k`'s type and holds, at `[p, t]`, component `k` of the
    fold of the elements `[p, 0..t]` (the first element itself at `t = 0`).
    With `init`, one tensor per component of shape `[P..., C_k...]`, the
    fold starts from it: `init[p] * x[p, 0] * ... * x[p, t]`.

    A linear recurrence with a matrix state, `S_t = S_{t-1} A_t + B_t`,
    is the scan of the pairs `(A_t, B_t)` under the composition of affine
    maps, `(A1, B1) * (A2, B2) = (A1 A2, B1 A2 + B2)`; the delta rule's
    `A_t = alpha_t (I - beta_t k_t k_t^T)`, `B_t = beta_t v_t k_t^T`.

    ```mlir
    %PA, %S = tang.tensor_scan @affine_rows(%A, %B
        : tensor<2x16x4x4xf32>, tensor<2x16x3x4xf32>)
        -> tensor<2x16x4x4xf32>, tensor<2x16x3x4xf32>
    ```

    The reference interpreter runs it in order, one combine per element.
    The kernel form (every backend) runs a scan under the composition of
    affine maps whose products of transitions (result 0) are unused: one
    thread per parallel point and state column, in order (a few hundred
    steps: `--tang-chunk-affine-scan`, in every lowering pipeline, makes
    the steps chunks); it refuses other tensor scans with their location.
  }];

  let arguments = (ins FlatSymbolRefAttr:$monoid,
                       Variadic<Tang_Tensor>:$elements,
                       Variadic<Tang_Tensor>:$init);
  let results = (outs Variadic<Tang_Tensor>:$results);
  let assemblyFormat = [{
    $monoid `(` $elements `:` type($elements) `)`
    (`init` `(` $init^ `:` type($init) `)`)? attr-dict `->` type($results)
  }];

  let extraClassDeclaration = [{
    /// The number of parallel dimensions (0 until the monoid is known).
    unsigned getNumParallel(MonoidOp monoid);
    /// The scan's length (the dimension after the parallel ones).
    int64_t getLength(MonoidOp monoid) {
      return ::llvm::cast<::mlir::RankedTensorType>(getElements()[0].getType())
          .getDimSize(getNumParallel(monoid));
    }
  }];
}

//===----------------------------------------------------------------------===//
// TriangularSolveOp
//===----------------------------------------------------------------------===//

def Tang_TriangularSolveOp : Tang_Op<"triangular_solve", [
    Pure, AllTypesMatch<["rhs", "result"]>]> {
  let summary = "forward substitution: X = (I - L)^-1 Y, L strictly lower "
                "triangular";
  let description = [{
    Solves the unit lower-triangular systems `(I - L) X = Y` at every
    parallel point: `lower` is `[P..., C, C]`, `rhs` and the result
    `[P..., C, N]`, and row by row

        X[p, r, n] = Y[p, r, n] + sum over s < r of L[p, r, s] X[p, s, n]

    Only the entries of `L` below the diagonal are read. Each column `n` is
    its own system: `C^2 / 2` multiply-adds a column, where forming the
    inverse by products (`(I + L)(I + L^2)(I + L^4)...`) takes `2 log2(C)`
    products of `C x C` matrices and one more for `Y`.
    `--tang-chunk-affine-scan` solves its chunks' triangular systems with
    it (the rows of the WY form).

    ```mlir
    %X = tang.triangular_solve %L, %Y : tensor<8x64x64xf32>, tensor<8x64x128xf32>
    ```

    The reference interpreter substitutes in float64. The kernel form
    (every backend) gives each (parallel point, column) a thread that
    substitutes in order; at `C <= 64` the column stays in registers.
    Floating-point elements, static shapes; the function level only.
    `--tang-grad` differentiates it: `dY = (I - L)^-T dX`, an upper
    triangular system solved as a lower one with its rows reversed, and
    `dL = dY X^T` below the diagonal.
  }];
  let arguments = (ins Tang_Tensor:$lower, Tang_Tensor:$rhs);
  let results = (outs Tang_Tensor:$result);
  let assemblyFormat = [{
    $lower `,` $rhs attr-dict `:` type($lower) `,` type($rhs)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ScatterOp and PutOp
//===----------------------------------------------------------------------===//

def Tang_ScatterOp : Tang_Op<"scatter", [
    RecursiveMemoryEffects, RecursivelySpeculatable,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "write elements into a copy of a tensor at coordinates that "
                "depend on data";
  let description = [{
    The dual of `tang.gather`. The result is `base` with, for every point of
    the iteration domain, the element the body computes written at the
    coordinates its terminator (`tang.put`) names. The coordinates are
    affine expressions of the domain's indices and of index values computed
    in the body (symbols), as a gather's.

    * Without a monoid the write replaces the element (an insert: a KV
      cache written at the current position). Where two points write one
      element, the later point in row-major order wins.
    * With a monoid (`monoid(add)`, or a user monoid of one component) the
      element is combined with what is there (a scatter-add: the gradient
      of an embedding lookup, a mixture-of-experts combine). Points that
      collide combine in row-major order, so a monoid that is not
      commutative still has one meaning.
    * `deterministic` asks every backend for that row-major order on
      collisions, bit for bit. Without it a backend may combine collisions
      in any order (atomics); today every backend takes row-major order
      (kernels run the colliding indices serially).

    The semantics is functional: `base` is not changed. The body is a
    scalar expression graph like a comprehension's (reads, gathers, nested
    reductions) and may read `base` itself, which it sees unchanged.

    Execution is in place when `base` is a function argument marked
    `{tang.donate}` (the caller gives up its value) that nothing else uses:
    the kernel form writes into the argument's buffer instead of a copy,
    and a returned result is that buffer (the bundle's manifest gives the
    output an `"alias"`: a KV cache updated without copying it). A donated
    argument with other uses is copied, with a remark.

    ```mlir
    // dE[tokens[i], d] += dY[i, d]: the gradient of an embedding lookup.
    %dE = tang.scatter (%i, %d) [128, 64] into %zeros monoid(add)
            : tensor<32000x64xf32> {
      %tok = tang.read %tokens[%i] : tensor<128xi32>
      %row = arith.index_cast %tok : i32 to index
      %g = tang.read %dY[%i, %d] : tensor<128x64xf32>
      tang.put %g at [symbol(%row), %d] : f32
    }
    // Insert this step's keys at the position `pos`.
    %K1 = tang.scatter (%h, %e) [8, 128] into %K : tensor<8x4096x128xbf16> {
      %p = tang.read %pos[] : tensor<i32>
      %row = arith.index_cast %p : i32 to index
      %k = tang.read %knew[%h, %e] : tensor<8x128xbf16>
      tang.put %k at [%h, symbol(%row), %e] : bf16
    }
    ```
  }];

  let arguments = (ins
    Tang_Tensor:$base,
    DenseI64ArrayAttr:$extents,
    OptionalAttr<AnyAttrOf<[Tang_MonoidAttr, FlatSymbolRefAttr]>>:$monoid,
    UnitAttr:$deterministic
  );
  let results = (outs Tang_Tensor:$result);
  let regions = (region SizedRegion<1>:$body);

  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;

  let extraClassDeclaration = [{
    unsigned getNumIndices() { return getExtents().size(); }
    /// The extent of iteration index `pos`.
    int64_t getExtent(unsigned pos) { return getExtents()[pos]; }
    ::mlir::BlockArgument getIndex(unsigned pos) {
      return getBody().front().getArgument(pos);
    }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
    /// The terminator of the body.
    PutOp getPut();
    /// The builtin monoid, if the monoid is one.
    std::optional<MonoidKind> getBuiltinMonoid();
  }];
}

def Tang_PutOp : Tang_Op<"put", [Pure, Terminator, HasParent<"ScatterOp">]> {
  let summary = "the element a scatter writes, and where";
  let description = [{
    Terminates a `tang.scatter` body: the value to write and its
    coordinates in the scatter's base, written like a gather's (iteration
    indices as dimensions, index values computed in the body as
    `symbol(%v)`). Coordinates without symbols are proved in bounds by the
    verifier; the others are checked as the program runs, by the policy:
    `trap` (the default: the run fails naming the coordinate and its value,
    and writes no result; on kernels as for `tang.gather`) or `drop` (the
    write is skipped: padding tokens, an ignored index).

    ```mlir
    tang.put %g at [symbol(%row), %d] : f32
    tang.put %g at [symbol(%row), %d] drop : f32
    ```
  }];
  let arguments = (ins AnyType:$value, Variadic<Index>:$mapOperands,
                       AffineMapAttr:$map, Tang_OutOfRange:$policy);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The iteration indices (the map's dimensions).
    ::mlir::OperandRange getIndices() {
      return getMapOperands().take_front(getMap().getNumDims());
    }
    /// The data values (the map's symbols).
    ::mlir::OperandRange getValues() {
      return getMapOperands().drop_front(getMap().getNumDims());
    }
  }];
}

//===----------------------------------------------------------------------===//
// ViewOp
//===----------------------------------------------------------------------===//

def Tang_ViewOp : Tang_Op<"view", [Pure]> {
  let summary = "affine re-indexing of a tensor";
  let description = [{
    `%V = tang.view %T by map` is the tensor with `V[x] = T[map(x)]`: the
    map goes from the view's coordinates to the source's. It computes
    nothing: canonicalisation folds it into the reads that use it. Views
    express transpose, broadcast, slices, strides, diagonals and sliding
    windows; every view coordinate must map in bounds.

    ```mlir
    // Transpose.
    %T = tang.view %A by affine_map<(d0, d1) -> (d1, d0)>
           : tensor<4x8xf32> to tensor<8x4xf32>
    // 3x3 sliding windows of an image.
    %W = tang.view %I by affine_map<(h, w, r, s) -> (h + r, w + s)>
           : tensor<10x10xf32> to tensor<8x8x3x3xf32>
    ```
  }];
  let arguments = (ins Tang_Tensor:$source, AffineMapAttr:$map);
  let results = (outs Tang_Tensor:$result);
  let assemblyFormat = [{
    $source `by` $map attr-dict `:` type($source) `to` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// IndexOp
//===----------------------------------------------------------------------===//

def Tang_IndexOp : Tang_Op<"index", [Pure]> {
  let summary = "the value of an affine expression of indices as a scalar";
  let description = [{
    Converts an iteration index of an enclosing comprehension, or an affine
    expression of such indices, to an integer or floating-point scalar, for
    iotas and masks. Iteration indices are used only by `tang.read` and
    `tang.index`, so every use of an index stays affine and visible to
    analysis (and fusion can substitute an index by an expression).

    ```mlir
    // Causal mask: keep j <= i.
    %vi = tang.index %i : i32
    %vj = tang.index %j : i32
    %keep = arith.cmpi sle, %vj, %vi : i32
    // An affine expression of indices.
    %pos = tang.index [%i * 4 + %j] : i32
    ```
  }];
  let arguments = (ins Variadic<Index>:$indices, AffineMapAttr:$map);
  let results = (outs AnyTypeOf<[AnySignlessInteger, AnyFloat]>:$result);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Type":$type, "::mlir::Value":$index)>
  ];
}

//===----------------------------------------------------------------------===//
// YieldOp
//===----------------------------------------------------------------------===//

def Tang_YieldOp : Tang_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["ComprehensionOp", "MonoidOp", "ScanOp"]>]> {
  let summary = "yield scalars from a comprehension body or a combine region";
  let description = [{
    Terminates a comprehension's body with the element the monoid lifts (or
    the mapped values of a comprehension without reduced indices), or a
    monoid's `combine` region with the combined carrier.

    ```mlir
    tang.yield %p : f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

//===----------------------------------------------------------------------===//
// MonoidOp
//===----------------------------------------------------------------------===//

def Tang_MonoidOp : Tang_Op<"monoid", [Symbol, IsolatedFromAbove]> {
  let summary = "a user-defined monoid";
  let description = [{
    Declares a monoid with a tuple carrier: its types, its identity (one
    typed attribute per carrier component) and a `combine` region taking two
    carrier values (the first's components, then the second's) and yielding
    their combination. A monoid is associative by definition; `commutative`
    declares that combine order does not matter. Passes may rely only on the
    laws a monoid declares.

    A **tensor monoid** has ranked, static tensors for carrier components;
    its combine is a graph of function-level ops (comprehensions, views,
    scans, constants) on them, and it declares no identity (`identity []`:
    `tang.tensor_scan`, its only user, starts from its first element).

    ```mlir
    // The composition of affine maps x -> x A + B on 4-wide rows.
    tang.monoid @affine_rows : [tensor<4x4xf32>, tensor<3x4xf32>] identity [] {
    ^bb0(%a1: tensor<4x4xf32>, %b1: tensor<3x4xf32>,
         %a2: tensor<4x4xf32>, %b2: tensor<3x4xf32>):
      %a = tang.comprehension (%i, %j) reduce (%k) [4, 4, 4] monoid(add) ...
      ...
      tang.yield %a, %b : tensor<4x4xf32>, tensor<3x4xf32>
    }
    ```

    ```mlir
    // Welford's running (count, mean, M2) for a variance.
    tang.monoid @welford : [f64, f64, f64]
        identity [0.0 : f64, 0.0 : f64, 0.0 : f64] commutative {
    ^bb0(%n1: f64, %m1: f64, %s1: f64, %n2: f64, %m2: f64, %s2: f64):
      %n = arith.addf %n1, %n2 : f64
      ...
      tang.yield %n, %m, %s : f64, f64, f64
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeArrayAttr:$carrier,
                       ArrayAttr:$identity, UnitAttr:$commutative);
  let regions = (region SizedRegion<1>:$combine);
  let assemblyFormat = [{
    $sym_name `:` $carrier `identity` $identity (`commutative` $commutative^)?
    attr-dict-with-keyword $combine
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The carrier's component types.
    ::llvm::SmallVector<::mlir::Type> getCarrierTypes();
    /// Whether the carrier's components are tensors (a tensor monoid).
    bool isTensorMonoid();
  }];
}

#endif // TANG_DIALECT_TANG_IR_TANGOPS_TD
