// RUN: tang-opt %s --split-input-file --tang-lower-spirv="caps=Shader" -verify-diagnostics -o /dev/null

// Types a SPIR-V target of the Shader capability alone does not have are
// refused before any lowering, where the program first uses them (the
// default target also has Float16, StorageBuffer16BitAccess and Int64).

// bf16: no bfloat16 type in Vulkan compute here.
// expected-error @+1 {{argument #0 of @main uses 'bf16', which the SPIR-V target does not have (no bfloat16 type in Vulkan compute here); store the program in f16 or f32}}
func.func @main(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %y = tang.comprehension (%i) [8] : tensor<8xbf16> {
    %v = tang.read %x[%i] : tensor<8xbf16>
    tang.yield %v : bf16
  }
  return %y : tensor<8xbf16>
}

// -----

// f64 needs a capability the target does not list.
// expected-error @+1 {{argument #0 of @main uses 'f64', which needs the SPIR-V capability Float64 (add it to caps=)}}
func.func @main(%x: tensor<8xf64>) -> tensor<8xf64> {
  %y = tang.comprehension (%i) [8] : tensor<8xf64> {
    %v = tang.read %x[%i] : tensor<8xf64>
    tang.yield %v : f64
  }
  return %y : tensor<8xf64>
}

// -----

// f16 buffers need 16-bit storage: without it the conversion would read
// them as 4-byte elements.
// expected-error @+1 {{argument #0 of @main uses 'f16', which needs the SPIR-V capabilities Float16 and StorageBuffer16BitAccess (add them to caps=)}}
func.func @main(%x: tensor<8xf16>) -> tensor<8xf16> {
  %y = tang.comprehension (%i) [8] : tensor<8xf16> {
    %v = tang.read %x[%i] : tensor<8xf16>
    tang.yield %v : f16
  }
  return %y : tensor<8xf16>
}

// -----

// An index asked for as i64 needs Int64; the refusal names the tang.index.
func.func @main(%x: tensor<8xi32>) -> tensor<8xi32> {
  %y = tang.comprehension (%i) [8] : tensor<8xi32> {
    %v = tang.read %x[%i] : tensor<8xi32>
    // expected-error @+1 {{'tang.index' op uses 'i64', which needs the SPIR-V capability Int64 (add it to caps=)}}
    %n = tang.index %i : i64
    %t = arith.trunci %n : i64 to i32
    %w = arith.addi %v, %t : i32
    tang.yield %w : i32
  }
  return %y : tensor<8xi32>
}
