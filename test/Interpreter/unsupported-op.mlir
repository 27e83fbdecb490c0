// RUN: not tang-run %s --entry body 2>&1 | FileCheck %s --check-prefix=BODY
// RUN: not tang-run %s --entry toplevel 2>&1 | FileCheck %s --check-prefix=TOP
// RUN: not tang-run %s 2>&1 | FileCheck %s --check-prefix=NOENTRY
// RUN: not tang-run %s --entry nosuch 2>&1 | FileCheck %s --check-prefix=NOSUCH
// RUN: not tang-run %s --entry linalg 2>&1 | FileCheck %s --check-prefix=LINALG

// An op the interpreter does not know is named, with its location.
// BODY: unsupported-op.mlir:[[@LINE+4]]:10: error: tang-run: unsupported operation 'arith.bitcast' in a comprehension body
func.func @body(%x: tensor<4xf32>) -> tensor<4xi32> {
  %y = tang.comprehension (%i) [4] : tensor<4xi32> {
    %v = tang.read %x[%i] : tensor<4xf32>
    %b = arith.bitcast %v : f32 to i32
    tang.yield %b : i32
  }
  return %y : tensor<4xi32>
}

// Function-level ops other than comprehensions, views and constants too.
// TOP: unsupported-op.mlir:[[@LINE+2]]:8: error: tang-run: unsupported operation 'func.call' at function level
func.func @toplevel(%x: tensor<4xf32>) -> tensor<4xi32> {
  %0 = func.call @body(%x) : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// A linalg program is told to import first.
// LINALG: unsupported-op.mlir:[[@LINE+2]]:8: error: tang-run: unsupported operation 'linalg.matmul' at function level (a linalg program: import it first, tang-opt --convert-linalg-to-tang, and run what it prints)
func.func @linalg(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// NOENTRY: error: several functions and none is @main; pick one with --entry (functions: @body @toplevel @linalg)
// NOSUCH: error: no function @nosuch (functions: @body @toplevel @linalg)
