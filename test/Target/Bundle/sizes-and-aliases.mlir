// RUN: rm -rf %t && tang-opt %s --convert-tang-to-gpu --tang-export-source-bundle="language=opencl dir=%t" -o /dev/null
// RUN: FileCheck %s --input-file=%t/manifest.json

// A decode step's manifest: the index argument is a size, the cache a
// donated input its output aliases, the scores' shape a size, the
// requirement on the position, and the sizes buffer as the last launch
// argument of every kernel (docs/Bundle.md, "Sizes" and "Outputs updated
// in place").
// CHECK:      "args": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "dtype": "f32",
// CHECK-NEXT:     "role": "input",
// CHECK-NEXT:     "shape": [
// CHECK-NEXT:       8,
// CHECK-NEXT:       4
// CHECK:          "role": "size"
// CHECK-NEXT:   },
// CHECK-NEXT:   {
// CHECK-NEXT:     "alias": 0,
// CHECK-NEXT:     "dtype": "f32",
// CHECK-NEXT:     "role": "output",
// CHECK:          "role": "output",
// CHECK-NEXT:     "shape": [
// CHECK-NEXT:       [
// CHECK-NEXT:         1,
// CHECK-NEXT:         1
// CHECK-NEXT:       ]
// CHECK:      "launches": [
// CHECK:          "sizes": true
// CHECK:      "requirements": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "condition": "%arg2 <= 7",
// CHECK-NEXT:     "size": [
// CHECK-NEXT:       7,
// CHECK-NEXT:       -1
// CHECK-NEXT:     ],
// CHECK-NEXT:     "what": "coordinate #0 (d0), up to %arg2, stays below dimension 0 (8)"
// CHECK:      "sizes": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "arg": 2,
// CHECK-NEXT:     "name": "%arg2"
// CHECK-NEXT:   }
// CHECK-NEXT: ],
func.func @main(%cache: tensor<8x4xf32> {tang.donate}, %q: tensor<4xf32>, %pos: index) -> (tensor<8x4xf32>, tensor<?xf32>) {
  %c = tang.scatter (%d) [4] into %cache : tensor<8x4xf32> {
    %x = tang.read %q[%d] : tensor<4xf32>
    tang.put %x at [symbol(%pos), %d] drop : f32
  }
  %c1 = arith.constant 1 : index
  %len = arith.addi %pos, %c1 : index
  %s = tang.comprehension (%t) reduce (%d) [%len, 4] monoid(add) : tensor<?xf32> {
    %a = tang.read %q[%d] : tensor<4xf32>
    %b = tang.read %c[%t, %d] : tensor<8x4xf32>
    %p = arith.mulf %a, %b : f32
    tang.yield %p : f32
  }
  return %c, %s : tensor<8x4xf32>, tensor<?xf32>
}
