// RUN: not tang-opt %s --tang-reject-option="message='format must be isa, bin or fatbin'" 2>&1 | FileCheck %s
// RUN: not tang-opt %s --tang-lower-cuda="format=ptx" 2>&1 | FileCheck %s --check-prefix=CUDA
// RUN: not tang-opt %s --tang-lower-cuda="chip=portable" 2>&1 | FileCheck %s --check-prefix=PORTABLE

// The pass reports its message at the module and fails; it is how a
// pipeline reports an option it cannot honour.
// CHECK: error: format must be isa, bin or fatbin
// CUDA: error: tang-lower-cuda: format must be isa (PTX), bin (cubin) or fatbin, got 'ptx'
// PORTABLE: error: tang-lower-cuda: chip 'portable' is the portable backends' device model (--tang-lower-spirv, -opencl, -glsl, -wgsl, -metal), not a CUDA chip
module {
}
