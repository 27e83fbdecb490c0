// REQUIRES: spirv-val
// Every example lowers through --tang-lower-spirv (with fusion) to SPIR-V
// that spirv-val accepts for Vulkan 1.1. (Running it on lavapipe is next.)
// RUN: rm -rf %t && mkdir -p %t
// RUN: bash %S/Inputs/lower-all-examples.sh spirv tang-opt %spirv_val %t %tang_src/examples/*.mlir 2>&1 | FileCheck %s
// CHECK: ok alibi_attention
// CHECK: ok argmax
// CHECK: ok attention
// CHECK: ok causal_attention
// CHECK: ok conv2d
// CHECK: ok cross_entropy
// CHECK: ok gemv
// CHECK: ok gpt2_block
// CHECK: ok gqa_attention
// CHECK: ok layernorm
// CHECK: ok logsumexp
// CHECK: ok matmul
// CHECK: ok matmul_bias_gelu
// CHECK: ok prefix_sum
// CHECK: ok rmsnorm
// CHECK: ok softmax
// CHECK: ok swiglu_mlp
// CHECK: ok transformer_block
