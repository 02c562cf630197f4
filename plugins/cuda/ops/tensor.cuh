// Tensors as kernels see them (the descriptor, passed by value, is in tensor_desc.hpp): element
// addressing through the strides, and float loads/stores of the float types (F16/BF16 stores round
// to nearest even).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/tensor_desc.hpp"
#include "switchyard/plugin.h"

namespace sy::cuda {

// Flat element index (i0 fastest) -> its four coordinates.
struct Coord {
    int64_t i[4];
};

__device__ inline Coord unravel(const TensorDesc& t, int64_t flat) {
    Coord c;
    c.i[0] = flat % t.ne[0];
    flat /= t.ne[0];
    c.i[1] = flat % t.ne[1];
    flat /= t.ne[1];
    c.i[2] = flat % t.ne[2];
    c.i[3] = flat / t.ne[2];
    return c;
}

__device__ inline char* at(const TensorDesc& t, const Coord& c) {
    return t.data + c.i[0] * t.nb[0] + c.i[1] * t.nb[1] + c.i[2] * t.nb[2] + c.i[3] * t.nb[3];
}

// Row r (flat over dims 1..3, i1 fastest).
__device__ inline char* row_ptr(const TensorDesc& t, int64_t r) {
    const int64_t i1 = r % t.ne[1];
    const int64_t rest = r / t.ne[1];
    return t.data + i1 * t.nb[1] + (rest % t.ne[2]) * t.nb[2] + (rest / t.ne[2]) * t.nb[3];
}

// SILU and GELU (the tanh form), as the unary ops and the fused MoE op apply them.
__device__ inline float silu_of(float x) {
    return x / (1.0f + expf(-x));
}
__device__ inline float gelu_of(float x) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

__device__ inline float load_float(int32_t type, const char* p) {
    switch (type) {
        case SY_TYPE_F16: return __half2float(*reinterpret_cast<const __half*>(p));
        case SY_TYPE_BF16: return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
        default: return *reinterpret_cast<const float*>(p);
    }
}

__device__ inline void store_float(int32_t type, char* p, float v) {
    switch (type) {
        case SY_TYPE_F16: *reinterpret_cast<__half*>(p) = __float2half_rn(v); break;
        case SY_TYPE_BF16: *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(v); break;
        default: *reinterpret_cast<float*>(p) = v; break;
    }
}

// Grid-stride loops over n items with 256-thread blocks.
constexpr int kThreads = 256;

inline unsigned grid_for(int64_t n, int threads = kThreads) {
    const int64_t blocks = (n + threads - 1) / threads;
    return unsigned(blocks < 65535 * 16 ? (blocks < 1 ? 1 : blocks) : 65535 * 16);
}

__device__ inline int64_t global_thread() {
    return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ inline int64_t grid_threads() {
    return int64_t(gridDim.x) * blockDim.x;
}

// Programmatic dependent launch (compute capability 9.0 and later): a kernel launched with
// launch_dependent (rowdot.cu) may start while the kernel before it still runs, once every block
// of that one has called allow_dependents() or exited; it does what needs no input of that kernel
// (prefetch weights), then wait_for_prerequisite() returns when that kernel has finished and its
// writes are visible. Both are no-ops on older devices and for kernels launched the ordinary way.
__device__ inline void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ inline void wait_for_prerequisite() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Asks for the 128-byte lines that [p, p + bytes) touches in L2, the warp's lanes taking a line
// each.
__device__ inline void prefetch_l2(const char* p, int64_t bytes, int lane) {
    const auto first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t(127);
    const auto end = reinterpret_cast<uintptr_t>(p) + uintptr_t(bytes);
    for (uintptr_t at = first + uintptr_t(lane) * 128; at < end; at += 32 * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(at));
}

// Sum / max over a warp or a block of blockDim.x threads (a multiple of 32, at most 1024); every
// thread gets the result. `shared` holds 32 floats.
__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ inline float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ inline float block_sum(float v, float* shared) {
    v = warp_sum(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < int(blockDim.x / 32) ? shared[lane] : 0.0f;
    return warp_sum(v);
}

__device__ inline float block_max(float v, float* shared) {
    v = warp_max(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < int(blockDim.x / 32) ? shared[lane] : -INFINITY;
    return warp_max(v);
}

// Records a bad index: the first node to fail keeps its code.
__device__ inline void report_bad_index(int* error_word, int code) {
    atomicCAS(error_word, 0, code);
}

}  // namespace sy::cuda
