// RUN: tang-opt %s --convert-tang-to-gpu --split-input-file --verify-diagnostics | FileCheck %s

// A fused softmax: the host launches one kernel over the 8x32 points; the
// kernel decomposes its thread id into (i, j), runs the nested reductions as
// loops carrying the carrier, and stores in place into the result argument.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:.*]]: memref<8x32xf32>, %[[Y:.*]]: memref<8x32xf32>)
// CHECK-SAME: attributes {tang.kernel_form, tang.num_inputs = 1 : i64}
// CHECK: gpu.launch_func @tang_kernels::@softmax_k0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[X]] : memref<8x32xf32>, %[[Y]] : memref<8x32xf32>)
// CHECK: gpu.module @tang_kernels
// CHECK: gpu.func @softmax_k0(%[[KX:.*]]: memref<8x32xf32>, %[[KY:.*]]: memref<8x32xf32>) kernel
// CHECK: gpu.block_id x
// CHECK: gpu.thread_id x
// CHECK: scf.if
// CHECK: %[[M:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: arith.maximumf %[[ACC]]
// CHECK: scf.for
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[KY]]
func.func @softmax(%X: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %y = tang.comprehension (%i, %j) [8, 32] : tensor<8x32xf32> {
    %m = tang.comprehension reduce (%k) [32] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<8x32xf32>
      tang.yield %x : f32
    }
    %l = tang.comprehension reduce (%k) [32] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<8x32xf32>
      %d = arith.subf %x, %m : f32
      %e = math.exp %d : f32
      tang.yield %e : f32
    }
    %x = tang.read %X[%i, %j] : tensor<8x32xf32>
    %d = arith.subf %x, %m : f32
    %e = math.exp %d : f32
    %r = arith.divf %e, %l : f32
    tang.yield %r : f32
  }
  return %y : tensor<8x32xf32>
}

// -----

// bf16 storage: loads extend to f32, arithmetic runs in f32 (math functions
// as fast approximations: bf16's rounding dwarfs their error), the store
// truncates; an intermediate is allocated, launched into and freed.
// CHECK-LABEL: func.func @bf16_chain
// CHECK: %[[T:.*]] = memref.alloc() : memref<64xbf16>
// CHECK: gpu.launch_func @tang_kernels::@bf16_chain_k0 {{.*}} args(%{{.*}} : memref<64xbf16>, %[[T]] : memref<64xbf16>)
// CHECK: gpu.launch_func @tang_kernels::@bf16_chain_k1 {{.*}} args(%[[T]] : memref<64xbf16>, %{{.*}} : memref<64xbf16>)
// CHECK: memref.dealloc %[[T]]
// CHECK: gpu.func @bf16_chain_k0
// CHECK: %[[L:.*]] = memref.load
// CHECK: %[[E:.*]] = arith.extf %[[L]] : bf16 to f32
// CHECK: %[[X:.*]] = math.exp %[[E]] fastmath<afn> : f32
// CHECK: %[[S:.*]] = arith.truncf %[[X]] : f32 to bf16
// CHECK: memref.store %[[S]]
func.func @bf16_chain(%X: tensor<64xbf16>) -> tensor<64xbf16> {
  %a = tang.comprehension (%i) [64] : tensor<64xbf16> {
    %x = tang.read %X[%i] : tensor<64xbf16>
    %e = math.exp %x : bf16
    tang.yield %e : bf16
  }
  %b = tang.comprehension (%i) [64] : tensor<64xbf16> {
    %x = tang.read %a[63 - %i] : tensor<64xbf16>
    %n = arith.negf %x : bf16
    tang.yield %n : bf16
  }
  return %b : tensor<64xbf16>
}

// -----

// The online-softmax carrier (m, l, acc) is carried by the loop and
// finalised to acc / l.
// CHECK-LABEL: gpu.func @attention_k0
// CHECK: scf.for {{.*}} -> (f32, f32, f32)
// CHECK: math.exp
// CHECK: arith.divf
func.func @attention(%S: tensor<4x16xf32>, %V: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %o = tang.comprehension (%i, %d) reduce (%j) [4, 8, 16] monoid(online_softmax) : tensor<4x8xf32> {
    %s = tang.read %S[%i, %j] : tensor<4x16xf32>
    %v = tang.read %V[%j, %d] : tensor<16x8xf32>
    tang.yield %s, %v : f32, f32
  }
  return %o : tensor<4x8xf32>
}

// -----

// A tensor returned twice, and an argument returned, are copied into their
// results by point kernels (each result is written once, in place).
// CHECK-LABEL: func.func @returned_twice
// CHECK-SAME: (%[[X:.*]]: memref<4xf32>, %[[Y0:.*]]: memref<4xf32>, %[[Y1:.*]]: memref<4xf32>, %[[X1:.*]]: memref<4xf32>)
// CHECK: gpu.launch_func @tang_kernels::@returned_twice_k0 {{.*}} args(%[[X]] : memref<4xf32>, %[[Y0]] : memref<4xf32>)
// CHECK: gpu.launch_func @tang_kernels::@returned_twice_k1 {{.*}} args(%[[Y0]] : memref<4xf32>, %[[Y1]] : memref<4xf32>)
// CHECK: gpu.launch_func @tang_kernels::@returned_twice_k2 {{.*}} args(%[[X]] : memref<4xf32>, %[[X1]] : memref<4xf32>)
func.func @returned_twice(%X: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y = tang.comprehension (%i) [4] : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %y, %y, %X : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// i1 tensors are refused with a diagnostic.
// expected-error @+1 {{has an i1 tensor ('tensor<4xi1>'): the kernel form stores no i1 tensors yet}}
func.func @bool_result(%X: tensor<4xf32>) -> tensor<4xi1> {
  %y = tang.comprehension (%i) [4] : tensor<4xi1> {
    %x = tang.read %X[%i] : tensor<4xf32>
    %z = arith.constant 0.0 : f32
    %p = arith.cmpf ogt, %x, %z : f32
    tang.yield %p : i1
  }
  return %y : tensor<4xi1>
}

// -----

// A row schedule gives a row kernel: a block per row, the row max computed
// once per block (each thread a strided part, then subgroup shuffles and a
// workgroup-memory combine across warps), then each thread writes the row
// elements it strides (8 steps per thread: too many to unroll).
// CHECK-LABEL: func.func @row_softmax_shift
// CHECK: gpu.launch_func @tang_kernels::@row_softmax_shift_k0 blocks in (%[[G:.*]], %{{.*}}, %{{.*}}) threads in (%[[T:.*]], %{{.*}}, %{{.*}})
// CHECK: gpu.func @row_softmax_shift_k0({{.*}}) workgroup(%[[BUF:.*]] : memref<33x4xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: arith.maximumf
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[BUF]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[BUF]]
// CHECK: scf.for %[[J:.*]] = %[[TID]] to %{{.*}} step %{{.*}} {
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[J]]]
func.func @row_softmax_shift(%X: tensor<16x512xf32>) -> tensor<16x512xf32> {
  %y = tang.comprehension (%i, %j) [16, 512] attributes {schedule = #tang.schedule<tile = [1, 512], mapping = [block_x, serial], threads = [1, 64]>} : tensor<16x512xf32> {
    %m = tang.comprehension reduce (%k) [512] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<16x512xf32>
      tang.yield %x : f32
    }
    %x = tang.read %X[%i, %j] : tensor<16x512xf32>
    %d = arith.subf %x, %m : f32
    tang.yield %d : f32
  }
  return %y : tensor<16x512xf32>
}

// -----

// Rows of one warp (threads = 32), many of them: 8 rows per block, a warp
// each (block x 8 + warp), the lanes striding the row; the combine is the
// warp's butterfly alone (no workgroup memory, no block barrier). The row
// reduction here is attention's D = rowsum(dO O).
// CHECK-LABEL: func.func @rows_per_block
// CHECK: gpu.launch_func @tang_kernels::@rows_per_block_k0 blocks in (%c512, %c1{{.*}}, %c1{{.*}}) threads in (%c256, %c1{{.*}}, %c1{{.*}})
// CHECK: gpu.func @rows_per_block_k0
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK: %[[ROW0:.*]] = arith.muli %[[BID]], %c8
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK: arith.addi %[[ROW0]], %[[WARP]]
// CHECK: arith.remui %[[TID]], %c32
// CHECK: gpu.shuffle xor
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @rows_per_block(%A: tensor<4096x128xf32>, %B: tensor<4096x128xf32>) -> tensor<4096xf32> {
  %y = tang.comprehension (%i) reduce (%k) [4096, 128] monoid(add) attributes {schedule = #tang.schedule<tile = [1, 128], mapping = [block_x, serial], threads = [1, 32]>} : tensor<4096xf32> {
    %a = tang.read %A[%i, %k] : tensor<4096x128xf32>
    %b = tang.read %B[%i, %k] : tensor<4096x128xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %y : tensor<4096xf32>
}

// -----

// With a vector width in the schedule, reads along the row are loaded as
// 16-byte vectors (4 x f32) and the row is stored as vectors. The row is
// one step per thread: unrolled, its vector is loaded once, for the max,
// and reused by the output pass.
// CHECK-LABEL: gpu.func @row_vector_k0
// CHECK-NOT: scf.for
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<16x256xf32>, vector<4xf32>
// CHECK-COUNT-4: vector.extract
// CHECK: gpu.shuffle xor
// CHECK-NOT: vector.load
// CHECK: vector.from_elements
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<16x256xf32>, vector<4xf32>
func.func @row_vector(%X: tensor<16x256xf32>) -> tensor<16x256xf32> {
  %y = tang.comprehension (%i, %j) [16, 256] attributes {schedule = #tang.schedule<tile = [1, 256], mapping = [block_x, serial], threads = [1, 64], vector = 4>} : tensor<16x256xf32> {
    %m = tang.comprehension reduce (%k) [256] monoid(max) : f32 {
      %x = tang.read %X[%i, %k] : tensor<16x256xf32>
      tang.yield %x : f32
    }
    %x = tang.read %X[%i, %j] : tensor<16x256xf32>
    %d = arith.subf %x, %m : f32
    tang.yield %d : f32
  }
  return %y : tensor<16x256xf32>
}

// -----

// A read at a column offset that is a multiple of the vector width (the
// SwiGLU gate reading columns f and 256 + f of one product) is loaded as
// vectors too; an offset that is not (3 + f) is read element by element.
// CHECK-LABEL: gpu.func @column_offsets_k0
// CHECK-COUNT-2: vector.load %{{.*}} {alignment = 16 : i64} : memref<4x512xf32>, vector<4xf32>
// CHECK-NOT: vector.load
// CHECK: memref.load %{{.*}} : memref<4x512xf32>
func.func @column_offsets(%AU: tensor<4x512xf32>) -> tensor<4x256xf32> {
  %g = tang.comprehension (%i, %f) [4, 256] attributes {schedule = #tang.schedule<tile = [1, 256], mapping = [block_x, serial], threads = [1, 64], vector = 4>} : tensor<4x256xf32> {
    %a = tang.read %AU[%i, %f] : tensor<4x512xf32>
    %u = tang.read %AU[%i, %f + 256] : tensor<4x512xf32>
    %w = tang.read %AU[%i, %f + 3] : tensor<4x512xf32>
    %p = arith.mulf %a, %u : f32
    %q = arith.addf %p, %w : f32
    tang.yield %q : f32
  }
  return %g : tensor<4x256xf32>
}

// -----

// A row kernel under a monoid that is not commutative (the affine maps of a
// linear recurrence) combines in index order: each thread folds one run of
// 2048 / 64 = 32 consecutive elements (not every 64th), and the butterfly
// goes from the nearest lane out, the lane whose bit is set putting its
// partner's (earlier) carrier first.
// CHECK-LABEL: gpu.func @recurrence_k0
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[LB:.*]] = arith.muli %[[TID]], %[[C32]] : index
// CHECK: %[[END:.*]] = arith.addi %[[LB]], %{{.*}} : index
// CHECK: %[[UB:.*]] = arith.minui %[[END]], %{{.*}} : index
// CHECK: %[[PART:.*]]:2 = scf.for %{{.*}} = %[[LB]] to %[[UB]] step %{{.*}} iter_args
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]]
// CHECK: %[[O1:.*]], %{{.*}} = gpu.shuffle xor %[[PART]]#0, %c1_i32
// CHECK: %[[BIT1:.*]] = arith.andi %[[LANE]], %{{.*}}
// CHECK: %[[LATER:.*]] = arith.cmpi ne, %[[BIT1]]
// CHECK: %[[FIRST:.*]] = arith.select %[[LATER]], %[[O1]], %[[PART]]#0
// CHECK: %[[SECOND:.*]] = arith.select %[[LATER]], %[[PART]]#0, %[[O1]]
// CHECK: arith.mulf %[[FIRST]], %[[SECOND]]
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
tang.monoid @affine_map : [f32, f32] identity [1.0 : f32, 0.0 : f32] {
^bb0(%a1: f32, %b1: f32, %a2: f32, %b2: f32):
  %a = arith.mulf %a1, %a2 : f32
  %ab = arith.mulf %a2, %b1 : f32
  %b = arith.addf %ab, %b2 : f32
  tang.yield %a, %b : f32, f32
}
func.func @recurrence(%a: tensor<4x2048xf32>, %x: tensor<4x2048xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %A, %h = tang.comprehension (%r) reduce (%k) [4, 2048] monoid(@affine_map) attributes {schedule = #tang.schedule<tile = [1, 2048], mapping = [block_x, serial], threads = [1, 64], vector = 4>} : tensor<4xf32>, tensor<4xf32> {
    %ak = tang.read %a[%r, %k] : tensor<4x2048xf32>
    %xk = tang.read %x[%r, %k] : tensor<4x2048xf32>
    tang.yield %ak, %xk : f32, f32
  }
  return %A, %h : tensor<4xf32>, tensor<4xf32>
}

// -----

// A comprehension with no reads (a fill, as linalg.fill imports) whose
// yielded constant canonicalisation hoisted out of the body: the kernel
// yields a copy made in the body.
// CHECK-LABEL: gpu.func @fill_k0
// CHECK: %[[V:.*]] = arith.constant 2.500000e+00 : f32
// CHECK: memref.store %[[V]]
func.func @fill(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = tang.comprehension (%i, %j) [4, 8] : tensor<4x8xf32> {
    %v = arith.constant 2.5 : f32
    tang.yield %v : f32
  }
  %y = tang.comprehension (%i, %j) [4, 8] : tensor<4x8xf32> {
    %a = tang.read %x[%i, %j] : tensor<4x8xf32>
    %b = tang.read %c[%i, %j] : tensor<4x8xf32>
    %s = arith.addf %a, %b : f32
    tang.yield %s : f32
  }
  return %c, %y : tensor<4x8xf32>, tensor<4x8xf32>
}
