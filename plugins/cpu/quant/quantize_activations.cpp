// Activation quantization of the quantized matrix products (quant_kernels.hpp): per block
// d = max|x| / 127 and q = round(x / d), so |q| <= 127 (dot_ss needs -128 excluded) and the
// error per value is at most d / 2. Scales stay f32 (the ggml formats round Q8_0's to f16).
#include <cmath>
#include <cstdlib>
#include <cstring>

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
        int32_t sum = 0;
        for (int j = 0; j < 32; ++j) sum += out.qs[j];
        out.sum = sum;
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

void quantize_act_q8_K_nibbles(const float* x, void* y, int64_t n) {
    sy_block_q8_K* out = static_cast<sy_block_q8_K*>(y);
    quantize_act_q8_K(x, out, n);
    for (int64_t b = 0; b < n / SY_QK_K; ++b)
        for (int h = 0; h < 2; ++h) {
            int8_t* q = out[b].qs + 128 * h;
            int8_t second[32];
            std::memcpy(second, q + 32, 32);
            std::memcpy(q + 32, q + 64, 32);
            std::memcpy(q + 64, second, 32);
        }
}

namespace {

// The group layouts of ActQ8G8: block b's 32 values quantized as in quantize_act_q8x32, then
// placed by `place(b, j)` (index into qs of element j of block b); past n everything is zero.
template <typename Place>
void quantize_act_g8(const float* x, void* out, int64_t n, Place place) {
    ActQ8G8* y = static_cast<ActQ8G8*>(out);
    const int64_t blocks = n / 32;
    for (int64_t g = 0; g < (blocks + 7) / 8; ++g) {
        ActQ8G8& grp = y[g];
        std::memset(&grp, 0, sizeof grp);
        for (int b = 0; b < 8 && 8 * g + b < blocks; ++b) {
            int8_t q[32];
            const float d = quantize_block(x + 32 * (8 * g + b), q, 32);
            int32_t sum = 0;
            for (int j = 0; j < 32; ++j) {
                grp.qs[place(b, j)] = q[j];
                sum += q[j];
            }
            grp.d[b] = d;
            grp.s[b] = d * float(sum);
        }
    }
}

void quantize_act_q8x32_row(const float* x, void* y, int64_t n) {
    quantize_act_q8x32(x, static_cast<ActQ8x32*>(y), n);
}

}  // namespace

void quantize_act_q8_K_row(const float* x, void* y, int64_t n) {
    quantize_act_q8_K(x, static_cast<sy_block_q8_K*>(y), n);
}

void quantize_act_g8_natural(const float* x, void* y, int64_t n) {
    quantize_act_g8(x, y, n, [](int b, int j) { return 32 * b + j; });
}

void quantize_act_g8_nibbles(const float* x, void* y, int64_t n) {
    quantize_act_g8(x, y, n, [](int b, int j) {
        return 128 * (b / 4) + (j < 16 ? 0 : 64) + 16 * (b % 4) + (j % 16);
    });
}

QuantKernel quant_kernel(int32_t weight_type) {
    constexpr int64_t a32 = sizeof(ActQ8x32), a256 = sizeof(sy_block_q8_K);
    // The variant's wide AVX-512 kernels first, each with its own activation layout.
    for (const QuantKernel& wide : {group_kernel(weight_type), wide_kquant_kernel(weight_type)})
        if (wide.dot) return wide;
    const QuantizeActFn q32 = quantize_act_q8x32_row, q256 = quantize_act_q8_K_row;
    switch (weight_type) {
        case SY_TYPE_Q4_0: return {vec_dot_q4_0, q32, 32, 32, a32};
        case SY_TYPE_Q4_1: return {vec_dot_q4_1, q32, 32, 32, a32};
        case SY_TYPE_Q5_0: return {vec_dot_q5_0, q32, 32, 32, a32};
        case SY_TYPE_Q5_1: return {vec_dot_q5_1, q32, 32, 32, a32};
        case SY_TYPE_Q8_0: return {vec_dot_q8_0, q32, 32, 32, a32};
        case SY_TYPE_IQ4_NL: return {vec_dot_iq4_nl, q32, 32, 32, a32};
        case SY_TYPE_Q2_K: return {vec_dot_q2_K, q256, 256, 256, a256};
        case SY_TYPE_Q3_K: return {vec_dot_q3_K, q256, 256, 256, a256};
        case SY_TYPE_Q4_K: return {vec_dot_q4_K, q256, 256, 256, a256};
        case SY_TYPE_Q5_K: return {vec_dot_q5_K, q256, 256, 256, a256};
        case SY_TYPE_Q6_K: return {vec_dot_q6_K, q256, 256, 256, a256};
        case SY_TYPE_IQ4_XS: return {vec_dot_iq4_xs, q256, 256, 256, a256};
        default: return {nullptr, nullptr, 0, 0, 0};
    }
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
