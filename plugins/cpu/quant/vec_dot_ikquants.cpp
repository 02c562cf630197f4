// Dot products of ik_llama.cpp's types (docs/ik-quants.md) in 256-bit registers: Q6_0 against
// ActQ8x32 activations, IQ2_K ... IQ6_K, and IQ2_KS and IQ3_KS (the same tables, scaled per 32
// values and per row), and mainline Q3_K (IQ3_K's planes without a table), against Q8_K, one
// 32-value chunk per step (the types' traits and the shifted-half algebra: ik_block_traits.hpp).
#include "quant/ik_block_traits.hpp"
#include "quant/tile256.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

#if defined(SY_CPU_INT8_AVX2)
// Bytes 0-7 = 2 c, 8-15 = 2 c + 1: the two scales of chunk c, spread over its 16-value halves.
struct alignas(16) PairMasks {
    int8_t b[8][16];
};
constexpr PairMasks pair_masks() {
    PairMasks m{};
    for (int c = 0; c < 8; ++c)
        for (int j = 0; j < 16; ++j) m.b[c][j] = int8_t(2 * c + j / 8);
    return m;
}
constexpr PairMasks kPairMasks = pair_masks();
#endif

template <typename T, int C>
void ik_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const auto* x =
        reinterpret_cast<const typename T::Block*>(static_cast<const uint8_t*>(w) + T::kMeta);
    const sy_block_q8_K* a[C];
    F32x8 acc[C];
    for (int c = 0; c < C; ++c) {
        a[c] = static_cast<const sy_block_q8_K*>(act[c]);
        acc[c] = zerof();
    }
    for (int64_t i = 0; i < blocks; ++i) {
        prefetch_ahead(&x[i], sizeof x[i]);
        I32x8 sum[C];
        for (int c = 0; c < C; ++c) sum[c] = zero32();
        const unsigned extra = T::extra16(x[i]);
#if defined(SY_CPU_INT8_AVX2)
        const __m128i sc8 = T::scales(x[i]);
        for (int chunk = 0; chunk < 8; ++chunk) {
            const I8x32 q = T::chunk(x[i], chunk);
            const __m128i pair = _mm_shuffle_epi8(
                sc8, _mm_load_si128(reinterpret_cast<const __m128i*>(kPairMasks.b[chunk])));
            const Scale16 sc{_mm256_cvtepi8_epi16(pair)};
            for (int c = 0; c < C; ++c) {
                const I8x32 act_q = load32(a[c][i].qs + 32 * chunk);
                sum[c] = T::kOffset ? dot_us_scaled(sum[c], q, act_q, sc)
                                    : dot_ss_scaled(sum[c], q, act_q, sc);
            }
        }
        if (T::kOffset != 0 || extra != 0) {
            // l_s * (shift e_s - offset) per sub-block (|.| <= 63 * 63), times its bsum.
            const __m256i pow2 = _mm256_setr_epi16(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
                                                   2048, 4096, 8192, 16384, short(0x8000));
            const __m256i on =
                _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16(short(extra)), pow2), pow2);
            const __m256i per = _mm256_sub_epi16(_mm256_and_si256(on, _mm256_set1_epi16(T::kShift)),
                                                 _mm256_set1_epi16(T::kOffset));
            const __m256i corr = _mm256_mullo_epi16(_mm256_cvtepi8_epi16(sc8), per);
            for (int c = 0; c < C; ++c) {
                const __m256i b =
                    _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[c][i].bsums));
                sum[c].v = _mm256_add_epi32(sum[c].v, _mm256_madd_epi16(corr, b));
            }
        }
#else
        int16_t scale[16];
        for (int s = 0; s < 16; ++s) scale[s] = int16_t(T::scale(x[i], s));
        for (int chunk = 0; chunk < 8; ++chunk) {
            const I8x32 q = T::chunk(x[i], chunk);
            const Scale16 sc = scales16(scale[2 * chunk], scale[2 * chunk + 1]);
            for (int c = 0; c < C; ++c) {
                const I8x32 act_q = load32(a[c][i].qs + 32 * chunk);
                sum[c] = T::kOffset ? dot_us_scaled(sum[c], q, act_q, sc)
                                    : dot_ss_scaled(sum[c], q, act_q, sc);
            }
        }
        for (int c = 0; c < C; ++c)
            for (int k = 0; k < 16; ++k) {
                const int per = ((extra >> k) & 1 ? T::kShift : 0) - T::kOffset;
                sum[c].v[k / 2] += scale[k] * per * a[c][i].bsums[k];
            }
#endif
        const float d = T::block_scale(x[i]);
        for (int c = 0; c < C; ++c) acc[c] = fma_i32(sum[c], d * a[c][i].d, acc[c]);
    }
    const float row = T::row_scale(w);
    for (int c = 0; c < C; ++c) out[c] = row * reduce(acc[c]);
}

template <int C>
void iq2_k_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_cols<Iq2K, C>(blocks, w, act, out);
}
template <int C>
void iq3_k_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_cols<Iq3K, C>(blocks, w, act, out);
}
template <int C>
void iq4_k_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_cols<Iq4K, C>(blocks, w, act, out);
}
template <int C>
void iq5_k_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_cols<Iq5K, C>(blocks, w, act, out);
}
template <int C>
void iq2_ks_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_cols<Iq2Ks, C>(blocks, w, act, out);
}
template <int C>
void iq3_ks_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_cols<Iq3Ks, C>(blocks, w, act, out);
}
template <int C>
void q3_K_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_cols<Q3K, C>(blocks, w, act, out);
}
template <int C>
void iq6_k_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ik_cols<Iq6K, C>(blocks, w, act, out);
}

// Q6_0: x = d (q - 32), q in [0, 63] per value, d per 32. q is unsigned, so dot_us takes it
// without the sign juggling of signed weights (2 * 63 * 127 < 2^15), from lanes that start at
// -4 sum q_a (the 8 lanes together: -32 sum q_a).
inline I8x32 q6_0_values(const sy_block_q6_0& b) {
    // qh byte j % 8 holds bits 4-5 of value j at bits 4 (j / 8) and of value j + 16 two above:
    // the qh word shifted by 0, 4, 2, 6 puts them in the low 2 bits of bytes 0-7, 8-15, 16-23,
    // 24-31 (what spills in from the next byte lies above them).
    uint64_t qh;
    std::memcpy(&qh, b.qh, 8);
#if defined(SY_CPU_INT8_AVX2)
    const __m256i shifted =
        _mm256_srlv_epi64(_mm256_set1_epi64x(int64_t(qh)), _mm256_setr_epi64x(0, 4, 2, 6));
    const I8x32 high = shl8(and8({shifted}, 3), 4);
#else
    const I8x32 high = shl8(and8(from_u64x4(qh, qh >> 4, qh >> 2, qh >> 6), 3), 4);
#endif
    return or8(nibbles16(b.qs), high);
}

template <int C>
void q6_0_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const auto* x = static_cast<const sy_block_q6_0*>(w);
    const ActQ8x32* a[C];
    F32x8 acc0[C], acc1[C];
    for (int c = 0; c < C; ++c) {
        a[c] = static_cast<const ActQ8x32*>(act[c]);
        acc0[c] = zerof();
        acc1[c] = zerof();
    }
    // Two blocks per step, one accumulator each, so that the FMA latency does not chain.
    int64_t i = 0;
    for (; i + 2 <= blocks; i += 2) {
        prefetch_ahead(&x[i], 2 * sizeof x[i]);
        const I8x32 q0 = q6_0_values(x[i]), q1 = q6_0_values(x[i + 1]);
        const float d0 = h2f(x[i].d), d1 = h2f(x[i + 1].d);
        for (int c = 0; c < C; ++c) {
            const ActQ8x32& a0 = a[c][i];
            const ActQ8x32& a1 = a[c][i + 1];
            acc0[c] = fma_i32(dot_us(splat32(-4 * a0.sum), q0, load32(a0.qs)), d0 * a0.d, acc0[c]);
            acc1[c] = fma_i32(dot_us(splat32(-4 * a1.sum), q1, load32(a1.qs)), d1 * a1.d, acc1[c]);
        }
    }
    for (; i < blocks; ++i) {
        const I8x32 q = q6_0_values(x[i]);
        const float d = h2f(x[i].d);
        for (int c = 0; c < C; ++c)
            acc0[c] = fma_i32(dot_us(splat32(-4 * a[c][i].sum), q, load32(a[c][i].qs)),
                              d * a[c][i].d, acc0[c]);
    }
    for (int c = 0; c < C; ++c) out[c] = reduce(addf(acc0[c], acc1[c]));
}

}  // namespace

SY_CPU_DEFINE_VEC_DOT(q6_0)
SY_CPU_DEFINE_VEC_DOT(iq2_k)
SY_CPU_DEFINE_VEC_DOT(iq3_k)
SY_CPU_DEFINE_VEC_DOT(iq4_k)
SY_CPU_DEFINE_VEC_DOT(iq5_k)
SY_CPU_DEFINE_VEC_DOT(iq6_k)
SY_CPU_DEFINE_VEC_DOT(q3_K)
SY_CPU_DEFINE_VEC_DOT(iq2_ks)
SY_CPU_DEFINE_VEC_DOT(iq3_ks)

#if defined(SY_CPU_TILE_GEMM) && !defined(SY_CPU_TILE_GEMM512)
namespace {

// The avx2 tile path (tile_gemm256.cpp): chunk c's table entries (plus the type's offset) made
// true values, entry - offset + shift e_s, sub-blocks 2c and 2c + 1; the 16 scales widened.
template <typename T>
float ik_tile_row256(const typename T::Block& b, int8_t* v, int32_t* l) {
    const unsigned extra = T::extra16(b);
    for (int c = 0; c < 8; ++c) {
        const int lo = ((extra >> (2 * c)) & 1 ? T::kShift : 0) - T::kOffset;
        const int hi = ((extra >> (2 * c + 1)) & 1 ? T::kShift : 0) - T::kOffset;
        const __m256i per = _mm256_setr_m128i(_mm_set1_epi8(char(lo)), _mm_set1_epi8(char(hi)));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 32 * c),
                            _mm256_add_epi8(T::chunk(b, c).v, per));
    }
    const __m128i sc = T::scales(b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(l), _mm256_cvtepi8_epi32(sc));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(l + 8),
                        _mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8)));
    return T::block_scale(b);
}

template <typename T, bool kScales32, bool kSigned = false>
void ik_tile_decode256(int64_t blocks, const void* w, int64_t row_stride, int rows,
                       WeightTile& tile) {
    decode_tile256<typename T::Block, T::kMeta, kScales32, false, kSigned>(
        blocks, w, row_stride, rows, tile, [](const uint8_t* p) { return T::row_scale(p); },
        [](const typename T::Block& b, int8_t* v, int32_t* l) {
            return ik_tile_row256<T>(b, v, l);
        });
}

}  // namespace

TileDecodeFn avx2_tile_decoder(int32_t weight_type) {
    switch (weight_type) {
        case SY_TYPE_IQ2_K: return ik_tile_decode256<Iq2K, false>;
        case SY_TYPE_IQ3_K: return ik_tile_decode256<Iq3K, false>;
        case SY_TYPE_IQ2_KS: return ik_tile_decode256<Iq2Ks, true>;
        case SY_TYPE_IQ3_KS: return ik_tile_decode256<Iq3Ks, true>;
        case SY_TYPE_Q3_K: return ik_tile_decode256<Q3K, false>;
        case SY_TYPE_IQ4_K: return ik_tile_decode256<Iq4K, false, true>;
        case SY_TYPE_IQ5_K: return ik_tile_decode256<Iq5K, false, true>;
        case SY_TYPE_IQ6_K: return ik_tile_decode256<Iq6K, false, true>;
        default:
            if (const TileDecodeFn decode = avx2_codebook_tile_decoder(weight_type)) return decode;
            if (const TileDecodeFn decode = avx2_row_tile_decoder(weight_type)) return decode;
            return avx2_kquant_tile_decoder(weight_type);
    }
}
#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
