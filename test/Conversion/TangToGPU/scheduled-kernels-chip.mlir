// RUN: tang-opt %s --tang-attach-target="chip=sm_80" --convert-tang-to-gpu --verify-diagnostics

// A schedule naming tensor-core instructions its module's chip does not
// have is refused by the kernel that would build it (sm_80: mma.sync, no
// wgmma), never compiled for the wrong chip.
func.func @wgmma_on_sm80(%A: tensor<256x256xbf16>, %B: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @+1 {{has a schedule asking for a contraction kernel, but its mma is wgmma, which sm_80 does not have}}
  %C = tang.comprehension (%i, %j) reduce (%k) [256, 256, 256] monoid(add) attributes {schedule = #tang.schedule<tile = [128, 128, 64], threads = [8, 32, 1], vector = 8, stages = 4, memory = [shared, shared, shared, shared], kernel = contraction, mma = wgmma>} : tensor<256x256xbf16> {
    %a = tang.read %A[%i, %k] : tensor<256x256xbf16>
    %b = tang.read %B[%k, %j] : tensor<256x256xbf16>
    %p = arith.mulf %a, %b : bf16
    tang.yield %p : bf16
  }
  return %C : tensor<256x256xbf16>
}
