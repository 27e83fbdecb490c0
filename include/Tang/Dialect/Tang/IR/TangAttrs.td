//===- TangAttrs.td - tang attributes ----------------------*- tablegen -*-===//
//
// Monoid kinds, the #tang.schedule attribute and the #tang.target device
// model.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGATTRS_TD
#define TANG_DIALECT_TANG_IR_TANGATTRS_TD

include "Tang/Dialect/Tang/IR/TangDialect.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Builtin monoids
//===----------------------------------------------------------------------===//

def Tang_MonoidKind : I32EnumAttr<"MonoidKind", "builtin monoid", [
    I32EnumAttrCase<"Add", 0, "add">,
    I32EnumAttrCase<"Mul", 1, "mul">,
    I32EnumAttrCase<"Max", 2, "max">,
    I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"And", 4, "and">,
    I32EnumAttrCase<"Or", 5, "or">,
    I32EnumAttrCase<"ArgMax", 6, "argmax">,
    I32EnumAttrCase<"ArgMin", 7, "argmin">,
    I32EnumAttrCase<"SoftmaxNorm", 8, "softmax_norm">,
    I32EnumAttrCase<"OnlineSoftmax", 9, "online_softmax">
  ]> {
  let cppNamespace = "::mlir::tang";
  let genSpecializedAttr = 0;
}

def Tang_OutOfRange : I32EnumAttr<"OutOfRange",
    "what a gather or a scatter does with a data coordinate outside its "
    "tensor", [
    I32EnumAttrCase<"Trap", 0, "trap">,
    I32EnumAttrCase<"Clamp", 1, "clamp">,
    I32EnumAttrCase<"Zero", 2, "zero">,
    I32EnumAttrCase<"Drop", 3, "drop">
  ]> {
  let cppNamespace = "::mlir::tang";
}

def Tang_MonoidAttr : EnumAttr<Tang_Dialect, Tang_MonoidKind, "monoid"> {
  let summary = "a builtin monoid";
  let description = [{
    The builtin monoids a comprehension can reduce under. Each states its
    algebra (associative, with an identity, and
    commutative: every builtin is) and how the values a body yields are lifted into the
    monoid's carrier and what the comprehension's results are:

    | monoid | body yields | carrier, identity | results |
    |---|---|---|---|
    | `add` | `x` | `x`, 0 | sum |
    | `mul` | `x` | `x`, 1 | product |
    | `max` / `min` | `x` | `x`, -inf / +inf (int: min / max value; i1: false < true) | extremum, NaN if any is NaN |
    | `and` / `or` | `x : i1` or integer | bitwise, all-ones / 0 | conjunction / disjunction |
    | `argmax` / `argmin` | `x, idx` | `(x, idx)`, `(-inf, max i32)` / `(+inf, max i32)` (the identity's index loses every tie); ties keep the smaller idx; a NaN beats every number and the first NaN wins (NumPy's rule) | value, index |
    | `softmax_norm` | `x` | `(m, l)`, `(-inf, 0)`; `(x) -> (x, 1)` | `m = max x`, `l = sum exp(x - m)` |
    | `online_softmax` | `s, v` | `(m, l, acc)`, `(-inf, 0, 0)`; `(s, v) -> (s, 1, v)` | `acc / l` |

    The `softmax_norm` and `online_softmax` combines are
    `m = max(m1, m2)`, `l = l1 exp(m1 - m) + l2 exp(m2 - m)`,
    `acc = acc1 exp(m1 - m) + acc2 exp(m2 - m)`, with `m = -inf` (every
    score masked) scaling by 1, so that masked scores give the identity.

    Each builtin's carrier, identity, lift, combine and finalise are defined
    once, as IR (`TangMonoids.h`): the kernels run it and the interpreter
    evaluates it in float64.

    Example: `#tang.monoid<add>`; in a comprehension: `monoid(add)`.
  }];
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// Schedules
//===----------------------------------------------------------------------===//

def Tang_Mapping : I32EnumAttr<"Mapping", "processor an iteration index maps to", [
    I32EnumAttrCase<"BlockX", 0, "block_x">,
    I32EnumAttrCase<"BlockY", 1, "block_y">,
    I32EnumAttrCase<"BlockZ", 2, "block_z">,
    I32EnumAttrCase<"Warp", 3, "warp">,
    I32EnumAttrCase<"ThreadX", 4, "thread_x">,
    I32EnumAttrCase<"ThreadY", 5, "thread_y">,
    I32EnumAttrCase<"ThreadZ", 6, "thread_z">,
    I32EnumAttrCase<"Serial", 7, "serial">,
    I32EnumAttrCase<"Vector", 8, "vector">
  ]> {
  let cppNamespace = "::mlir::tang";
  let genSpecializedAttr = 0;
}

def Tang_MemoryLevel : I32EnumAttr<"MemoryLevel", "memory level of a pipeline stage", [
    I32EnumAttrCase<"Global", 0, "global">,
    I32EnumAttrCase<"Shared", 1, "shared">,
    I32EnumAttrCase<"Register", 2, "register">
  ]> {
  let cppNamespace = "::mlir::tang";
  let genSpecializedAttr = 0;
}

def Tang_TensorCoreKind : I32EnumAttr<"TensorCoreKind",
    "the matrix instructions a target has", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"MmaSync", 1, "mma_sync">,
    I32EnumAttrCase<"Wgmma", 2, "wgmma">
  ]> {
  let cppNamespace = "::mlir::tang";
  let genSpecializedAttr = 0;
}

def Tang_KernelKind : I32EnumAttr<"KernelKind",
    "the kind of kernel a comprehension runs as", [
    I32EnumAttrCase<"Auto", 0, "auto">,
    I32EnumAttrCase<"Simt", 1, "simt">,
    I32EnumAttrCase<"Contraction", 2, "contraction">,
    I32EnumAttrCase<"Flash", 3, "flash">,
    I32EnumAttrCase<"Score", 4, "score">,
    I32EnumAttrCase<"SubgroupMma", 5, "subgroup_mma">,
    I32EnumAttrCase<"SplitSoftmax", 6, "split_softmax">
  ]> {
  let cppNamespace = "::mlir::tang";
  let genSpecializedAttr = 0;
}

def Tang_ScheduleAttr : Tang_Attr<"Schedule", "schedule"> {
  let summary = "how a comprehension is tiled, mapped and staged";
  let description = [{
    A schedule changes rounding, never the math: the reference interpreter
    ignores it and gives the same answer for every schedule.

    Fields, all but `tile` optional (defaults in brackets):

    * `tile = [t0, ..., tn]`: tile size per iteration index, parallel indices
      first, then reduced ones (one entry per index of the comprehension);
    * `mapping = [m0, ..., mn]`: the processor each index's tiles map to:
      `block_x|y|z` (the index's tiles are spread over that grid
      dimension; several indices of tile 1 may share `block_z`, which then
      covers their product, row-major: a product's batch indices),
      `warp`, `thread_x|y|z`, `serial` (one tile: the block covers the
      whole extent), `vector` [all `serial`];
    * `threads = [n0, ..., nn]`: how many threads of a block share each
      index's tile (1: one thread loops over it) [all 1]; their product is
      the block size, at most 1024; a multiple of the tile puts several
      threads on each element, sharing its reductions (a warp per output of
      a matrix-vector product: `tile = 4`, `threads = 128`);
    * `vector = v`: elements per vector load/store, 1, 2, 4, 8 or 16 [1];
    * `stages = s`: software-pipeline depth, >= 1 [1];
    * `storage = T`: element type tensors are stored in [the tensor's];
    * `accumulate = T`: type reductions accumulate in, at least as wide as
      `storage` [f32];
    * `memory = [l0, ..., ls-1]`: memory level of each pipeline stage:
      `global`, `shared`, `register` [all `global`]; one per stage;
    * `kernel = k`: the kernel the comprehension runs as [`auto`]:
      - `auto`: chosen by `--convert-tang-to-gpu` (with the same function
        `--tang-schedule` uses when it is given the kernel options;
        `Tang/Analysis/KernelChoice.h`);
      - `simt`: a block per row when the last index's tile is whole and
        shared by 32 or more threads (a row kernel; `stages` vectors a
        thread loads before combining them along a long row); a block per
        point when every index's tile is one, the last's under 32 or more
        threads, and the body's nested reductions are what they share (a
        row kernel without a row: a logsumexp per row of a vocabulary,
        `y[i] = m[i] + log l[i]`); a warp per output of a
        matrix-vector comprehension (`Tang/Analysis/ShapeClass.h`,
        isMatVecForm) when the last parallel index's tile of `w` outputs
        goes over `block_x` with 32 `w` threads (its reductions nested in
        the body) or `w` threads and 32 at the reduced index, whole, and
        the other parallel indices are whole or tiled by one over
        `block_y`/`block_z`; else a thread per point, every other field
        read as above;
      - `contraction`: a contraction on tensor cores. `tile` holds the
        block's rows and columns (BM, BN) at the result's row and column
        indices and the k step (BK) at the reduced index (a contraction in
        a nested comprehension has the k step in that comprehension's own
        schedule); `threads` holds the warps along rows at the row index
        and 32 times the warps along columns at the column index; `stages`
        is the depth of the operand ring in shared memory;
      - `flash`: flash attention on tensor cores. `tile` holds the query
        rows per block at the query index and the keys per step at the key
        index, `threads` the warps at the query index and 32 at the key
        index, `stages` the key/value ring's slots;
      - `score`: a reduction over keys of dot-product scores on tensor
        cores (attention's gradients), laid out as `flash`;
      - `subgroup_mma`: the portable subgroup matrix operations;
      - `split_softmax`: an online-softmax reduction whose value is a read
        contiguous in the last parallel index and whose score does not
        depend on it (decode attention), its keys split among blocks of 4
        warps and the blocks' partial carriers combined by the same monoid
        in a second kernel (flash-decoding). `--convert-tang-to-gpu` chooses
        it for comprehensions of symbolic sizes (which have no schedule);
        a schedule naming it (static key extent) gives the splits as the
        key extent over `tile` at the key index, each block taking at least
        64 keys;
    * `mma = none|mma_sync|wgmma`: the tensor-core instructions of a
      `contraction`, `flash` or `score` kernel [`none`];
    * `tma = true|false`: operands by bulk tensor copies [false];
    * `warp_specialize = true|false`: a producer warpgroup beside the
      computing ones (not counted in `threads`) [false];
    * `persistent = true|false`: a grid of one block per multiprocessor
      looping over the tiles [false]; the tensor-core contraction runs it
      exactly when warp-specialised;
    * `group_m = g`: a contraction's output tiles are visited in groups of
      `g` row tiles, column by column within a group, so that blocks
      running together share operand panels in L2 [8 for a contraction,
      else 0];
    * `split_k = s`: a contraction's reduced index split among `s` blocks
      per output tile (a grid dimension), each summing its run of k steps
      into an f32 workspace; a second kernel adds the `s` partial tiles in
      order (deterministic) and evaluates the rest of the body: products
      with few output tiles and a long reduction (33 x 264 x 4104) [1; not
      with a persistent grid]. For a `simt` column reduction (the last
      parallel index in strips of 32 x `vector` columns over `block_x`
      with 32 threads, the reduced indices whole with a warp per run of
      rows on the last): its rows split among `s` blocks along `block_y`,
      combined in order by a second kernel.

    `auto`, `none`, `false`, `group_m = 0` and `split_k = 1` are not
    printed. A kernel that cannot honour
    its schedule (a `flash` schedule on a comprehension that is not
    attention, a tile its emitter does not take, a ring that does not fit
    the target's shared memory) is an error of `--convert-tang-to-gpu`,
    never silently replaced.

    Example:

    ```mlir
    #tang.schedule<tile = [128, 128, 32], mapping = [block_y, block_x, serial],
                   threads = [16, 16, 1], vector = 8, stages = 3,
                   storage = bf16, accumulate = f32,
                   memory = [global, shared, register]>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t", "tile size per index">:$tile,
    ArrayRefParameter<"::mlir::tang::Mapping", "processor per index">:$mapping,
    ArrayRefParameter<"int64_t", "threads per index's tile">:$threads,
    "int64_t":$vector,
    "int64_t":$stages,
    OptionalParameter<"::mlir::Type", "storage precision">:$storage,
    "::mlir::Type":$accumulate,
    ArrayRefParameter<"::mlir::tang::MemoryLevel", "memory level per stage">:$memory,
    "::mlir::tang::KernelKind":$kernel,
    "::mlir::tang::TensorCoreKind":$mma,
    "bool":$tma,
    "bool":$warpSpecialize,
    "bool":$persistent,
    "int64_t":$groupM,
    "int64_t":$splitK
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// The device model
//===----------------------------------------------------------------------===//

def Tang_BoolParameter : AttrParameter<"bool", "true or false"> {
  let parser = "::mlir::tang::parseBoolParameter($_parser)";
  let printer = "$_printer << ($_self ? \"true\" : \"false\")";
}

def Tang_TargetAttr : Tang_Attr<"Target", "target"> {
  let summary = "the device a module is compiled for: the facts schedules "
                "and kernels are sized by";
  let description = [{
    One object per chip (in the manner of Triton's `TargetInfo` and
    TileLang's architecture objects): every device fact that a schedule or
    a kernel depends on. `--tang-attach-target="chip=..."` puts the known
    chip's entry on the module as the discardable attribute `tang.target`
    (the CUDA pipeline does so from its `chip=` option); `--tang-schedule`
    and `--convert-tang-to-gpu` read it. A module without one is compiled
    for the default chip's entry (`sm_90a`, the H200). A user with another
    device writes the attribute by hand: nothing else in the compiler
    holds a device constant.

    Fields:

    * `chip`: the instruction set (`sm_90a`), as `nvvm-attach-target`
      takes it;
    * `device`: the device the facts are from (documentation only);
    * `sm_count`: multiprocessors (compute units);
    * `shared_per_block`, `shared_per_sm`: shared memory a block may use
      (with the opt-in) and a multiprocessor has, in bytes;
    * `registers_per_sm`: 32-bit registers per multiprocessor;
    * `warp_size`, `max_threads`: threads per warp and per block;
    * `tensor_cores`: `none`, `mma_sync` (sm_80 on) or `wgmma` (sm_90a);
    * `tma`, `clusters`: bulk tensor copies and thread-block clusters;
    * `l2_bytes`, `dram_bytes_per_s`, `tensor_ops_per_s` (dense 16-bit
      tensor-core operations), `fp32_ops_per_s`: sizes and architectural
      peaks where known, 0 where not (they size nothing yet; the time floor
      and the autotuner read them);
    * `vector_bytes`: the widest access one thread makes, in bytes (16 on
      the NVIDIA chips: 128-bit loads and stores; printed only when not
      16). The schedules' vector widths are at most this many bytes, and
      at least one element.

    A `warp_size` other than 32 means no subgroup operation is assumed:
    the row kernels then combine their threads' carriers in workgroup
    memory alone, and the kernels built on 32-lane shuffles (matrix-vector
    warps, column kernels, split rows) are not scheduled. The `portable`
    entry (`warp_size = 1`, `max_threads = 256`, 16 KiB of workgroup
    memory, `vector_bytes = 1`) is the device model of the portable
    backends (SPIR-V, GLSL, WGSL, OpenCL, Metal): the limits every device
    they run on guarantees.

    Example (the H200, `bench/devices/h200.json`):

    ```mlir
    module attributes {tang.target = #tang.target<chip = "sm_90a",
        device = "NVIDIA H200", sm_count = 132, shared_per_block = 232448,
        shared_per_sm = 233472, registers_per_sm = 65536, warp_size = 32,
        max_threads = 1024, tensor_cores = wgmma, tma = true,
        clusters = true, l2_bytes = 62914560,
        dram_bytes_per_s = 4814304000000,
        tensor_ops_per_s = 1070530560000000,
        fp32_ops_per_s = 66908160000000>} { ... }
    ```
  }];
  let parameters = (ins
    StringRefParameter<"instruction set">:$chip,
    StringRefParameter<"device name", "\"\"">:$device,
    "int64_t":$sm_count,
    "int64_t":$shared_per_block,
    "int64_t":$shared_per_sm,
    "int64_t":$registers_per_sm,
    "int64_t":$warp_size,
    "int64_t":$max_threads,
    EnumParameter<Tang_TensorCoreKind>:$tensor_cores,
    Tang_BoolParameter:$tma,
    Tang_BoolParameter:$clusters,
    DefaultValuedParameter<"int64_t", "0">:$l2_bytes,
    DefaultValuedParameter<"int64_t", "0">:$dram_bytes_per_s,
    DefaultValuedParameter<"int64_t", "0">:$tensor_ops_per_s,
    DefaultValuedParameter<"int64_t", "0">:$fp32_ops_per_s,
    DefaultValuedParameter<"int64_t", "16">:$vector_bytes
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // TANG_DIALECT_TANG_IR_TANGATTRS_TD
