// RUN: tang-opt %s --tang-check-target-types="target=spirv caps=Float16,StorageBuffer16BitAccess,Int64" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CAPS --allow-empty
// RUN: not tang-opt %s --tang-check-target-types="target=spirv" -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOCAPS

// SPIR-V takes f16 and i64 with the capabilities they need, and names the
// capabilities without them, at the user's argument and op.
// CAPS-NOT: error
// NOCAPS-DAG: error: argument #0 of @f uses 'f16', which needs the SPIR-V capabilities Float16 and StorageBuffer16BitAccess (add them to caps=)
// NOCAPS-DAG: error: 'tang.index' op uses 'i64', which needs the SPIR-V capability Int64 (add it to caps=)
func.func @f(%x: tensor<4xf16>) -> tensor<4xf32> {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    %v = tang.read %x[%i] : tensor<4xf16>
    %w = arith.extf %v : f16 to f32
    %n = tang.index %i : i64
    %m = arith.sitofp %n : i64 to f32
    %s = arith.addf %w, %m : f32
    tang.yield %s : f32
  }
  return %y : tensor<4xf32>
}
