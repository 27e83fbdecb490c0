// RUN: tang-opt %s --convert-tang-to-gpu --split-input-file --verify-diagnostics | FileCheck %s

// Symbolic sizes: the host binds the symbols (memref.dim of an input, an
// index argument), stores them in the sizes buffer, allocates by size and
// passes a '?' tensor flat; the kernel loads the sizes, strides over the
// points and indexes the flat buffer row-major.
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[X:.*]]: memref<?x4xf32>, %[[N:.*]]: index, %[[OUT:.*]]: memref<?xf32>)
// CHECK-SAME: tang.sizes = {requirements = [{condition = "%arg1 <= dim 0 of %arg0", size = array<i64: 0, 1, -1>, what = "coordinate #0 (d0), up to %arg1 - 1, stays below dimension 0 (dim 0 of %arg0)"}{{.*}}symbols = array<i64: 0, 0, 1, -1>}
// CHECK: %[[D:.*]] = memref.dim %[[X]], %{{.*}} : memref<?x4xf32>
// CHECK: %[[SIZES:.*]] = memref.alloc() {tang.sizes_buffer} : memref<2xi32>
// CHECK: memref.store %{{.*}}, %[[SIZES]]
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[X]] {{\[}}[0, 1]] : memref<?x4xf32> into memref<?xf32>
// CHECK: gpu.launch_func @tang_kernels::@rows_k0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args(%[[FLAT]] : memref<?xf32>, %[[OUT]] : memref<?xf32>, %[[SIZES]] : memref<2xi32>)
// CHECK: memref.dealloc %[[SIZES]]
// CHECK-LABEL: gpu.func @rows_k0
// CHECK-SAME: (%[[A:.*]]: memref<?xf32>, %[[O:.*]]: memref<?xf32>, %[[S:.*]]: memref<2xi32>)
// CHECK: memref.load %[[S]]
// CHECK: scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[AT:.*]] = arith.addi %[[ROW]], %{{.*}} : index
// CHECK: memref.load %[[A]][%[[AT]]] : memref<?xf32>
// CHECK: memref.store %{{.*}}, %[[O]][%{{.*}}] : memref<?xf32>
func.func @rows(%X: tensor<?x4xf32>, %n: index) -> tensor<?xf32> {
  %s = tang.comprehension (%i) reduce (%j) [%n, 4] monoid(add) : tensor<?xf32> {
    %x = tang.read %X[%i, %j] : tensor<?x4xf32>
    tang.yield %x : f32
  }
  return %s : tensor<?xf32>
}

// -----

// A scatter into a donated argument nothing else uses writes it in place:
// no copy kernel, and the returned result is an alias of the argument.
// CHECK-LABEL: func.func @insert
// CHECK-SAME: (%[[C:.*]]: memref<8x4xf32>, %[[R:.*]]: memref<4xf32>, %[[POS:.*]]: index, %[[OUT:.*]]: memref<8x4xf32>)
// CHECK-SAME: tang.aliases = array<i64: 3, 0>
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.launch_func @tang_kernels::@insert_k0 {{.*}} args(%[[R]] : memref<4xf32>, %[[C]] : memref<8x4xf32>, %{{.*}} : memref<1xi32>)
// CHECK-NOT: gpu.launch_func
// CHECK: return
func.func @insert(%cache: tensor<8x4xf32> {tang.donate}, %row: tensor<4xf32>, %pos: index) -> tensor<8x4xf32> {
  %c = tang.scatter (%d) [4] into %cache : tensor<8x4xf32> {
    %x = tang.read %row[%d] : tensor<4xf32>
    tang.put %x at [symbol(%pos), %d] drop : f32
  }
  return %c : tensor<8x4xf32>
}

// -----

// A donated argument read elsewhere is copied, with a remark.
// CHECK-LABEL: func.func @still_read
// CHECK-NOT: tang.aliases
// CHECK: gpu.launch_func @tang_kernels::@still_read_k0
// CHECK: gpu.launch_func @tang_kernels::@still_read_k1
func.func @still_read(%cache: tensor<8x4xf32> {tang.donate}, %row: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>) {
  // expected-remark @+1 {{copies its base, donated argument #0, instead of updating it in place: the base is used after the scatter or by its body}}
  %c = tang.scatter (%d) [4] into %cache : tensor<8x4xf32> {
    %x = tang.read %row[%d] : tensor<4xf32>
    tang.put %x at [2, %d] : f32
  }
  %old = tang.comprehension (%d) [4] : tensor<4xf32> {
    %x = tang.read %cache[2, %d] : tensor<8x4xf32>
    tang.yield %x : f32
  }
  return %c, %old : tensor<8x4xf32>, tensor<4xf32>
}

// -----

// A KV cache updated layer after layer: each scatter writes in place into
// the result of the one before (reads of the cache that run before a
// scatter do not stop it); the last one's result is the donated argument's
// buffer.
// CHECK-LABEL: func.func @layers
// CHECK-SAME: tang.aliases = array<i64: 2, 0>
// CHECK-NOT: memref.alloc() : memref<2x8x4xf32>
// CHECK: gpu.launch_func @tang_kernels::@layers_k0 {{.*}} args(%arg1 : memref<2x4xf32>, %arg0 : memref<2x8x4xf32>)
// CHECK: gpu.launch_func @tang_kernels::@layers_k1 {{.*}} args(%arg0 : memref<2x8x4xf32>, %arg3 : memref<4xf32>)
// CHECK: gpu.launch_func @tang_kernels::@layers_k2 {{.*}} args(%arg1 : memref<2x4xf32>, %arg0 : memref<2x8x4xf32>)
func.func @layers(%cache: tensor<2x8x4xf32> {tang.donate}, %rows: tensor<2x4xf32>) -> (tensor<2x8x4xf32>, tensor<4xf32>) {
  %c0 = tang.scatter (%d) [4] into %cache : tensor<2x8x4xf32> {
    %x = tang.read %rows[0, %d] : tensor<2x4xf32>
    tang.put %x at [0, 3, %d] : f32
  }
  %seen = tang.comprehension (%d) [4] : tensor<4xf32> {
    %x = tang.read %c0[0, 3, %d] : tensor<2x8x4xf32>
    tang.yield %x : f32
  }
  %c1 = tang.scatter (%d) [4] into %c0 : tensor<2x8x4xf32> {
    %x = tang.read %rows[1, %d] : tensor<2x4xf32>
    tang.put %x at [1, 3, %d] : f32
  }
  return %c1, %seen : tensor<2x8x4xf32>, tensor<4xf32>
}
