// RUN: tang-opt %s --split-input-file --verify-diagnostics

// The dialect's discardable attributes, where they belong: accepted.
func.func @ok(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = tang.comprehension (%i) reduce (%k) [4, 8] monoid(add) attributes {tang.saved, tang.shape_class = "row_reduction", tang.traffic_tile = array<i64: 4, 8>, tang.schedule_source = "cache", tang.fuse_id = 3 : i64} : tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %s : tensor<4xf32>
}
func.func @host(%a: memref<4xf32>, %b: memref<4xf32>) attributes {tang.kernel_form, tang.num_inputs = 1 : i64} {
  return
}
llvm.func @kernel(%m: !llvm.ptr, %n: !llvm.ptr) attributes {tang.tensor_map_params = array<i64: 0, 1>} {
  llvm.return
}

// -----

// expected-error @+1 {{'tang.saved' belongs on a tang.comprehension}}
func.func @saved_on_func() attributes {tang.saved} {
  return
}

// -----

func.func @saved_not_unit(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.saved' must be a unit attribute, got 1 : i64}}
  %s = tang.comprehension (%i) [4] attributes {tang.saved = 1 : i64} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %s : tensor<4xf32>
}

// -----

func.func @fuse_id_not_integer(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.fuse_id' must be an integer}}
  %s = tang.comprehension (%i) [4] attributes {tang.fuse_id = "a"} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %s : tensor<4xf32>
}

// -----

func.func @unknown_shape_class(%X: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.shape_class' must be a shape class (pointwise, row_reduction, column_reduction, narrow_matvec, matmul_like or online_softmax), got "rowwise"}}
  %s = tang.comprehension (%i) [4] attributes {tang.shape_class = "rowwise"} : tensor<4xf32> {
    %x = tang.read %X[%i] : tensor<4xf32>
    tang.yield %x : f32
  }
  return %s : tensor<4xf32>
}

// -----

func.func @schedule_source(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.schedule_source' must be "cache"}}
  %s = tang.comprehension (%i) reduce (%k) [4, 8] monoid(add) attributes {tang.schedule_source = "tuner"} : tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %s : tensor<4xf32>
}

// -----

func.func @traffic_tile_rank(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.traffic_tile' needs one positive extent per index (2), got array<i64: 4>}}
  %s = tang.comprehension (%i) reduce (%k) [4, 8] monoid(add) attributes {tang.traffic_tile = array<i64: 4>} : tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %s : tensor<4xf32>
}

// -----

func.func @traffic_tile_zero(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tang.traffic_tile' needs one positive extent per index (2), got array<i64: 4, 0>}}
  %s = tang.comprehension (%i) reduce (%k) [4, 8] monoid(add) attributes {tang.traffic_tile = array<i64: 4, 0>} : tensor<4xf32> {
    %x = tang.read %X[%i, %k] : tensor<4x8xf32>
    tang.yield %x : f32
  }
  return %s : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tang.kernel_form' belongs on a function}}
module attributes {tang.kernel_form} {
}

// -----

// expected-error @+1 {{'tang.num_inputs' belongs on a host function of the kernel form (with 'tang.kernel_form')}}
func.func @num_inputs_alone(%a: memref<4xf32>) attributes {tang.num_inputs = 1 : i64} {
  return
}

// -----

// expected-error @+1 {{'tang.num_inputs' is 3, but the function takes 2 arguments}}
func.func @num_inputs_too_many(%a: memref<4xf32>, %b: memref<4xf32>) attributes {tang.kernel_form, tang.num_inputs = 3 : i64} {
  return
}

// -----

// expected-error @+1 {{'tang.tensor_map_params' must list parameter positions in increasing order, each below 2, got array<i64: 2>}}
llvm.func @past_the_end(%m: !llvm.ptr, %n: i32) attributes {tang.tensor_map_params = array<i64: 2>} {
  llvm.return
}

// -----

// expected-error @+1 {{'tang.tensor_map_params' must list parameter positions in increasing order, each below 2, got array<i64: 1, 0>}}
llvm.func @unordered(%m: !llvm.ptr, %n: !llvm.ptr) attributes {tang.tensor_map_params = array<i64: 1, 0>} {
  llvm.return
}

// -----

// expected-error @+1 {{'tang.target' must be a #tang.target, got "sm_90a"}}
func.func @target_on_func() attributes {tang.target = "sm_90a"} {
  return
}

// -----

// expected-error @+1 {{unknown discardable attribute 'tang.tile' (the tang dialect declares}}
func.func @unknown() attributes {tang.tile = 1 : i64} {
  return
}

// -----

// The sizes, shapes, sizes buffer, aliases and data of the kernel form,
// where they belong: accepted.
func.func @sized(%a: memref<?xf32>, %n: index, %b: memref<?xf32>) attributes {tang.kernel_form, tang.num_inputs = 2 : i64, tang.sizes = {symbols = array<i64: 1, -1>, shapes = [[array<i64: 0, 1>], [], [array<i64: 0, 1>]], requirements = []}} {
  %s = memref.alloc() {tang.sizes_buffer} : memref<1xi32>
  %t = memref.alloc(%n) {tang.shape = [array<i64: 0, 1>]} : memref<?xf32>
  %c = memref.alloc() {tang.data = dense<[1.0, 2.0]> : tensor<2xf32>} : memref<2xf32>
  return
}
func.func @aliased(%a: memref<4xf32>, %b: memref<4xf32>) attributes {tang.kernel_form, tang.num_inputs = 1 : i64, tang.aliases = array<i64: 1, 0>} {
  return
}
func.func @donated(%x: tensor<4xf32> {tang.donate}) {
  return
}

// -----

// expected-error @+1 {{'tang.sizes' must be a dictionary of symbols, shapes and requirements, got {symbols = array<i64>}}}
func.func @sizes_incomplete(%a: memref<4xf32>) attributes {tang.kernel_form, tang.num_inputs = 1 : i64, tang.sizes = {symbols = array<i64>}} {
  return
}

// -----

// expected-error @+1 {{'tang.sizes' belongs on a host function of the kernel form}}
func.func @sizes_not_host(%a: memref<4xf32>) attributes {tang.sizes = {symbols = array<i64>, shapes = [], requirements = []}} {
  return
}

// -----

func.func @sizes_buffer_on_dim(%a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tang.sizes_buffer' belongs on a memref.alloc}}
  %d = "memref.dim"(%a, %c0) {tang.sizes_buffer} : (memref<?xf32>, index) -> index
  return
}

// -----

func.func @shape_not_array() {
  // expected-error @+1 {{'tang.shape' must be an array of sizes, got 1 : i64}}
  %t = memref.alloc() {tang.shape = 1 : i64} : memref<4xf32>
  return
}

// -----

func.func @data_wrong_shape() {
  // expected-error @+1 {{'tang.data' must be dense elements of the buffer's shape and type}}
  %c = memref.alloc() {tang.data = dense<[1.0, 2.0]> : tensor<2xf32>} : memref<3xf32>
  return
}

// -----

// expected-error @+1 {{'tang.aliases' pairs output #1 with input #0: it must pair an output with an input of its type}}
func.func @alias_wrong_type(%a: memref<4xf32>, %b: memref<8xf32>) attributes {tang.kernel_form, tang.num_inputs = 1 : i64, tang.aliases = array<i64: 1, 0>} {
  return
}

// -----

// expected-error @+1 {{'tang.aliases' belongs on a host function of the kernel form}}
func.func @alias_not_host(%a: memref<4xf32>, %b: memref<4xf32>) attributes {tang.aliases = array<i64: 1, 0>} {
  return
}

// -----

// tang.index_checks: integer inputs of a host function, each with a bound.
func.func @index_checks_ok(%ids: memref<4xi32>, %e: memref<8x4xf32>, %out: memref<4x4xf32>) attributes {tang.kernel_form, tang.num_inputs = 2 : i64, tang.index_checks = [{arg = 0 : i64, bound = 8 : i64, what = "the ids"}]} {
  return
}

// -----

// expected-error @+1 {{'tang.index_checks' must be an array of {arg, bound, what} dictionaries}}
func.func @index_checks_no_what(%ids: memref<4xi32>, %out: memref<4xf32>) attributes {tang.kernel_form, tang.num_inputs = 1 : i64, tang.index_checks = [{arg = 0 : i64, bound = 8 : i64}]} {
  return
}

// -----

// expected-error @+1 {{'tang.index_checks' belongs on a host function of the kernel form}}
func.func @index_checks_not_host(%ids: memref<4xi32>) attributes {tang.index_checks = [{arg = 0 : i64, bound = 8 : i64, what = "w"}]} {
  return
}

// -----

// expected-error @+1 {{'tang.index_checks' checks argument #1, which is not an integer input}}
func.func @index_checks_float(%ids: memref<4xi32>, %x: memref<4xf32>, %out: memref<4xf32>) attributes {tang.kernel_form, tang.num_inputs = 2 : i64, tang.index_checks = [{arg = 1 : i64, bound = 8 : i64, what = "w"}]} {
  return
}

// -----

// expected-error @+1 {{'tang.index_checks' checks argument #1, which is not an integer input}}
func.func @index_checks_output(%ids: memref<4xi32>, %out: memref<4xi32>) attributes {tang.kernel_form, tang.num_inputs = 1 : i64, tang.index_checks = [{arg = 1 : i64, bound = 8 : i64, what = "w"}]} {
  return
}

// -----

// expected-error @+1 {{'tang.index_checks' has the bound 0 (at least 1)}}
func.func @index_checks_bound(%ids: memref<4xi32>, %out: memref<4xf32>) attributes {tang.kernel_form, tang.num_inputs = 1 : i64, tang.index_checks = [{arg = 0 : i64, bound = 0 : i64, what = "w"}]} {
  return
}

// -----

// A subgroup-local barrier: on a gpu.barrier, a unit attribute.
gpu.module @kernels {
  gpu.func @k() kernel {
    gpu.barrier {tang.subgroup_local}
    gpu.return
  }
}

// -----

func.func @subgroup_local_on_constant() {
  // expected-error @+1 {{'tang.subgroup_local' belongs on a gpu.barrier}}
  %c = arith.constant {tang.subgroup_local} 0 : index
  return
}

// -----

gpu.module @kernels {
  gpu.func @k() kernel {
    // expected-error @+1 {{'tang.subgroup_local' must be a unit attribute, got 1 : i64}}
    gpu.barrier {tang.subgroup_local = 1 : i64}
    gpu.return
  }
}

// -----

// expected-error @+1 {{'tang.chunked' belongs on a tang.tensor_scan}}
func.func @chunked_on_func() attributes {tang.chunked} {
  return
}
