// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --tang-schedule | FileCheck %s --check-prefix=SCHED
// RUN: tang-opt %s --tang-attach-target="chip=sm_90a" --tang-schedule --convert-tang-to-gpu="tensor-cores=target" | FileCheck %s

// Rows too few to fill the device and long (an argmax over a vocabulary, a
// sum of everything) are split among blocks: the schedule spreads the
// reduced row over block_x in runs of 5120 (a multiple of what 256 threads
// read in a pass of 4-element vectors; the kernel reads one element per
// thread per pass), the rows over block_y; the kernel form
// writes each block's carrier to a scratch buffer and a second kernel
// combines them in order, a thread per row.

// SCHED-LABEL: func.func @main
// SCHED: tile = [1, 5120], mapping = [block_y, block_x], threads = [1, 256]
// SCHED-LABEL: func.func @total
// SCHED: tile = [5120], mapping = [block_x], threads = [256]

// CHECK-LABEL: func.func @main
// CHECK: %[[S:.*]] = memref.alloc() : memref<2x40x2xf32>
// CHECK: gpu.launch_func @tang_kernels::@main_k0 blocks in (%c40, %c2, %c1{{.*}}) threads in (%c256,
// CHECK-SAME: %[[S]] : memref<2x40x2xf32>)
// CHECK: gpu.launch_func @tang_kernels::@main_k0_1 blocks in (%c1{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c2{{.*}},
// CHECK-SAME: %[[S]] : memref<2x40x2xf32>)
// CHECK-LABEL: func.func @total
// CHECK: memref.alloc() : memref<1x196x1xf32>
// CHECK: gpu.launch_func @tang_kernels::@total_k0 blocks in (%c196,
// The partial kernel: threads stride the block's run, shuffles and
// workgroup memory combine them, thread 0 stores (the index as f32 bits).
// CHECK: gpu.func @main_k0(
// CHECK: scf.for
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: memref.store
// The combining kernel: the 40 splits in order.
// CHECK: gpu.func @main_k0_1(
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c40{{.*}} step %c1{{.*}} iter_args
// CHECK: arith.bitcast %{{.*}} : f32 to i32
func.func @main(%x: tensor<2x200000xf32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %v, %i = tang.comprehension (%r) reduce (%n) [2, 200000] monoid(argmax) : tensor<2xf32>, tensor<2xi32> {
    %a = tang.read %x[%r, %n] : tensor<2x200000xf32>
    %j = tang.index %n : i32
    tang.yield %a, %j : f32, i32
  }
  return %v, %i : tensor<2xf32>, tensor<2xi32>
}
func.func @total(%x: tensor<1000000xf32>) -> tensor<f32> {
  %s = tang.comprehension reduce (%n) [1000000] monoid(add) : tensor<f32> {
    %a = tang.read %x[%n] : tensor<1000000xf32>
    tang.yield %a : f32
  }
  return %s : tensor<f32>
}
