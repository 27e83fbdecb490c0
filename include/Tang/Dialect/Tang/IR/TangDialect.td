//===- TangDialect.td - tang dialect definition ------------*- tablegen -*-===//
//
// The tang dialect: a tensor IR of views and comprehensions.
//
//===----------------------------------------------------------------------===//

#ifndef TANG_DIALECT_TANG_IR_TANGDIALECT_TD
#define TANG_DIALECT_TANG_IR_TANGDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Tang_Dialect : Dialect {
  let name = "tang";
  let cppNamespace = "::mlir::tang";
  let summary = "Views and comprehensions: a tensor IR from which kernels are derived";
  let description = [{
    A tang program is written with two constructs:

    * **views** (`tang.view`, and the index expressions of `tang.read`):
      affine maps from an iteration space to tensor coordinates (transpose,
      broadcast, slice, stride, diagonal, sliding window);
    * **comprehensions** (`tang.comprehension`): a reduction under a monoid
      whose body is a scalar expression graph in `arith`/`math` ops plus
      `tang.read`, `tang.index` and nested comprehensions.

    Function-level values are builtin ranked tensors with static shapes.
    Everything else (fusion, flash attention, gradients, code generation)
    is a rewrite or a schedule over this IR. `tang-run` evaluates the IR
    directly in float64 and is the oracle for every rewrite and backend.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  // The discardable attributes passes leave for later passes, each checked
  // by the dialect's verifier (TangDialect.cpp). `tang.target` (a
  // #tang.target on a module) is the seventh, named by kTargetAttrName.
  let discardableAttrs = (ins
    // On a comprehension --tang-grad hoisted or made to save a forward
    // value for the backward pass, or one the program marks materialised
    // (`tang.compute(..., materialize=True)`): fusion keeps it a kernel
    // of its own.
    "::mlir::UnitAttr":$saved,
    // On a tang.tensor_scan --tang-chunk-affine-scan made (its steps are
    // chunks): the pass does not chunk it again.
    "::mlir::UnitAttr":$chunked,
    // On a comprehension, during --tang-fuse only: its group.
    "::mlir::IntegerAttr":$fuse_id,
    // On a comprehension: its shape class, recorded by --tang-schedule.
    "::mlir::StringAttr":$shape_class,
    // On a comprehension: the tile of the traffic bound's LP, one extent
    // per index (--tang-schedule tile-source=traffic-bound).
    "::mlir::DenseI64ArrayAttr":$traffic_tile,
    // On a comprehension: where its schedule came from when not from
    // --tang-schedule's heuristic ("cache": a tuning cache, docs/Tuning.md).
    "::mlir::StringAttr":$schedule_source,
    // On a host function of the kernel form (--convert-tang-to-gpu).
    "::mlir::UnitAttr":$kernel_form,
    // On a host function of the kernel form: how many of its arguments
    // are inputs (the rest are its results, written in place).
    "::mlir::IntegerAttr":$num_inputs,
    // On a kernel: the positions of its tensor-map parameters, increasing
    // (--tang-tensor-map-params passes them by value).
    "::mlir::DenseI64ArrayAttr":$tensor_map_params,
    // On a host function of the kernel form with symbolic sizes: its size
    // symbols, the shapes of its arguments and the size requirements
    // (`{symbols, shapes, requirements}`, docs/Bundle.md).
    "::mlir::DictionaryAttr":$sizes,
    // On a memref.alloc of a host function: the shape of a temporary with
    // a '?' dimension, one size per dimension.
    "::mlir::ArrayAttr":$shape,
    // On a memref.alloc of a host function: the buffer of size values its
    // kernels take last (the runtime fills it).
    "::mlir::UnitAttr":$sizes_buffer,
    // On a tensor argument of a function: donated, the caller gives up its
    // value, so a scatter into it may update it in place (a KV cache).
    "::mlir::UnitAttr":$donate,
    // On a host function of the kernel form: [output, input, ...] pairs of
    // arguments, each output the input's buffer updated in place.
    "::mlir::DenseI64ArrayAttr":$aliases,
    // On a host function of the kernel form: the data coordinates of trap
    // gathers and scatters that the runtime checks before a run, each
    // `{arg, bound, what}`: every element of input `arg` lies in [0, bound)
    // (docs/Bundle.md, "Index checks").
    "::mlir::ArrayAttr":$index_checks,
    // On a memref.alloc of a host function: the contents of a tensor
    // constant (weights a frontend inlined), which the bundle carries.
    "::mlir::DenseElementsAttr":$data,
    // On a gpu.barrier of a kernel whose workgroup is one subgroup, where
    // every thread writes, before the barrier, everything it reads after
    // it when the subgroup's operations run in one thread (the C
    // backend's emulation of subgroup matrices): such a launcher, running
    // the work items in turn, needs no barrier there.
    "::mlir::UnitAttr":$subgroup_local
  );
  let extraClassDeclaration = [{
    /// Registers the attributes of TangAttrs.td (defined in TangAttrs.cpp).
    void registerAttributes();
  }];
}

class Tang_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tang_Dialect, mnemonic, traits>;

class Tang_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Tang_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// Element types a tang tensor may hold.
def Tang_ElementType : AnyTypeOf<[F64, F32, F16, BF16, I32, I8, I1],
    "tang element type (f64, f32, f16, bf16, i32, i8 or i1)">;

/// Function-level values: ranked tensors of tang element types. Extents are
/// static for now; symbolic extents will come through one accessor
/// (ComprehensionOp::getExtent) rather than by changing this constraint.
def Tang_Tensor : RankedTensorOf<[F64, F32, F16, BF16, I32, I8, I1]>;

#endif // TANG_DIALECT_TANG_IR_TANGDIALECT_TD
