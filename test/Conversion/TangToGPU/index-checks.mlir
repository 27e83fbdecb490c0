// RUN: tang-opt %s --convert-tang-to-gpu --split-input-file --verify-diagnostics | FileCheck %s
// RUN: tang-opt %s --tang-fuse --convert-tang-to-gpu --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=FUSED
// RUN: tang-opt %s --tang-lower-cuda="chip=sm_90a" --split-input-file --verify-diagnostics -o /dev/null
// RUN: rm -rf %t && mkdir -p %t && tang-opt %s --split-input-file --verify-diagnostics "--tang-lower-cuda=chip=sm_90a bundle=%t" -o /dev/null && FileCheck %s --check-prefix=MANIFEST < %t/manifest.json

// A trap gather whose data coordinate is an element of an integer input, as
// read (token ids): the runtime checks every element of that input against
// the dimension before a run (tang.index_checks on the host, "index_checks"
// in the manifest); the kernel clamps, so it stays memory safe.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: tang.index_checks = [{arg = 1 : i64, bound = 100 : i64, what = "coordinate #0 of the gather into tensor<100x8xf32> at {{.*}}index-checks.mlir:{{[0-9]+}}"}]
// CHECK-LABEL: gpu.func @embedding_k0
// CHECK: memref.load {{.*}} : memref<4xi32>
// CHECK: arith.minsi
// CHECK: arith.maxsi
func.func @embedding(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> tensor<4x8xf32> {
  %x = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %k = tang.read %tok[%b] : tensor<4xi32>
    %row = arith.index_cast %k : i32 to index
    %e = tang.gather %E[symbol(%row), %d] : tensor<100x8xf32>
    tang.yield %e : f32
  }
  return %x : tensor<4x8xf32>
}

// -----

// Fused into both of its consumers, the embedding's gather is checked once.
// FUSED-LABEL: func.func @embedding_twice
// FUSED-SAME: tang.index_checks = [{arg = 1 : i64, bound = 100 : i64, what = "{{[^"]*}}"}]
// FUSED: gpu.launch_func @tang_kernels::@embedding_twice_k0 {{.*}}args(%arg1 : memref<4xi32>, %arg0 : memref<100x8xf32>
// FUSED: gpu.launch_func @tang_kernels::@embedding_twice_k1 {{.*}}args(%arg1 : memref<4xi32>, %arg0 : memref<100x8xf32>
func.func @embedding_twice(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> (tensor<4xf32>, tensor<4x8xf32>) {
  %x = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %k = tang.read %tok[%b] : tensor<4xi32>
    %row = arith.index_cast %k : i32 to index
    %e = tang.gather %E[symbol(%row), %d] : tensor<100x8xf32>
    tang.yield %e : f32
  }
  %s = tang.comprehension (%b) reduce (%d) [4, 8] monoid(add) : tensor<4xf32> {
    %v = tang.read %x[%b, %d] : tensor<4x8xf32>
    %w = arith.mulf %v, %v : f32
    tang.yield %w : f32
  }
  %y = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %v = tang.read %x[%b, %d] : tensor<4x8xf32>
    %w = tang.read %s[%b] : tensor<4xf32>
    %p = arith.mulf %v, %w : f32
    tang.yield %p : f32
  }
  return %s, %y : tensor<4xf32>, tensor<4x8xf32>
}

// -----

// A scatter's trap put at token rows: checked the same way, dropped (not
// written) in the kernel.
// CHECK-LABEL: func.func @scatter_rows
// CHECK-SAME: tang.index_checks = [{arg = 0 : i64, bound = 6 : i64, what = "coordinate #0 of the scatter into tensor<6x16xf32>
// The bundle holds the last split that converts, this one; the manifest
// lists the check.
// MANIFEST: "index_checks": [
// MANIFEST-NEXT: {
// MANIFEST-NEXT: "arg": 0,
// MANIFEST-NEXT: "bound": 6,
// MANIFEST-NEXT: "what": "coordinate #0 of the scatter into tensor<6x16xf32> at {{.*}}index-checks.mlir:[[#@LINE+6]]"
func.func @scatter_rows(%tok: tensor<24xi32>, %dY: tensor<24x16xf32>, %base: tensor<6x16xf32>) -> tensor<6x16xf32> {
  %s = tang.scatter (%i, %d) [24, 16] into %base monoid(add) : tensor<6x16xf32> {
    %k = tang.read %tok[%i] : tensor<24xi32>
    %row = arith.index_cast %k : i32 to index
    %g = tang.read %dY[%i, %d] : tensor<24x16xf32>
    tang.put %g at [symbol(%row), %d] : f32
  }
  return %s : tensor<6x16xf32>
}

// -----

// A trap coordinate computed from the id (the row after it) is no input's
// element: kernels cannot check it, and the conversion says what would do.
func.func @computed(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> tensor<4x8xf32> {
  %x = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %k = tang.read %tok[%b] : tensor<4xi32>
    %row = arith.index_cast %k : i32 to index
    // expected-error @+1 {{'tang.gather' op traps on an out-of-range coordinate that kernels cannot check (no device error channel): the runtime checks a data coordinate that is an element of an integer input, as read; give this one the clamp or zero policy, or run it with tang-run}}
    %e = tang.gather %E[symbol(%row) + 1, %d] : tensor<100x8xf32>
    tang.yield %e : f32
  }
  return %x : tensor<4x8xf32>
}

// -----

// Nor is an id read from a tensor the program computed.
func.func @derived(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> tensor<4x8xf32> {
  %t = tang.comprehension (%b) [4] : tensor<4xi32> {
    %k = tang.read %tok[%b] : tensor<4xi32>
    %c1 = arith.constant 1 : i32
    %n = arith.addi %k, %c1 : i32
    tang.yield %n : i32
  }
  %x = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %k = tang.read %t[%b] : tensor<4xi32>
    %row = arith.index_cast %k : i32 to index
    // expected-error @+1 {{traps on an out-of-range coordinate that kernels cannot check}}
    %e = tang.gather %E[symbol(%row), %d] : tensor<100x8xf32>
    tang.yield %e : f32
  }
  return %x : tensor<4x8xf32>
}

// -----

// Nor is a padded read's fill, nor an id read as unsigned (the runtimes
// read ids as signed).
func.func @padded(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> tensor<4x8xf32> {
  %x = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %k = tang.read %tok[%b - 1] fill(0 : i32) : tensor<4xi32>
    %row = arith.index_cast %k : i32 to index
    // expected-error @+1 {{traps on an out-of-range coordinate that kernels cannot check}}
    %e = tang.gather %E[symbol(%row), %d] : tensor<100x8xf32>
    tang.yield %e : f32
  }
  return %x : tensor<4x8xf32>
}

// -----

func.func @unsigned(%E: tensor<100x8xf32>, %tok: tensor<4xi32>) -> tensor<4x8xf32> {
  %x = tang.comprehension (%b, %d) [4, 8] : tensor<4x8xf32> {
    %k = tang.read %tok[%b] : tensor<4xi32>
    %row = arith.index_castui %k : i32 to index
    // expected-error @+1 {{traps on an out-of-range coordinate that kernels cannot check}}
    %e = tang.gather %E[symbol(%row), %d] : tensor<100x8xf32>
    tang.yield %e : f32
  }
  return %x : tensor<4x8xf32>
}
