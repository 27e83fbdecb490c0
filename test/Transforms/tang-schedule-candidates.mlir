// RUN: tang-opt %s --tang-attach-target --tang-schedule="tensor-cores=wgmma candidates=%t.json max-candidates=4" -o /dev/null
// RUN: FileCheck %s < %t.json
// RUN: not tang-opt %s --tang-schedule="candidates=%t.missing-dir/c.json" -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNWRITABLE

// --tang-schedule's candidates= (docs/Tuning.md): each scheduled
// comprehension's key and its search space, the heuristic's schedule
// first, the traffic bound's LP tile among the seeds, the others ranked by
// their modelled time; at most max-candidates (seeds kept beyond it).

// CHECK:      "kernels": [
// CHECK:          "candidates": [
// CHECK:              "label": "heuristic
// CHECK:              "schedule": "#tang.schedule<tile = [128, 128, 64], {{.*}}kernel = contraction, mma = wgmma
// CHECK:              "seed": "heuristic
// CHECK:              "model_s":
// CHECK:              "seed": "
// CHECK:              "seed": "
// CHECK:              "seed": "
// CHECK:          "chip": "sm_90a",
// CHECK:          "kernel": "contraction",
// CHECK:          "sizes": "2048x2048x2048;2048x2048,2048x2048",
// CHECK:          "structure": "{{[0-9a-f]+}}"
// CHECK:      "version": 1

// UNWRITABLE: error: tang-schedule: cannot write the candidates to '{{.*}}missing-dir/c.json'

func.func @gemm(%A: tensor<2048x2048xbf16>, %B: tensor<2048x2048xbf16>) -> tensor<2048x2048xbf16> {
  %C = tang.comprehension (%i, %j) reduce (%k) [2048, 2048, 2048] monoid(add) : tensor<2048x2048xbf16> {
    %a = tang.read %A[%i, %k] : tensor<2048x2048xbf16>
    %b = tang.read %B[%k, %j] : tensor<2048x2048xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<2048x2048xbf16>
}
