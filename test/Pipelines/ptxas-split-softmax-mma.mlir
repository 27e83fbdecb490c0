// REQUIRES: ptxas
// Grouped-query decode attention (4 query heads per key/value head, head
// dimension 128, bf16 caches, f32 query, a symbolic context) with
// split-softmax-mma=on lowers to mma.sync PTX (bf16 m16n8k16, f32
// accumulators; value operands paired by prmt) that ptxas accepts with no
// spills, for sm_90a and sm_80; with split-softmax-mma=off, the same program
// takes the lane kernel.
// RUN: rm -rf %t && tang-opt %s --tang-lower-cuda="fuse split-softmax-mma=on bundle=%t/sm90" -o /dev/null
// RUN: FileCheck %s --input-file=%t/sm90/tang_kernels.ptx
// RUN: %ptxas -arch=sm_90a -v %t/sm90/tang_kernels.ptx -o %t/sm90.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tang-opt %s --tang-lower-cuda="fuse split-softmax-mma=on chip=sm_80 bundle=%t/sm80" -o /dev/null
// RUN: FileCheck %s --input-file=%t/sm80/tang_kernels.ptx
// RUN: %ptxas -arch=sm_80 -v %t/sm80/tang_kernels.ptx -o %t/sm80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: tang-opt %s --tang-lower-cuda="fuse split-softmax-mma=off bundle=%t/lanes" -o /dev/null
// RUN: FileCheck %s --check-prefix=LANES --input-file=%t/lanes/tang_kernels.ptx
// CHECK: .entry gqa_k0(
// CHECK: ld.global{{.*}}.v4
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: shfl.sync.bfly.b32
// CHECK: prmt.b32 {{.*}}, 0x5410U;
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: bar.sync 0;
// CHECK: .entry gqa_k0_1(
// PTXAS-NOT: {{[^0-9][1-9][0-9]*}} bytes spill
// PTXAS: Compiling entry function 'gqa_k0'
// PTXAS-NEXT: Function properties for gqa_k0
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: {{[^0-9][1-9][0-9]*}} bytes spill
// LANES: .entry gqa_k0(
// LANES-NOT: mma.sync
// LANES: .entry gqa_k0_1(
func.func @gqa(%q: tensor<2x8x128xf32>, %K: tensor<2x2x320x128xbf16>, %V: tensor<2x2x320x128xbf16>, %pos: index) -> tensor<2x8x128xf32> {
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %s = tang.comprehension (%b, %h, %j) [2, 8, %len] : tensor<2x8x?xf32> {
    %dot = tang.comprehension reduce (%e) [128] monoid(add) : f32 {
      %a = tang.read %q[%b, %h, %e] : tensor<2x8x128xf32>
      %k = tang.read %K[%b, %h floordiv 4, %j, %e] : tensor<2x2x320x128xbf16>
      %kf = arith.extf %k : bf16 to f32
      %p = arith.mulf %a, %kf : f32
      tang.yield %p : f32
    }
    %scale = arith.constant 0.0883883461 : f32
    %r = arith.mulf %dot, %scale : f32
    tang.yield %r : f32
  }
  %m = tang.comprehension (%b, %h) reduce (%j) [2, 8, %len] monoid(max) : tensor<2x8xf32> {
    %x = tang.read %s[%b, %h, %j] : tensor<2x8x?xf32>
    tang.yield %x : f32
  }
  %z = tang.comprehension (%b, %h) reduce (%j) [2, 8, %len] monoid(add) : tensor<2x8xf32> {
    %x = tang.read %s[%b, %h, %j] : tensor<2x8x?xf32>
    %mx = tang.read %m[%b, %h] : tensor<2x8xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    tang.yield %e : f32
  }
  %o = tang.comprehension (%b, %h, %d) reduce (%j) [2, 8, 128, %len] monoid(add) : tensor<2x8x128xf32> {
    %x = tang.read %s[%b, %h, %j] : tensor<2x8x?xf32>
    %mx = tang.read %m[%b, %h] : tensor<2x8xf32>
    %c = arith.subf %x, %mx : f32
    %e = math.exp %c : f32
    %zz = tang.read %z[%b, %h] : tensor<2x8xf32>
    %w = arith.divf %e, %zz : f32
    %v = tang.read %V[%b, %h floordiv 4, %j, %d] : tensor<2x2x320x128xbf16>
    %vf = arith.extf %v : bf16 to f32
    %r = arith.mulf %w, %vf : f32
    tang.yield %r : f32
  }
  return %o : tensor<2x8x128xf32>
}
