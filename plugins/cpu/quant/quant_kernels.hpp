// Quantized matrix products: the weights stay in their GGUF blocks (quant_blocks.h) and each
// activation row is quantized once per op to an 8-bit block format, so that every block's dot
// product is an integer one (int8_simd.hpp):
//   ActQ8x32 (Q8_0 / Q8_1 semantics, f32 scales)  for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL;
//   sy_block_q8_K                                 for Q2_K ... Q6_K and IQ4_XS.
// Error: the products are exact in int32; the activation rounding (|x - d q| <= d / 2 with
// d = max|x| / 127) is the only approximation.
#pragma once

#include <cstdint>

#include "simd.hpp"
#include "switchyard/quant_blocks.h"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

// 32 activations: x ~ d * qs, s = d * sum(qs) (the Q8_1 sum, used by Q4_1 and Q5_1).
struct ActQ8x32 {
    float d;
    float s;
    int8_t qs[32];
};

// Dot products of one weight row (`blocks` blocks at w) with `cols` (1..kMaxDotCols) quantized
// activation rows; out[c] = the dot product with act[c].
using VecDotFn = void (*)(int64_t blocks, const void* w, const void* const* act, int cols,
                          float* out);
constexpr int kMaxDotCols = 4;

struct QuantKernel {
    VecDotFn dot;
    int32_t act_type;     // SY_TYPE_Q8_0 (ActQ8x32) or SY_TYPE_Q8_K (sy_block_q8_K)
    int64_t act_block;    // elements per activation block: 32 or 256
    int64_t act_bytes;    // bytes per activation block
};

// The kernel for a weight type, or {nullptr, ...} for a type without one.
QuantKernel quant_kernel(int32_t weight_type);

// n (a multiple of 32 / 256) floats into n / 32 ActQ8x32 or n / 256 sy_block_q8_K.
void quantize_act_q8x32(const float* x, ActQ8x32* y, int64_t n);
void quantize_act_q8_K(const float* x, sy_block_q8_K* y, int64_t n);

// Per-family kernels (vec_dot_*.cpp).
void vec_dot_q4_0(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q4_1(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q5_0(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q5_1(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q8_0(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq4_nl(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq4_xs(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q2_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q3_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q4_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q5_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q6_K(int64_t, const void*, const void* const*, int, float*);

// Defines vec_dot_<name> from a template `name##_cols<C>` of the same signature, expanding the
// run-time column count (1..kMaxDotCols) into the template argument.
#define SY_CPU_DEFINE_VEC_DOT(name)                                                          \
    void vec_dot_##name(int64_t blocks, const void* w, const void* const* act, int cols,     \
                        float* out) {                                                        \
        switch (cols) {                                                                      \
            case 1: name##_cols<1>(blocks, w, act, out); break;                              \
            case 2: name##_cols<2>(blocks, w, act, out); break;                              \
            case 3: name##_cols<3>(blocks, w, act, out); break;                              \
            default: name##_cols<4>(blocks, w, act, out); break;                             \
        }                                                                                    \
    }

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
