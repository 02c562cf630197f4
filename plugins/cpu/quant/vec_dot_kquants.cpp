// Dot products of the K-quants Q2_K, Q4_K, Q5_K, Q6_K (256-element super-blocks) with Q8_K
// activations (Q3_K runs on IQ3_K's kernel, vec_dot_ikquants.cpp). Per super-block the weights are
// decoded 32 values at a time into unsigned bytes, dot_us gives int32 lanes of 4 products (lanes
// 0-3: the first 16 values, 4-7: the next 16), the sub-block scales multiply those lanes
// (dot_us_scaled: pair sums in int16, then a widening multiply-add by the scales), and one float
// FMA per super-block applies d_w * d_a. The constant parts (mins, and the offset of Q6_K) come
// from the activation block sums:
//   sum_j sc_j * (q_j - o) * a_j = sum_j sc_j * q_j a_j - o * sum_sub sc_sub * bsum_sub.
#include <type_traits>

#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

template <int C>
struct Columns {
    const sy_block_q8_K* a[C];
    F32x8 acc[C];
    float scalar[C];

    explicit Columns(const void* const* act) {
        for (int c = 0; c < C; ++c) {
            a[c] = static_cast<const sy_block_q8_K*>(act[c]);
            acc[c] = zerof();
            scalar[c] = 0.0f;
        }
    }
    void finish(float* out) const {
        for (int c = 0; c < C; ++c) out[c] = reduce(acc[c]) + scalar[c];
    }
};

// Q4_K and Q5_K: x = d * sc * q - dmin * m per 32 values, q 4 bits (Q5_K: plus a fifth from qh).
template <int C, typename Block>
void q4_5_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    constexpr bool kFifthBit = std::is_same_v<Block, sy_block_q5_K>;
    const Block* x = static_cast<const Block*>(w);
    Columns<C> cols(act);
    for (int64_t i = 0; i < blocks; ++i) {
        prefetch_ahead(&x[i], sizeof x[i]);
        uint8_t sc[8], mn[8];
        scales_mins_k4(x[i].scales, sc, mn);
        I32x8 sum[C];
        for (int c = 0; c < C; ++c) sum[c] = zero32();
        for (int j = 0; j < 4; ++j) {
            const I8x32 bytes = load32(x[i].qs + 32 * j);
            I8x32 lo = low_nibbles(bytes), hi = high_nibbles(bytes);
            if constexpr (kFifthBit) {
                const I8x32 qh = load32(x[i].qh);
                lo = or8(lo, shl8(and8(shr8(qh, 2 * j), 1), 4));
                hi = or8(hi, shl8(and8(shr8(qh, 2 * j + 1), 1), 4));
            }
            const Scale16 slo = scales16(int16_t(sc[2 * j]), int16_t(sc[2 * j])),
                          shi = scales16(int16_t(sc[2 * j + 1]), int16_t(sc[2 * j + 1]));
            for (int c = 0; c < C; ++c) {
                const int8_t* aq = cols.a[c][i].qs + 64 * j;
                sum[c] = dot_us_scaled(sum[c], lo, load32(aq), slo);
                sum[c] = dot_us_scaled(sum[c], hi, load32(aq + 32), shi);
            }
        }
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        for (int c = 0; c < C; ++c) {
            const sy_block_q8_K& a = cols.a[c][i];
            int32_t msum = 0;
            for (int j = 0; j < 8; ++j) msum += mn[j] * (a.bsums[2 * j] + a.bsums[2 * j + 1]);
            cols.acc[c] = fma_i32(sum[c], d * a.d, cols.acc[c]);
            cols.scalar[c] -= dmin * a.d * float(msum);
        }
    }
    cols.finish(out);
}

template <int C>
void q4_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    q4_5_K_cols<C, sy_block_q4_K>(blocks, w, act, out);
}

template <int C>
void q5_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    q4_5_K_cols<C, sy_block_q5_K>(blocks, w, act, out);
}

// x = d * sc * (q - 32), q = 4 bits of ql | 2 bits of qh << 4; scales per 16 values.
template <int C>
void q6_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const sy_block_q6_K* x = static_cast<const sy_block_q6_K*>(w);
    Columns<C> cols(act);
    for (int64_t i = 0; i < blocks; ++i) {
        prefetch_ahead(&x[i], sizeof x[i]);
        const int8_t* sc = x[i].scales;
        I32x8 sum[C];
        for (int c = 0; c < C; ++c) sum[c] = zero32();
        for (int half = 0; half < 2; ++half) {
            const uint8_t* ql = x[i].ql + 64 * half;
            const I8x32 qh = load32(x[i].qh + 32 * half);
            const I8x32 l0 = load32(ql), l1 = load32(ql + 32);
            const I8x32 q[4] = {
                or8(low_nibbles(l0), shl8(and8(qh, 3), 4)),
                or8(low_nibbles(l1), shl8(and8(shr8(qh, 2), 3), 4)),
                or8(high_nibbles(l0), shl8(and8(shr8(qh, 4), 3), 4)),
                or8(high_nibbles(l1), shl8(shr8(qh, 6), 4)),
            };
            for (int g = 0; g < 4; ++g) {
                const Scale16 s = scales16(sc[8 * half + 2 * g], sc[8 * half + 2 * g + 1]);
                for (int c = 0; c < C; ++c)
                    sum[c] = dot_us_scaled(sum[c], q[g],
                                           load32(cols.a[c][i].qs + 128 * half + 32 * g), s);
            }
        }
        const float d = h2f(x[i].d);
        for (int c = 0; c < C; ++c) {
            const sy_block_q8_K& a = cols.a[c][i];
            int32_t osum = 0;
            for (int j = 0; j < 16; ++j) osum += sc[j] * a.bsums[j];
            cols.acc[c] = fma_i32(sum[c], d * a.d, cols.acc[c]);
            cols.scalar[c] -= 32.0f * d * a.d * float(osum);
        }
    }
    cols.finish(out);
}

// x = d * (sc & 15) * q - dmin * (sc >> 4), q 2 bits; scales per 16 values.
template <int C>
void q2_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const sy_block_q2_K* x = static_cast<const sy_block_q2_K*>(w);
    Columns<C> cols(act);
    for (int64_t i = 0; i < blocks; ++i) {
        prefetch_ahead(&x[i], sizeof x[i]);
        const uint8_t* sc = x[i].scales;
        I32x8 sum[C];
        for (int c = 0; c < C; ++c) sum[c] = zero32();
        for (int half = 0; half < 2; ++half) {
            const I8x32 qs = load32(x[i].qs + 32 * half);
            for (int g = 0; g < 4; ++g) {
                const int group = 4 * half + g;
                const I8x32 q = and8(shr8(qs, 2 * g), 3);
                const Scale16 s =
                    scales16(int16_t(sc[2 * group] & 15), int16_t(sc[2 * group + 1] & 15));
                for (int c = 0; c < C; ++c)
                    sum[c] = dot_us_scaled(sum[c], q, load32(cols.a[c][i].qs + 32 * group), s);
            }
        }
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        for (int c = 0; c < C; ++c) {
            const sy_block_q8_K& a = cols.a[c][i];
            int32_t msum = 0;
            for (int j = 0; j < 16; ++j) msum += (sc[j] >> 4) * a.bsums[j];
            cols.acc[c] = fma_i32(sum[c], d * a.d, cols.acc[c]);
            cols.scalar[c] -= dmin * a.d * float(msum);
        }
    }
    cols.finish(out);
}

}  // namespace

SY_CPU_DEFINE_VEC_DOT(q2_K)
SY_CPU_DEFINE_VEC_DOT(q4_K)
SY_CPU_DEFINE_VEC_DOT(q5_K)
SY_CPU_DEFINE_VEC_DOT(q6_K)

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
