// RUN: tang-opt %s | tang-opt | FileCheck %s
// RUN: tang-opt %s --mlir-print-op-generic | tang-opt | FileCheck %s

// The view maps, printed as aliases at the top of the module.
// CHECK-DAG: #[[TRANSPOSE:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0 + d2, d1 + d3)>

// A user monoid, commutative: sym name, carrier, identity and combine survive.
// CHECK-LABEL: tang.monoid @welford : [f64, f64, f64] identity [0.000000e+00, 0.000000e+00, 0.000000e+00] commutative {
// CHECK-NEXT:  ^bb0(%[[N1:.*]]: f64, %[[M1:.*]]: f64, %[[S1:.*]]: f64, %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64):
// CHECK-NEXT:    tang.yield %[[N1]], %[[M1]], %[[S1]] : f64, f64, f64
tang.monoid @welford : [f64, f64, f64] identity [0.0 : f64, 0.0 : f64, 0.0 : f64] commutative {
^bb0(%n1: f64, %m1: f64, %s1: f64, %n2: f64, %m2: f64, %s2: f64):
  tang.yield %n1, %m1, %s1 : f64, f64, f64
}

// A user monoid without `commutative`, integer carrier.
// CHECK-LABEL: tang.monoid @first : [i32] identity [0 : i32] {
// CHECK-NEXT:  ^bb0(%[[A:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT:    tang.yield %[[A]] : i32
tang.monoid @first : [i32] identity [0 : i32] {
^bb0(%a: i32, %b: i32):
  tang.yield %a : i32
}

// A map: parallel indices only, no monoid.
// CHECK-LABEL: func.func @map
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK:         %[[R:.*]] = tang.comprehension (%[[P0:.*]], %[[P1:.*]]) [4, 8] : tensor<4x8xf32> {
// CHECK-NEXT:      %[[V:.*]] = tang.read %[[X]][%[[P0]], %[[P1]]] : tensor<4x8xf32>
// CHECK-NEXT:      tang.yield %[[V]] : f32
// CHECK:         return %[[R]]
func.func @map(%X: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %Y = tang.comprehension (%i, %j) [4, 8] : tensor<4x8xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %Y : tensor<4x8xf32>
}

// Matmul: parallel + reduced indices under add.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x3xf32>)
// CHECK:         tang.comprehension (%[[P0:.*]], %[[P1:.*]]) reduce (%[[R0:.*]]) [4, 3, 8] monoid(add) : tensor<4x3xf32> {
// CHECK-NEXT:      tang.read %[[A]][%[[P0]], %[[R0]]] : tensor<4x8xf32>
// CHECK-NEXT:      tang.read %[[B]][%[[R0]], %[[P1]]] : tensor<8x3xf32>
// CHECK:           tang.yield %{{.*}} : f32
func.func @matmul(%A: tensor<4x8xf32>, %B: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [4, 3, 8] monoid(add) : tensor<4x3xf32> {
    %a = tang.read %A[%i, %k] : tensor<4x8xf32>
    %b = tang.read %B[%k, %j] : tensor<8x3xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<4x3xf32>
}

// A reduce-only comprehension nested in a body yields a scalar and may use
// the enclosing comprehension's indices.
// CHECK-LABEL: func.func @nested_scalar
// CHECK-SAME:    (%[[X:.*]]: tensor<4x8xf32>)
// CHECK:         tang.comprehension (%[[P0:.*]], %[[P1:.*]]) [4, 8] : tensor<4x8xf32> {
// CHECK:           %[[SS:.*]] = tang.comprehension reduce (%[[K:.*]]) [8] monoid(add) : f32 {
// CHECK-NEXT:        tang.read %[[X]][%[[P0]], %[[K]]] : tensor<4x8xf32>
// CHECK:           arith.divf %{{.*}}, %[[SS]] : f32
func.func @nested_scalar(%X: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %Y = tang.comprehension (%i, %j) [4, 8] : tensor<4x8xf32> {
    %ss = tang.comprehension reduce (%k) [8] monoid(add) : f32 {
      %x = tang.read %X[%i, %k] : tensor<4x8xf32>
      %sq = arith.mulf %x, %x : f32
      tang.yield %sq : f32
    }
    %x = tang.read %X[%i, %j] : tensor<4x8xf32>
    %y = arith.divf %x, %ss : f32
    tang.yield %y : f32
  }
  return %Y : tensor<4x8xf32>
}

// Single-result builtin monoids over floats and integers: mul, max, min, and, or.
// CHECK-LABEL: func.func @scalar_monoids
// CHECK:         tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(mul) : tensor<4xf32>
// CHECK:         tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(max) : tensor<4xf32>
// CHECK:         tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(min) : tensor<4xi32>
// CHECK:         tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(and) : tensor<4xi1>
// CHECK:         tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(or) : tensor<4xi8>
func.func @scalar_monoids(%X: tensor<4x8xf32>, %I: tensor<4x8xi32>, %M: tensor<4x8xi1>, %B: tensor<4x8xi8>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi1>, tensor<4xi8>) {
  %prod = tang.comprehension (%i) reduce (%k) [4, 8] monoid(mul) : tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  %mx = tang.comprehension (%i) reduce (%k) [4, 8] monoid(max) : tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  %mn = tang.comprehension (%i) reduce (%k) [4, 8] monoid(min) : tensor<4xi32> {
    %x = tang.read %I[%i, %k] : tensor<4x8xi32>
    tang.yield %x : i32
  }
  %all = tang.comprehension (%i) reduce (%k) [4, 8] monoid(and) : tensor<4xi1> {
    %x = tang.read %M[%i, %k] : tensor<4x8xi1>
    tang.yield %x : i1
  }
  %any = tang.comprehension (%i) reduce (%k) [4, 8] monoid(or) : tensor<4xi8> {
    %x = tang.read %B[%i, %k] : tensor<4x8xi8>
    tang.yield %x : i8
  }
  return %prod, %mx, %mn, %all, %any : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi1>, tensor<4xi8>
}

// argmax / argmin yield (value, integer index) and give two results.
// CHECK-LABEL: func.func @arg_monoids
// CHECK:         %[[V:.*]]:2 = tang.comprehension (%{{.*}}) reduce (%[[K:.*]]) [4, 8] monoid(argmax) : tensor<4xf32>, tensor<4xi32> {
// CHECK:           %[[KI:.*]] = tang.index %[[K]] : i32
// CHECK:           tang.yield %{{.*}}, %[[KI]] : f32, i32
// CHECK:         %[[W:.*]]:2 = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(argmin) : tensor<4xf16>, tensor<4xi32> {
// CHECK:         return %[[V]]#0, %[[V]]#1, %[[W]]#0, %[[W]]#1
func.func @arg_monoids(%X: tensor<4x8xf32>, %H: tensor<4x8xf16>)
    -> (tensor<4xf32>, tensor<4xi32>, tensor<4xf16>, tensor<4xi32>) {
  %v, %idx = tang.comprehension (%i) reduce (%k) [4, 8] monoid(argmax) : tensor<4xf32>, tensor<4xi32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    %ki = tang.index %k : i32
    tang.yield %x, %ki : f32, i32
  }
  %w, %jdx = tang.comprehension (%i) reduce (%k) [4, 8] monoid(argmin) : tensor<4xf16>, tensor<4xi32> {
    %x = tang.read %H[%i, %k] : tensor<4x8xf16>
    %ki = tang.index %k : i32
    tang.yield %x, %ki : f16, i32
  }
  return %v, %idx, %w, %jdx : tensor<4xf32>, tensor<4xi32>, tensor<4xf16>, tensor<4xi32>
}

// softmax_norm yields one float and gives (max, sum of exp) of its type;
// online_softmax yields (score, value) and gives one result of the value's type.
// CHECK-LABEL: func.func @softmax_monoids
// CHECK:         %[[N:.*]]:2 = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(softmax_norm) : tensor<4xf32>, tensor<4xf32> {
// CHECK:           tang.yield %{{.*}} : f32
// CHECK:         %[[O:.*]] = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(online_softmax) : tensor<4xf64> {
// CHECK:           tang.yield %{{.*}}, %{{.*}} : f32, f64
// CHECK:         return %[[N]]#0, %[[N]]#1, %[[O]]
func.func @softmax_monoids(%X: tensor<4x8xf32>, %V: tensor<8xf64>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf64>) {
  %m, %l = tang.comprehension (%i) reduce (%k) [4, 8] monoid(softmax_norm) : tensor<4xf32>, tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  %o = tang.comprehension (%i) reduce (%k) [4, 8] monoid(online_softmax) : tensor<4xf64> {
    %s = tang.read %X[%i, %k] : tensor<4x8xf32>
    %v = tang.read %V[%k] : tensor<8xf64>
    tang.yield %s, %v : f32, f64
  }
  return %m, %l, %o : tensor<4xf32>, tensor<4xf32>, tensor<4xf64>
}

// A user-defined monoid is referenced by symbol and gives one result per
// carrier component.
// CHECK-LABEL: func.func @user_monoid
// CHECK:         %{{.*}}:3 = tang.comprehension (%{{.*}}) reduce (%{{.*}}) [4, 8] monoid(@welford) : tensor<4xf64>, tensor<4xf64>, tensor<4xf64> {
// CHECK:           tang.yield %{{.*}}, %{{.*}}, %{{.*}} : f64, f64, f64
func.func @user_monoid(%X: tensor<4x8xf64>) -> tensor<4xf64> {
  %n, %mean, %m2 = tang.comprehension (%i) reduce (%k) [4, 8] monoid(@welford) : tensor<4xf64>, tensor<4xf64>, tensor<4xf64> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf64>
    %one = arith.constant 1.0 : f64
    %zero = arith.constant 0.0 : f64
    tang.yield %one, %x, %zero : f64, f64, f64
  }
  return %mean : tensor<4xf64>
}

// A schedule with every field round-trips unchanged.
// CHECK-LABEL: func.func @schedule_full
// CHECK:         tang.comprehension (%{{.*}}, %{{.*}}) reduce (%{{.*}}) [4, 3, 8] monoid(add)
// CHECK-SAME:      attributes {schedule = #tang.schedule<tile = [2, 3, 4], mapping = [block_x, thread_x, serial], threads = [1, 1, 1], vector = 4, stages = 2, storage = bf16, accumulate = f32, memory = [shared, register]>}
// CHECK-SAME:      : tensor<4x3xf32>
func.func @schedule_full(%A: tensor<4x8xf32>, %B: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [4, 3, 8] monoid(add) attributes {schedule = #tang.schedule<tile = [2, 3, 4], mapping = [block_x, thread_x, serial], threads = [1, 1, 1], vector = 4, stages = 2, storage = bf16, accumulate = f32, memory = [shared, register]>} : tensor<4x3xf32> {
    %a = tang.read %A[%i, %k] : tensor<4x8xf32>
    %b = tang.read %B[%k, %j] : tensor<8x3xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %C : tensor<4x3xf32>
}

// A kernel-level schedule (what --tang-schedule writes with tensor-core
// options) round-trips unchanged: the kernel kind, its instructions, bulk
// copies, warp specialisation and a persistent grid.
// CHECK-LABEL: func.func @schedule_kernel
// CHECK:         schedule = #tang.schedule<tile = [128, 256, 64], mapping = [block_y, block_x, serial], threads = [8, 32, 1], vector = 8, stages = 4, storage = f32, accumulate = f32, memory = [shared, shared, shared, shared], kernel = contraction, mma = wgmma, tma = true, warp_specialize = true, persistent = true, group_m = 8>
func.func @schedule_kernel(%A: tensor<512x512xbf16>, %B: tensor<512x512xbf16>) -> tensor<512x512xf32> {
  %C = tang.comprehension (%i, %j) reduce (%k) [512, 512, 512] monoid(add) attributes {schedule = #tang.schedule<tile = [128, 256, 64], mapping = [block_y, block_x, serial], threads = [8, 32, 1], vector = 8, stages = 4, storage = f32, accumulate = f32, memory = [shared, shared, shared, shared], kernel = contraction, mma = wgmma, tma = true, warp_specialize = true, persistent = true>} : tensor<512x512xf32> {
    %a = tang.read %A[%i, %k] : tensor<512x512xbf16>
    %b = tang.read %B[%k, %j] : tensor<512x512xbf16>
    %p = arith.extf %a : bf16 to f32
    %q = arith.extf %b : bf16 to f32
    %r = arith.mulf %p, %q : f32
    tang.yield %r : f32
  }
  return %C : tensor<512x512xf32>
}

// `kernel = simt` is printed; `auto`, `mma = none` and false flags are not.
// CHECK-LABEL: func.func @schedule_simt
// CHECK:         schedule = #tang.schedule<tile = [2, 8], mapping = [serial, serial], threads = [1, 1], vector = 1, stages = 1, accumulate = f32, memory = [global], kernel = simt>}
func.func @schedule_simt(%X: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %Y = tang.comprehension (%i, %j) [4, 8] attributes {schedule = #tang.schedule<tile = [2, 8], kernel = simt, mma = none, tma = false, warp_specialize = false, persistent = false>} : tensor<4x8xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %Y : tensor<4x8xf32>
}

// A schedule with only `tile` gets the defaults (serial mapping, vector 1,
// one global stage, f32 accumulation, no storage).
// CHECK-LABEL: func.func @schedule_tile_only
// CHECK:         tang.comprehension (%{{.*}}, %{{.*}}) [4, 8]
// CHECK-SAME:      attributes {schedule = #tang.schedule<tile = [2, 8], mapping = [serial, serial], threads = [1, 1], vector = 1, stages = 1, accumulate = f32, memory = [global]>}
func.func @schedule_tile_only(%X: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %Y = tang.comprehension (%i, %j) [4, 8] attributes {schedule = #tang.schedule<tile = [2, 8]>} : tensor<4x8xf32> {
    %x = tang.read %X[%i, %j] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %Y : tensor<4x8xf32>
}

// Read index expressions: sums of indices, scaled + offset, constants, and
// a rank-0 tensor read with no expressions.
// CHECK-LABEL: func.func @read_exprs
// CHECK-SAME:    (%[[X:.*]]: tensor<8x8xf32>, %[[S:.*]]: tensor<16x9xf32>, %[[Z:.*]]: tensor<f32>)
// CHECK:         tang.comprehension (%[[P0:.*]]) reduce (%[[R0:.*]]) [4, 4] monoid(add)
// CHECK-NEXT:      tang.read %[[X]][%[[P0]] + %[[R0]], 3] : tensor<8x8xf32>
// CHECK-NEXT:      tang.read %[[S]][%[[P0]] * 2 + 1, %[[R0]] * 2] : tensor<16x9xf32>
// CHECK-NEXT:      tang.read %[[Z]][] : tensor<f32>
func.func @read_exprs(%X: tensor<8x8xf32>, %S: tensor<16x9xf32>, %Z: tensor<f32>) -> tensor<4xf32> {
  %Y = tang.comprehension (%i) reduce (%k) [4, 4] monoid(add) : tensor<4xf32> {
    %a = tang.read %X[%i + %k, 3] : tensor<8x8xf32>
    %b = tang.read %S[%i * 2 + 1, %k * 2] : tensor<16x9xf32>
    %z = tang.read %Z[] : tensor<f32>
    %ab = arith.mulf %a, %b : f32
    %abz = arith.addf %ab, %z : f32
    tang.yield %abz : f32
  }
  return %Y : tensor<4xf32>
}

// Views: transpose, broadcast of a vector to a matrix, and 3x3 sliding windows.
// CHECK-LABEL: func.func @views
// CHECK-SAME:    (%[[A:.*]]: tensor<4x8xf32>, %[[V:.*]]: tensor<8xf32>, %[[I:.*]]: tensor<10x10xf32>)
// CHECK:         tang.view %[[A]] by #[[TRANSPOSE]] : tensor<4x8xf32> to tensor<8x4xf32>
// CHECK:         tang.view %[[V]] by #[[BCAST]] : tensor<8xf32> to tensor<4x8xf32>
// CHECK:         tang.view %[[I]] by #[[WINDOW]] : tensor<10x10xf32> to tensor<8x8x3x3xf32>
func.func @views(%A: tensor<4x8xf32>, %V: tensor<8xf32>, %I: tensor<10x10xf32>)
    -> (tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x8x3x3xf32>) {
  %T = tang.view %A by affine_map<(d0, d1) -> (d1, d0)> : tensor<4x8xf32> to tensor<8x4xf32>
  %B = tang.view %V by affine_map<(d0, d1) -> (d1)> : tensor<8xf32> to tensor<4x8xf32>
  %W = tang.view %I by affine_map<(h, w, r, s) -> (h + r, w + s)> : tensor<10x10xf32> to tensor<8x8x3x3xf32>
  return %T, %B, %W : tensor<8x4xf32>, tensor<4x8xf32>, tensor<8x8x3x3xf32>
}

// tang.index converts an index to an integer or a float scalar.
// CHECK-LABEL: func.func @index
// CHECK:         tang.comprehension (%[[P0:.*]], %[[P1:.*]]) [4, 4] : tensor<4x4xf32>, tensor<4x4xi32>
// CHECK-NEXT:      %[[I:.*]] = tang.index %[[P0]] : i32
// CHECK-NEXT:      %[[F:.*]] = tang.index %[[P1]] : f32
// CHECK-NEXT:      tang.yield %[[F]], %[[I]] : f32, i32
func.func @index() -> (tensor<4x4xf32>, tensor<4x4xi32>) {
  %F, %I = tang.comprehension (%i, %j) [4, 4] : tensor<4x4xf32>, tensor<4x4xi32> {
    %vi = tang.index %i : i32
    %vj = tang.index %j : f32
    tang.yield %vj, %vi : f32, i32
  }
  return %F, %I : tensor<4x4xf32>, tensor<4x4xi32>
}

// tang.index of an affine expression of indices round-trips.
// CHECK-LABEL: func.func @index_expr
// CHECK: tang.comprehension (%[[I:.*]], %[[J:.*]]) [4, 8]
// CHECK: tang.index [%[[I]] * 8 + %[[J]]] : i32
// CHECK: tang.index %[[J]] : f32
func.func @index_expr() -> tensor<4x8xf32> {
  %r = tang.comprehension (%i, %j) [4, 8] : tensor<4x8xf32> {
    %v = tang.index [%i * 8 + %j] : i32
    %w = tang.index %j : f32
    %f = arith.sitofp %v : i32 to f32
    %s = arith.addf %f, %w : f32
    tang.yield %s : f32
  }
  return %r : tensor<4x8xf32>
}
