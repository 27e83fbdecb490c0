// RUN: tang-opt %s --tang-lower-opencl -o /dev/null | FileCheck %s --check-prefixes=CHECK,C,CONST
// RUN: tang-opt %s --tang-lower-c -o /dev/null | FileCheck %s --check-prefixes=CHECK,C,CONST
// RUN: tang-opt %s --tang-lower-metal -o /dev/null | FileCheck %s --check-prefixes=CHECK,C,CONST
// RUN: tang-opt %s --tang-lower-glsl -o /dev/null | FileCheck %s --check-prefixes=CHECK,C
// RUN: tang-opt %s --tang-lower-wgsl -o /dev/null | FileCheck %s --check-prefixes=CHECK,WGSL
// RUN: %if clangxx %{ rm -rf %t && mkdir -p %t && bash %S/../../Pipelines/Inputs/lower-all-examples.sh metal tang-opt %clangxx %t %s 2>&1 | FileCheck %s --check-prefix=LINT %}

// arith.cmpf's predicates as the printed languages' comparisons: ordered
// ones false on NaN, unordered ones true. Only ==, <, <=, > and >= are
// ordered in every target (C's != is unordered; WGSL does not say what its
// != does), so the others are built from them: an unordered predicate is
// the negation of the opposite ordered one, ord and uno test for NaN (WGSL,
// which has no isnan, by the bits). The constant predicates print as
// `false` and `true` (checked on C, OpenCL and Metal).
// WGSL: fn tang_isnan(x: f32) -> bool {
// WGSL-NEXT: return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
// CHECK: [[A:v[0-9]+]]{{(: f32)?}} = {{(main_k0_)?}}a0[
// CHECK: [[B:v[0-9]+]]{{(: f32)?}} = {{(main_k0_)?}}a1[
// CONST: = false;
// CHECK: = [[A]] == [[B]];
// CHECK: = [[A]] > [[B]];
// CHECK: = [[A]] >= [[B]];
// CHECK: = [[A]] < [[B]];
// CHECK: = [[A]] <= [[B]];
// CHECK: = ([[A]] < [[B]] || [[A]] > [[B]]);
// C: = !isnan([[A]]) && !isnan([[B]]);
// WGSL: = !tang_isnan([[A]]) && !tang_isnan([[B]]);
// CHECK: = !([[A]] < [[B]] || [[A]] > [[B]]);
// CHECK: = !([[A]] <= [[B]]);
// CHECK: = !([[A]] < [[B]]);
// CHECK: = !([[A]] >= [[B]]);
// CHECK: = !([[A]] > [[B]]);
// CHECK: = !([[A]] == [[B]]);
// C: = isnan([[A]]) || isnan([[B]]);
// WGSL: = tang_isnan([[A]]) || tang_isnan([[B]]);
// CONST: = true;
// LINT: ok cmpf-predicates
func.func @main(%A: tensor<8xf32>, %B: tensor<8xf32>) -> tensor<8xi32> {
  %y = tang.comprehension (%i) [8] : tensor<8xi32> {
    %a = tang.read %A[%i] : tensor<8xf32>
    %b = tang.read %B[%i] : tensor<8xf32>
    %c0 = arith.cmpf false, %a, %b : f32
    %c1 = arith.cmpf oeq, %a, %b : f32
    %c2 = arith.cmpf ogt, %a, %b : f32
    %c3 = arith.cmpf oge, %a, %b : f32
    %c4 = arith.cmpf olt, %a, %b : f32
    %c5 = arith.cmpf ole, %a, %b : f32
    %c6 = arith.cmpf one, %a, %b : f32
    %c7 = arith.cmpf ord, %a, %b : f32
    %c8 = arith.cmpf ueq, %a, %b : f32
    %c9 = arith.cmpf ugt, %a, %b : f32
    %c10 = arith.cmpf uge, %a, %b : f32
    %c11 = arith.cmpf ult, %a, %b : f32
    %c12 = arith.cmpf ule, %a, %b : f32
    %c13 = arith.cmpf une, %a, %b : f32
    %c14 = arith.cmpf uno, %a, %b : f32
    %c15 = arith.cmpf true, %a, %b : f32
    %x0 = arith.xori %c0, %c1 : i1
    %x1 = arith.xori %x0, %c2 : i1
    %x2 = arith.xori %x1, %c3 : i1
    %x3 = arith.xori %x2, %c4 : i1
    %x4 = arith.xori %x3, %c5 : i1
    %x5 = arith.xori %x4, %c6 : i1
    %x6 = arith.xori %x5, %c7 : i1
    %x7 = arith.xori %x6, %c8 : i1
    %x8 = arith.xori %x7, %c9 : i1
    %x9 = arith.xori %x8, %c10 : i1
    %x10 = arith.xori %x9, %c11 : i1
    %x11 = arith.xori %x10, %c12 : i1
    %x12 = arith.xori %x11, %c13 : i1
    %x13 = arith.xori %x12, %c14 : i1
    %x14 = arith.xori %x13, %c15 : i1
    %r = arith.extui %x14 : i1 to i32
    tang.yield %r : i32
  }
  return %y : tensor<8xi32>
}
