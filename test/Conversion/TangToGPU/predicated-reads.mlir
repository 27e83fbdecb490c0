// RUN: tang-opt %s --tang-attach-target=chip=sm_90a --tang-schedule --convert-tang-to-gpu | FileCheck %s

// A concatenation written as masked reads (as --tang-grad writes the
// gradient of reads at column offsets: SwiGLU's gate and up halves): each
// read's vector is loaded only when an element of it takes the read (the
// select's condition, or its negation for the false side, over the
// vector's 8 columns), not both for every element.
// CHECK-LABEL: gpu.func @main_k0
// CHECK: arith.ori %{{.*}}, %{{.*}} : i1
// CHECK: scf.if %{{.*}} -> (vector<8xbf16>) {
// CHECK: arith.remsi
// CHECK: vector.load %{{.*}} : memref<64x512xbf16>, vector<8xbf16>
// CHECK: } else {
// CHECK: arith.constant dense<0.000000e+00> : vector<8xbf16>
// CHECK: scf.if %{{.*}} -> (vector<8xbf16>) {
// CHECK: vector.load %{{.*}} : memref<64x512xbf16>, vector<8xbf16>
// A read used outside a select is loaded unconditionally.
// CHECK-LABEL: gpu.func @unmasked_k0
// CHECK-NOT: scf.if
// CHECK: vector.load
func.func @main(%a: tensor<64x512xbf16>, %b: tensor<64x512xbf16>) -> tensor<64x1024xbf16> {
  %c0 = arith.constant 0.0 : bf16
  %z = arith.constant 0 : i64
  %n = arith.constant 512 : i64
  %o = tang.comprehension (%i, %j) [64, 1024] : tensor<64x1024xbf16> {
    %x = tang.read %a[%i, %j mod 512] : tensor<64x512xbf16>
    %jj = tang.index %j : i64
    %lo = arith.cmpi sge, %jj, %z : i64
    %hi = arith.cmpi slt, %jj, %n : i64
    %in = arith.andi %lo, %hi : i1
    %xs = arith.select %in, %x, %c0 : bf16
    %y = tang.read %b[%i, %j mod 512] : tensor<64x512xbf16>
    %kk = tang.index [%j - 512] : i64
    %lo2 = arith.cmpi sge, %kk, %z : i64
    %hi2 = arith.cmpi slt, %kk, %n : i64
    %in2 = arith.andi %lo2, %hi2 : i1
    %ys = arith.select %in2, %y, %c0 : bf16
    %s = arith.addf %xs, %ys : bf16
    tang.yield %s : bf16
  }
  return %o : tensor<64x1024xbf16>
}

func.func @unmasked(%a: tensor<64x512xbf16>) -> tensor<64x512xbf16> {
  %c0 = arith.constant 0.0 : bf16
  %n = arith.constant 256 : i64
  %o = tang.comprehension (%i, %j) [64, 512] : tensor<64x512xbf16> {
    %x = tang.read %a[%i, %j] : tensor<64x512xbf16>
    %jj = tang.index %j : i64
    %in = arith.cmpi slt, %jj, %n : i64
    %xs = arith.select %in, %x, %c0 : bf16
    %t = arith.addf %xs, %x : bf16
    tang.yield %t : bf16
  }
  return %o : tensor<64x512xbf16>
}
