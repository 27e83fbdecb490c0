// RUN: tang-opt %s --split-input-file --verify-diagnostics

// The dialect's discardable attributes, where they belong: accepted.
func.func @ok(%X: tensor<4x8xf32>) -> tensor<4xf32> {
  %s = tang.comprehension (%i) reduce (%k) [4, 8] monoid(add) attributes {tang.saved, tang.shape_class = "row_reduction", tang.traffic_tile = array<i64: 4, 8>, tang.fuse_id = 3 : i64} : tensor<4xf32> {
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
