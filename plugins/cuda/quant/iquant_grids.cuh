// The i-quant codebooks of switchyard/iquant_grids.h in device memory, one accessor per table:
// entry i of iq2xxs_grid (IQ2_XXS), iq2xs_grid (IQ2_XS), iq2s_grid (IQ2_S), iq3xxs_grid
// (IQ3_XXS), iq3s_grid (IQ3_S), iq1s_grid (IQ1_S, IQ1_M). The sign tables are not needed: the
// decoders form sign bytes with integer operations (blocks.cuh).
//
// Global memory read through the read-only data cache (__ldg), not __constant__: the lanes of a
// warp decode different sub-blocks, so they look up 32 unrelated entries at once; the constant
// cache serves one address per pass (up to 32 passes per lookup), the L1 a gather in a few. All
// tables together are 33 KiB (iq1s alone 16 KiB), well within an SM's L1 on the GPUs built for.
//
// Each table is a function-scope static of its accessor. The kernels are compiled without
// relocatable device code (CMakeLists.txt), so a single extern __device__ definition cannot be
// shared between the .cu files; namespace-scope static tables in a header would be emitted into
// every file that includes blocks.cuh, used or not (nvcc keeps unreferenced static __device__
// variables), while a function's static is emitted only where the function is used. Each file
// that instantiates the decoders (rowdot.cu, get_rows.cu, quantize_act.cu) holds one copy, about
// 120 KB of object code each for the architectures built (measured with nvcc 13.0); relocatable
// device code would save two of them but adds a device link and cross-file calls for every
// kernel.
#pragma once

#include <cstdint>

#include "switchyard/iquant_grids.h"

namespace sy::cuda {

__device__ inline uint64_t iq2xxs_grid(uint32_t i) {
    static const unsigned long long table[256] = SY_IQ2XXS_GRID_INIT;
    return __ldg(&table[i]);
}

__device__ inline uint64_t iq2xs_grid(uint32_t i) {
    static const unsigned long long table[512] = SY_IQ2XS_GRID_INIT;
    return __ldg(&table[i]);
}

__device__ inline uint64_t iq2s_grid(uint32_t i) {
    static const unsigned long long table[1024] = SY_IQ2S_GRID_INIT;
    return __ldg(&table[i]);
}

__device__ inline uint32_t iq3xxs_grid(uint32_t i) {
    static const unsigned int table[256] = SY_IQ3XXS_GRID_INIT;
    return __ldg(&table[i]);
}

__device__ inline uint32_t iq3s_grid(uint32_t i) {
    static const unsigned int table[512] = SY_IQ3S_GRID_INIT;
    return __ldg(&table[i]);
}

__device__ inline uint64_t iq1s_grid(uint32_t i) {
    static const unsigned long long table[SY_NGRID_IQ1S] = SY_IQ1S_GRID_INIT;
    return __ldg(&table[i]);
}

}  // namespace sy::cuda
