// Activation quantization of the quantized matrix products (quant_kernels.hpp): per block
// d = max|x| / 127 and q = round(x / d), so |q| <= 127 (dot_ss needs -128 excluded) and the
// error per value is at most d / 2. Scales stay f32 (the ggml formats round Q8_0's to f16).
#include <cmath>
#include <cstdlib>

#include "quant/quant_kernels.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

// Quantizes n values into q and returns their scale d.
inline float quantize_block(const float* x, int8_t* q, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < n; ++j) {
        const float v = std::nearbyint(x[j] * id);
        q[j] = int8_t(v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v));
    }
    return d;
}

}  // namespace

void quantize_act_q8x32(const float* x, ActQ8x32* y, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b) {
        ActQ8x32& out = y[b];
        out.d = quantize_block(x + 32 * b, out.qs, 32);
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += out.qs[j];
        out.s = out.d * float(sum);
    }
}

void quantize_act_q8_K(const float* x, sy_block_q8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / SY_QK_K; ++b) {
        sy_block_q8_K& out = y[b];
        out.d = quantize_block(x + SY_QK_K * b, out.qs, SY_QK_K);
        for (int j = 0; j < SY_QK_K / 16; ++j) {
            int sum = 0;
            for (int k = 0; k < 16; ++k) sum += out.qs[16 * j + k];
            out.bsums[j] = int16_t(sum);
        }
    }
}

QuantKernel quant_kernel(int32_t weight_type) {
    constexpr int64_t a32 = sizeof(ActQ8x32), a256 = sizeof(sy_block_q8_K);
    switch (weight_type) {
        case SY_TYPE_Q4_0: return {vec_dot_q4_0, SY_TYPE_Q8_0, 32, a32};
        case SY_TYPE_Q4_1: return {vec_dot_q4_1, SY_TYPE_Q8_0, 32, a32};
        case SY_TYPE_Q5_0: return {vec_dot_q5_0, SY_TYPE_Q8_0, 32, a32};
        case SY_TYPE_Q5_1: return {vec_dot_q5_1, SY_TYPE_Q8_0, 32, a32};
        case SY_TYPE_Q8_0: return {vec_dot_q8_0, SY_TYPE_Q8_0, 32, a32};
        case SY_TYPE_IQ4_NL: return {vec_dot_iq4_nl, SY_TYPE_Q8_0, 32, a32};
        case SY_TYPE_Q2_K: return {vec_dot_q2_K, SY_TYPE_Q8_K, 256, a256};
        case SY_TYPE_Q3_K: return {vec_dot_q3_K, SY_TYPE_Q8_K, 256, a256};
        case SY_TYPE_Q4_K: return {vec_dot_q4_K, SY_TYPE_Q8_K, 256, a256};
        case SY_TYPE_Q5_K: return {vec_dot_q5_K, SY_TYPE_Q8_K, 256, a256};
        case SY_TYPE_Q6_K: return {vec_dot_q6_K, SY_TYPE_Q8_K, 256, a256};
        case SY_TYPE_IQ4_XS: return {vec_dot_iq4_xs, SY_TYPE_Q8_K, 256, a256};
        default: return {nullptr, SY_TYPE_NONE, 0, 0};
    }
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
