// RUN: tang-opt %s --split-input-file --tang-schedule --convert-tang-to-gpu | FileCheck %s

// A row kernel without a row (isRowlessSchedule): a map whose body's long
// reductions read along its last index; every point a block whose threads
// share the nested reduction (strided vector loads, a shuffle butterfly),
// thread 0 storing.

// One point (a decode step's single token: its gate over the hidden
// width): still a block of threads sharing the reduction, not one thread
// walking all 2048 elements.
// CHECK-LABEL: func.func @one_token_gate
// CHECK: gpu.launch_func @tang_kernels::@one_token_gate_k0 blocks in (%[[ONE:.*]], %{{.*}}, %{{.*}}) threads in (%[[T:.*]], %{{.*}}, %{{.*}})
// CHECK-LABEL: gpu.func @one_token_gate_k0
// CHECK: gpu.thread_id x
// CHECK: vector.load %arg0
// CHECK: gpu.shuffle xor
// CHECK: arith.cmpi eq
// CHECK: scf.if
// CHECK: memref.store
func.func @one_token_gate(%x: tensor<1x2048xbf16>, %w: tensor<1x2048xbf16>) -> tensor<1xf32> {
  %y = tang.comprehension (%t) [1] : tensor<1xf32> {
    %s = tang.comprehension reduce (%d) [2048] monoid(add) : f32 {
      %a = tang.read %x[%t, %d] : tensor<1x2048xbf16>
      %b = tang.read %w[%t, %d] : tensor<1x2048xbf16>
      %ae = arith.extf %a : bf16 to f32
      %be = arith.extf %b : bf16 to f32
      %p = arith.mulf %ae, %be : f32
      tang.yield %p : f32
    }
    %n = arith.negf %s : f32
    %e = math.exp %n : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %e : f32
    %g = arith.divf %one, %den : f32
    tang.yield %g : f32
  }
  return %y : tensor<1xf32>
}
