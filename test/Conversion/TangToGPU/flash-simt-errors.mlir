// RUN: tang-opt %s --split-input-file --tang-attach-target=chip=portable --tang-schedule --convert-tang-to-gpu="cooperative=0" --verify-diagnostics -o /dev/null

// Schedules naming the SIMT flash kernel (kernel = flash, mma = none)
// that it cannot honour: a clear error at the comprehension.

// Its threads along the keys are 32 (lanes along the keys and value
// columns).
func.func @lanes(%Q: tensor<2x100x64xf32>, %K: tensor<2x100x64xf32>, %V: tensor<2x100x64xf32>) -> tensor<2x100x64xf32> {
  // expected-error @+1 {{has a schedule asking for a flash kernel, but the SIMT flash kernel takes 32 threads along the keys}}
  %O = tang.comprehension (%b, %i, %d) reduce (%j) [2, 100, 64, 100] monoid(online_softmax) attributes {schedule = #tang.schedule<tile = [1, 32, 1, 32], mapping = [block_y, block_x, serial, serial], threads = [1, 8, 1, 16], vector = 1, stages = 1, storage = f32, accumulate = f32, memory = [shared], kernel = flash>} : tensor<2x100x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %q = tang.read %Q[%b, %i, %e] : tensor<2x100x64xf32>
      %k = tang.read %K[%b, %j, %e] : tensor<2x100x64xf32>
      %p = arith.mulf %q, %k : f32
      tang.yield %p : f32
    }
    %v = tang.read %V[%b, %j, %d] : tensor<2x100x64xf32>
    tang.yield %dot, %v : f32, f32
  }
  return %O : tensor<2x100x64xf32>
}

// -----

// 64 x 64 tiles: the scores, probabilities and staged tiles take more than
// the portable model's 16 KiB of workgroup memory.
func.func @too_big(%Q: tensor<2x100x64xf32>, %K: tensor<2x100x64xf32>, %V: tensor<2x100x64xf32>) -> tensor<2x100x64xf32> {
  // expected-error @+1 {{the SIMT flash kernel takes 64 rows and 64 keys a block of 256 threads: its tiles take}}
  %O = tang.comprehension (%b, %i, %d) reduce (%j) [2, 100, 64, 100] monoid(online_softmax) attributes {schedule = #tang.schedule<tile = [1, 64, 1, 64], mapping = [block_y, block_x, serial, serial], threads = [1, 8, 1, 32], vector = 1, stages = 1, storage = f32, accumulate = f32, memory = [shared], kernel = flash>} : tensor<2x100x64xf32> {
    %dot = tang.comprehension reduce (%e) [64] monoid(add) : f32 {
      %q = tang.read %Q[%b, %i, %e] : tensor<2x100x64xf32>
      %k = tang.read %K[%b, %j, %e] : tensor<2x100x64xf32>
      %p = arith.mulf %q, %k : f32
      tang.yield %p : f32
    }
    %v = tang.read %V[%b, %j, %d] : tensor<2x100x64xf32>
    tang.yield %dot, %v : f32, f32
  }
  return %O : tensor<2x100x64xf32>
}
