//===- Passes.td - conversions into and out of tang --------*- tablegen -*-===//

#ifndef TANG_CONVERSION_PASSES_TD
#define TANG_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLinalgToTang : Pass<"convert-linalg-to-tang", "::mlir::ModuleOp"> {
  let summary = "Import linalg on tensors into tang comprehensions";
  let description = [{
    Imports `linalg` on tensors into `tang.comprehension`s, so tang can sit
    after any frontend that reaches linalg. Named ops (matmul, batch_matmul,
    matvec, `linalg.reduce`, `linalg.map`, `linalg.elementwise`, `linalg.add`
    and friends, `linalg.fill`, `linalg.transpose`, `linalg.broadcast`,
    `linalg.copy`, convolutions, poolings, ...) are first generalised to
    `linalg.generic` (`linalg.softmax` is first decomposed into generics);
    each generic then becomes one comprehension:

    * parallel loops become parallel indices, **in the order of the output
      indexing map** (which must be a permutation of the parallel loops), so
      the comprehension's result has the output's shape and no `tang.view` is
      needed; reduction loops become reduced indices, in loop order. Extents
      are the static loop ranges;
    * each input the payload uses becomes a `tang.read` at its indexing map
      (scalar inputs, e.g. a fill value, are used directly; scalar constants
      are cloned into the body);
    * `linalg.index` becomes `tang.index`: every use must be an
      `arith.index_cast`/`index_castui` to an integer type, which is replaced
      by `tang.index` of that type;
    * a reduction's yielded value must be a recognised combiner applied to
      the accumulator (the output block argument), in either operand order:
      `addf`/`addi` -> `add`, `subf`/`subi` with the accumulator first
      (`acc - x`) -> `add` of `-x` (combined with a non-identity init by an
      add), `mulf`/`muli` -> `mul`,
      `maximumf`/`maxnumf`/`maxsi` -> `max`, `minimumf`/`minnumf`/`minsi`
      -> `min`, `andi` -> `and`, `ori` -> `or`; the body then yields the
      combiner's other operand. When the init is a fill (or splat constant)
      of the monoid's identity (+-0, 1, -inf / signed min, +inf / signed max,
      all ones, 0; NaN for `maxnumf`/`minnumf`) the comprehension is the
      result; otherwise a second, parallel comprehension combines the init
      (a constant if it is a fill) and the reduction elementwise with the
      same combiner. A float max over a fill of the lowest finite value is
      not an identity: it keeps the combine. tang's `max`/`min` propagate
      NaN, so `maxnumf`/`minnumf` reductions differ on NaN inputs only.
    * in a parallel-only generic a used output block argument reads the init
      at the output map. `tensor.empty`s used only as inits disappear.
    * `tensor.extract` in a payload of a tensor from above becomes a
      `tang.read` when its indices are loop indices (`linalg.index`) and
      constants, a `tang.gather` (trap policy: an out-of-range index fails
      the run) when one is computed from data (an embedding lookup);
    * `tensor.expand_shape` and `tensor.collapse_shape` of static shapes
      become `tang.view`s by the row-major (de)linearising map, which fold
      into the reads that use them; `tensor.extract_slice` with static
      offsets, sizes and strides a `tang.view` by the slice's map (dropped
      unit dimensions at their offsets); `tensor.insert_slice` a
      `tang.scatter` of the source into the destination at those
      coordinates; `tensor.pad` by a constant a comprehension over the
      padded shape of a padded `tang.read` (`fill`).

    ```mlir
    // Before.
    %e = tensor.empty() : tensor<16x24xf32>
    %z = linalg.fill ins(%cst0 : f32) outs(%e : tensor<16x24xf32>) -> tensor<16x24xf32>
    %C = linalg.matmul ins(%A, %B : tensor<16x32xf32>, tensor<32x24xf32>)
                       outs(%z : tensor<16x24xf32>) -> tensor<16x24xf32>
    // After.
    %C = tang.comprehension (%p0, %p1) reduce (%r0) [16, 24, 32] monoid(add)
           : tensor<16x24xf32> {
      %a = tang.read %A[%p0, %r0] : tensor<16x32xf32>
      %b = tang.read %B[%r0, %p1] : tensor<32x24xf32>
      %m = arith.mulf %a, %b : f32
      tang.yield %m : f32
    }
    ```

    A function that cannot be imported stays as it was, with a remark at it
    naming the first reason; the others are imported. With `strict=1` what
    is not importable is an error at the op, naming what is not supported,
    and the pass fails (it never leaves linalg behind). Reasons: linalg on
    memrefs, dynamic shapes ("dynamic shapes are not supported yet"), element
    types other than f64, f32, f16, bf16, i32, i8 and i1, output maps that
    are not permutations of the parallel loops, reductions with several
    outputs or several uses of the accumulator, unrecognised combiners,
    reductions into (or reads of) a `tensor.empty`, `linalg.index` used other
    than by an integer index cast, non-scalar payloads, zero-sized loops, and
    function-level ops other than linalg ops on tensors, `tensor.empty`,
    `arith.constant`, reshapes, slices, pads by a constant, tang ops and
    `func.return`.

    What upstream `tosa-to-linalg` makes of a linear layer, an MLP, a
    softmax, a padded conv2d, batch-1 attention, an embedding lookup
    (`tosa.gather`) and a cross-entropy loss imports strictly and matches
    NumPy (test/Conversion/LinalgToTang/Inputs/tosa, test_tosa_import.py).
  }];
  let options = [
    Option<"strict", "strict", "bool", /*default=*/"false",
           "Fail on the first op that cannot be imported (by default its "
           "function stays as it was, with a remark)">,
  ];
  let statistics = [
    Statistic<"numDecomposed", "decomposed-softmaxes",
              "linalg.softmax ops decomposed into linalg.generic ops">,
    Statistic<"numGeneralized", "generalized-named-ops",
              "Named linalg ops generalised to linalg.generic">,
    Statistic<"numImported", "imported-generics",
              "linalg.generic ops imported as tang comprehensions">,
    Statistic<"numInitCombines", "init-combines",
              "Reductions whose init is not the monoid's identity (an extra "
              "map comprehension combines it)">,
    Statistic<"numSkipped", "skipped-functions",
              "Functions left as they were (not importable)">,
  ];
  let dependentDialects = ["::mlir::tang::TangDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def ConvertTangToGPU : Pass<"convert-tang-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower comprehensions to the kernel form (gpu.func kernels and a host launch sequence)";
  let description = [{
    Turns every function of function-level comprehensions into the kernel
    form that every backend starts from: one `gpu.func` kernel per
    comprehension in `gpu.module @tang_kernels` (scf loops, memref loads
    and stores, f16/bf16 computed in f32; for results stored in f16/bf16,
    math functions and divisions use their fast approximations and products
    may fuse with sums into multiply-adds, whose few f32 ulps of difference
    the storage rounding dwarfs), and a host `func.func` of the
    same name whose arguments are memrefs (the inputs, then one per result,
    written in place) that allocates intermediates and launches the kernels
    in order with `gpu.launch_func` (grid, block, shared memory and
    argument order explicit). Views are folded into reads first.

    With tensor cores, a sum over several indices that every read takes as
    consecutive coordinates in their order (a weight gradient's sum over
    batch and length, `X[b, l, k] dY[b, l, n]`) is first rewritten as one
    sum over their product (`X[r floordiv L, r mod L, k]`), where that makes
    it a contraction the tensor-core kernels take.

    ```mlir
    // After: the host sequence and one kernel.
    func.func @main(%X: memref<8x32xf32>, %Y: memref<8x32xf32>) attributes {tang.kernel_form} {
      gpu.launch_func @tang_kernels::@main_k0 blocks in (%c1, %c1, %c1)
          threads in (%c256, %c1, %c1) args(%X : memref<8x32xf32>, %Y : memref<8x32xf32>)
      return
    }
    gpu.module @tang_kernels {
      gpu.func @main_k0(%X: memref<8x32xf32>, %Y: memref<8x32xf32>) kernel { ... }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect", "::mlir::func::FuncDialect",
    "::mlir::affine::AffineDialect", "::mlir::vector::VectorDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
  let options = [
    Option<"tensorCores", "tensor-cores", "::mlir::tang::TensorCoreOption",
           /*default=*/"::mlir::tang::TensorCoreOption::None",
           "Tensor-core kernels for contractions of f16/bf16 operands",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tang::TensorCoreOption::None, "none",
                        "plain arithmetic, every backend"),
             clEnumValN(::mlir::tang::TensorCoreOption::MmaSync, "mma-sync",
                        "NVIDIA mma.sync with ldmatrix and cp.async, sm_80 "
                        "and up"),
             clEnumValN(::mlir::tang::TensorCoreOption::Wgmma, "wgmma",
                        "warpgroup wgmma.mma_async from shared memory, "
                        "sm_90a"),
             clEnumValN(::mlir::tang::TensorCoreOption::Target, "target",
                        "the tensor_cores of the module's #tang.target (the "
                        "default chip's without one)"))}]>,
    Option<"tma", "tma", "bool", /*default=*/"true",
           "With wgmma: load operand tiles by bulk tensor copies (TMA, "
           "tensor maps passed by value as kernel parameters) where the "
           "operand's view allows it; otherwise, and with `false`, by "
           "cp.async">,
    Option<"warpSpecialize", "warp-specialize", "bool", /*default=*/"true",
           "With tma: a persistent kernel whose producer warpgroup issues "
           "the bulk copies while the consumer warpgroups compute and "
           "store (the next tile's operands load during the epilogue); "
           "the flash-attention kernel's grid is persistent with it">,
    Option<"tf32", "tf32", "bool", /*default=*/"false",
           "Contractions of f32 operands on tensor cores too, as tf32 "
           "(mma.sync m16n8k8: each operand rounded to nearest with 10 "
           "mantissa bits, "
           "f32 accumulation; like torch.backends.cuda.matmul.allow_tf32). "
           "Off: f32 contractions keep full f32 precision">,
    Option<"matrixUnits", "matrix-units", "int64_t", /*default=*/"0",
           "With tensor-cores=none: contractions of f32 or f16 operands "
           "(f32 results, no epilogue, box views, extents multiples of the "
           "tile) on the target-neutral subgroup matrix operations "
           "(gpu.subgroup_mma_*) in tiles of this size: 16 for SPIR-V "
           "KHR_cooperative_matrix, 8 for Metal simdgroup_matrix; 0: off">,
    Option<"matrixUnitsF16", "matrix-units-f16", "bool", /*default=*/"true",
           "With matrix-units: f16 operands too, with f32 sums (Metal's "
           "simdgroup products take one type, so its pipeline turns this "
           "off)">,
    Option<"subgroupSize", "subgroup-size", "int64_t", /*default=*/"32",
           "The threads of one subgroup: the workgroup size of matrix-unit "
           "kernels (one subgroup per tile)">,
    Option<"splitSoftmaxMma", "split-softmax-mma",
           "::mlir::tang::SplitSoftmaxMmaOption",
           /*default=*/"::mlir::tang::SplitSoftmaxMmaOption::Auto",
           "With tensor cores: decode attention split over its keys "
           "(split_softmax) with its score's dot product and its product "
           "with the values on mma.sync (16-bit keys and values; an f32 "
           "query and the probabilities split into three bf16 parts)",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tang::SplitSoftmaxMmaOption::Auto, "auto",
                        "wherever the shape allows (the "
                        "default)"),
             clEnumValN(::mlir::tang::SplitSoftmaxMmaOption::On, "on",
                        "the same, with a remark where the "
                        "shape does not allow it"),
             clEnumValN(::mlir::tang::SplitSoftmaxMmaOption::On, "true",
                        "the same as on"),
             clEnumValN(::mlir::tang::SplitSoftmaxMmaOption::Off, "off",
                        "never (the lane kernel)"),
             clEnumValN(::mlir::tang::SplitSoftmaxMmaOption::Off, "false",
                        "the same as off"))}]>,
    Option<"splitSoftmaxBlocksPerSm", "split-softmax-blocks-per-sm",
           "int64_t", /*default=*/"0",
           "The blocks per multiprocessor that decode attention's key "
           "splits aim at (0: on tensor cores one, two with at most one row "
           "group per sixteen multiprocessors; eight on lanes)">,
    Option<"cooperative", "cooperative", "bool", /*default=*/"true",
           "Kernels chosen without a schedule (those of symbolic sizes) "
           "may have threads cooperate through subgroup shuffles and "
           "workgroup memory: decode attention split over its keys "
           "(split_softmax). The portable backends' pipelines, whose kernel "
           "form takes one thread per point, turn this off">
  ];
}

#endif // TANG_CONVERSION_PASSES_TD
