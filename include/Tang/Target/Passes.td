//===- Passes.td - passes that prepare the kernel form for a target -*- tablegen -*-===//
//
// What a backend needs done to the program or the kernel form before its
// conversion or its printer: type checks in the user's terms, the 32-bit
// narrowing of the portable targets, SPIR-V entry points, CUDA tensor-map
// parameters. The pipelines (lib/Pipelines) only sequence them.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_TARGET_PASSES_TD
#define TANG_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

def TangCheckTargetTypes : Pass<"tang-check-target-types", "::mlir::ModuleOp"> {
  let summary = "Refuse, before any lowering, scalar types a portable target does not have";
  let description = [{
    Walks the program as the user wrote it (function arguments and results,
    op results and block arguments; kernels already in a `gpu.module` are
    skipped) and reports the first use of each scalar type that `target`
    cannot hold or compute, naming the user's op or argument instead of an
    op of the kernel form or a failed legalisation later:

    * `spirv`: 32-bit types and i1 always; f16, f64, i64, i16 and i8 when
      `caps` has the capabilities they need (f16: `Float16` and
      `StorageBuffer16BitAccess`); bf16 never;
    * `glsl`: 32-bit int and float, f16 (storage), bool;
    * `wgsl`: 32-bit int, f32, f16 and bool.

    ```mlir
    // --tang-check-target-types="target=glsl":
    func.func @f(%x: tensor<4xf64>) ...
    // error: argument #0 of @f uses 'f64', which the GLSL target does not
    // support yet (32-bit int and float, f16 storage, bool)
    ```
  }];
  let options = [
    Option<"target", "target", "::mlir::tang::PortableTarget",
           "::mlir::tang::PortableTarget::Spirv",
           "The target whose types are checked",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tang::PortableTarget::Spirv, "spirv",
                        "SPIR-V for Vulkan compute"),
             clEnumValN(::mlir::tang::PortableTarget::GLSL, "glsl",
                        "GLSL compute shaders"),
             clEnumValN(::mlir::tang::PortableTarget::WGSL, "wgsl",
                        "WGSL (WebGPU compute)"))}]>,
    Option<"caps", "caps", "std::string", /*default=*/"\"\"",
           "With target=spirv: the SPIR-V capabilities the module may use, "
           "comma-separated">,
  ];
}

def TangNarrow32BitKernels : Pass<"tang-narrow-32-bit-kernels", "::mlir::ModuleOp"> {
  let summary = "Rewrite the kernels of the kernel form for a target with 32-bit indices";
  let description = [{
    For SPIR-V, GLSL and WGSL (32-bit indices, no 64-bit integers needed):
    in every `gpu.module`, a float computed from an index (`tang.index :
    f32`) converts it through i32, not i64; a constant float compare
    (`cmpf false`/`true`, which upstream's SPIR-V conversion lacks) becomes
    a constant.

    ```mlir
    // Before:
    %w = arith.index_cast %i : index to i64
    %f = arith.sitofp %w : i64 to f32
    // After:
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TangAttachSpirvEntryPoints : Pass<"tang-attach-spirv-entry-points", "::mlir::ModuleOp"> {
  let summary = "Give every kernel the workgroup size its SPIR-V entry point declares, and its workgroup memory";
  let description = [{
    Sets `spirv.entry_point_abi` on every `gpu.func` kernel from the kernel
    form's `known_block_size`; a kernel without one is an error.
    `convert-gpu-to-spirv` then declares the entry point's local size.
    Each workgroup attribution (a row kernel's buffer) becomes a
    `memref.alloc` in the `Workgroup` storage class at the kernel's start,
    which `convert-gpu-to-spirv` makes a `Workgroup` variable (it takes no
    attributions). Each `scf.for` with results and no constant trip count
    of at least one goes inside an `scf.if` on `lower < upper` that else
    yields the initial values: MLIR 22's SCF-to-SPIR-V conversion leaves
    a loop that runs no iteration with undefined results
    (llvm-project#211981). Each `arith.select` of vectors on a scalar
    condition selects on the condition broadcast to their shape (SPIR-V
    before 1.4 takes no scalar condition for vector operands).

    ```mlir
    // Before:
    gpu.func @k() kernel attributes {known_block_size = array<i32: 256, 1, 1>}
    // After:
    gpu.func @k() kernel attributes {known_block_size = array<i32: 256, 1, 1>,
        spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [256, 1, 1]>}
    ```
  }];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def TangSpirvAliasVectorAccess : Pass<"tang-spirv-alias-vector-access", "::mlir::spirv::ModuleOp"> {
  let summary = "Vector loads and stores of storage buffers through aliased vector-typed variables";
  let description = [{
    Upstream's vector-to-SPIR-V conversion turns a `vector.load` or
    `vector.store` of a storage buffer of scalars into a pointer
    `spirv.Bitcast` from the scalar element to the vector, which logical
    addressing (Vulkan) does not allow (spirv-val: "not a logical
    pointer"). This pass, run after `spirv-lower-abi-attrs`, gives each
    such buffer a second `spirv.GlobalVariable` bound to the same
    descriptor set and binding whose runtime array holds the vectors
    (stride: the scalar stride times their length), and addresses the
    vector at the scalar index divided by its length. The kernel form only
    emits vector accesses at multiples of their length (the row kernels'
    vectors along a row whose extent they divide), so the division is
    exact. A buffer accessed through both variables and written through
    either gets the `Aliased` decoration on both. A bitcast of any other
    shape is an error.

    ```mlir
    // Before:
    %p = spirv.AccessChain %buf[%c0, %i] : ..., !spirv.ptr<f16, StorageBuffer>
    %v = spirv.Bitcast %p : !spirv.ptr<f16, StorageBuffer> to
                            !spirv.ptr<vector<4xf16>, StorageBuffer>
    // After:
    %a = spirv.mlir.addressof @k_arg_0_v4 : ...
    %j = spirv.ShiftRightLogical %i, %c2 : i32, i32
    %v = spirv.AccessChain %a[%c0, %j] : ...,
                                         !spirv.ptr<vector<4xf16>, StorageBuffer>
    ```
  }];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect"];
}

def TangTensorMapParams : Pass<"tang-tensor-map-params", "::mlir::LLVM::LLVMFuncOp"> {
  let summary = "Pass CUDA kernels' tensor-map parameters by value, as grid constants";
  let description = [{
    The kernel form names the parameters that carry a `CUtensorMap` in the
    kernel's `tang.tensor_map_params` (parameter numbers). Each becomes a
    128-byte, 64-byte aligned by-value parameter marked
    `nvvm.grid_constant`, so that its generic address is the parameter's
    own: what `cp.async.bulk.tensor` expects of a tensor map passed to a
    kernel. The attribute is removed; a number that is not a pointer
    parameter is an error.

    ```mlir
    // Before:
    llvm.func @k(%m: !llvm.ptr, ...) attributes {tang.tensor_map_params = array<i64: 0>}
    // After:
    llvm.func @k(%m: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>,
                                nvvm.grid_constant}, ...)
    ```
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def TangFlatBufferParams : Pass<"tang-flat-buffer-params", "::mlir::gpu::GPUFuncOp"> {
  let summary = "Give CUDA kernels' flat buffer parameters a static extent for bare pointers";
  let description = [{
    A kernel of a function with symbolic sizes takes a tensor with a `?`
    dimension as a flat `memref<?xT>`, indexed through the sizes it also
    takes. The bare-pointer calling convention (one pointer per buffer, what
    the bundle's runtimes pass) needs static memrefs, so each such
    parameter becomes `memref<2^40 x T>`: the extent is never read. Only
    `memref.load` and `memref.store` may use the parameter.

    ```mlir
    // Before:
    gpu.func @k(%a: memref<?xf32>, %sizes: memref<1xi32>) kernel
    // After:
    gpu.func @k(%a: memref<1099511627776xf32>, %sizes: memref<1xi32>) kernel
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def TangExportBundle : Pass<"tang-export-bundle", "::mlir::ModuleOp"> {
  let summary = "Write a bundle of compiled kernels (PTX, cubin or SPIR-V) and its manifest";
  let description = [{
    Reads the kernel form's host functions (memref arguments, `memref.alloc`
    temporaries, `gpu.launch_func` with constant grid and block, tensor-map
    operands) and the kernels' image (the `gpu.binary` of
    `gpu-module-to-binary`, or a `spirv.module`), and writes `dir` with the
    image and `manifest.json` (docs/Bundle.md), which the runtimes load
    without MLIR. Anything that cannot be exported is a located error.
    `--tang-lower-cuda` and `--tang-lower-spirv` run it with their
    `bundle=` option.
  }];
  let options = [
    Option<"dir", "dir", "std::string", /*default=*/"\"\"",
           "The bundle directory (created if needed)">,
  ];
}

def TangExportSourceBundle : Pass<"tang-export-source-bundle", "::mlir::ModuleOp"> {
  let summary = "Write a bundle of printed kernels (OpenCL C, C, Metal or WGSL) and its manifest";
  let description = [{
    Prints the module's one `gpu.module` with the language's printer
    (`lib/Target/Printers`) and writes `dir` with the source
    (`tang_kernels.cl`, `.c`, `.metal` or `.wgsl`) and `manifest.json`
    (docs/Bundle.md); with no `dir`, prints the source on stdout. The
    `--tang-lower-<language>` pipelines run it with their `bundle=` option.
  }];
  let options = [
    Option<"language", "language", "::mlir::tang::SourceLanguage",
           "::mlir::tang::SourceLanguage::OpenCL", "The language printed",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tang::SourceLanguage::OpenCL, "opencl",
                        "OpenCL C 1.2"),
             clEnumValN(::mlir::tang::SourceLanguage::C, "c",
                        "C11 with a launcher per kernel"),
             clEnumValN(::mlir::tang::SourceLanguage::Metal, "metal",
                        "Metal Shading Language"),
             clEnumValN(::mlir::tang::SourceLanguage::WGSL, "wgsl",
                        "WGSL (WebGPU compute)"))}]>,
    Option<"dir", "dir", "std::string", /*default=*/"\"\"",
           "The bundle directory; empty: the source on stdout">,
  ];
}

def TangExportGLSLBundle : Pass<"tang-export-glsl-bundle", "::mlir::ModuleOp"> {
  let summary = "Write a bundle of GLSL compute shaders compiled to one SPIR-V module";
  let description = [{
    Prints each kernel of the module's one `gpu.module` as a GLSL compute
    shader (`<kernel>.comp`), compiles each with glslangValidator and links
    them with spirv-link into `tang_kernels.spv` (one entry point per
    kernel), and writes a SPIR-V `manifest.json` (docs/Bundle.md) that the
    Vulkan host runs; with no `dir`, prints the shaders on stdout. A missing
    tool is an error naming its Debian package.
  }];
  let options = [
    Option<"dir", "dir", "std::string", /*default=*/"\"\"",
           "The bundle directory; empty: the shaders on stdout">,
  ];
}

#endif // TANG_TARGET_PASSES_TD
