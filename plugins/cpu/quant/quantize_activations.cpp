// Activation quantization of the quantized matrix products (quant_kernels.hpp): per block
// d = max|x| / 127 and q = round(x / d), so |q| <= 127 (dot_ss needs -128 excluded) and the
// error per value is at most d / 2. Scales stay f32 (the ggml formats round Q8_0's to f16).
#include <cstring>

#include "quant/quant_kernels.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

// Quantizes n values (a multiple of 16) into q and returns their scale d; sums[i] = the sum of
// q[16 i, 16 i + 16). A NaN becomes 127 (the clamp returns its bound for it), so every lane
// converts safely.
inline float quantize_block(const float* x, int8_t* q, int n, int32_t* sums) {
    static_assert(16 % simd::kLanes == 0);
    simd::F32x amax = simd::zero();
    for (int j = 0; j < n; j += simd::kLanes) amax = simd::max(amax, simd::abs(simd::load(x + j)));
    const float d = simd::reduce_max(amax) / 127.0f;
    const simd::F32x id = simd::splat(d > 0.0f ? 1.0f / d : 0.0f);
    const simd::F32x hi = simd::splat(127.0f), lo = simd::splat(-127.0f);
    for (int j = 0; j < n; j += 16) {
        simd::F32x total = simd::zero();
        for (int i = j; i < j + 16; i += simd::kLanes) {
            const simd::F32x v =
                simd::max(simd::min(simd::round(simd::mul(simd::load(x + i), id)), hi), lo);
            simd::store_i8(q + i, v);
            total = simd::add(total, v);
        }
        sums[j / 16] = int32_t(simd::reduce_add(total));  // exact: integers far below 2^24
    }
    return d;
}

// 32 values: their scale and, in sum, the sum of q.
inline float quantize_32(const float* x, int8_t* q, int32_t& sum) {
    int32_t sums[2];
    const float d = quantize_block(x, q, 32, sums);
    sum = sums[0] + sums[1];
    return d;
}

}  // namespace

void quantize_act_q8x32(const float* x, ActQ8x32* y, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b) y[b].d = quantize_32(x + 32 * b, y[b].qs, y[b].sum);
}

void quantize_act_q8_K(const float* x, sy_block_q8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / SY_QK_K; ++b) {
        int32_t sums[SY_QK_K / 16];
        y[b].d = quantize_block(x + SY_QK_K * b, y[b].qs, SY_QK_K, sums);
        for (int j = 0; j < SY_QK_K / 16; ++j) y[b].bsums[j] = int16_t(sums[j]);
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

void quantize_act_q8_K_q2k(const float* x, void* y, int64_t n) {
    auto* out = static_cast<sy_block_q8_K*>(y);
    quantize_act_q8_K(x, out, n);
    for (int64_t b = 0; b < n / SY_QK_K; ++b) {
        int8_t natural[SY_QK_K];
        std::memcpy(natural, out[b].qs, sizeof natural);
        for (int g = 0; g < 4; ++g)
            for (int h = 0; h < 2; ++h)
                std::memcpy(out[b].qs + 32 * (2 * g + h), natural + 32 * (4 * h + g), 32);
    }
}

void quantize_act_q8_K_quarters(const float* x, void* y, int64_t n) {
    auto* out = static_cast<sy_block_q8_K*>(y);
    quantize_act_q8_K(x, out, n);
    for (int64_t b = 0; b < n / SY_QK_K; ++b)
        for (int k = 0; k < 2; ++k) {
            int8_t natural[128];
            int8_t* q = out[b].qs + 128 * k;
            std::memcpy(natural, q, sizeof natural);
            for (int j = 0; j < 4; ++j)
                for (int h = 0; h < 2; ++h)
                    std::memcpy(q + 64 * h + 16 * j, natural + 32 * j + 16 * h, 16);
        }
}

namespace {

// The group layouts of ActQ8G8: block b's 32 values quantized as in quantize_act_q8x32, then
// placed by `place(b, j)` (index into qs of element j of block b; elements 0-15 and 16-31 are
// each adjacent); past n everything is zero.
template <typename Place>
void quantize_act_g8(const float* x, void* out, int64_t n, Place place) {
    ActQ8G8* y = static_cast<ActQ8G8*>(out);
    const int64_t blocks = n / 32;
    for (int64_t g = 0; g < (blocks + 7) / 8; ++g) {
        ActQ8G8& grp = y[g];
        if (8 * g + 8 > blocks) std::memset(&grp, 0, sizeof grp);
        for (int b = 0; b < 8 && 8 * g + b < blocks; ++b) {
            int8_t q[32];
            int32_t sum;
            const float d = quantize_32(x + 32 * (8 * g + b), q, sum);
            // Each 16-value half lands in one piece in both layouts.
            std::memcpy(grp.qs + place(b, 0), q, 16);
            std::memcpy(grp.qs + place(b, 16), q + 16, 16);
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

void quantize_act_u8_K(const float* x, ActU8K* y, int64_t n) {
    for (int64_t b = 0; b < n / SY_QK_K; ++b) {
        int8_t q[SY_QK_K];
        int32_t sums[SY_QK_K / 16];
        y[b].d = quantize_block(x + SY_QK_K * b, q, SY_QK_K, sums);
        for (int i = 0; i < SY_QK_K; ++i) y[b].qs[i] = uint8_t(q[i] + 128);
        for (int j = 0; j < SY_QK_K / 16; ++j) y[b].bsums[j] = int16_t(sums[j]);
    }
}

void quantize_act_g8_natural(const float* x, void* y, int64_t n) {
    quantize_act_g8(x, y, n, [](int b, int j) { return 32 * b + j; });
}

void quantize_act_g8_nibbles(const float* x, void* y, int64_t n) {
    quantize_act_g8(x, y, n, [](int b, int j) {
        return 128 * (b / 4) + (j < 16 ? 0 : 64) + 16 * (b % 4) + (j % 16);
    });
}

namespace {

// The fewest columns the avx2 tile path takes: its tile is moved into place by plain loops, so a
// tile costs more than avx512's; at 12 and 16 columns the per-row kernels were as fast or faster
// for some types, from 20 on the tile was faster for every type measured
// (bench/results/avx2-tiles.md, "How many columns").
constexpr int64_t kAvx2TileMinColumns = 20;

// The per-block kernels (256 bits or plain loops) on ActQ8x32 or natural Q8_K activations.
QuantKernel block_kernel(int32_t weight_type) {
    constexpr int64_t a32 = sizeof(ActQ8x32), a256 = sizeof(sy_block_q8_K);
    const QuantizeActFn q32 = quantize_act_q8x32_row, q256 = quantize_act_q8_K_row;
    switch (weight_type) {
        case SY_TYPE_Q4_0: return {vec_dot_q4_0, q32, 32, 32, a32};
        case SY_TYPE_Q4_1: return {vec_dot_q4_1, q32, 32, 32, a32};
        case SY_TYPE_Q5_0: return {vec_dot_q5_0, q32, 32, 32, a32};
        case SY_TYPE_Q5_1: return {vec_dot_q5_1, q32, 32, 32, a32};
        case SY_TYPE_Q8_0: return {vec_dot_q8_0, q32, 32, 32, a32};
        case SY_TYPE_Q8_KV: return {vec_dot_q8_kv, q32, 32, 32, a32};
        case SY_TYPE_IQ4_NL: return {vec_dot_iq4_nl, q32, 32, 32, a32};
        case SY_TYPE_Q6_0: return {vec_dot_q6_0, q32, 32, 32, a32};
        case SY_TYPE_Q2_K: return {vec_dot_q2_K, q256, 256, 256, a256};
        case SY_TYPE_Q3_K: return {vec_dot_q3_K, q256, 256, 256, a256};
        case SY_TYPE_Q4_K: return {vec_dot_q4_K, q256, 256, 256, a256};
        case SY_TYPE_Q5_K: return {vec_dot_q5_K, q256, 256, 256, a256};
        case SY_TYPE_Q6_K: return {vec_dot_q6_K, q256, 256, 256, a256};
        case SY_TYPE_IQ4_XS: return {vec_dot_iq4_xs, q256, 256, 256, a256};
        case SY_TYPE_IQ2_XXS: return {vec_dot_iq2_xxs, q256, 256, 256, a256};
        case SY_TYPE_IQ2_XS: return {vec_dot_iq2_xs, q256, 256, 256, a256};
        case SY_TYPE_IQ2_S: return {vec_dot_iq2_s, q256, 256, 256, a256};
        case SY_TYPE_IQ3_XXS: return {vec_dot_iq3_xxs, q256, 256, 256, a256};
        case SY_TYPE_IQ3_S: return {vec_dot_iq3_s, q256, 256, 256, a256};
        case SY_TYPE_IQ1_S: return {vec_dot_iq1_s, q256, 256, 256, a256};
        case SY_TYPE_IQ1_M: return {vec_dot_iq1_m, q256, 256, 256, a256};
        case SY_TYPE_IQ1_M_R4_ROWS: return {vec_dot_iq1_m_r4_rows, q256, 256, 256, a256};
        case SY_TYPE_IQ2_K: return {vec_dot_iq2_k, q256, 256, 256, a256};
        case SY_TYPE_IQ3_K: return {vec_dot_iq3_k, q256, 256, 256, a256};
        case SY_TYPE_IQ4_K: return {vec_dot_iq4_k, q256, 256, 256, a256};
        case SY_TYPE_IQ5_K: return {vec_dot_iq5_k, q256, 256, 256, a256};
        case SY_TYPE_IQ6_K: return {vec_dot_iq6_k, q256, 256, 256, a256};
        case SY_TYPE_IQ2_KS: return {vec_dot_iq2_ks, q256, 256, 256, a256};
        case SY_TYPE_IQ3_KS: return {vec_dot_iq3_ks, q256, 256, 256, a256};
        case SY_TYPE_IQ4_KS: return {vec_dot_iq4_ks, q256, 256, 256, a256};
        case SY_TYPE_IQ4_KSS: return {vec_dot_iq4_kss, q256, 256, 256, a256};
        case SY_TYPE_IQ5_KS: return {vec_dot_iq5_ks, q256, 256, 256, a256};
        case SY_TYPE_IQ2_KL: return {vec_dot_iq2_kl, q256, 256, 256, a256};
        case SY_TYPE_IQ1_KT: return {vec_dot_iq1_kt, q256, 256, 256, a256};
        case SY_TYPE_IQ2_KT: return {vec_dot_iq2_kt, q256, 256, 256, a256};
        case SY_TYPE_IQ3_KT: return {vec_dot_iq3_kt, q256, 256, 256, a256};
        case SY_TYPE_IQ4_KT: return {vec_dot_iq4_kt, q256, 256, 256, a256};
        default: return {nullptr, nullptr, 0, 0, 0};
    }
}

}  // namespace

QuantKernel interleaved_kernel(int32_t weight_type) {
    const VecDotFn interleaved = interleaved_dot(weight_type);
    if (interleaved == nullptr) return {nullptr, nullptr, 0, 0, 0};
    // The plain kernel of the same ActQ8x32 activations, for reference.
    QuantKernel k = block_kernel(weight_type);
    k.interleaved = interleaved;
    return k;
}

QuantKernel quant_kernel(int32_t weight_type, int64_t K) {
    // The variant's wide AVX-512 kernels first, each with its own activation layout.
    if (K >= 256 || K == 128)
        for (const QuantKernel& wide :
             {group_kernel(weight_type), wide_kquant_kernel(weight_type),
              wide_ikquant_kernel(weight_type), wide_trellis_kernel(weight_type),
              codebook_kernel(weight_type)})
            if (wide.dot) return wide;
#if defined(SY_CPU_TILE_GEMM) && !defined(SY_CPU_TILE_GEMM512)
    if (const TileDecodeFn decode = avx2_tile_decoder(weight_type))
        return with_tile(block_kernel(weight_type), decode, kAvx2TileMinColumns);
#endif
    return block_kernel(weight_type);
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
