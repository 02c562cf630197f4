// Dot products of ik_llama.cpp's row-scaled types (docs/ik-quants.md 3.7-3.12, 4) against Q8_K
// activations: IQ4_KS, IQ4_KSS, IQ5_KS, IQ2_KL and the trellis IQ1_KT ... IQ4_KT (their values
// generated from the codes, 8 generator states per 8-lane multiply). IQ2_KS and IQ3_KS, whose
// table halves differ by a constant, are computed as IQ2_K and IQ3_K are (vec_dot_ikquants.cpp).
//
// w points at the row: its scale d (f16 or f32, row_meta_size bytes), then the blocks. Every
// 32-value sub-block has one integer scale l and one table half, so each chunk of 32 weights is
// looked up directly in its half (no shift correction as for IQ*_K), and
//   row . a = d * sum_blocks a.d * sum_chunks l * (values . a.qs).
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
#include "quant/tile256.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

float row_scale_f16(const void* w) {
    uint16_t h;
    std::memcpy(&h, w, 2);
    return h2f(h);
}
float row_scale_f32(const void* w) {
    float d;
    std::memcpy(&d, w, 4);
    return d;
}

// Per type: the block, the row scale, chunk c's integer scale and its 32 values.
struct Iq4Ks {
    using Block = sy_block_iq4_ks;
    static constexpr int kMeta = 4;
    static float row_scale(const void* w) { return row_scale_f32(w); }
    static int scale(const Block& b, int c) { return (b.scales[c] & 254) - 127; }
    static I8x32 chunk(const Block& b, int c) {
        return lut16(sy_iq4k_values + 16 * (b.scales[c] & 1), nibbles16(b.qs + 16 * c));
    }
};
struct Iq5Ks {
    using Block = sy_block_iq5_ks;
    static constexpr int kMeta = 4;
    static float row_scale(const void* w) { return row_scale_f32(w); }
    static int scale(const Block& b, int c) { return (b.scales[c] & 254) - 127; }
    static I8x32 chunk(const Block& b, int c) {
        const int8_t* values = sy_iq5nl_values + 32 * (b.scales[c] & 1);
        const I8x32 low = nibbles64(b.qs, c);
        return select8(mask_of(plane1(b.qh, c)), lut16(values, low), lut16(values + 16, low));
    }
};
// IQ4_KSS: word k of a sub-block, a = word & ~1, gives v = a ^ (a >> 1), whose low byte is
// IQ4_KS's byte 2k (values 2k, 2k + 16) and high byte its byte 2k + 1 (values 2k + 1, 2k + 17):
// the 8 words decode to the sub-block's 16 IQ4_KS bytes; bit 0 of word k is bit k of the scale.
struct Iq4Kss {
    using Block = sy_block_iq4_kss;
    static constexpr int kMeta = 4;
    static float row_scale(const void* w) { return row_scale_f32(w); }
    static unsigned scale_byte(const Block& b, int c) {
#if defined(SY_CPU_INT8_AVX2)
        // Bit 0 of each word, packed to bytes and moved to their sign bits.
        const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * c));
        const __m128i bits = _mm_and_si128(w, _mm_set1_epi16(1));
        return unsigned(_mm_movemask_epi8(_mm_slli_epi16(_mm_packus_epi16(bits, bits), 7))) & 0xFF;
#else
        unsigned s = 0;
        for (int k = 0; k < 8; ++k) s |= unsigned(b.qs[16 * c + 2 * k] & 1) << k;
        return s;
#endif
    }
    static int scale(const Block& b, int c) {
        return int(scale_byte(b, c) & 254) - 127;
    }
    static I8x32 chunk(const Block& b, int c) {
#if defined(SY_CPU_INT8_AVX2)
        // The 8 words at once: v = a ^ (a >> 1) per 16-bit lane, its nibbles the indices.
        const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * c));
        const __m128i a = _mm_and_si128(w, _mm_set1_epi16(short(0xFFFE)));
        const __m128i v = _mm_xor_si128(a, _mm_srli_epi16(a, 1));
        const __m128i low = _mm_set1_epi8(0x0F);
        const I8x32 idx{
            _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), low), _mm_and_si128(v, low))};
#else
        uint16_t words[8];
        std::memcpy(words, b.qs + 16 * c, 16);
        for (uint16_t& w : words) {
            const unsigned a = w & 0xFFFEu;
            w = uint16_t(a ^ (a >> 1));
        }
        uint8_t bytes[16];
        std::memcpy(bytes, words, 16);
        const I8x32 idx = nibbles16(bytes);
#endif
        return lut16(sy_iq4k_values + 16 * (scale_byte(b, c) & 1), idx);
    }
};
// IQ2_KL's pair table split into its first and second values, 16 entries a row.
struct KlTables {
    int8_t v[2][2][16];
};
constexpr KlTables make_kl_tables() {
    constexpr uint16_t pairs[32] = SY_IQ2KL_VALUES_INIT;
    KlTables t{};
    for (int e = 0; e < 32; ++e) {
        t.v[0][e / 16][e % 16] = int8_t(pairs[e] & 0xFF);
        t.v[1][e / 16][e % 16] = int8_t(pairs[e] >> 8);
    }
    return t;
}
alignas(16) constexpr KlTables kKlTables = make_kl_tables();

// IQ2_KL: pair p of chunk c is the table entry whose low byte is value 2p and high byte 2p + 1,
// so storing the 16 entries little-endian lays out the chunk's 32 values.
struct Iq2Kl {
    using Block = sy_block_iq2_kl;
    static constexpr int kMeta = 2;
    static float row_scale(const void* w) { return row_scale_f16(w); }
    static int scale(const Block& b, int c) {
        return (((b.scales_l[c % 4] >> 4 * (c / 4)) & 0xF) | ((b.scales_h >> 2 * c) & 3) << 4) - 32;
    }
    static I8x32 chunk(const Block& b, int c) {
        const uint8_t* qs = b.qs + 16 * (c / 2);
#if defined(SY_CPU_INT8_AVX2)
        // The 16 codes: low 4 bits from qs, bit 4 from qh; each looked up in the table of first
        // and of second values (16 entries per shuffle, bit 4 picks the half), then interleaved.
        const __m128i low = _mm_set1_epi8(0x0F);
        const __m128i lo4 = _mm_and_si128(
            _mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)), 4 * (c % 2)),
            low);
        const __m128i bit4 =
            _mm_cmpeq_epi8(_mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh)),
                                         _mm_set1_epi8(char(1 << c))),
                           _mm_set1_epi8(char(1 << c)));
        const __m128i first = _mm_blendv_epi8(_mm_shuffle_epi8(kl_table(0, 0), lo4),
                                              _mm_shuffle_epi8(kl_table(0, 1), lo4), bit4);
        const __m128i second = _mm_blendv_epi8(_mm_shuffle_epi8(kl_table(1, 0), lo4),
                                               _mm_shuffle_epi8(kl_table(1, 1), lo4), bit4);
        return {
            _mm256_set_m128i(_mm_unpackhi_epi8(first, second), _mm_unpacklo_epi8(first, second))};
#else
        uint16_t pairs[16];
        for (int p = 0; p < 16; ++p)
            pairs[p] = sy_iq2kl_values[((qs[p] >> 4 * (c % 2)) & 0xF) | ((b.qh[p] >> c) & 1) << 4];
        return load32(pairs);
#endif
    }
#if defined(SY_CPU_INT8_AVX2)
    // Entries 16 half .. 16 half + 15 of the first (which = 0) or second (1) values.
    static __m128i kl_table(int which, int half) {
        return _mm_load_si128(reinterpret_cast<const __m128i*>(kKlTables.v[which][half]));
    }
#endif
};

// ---- the trellis types: each chunk's 32 values generated from its codes ----------------------

// a^1 .. a^8 mod 2^32, a = SY_KT_MULT: the generator's states after 1 .. 8 steps are the start
// times these, so a group's 8 states are one 8-lane multiply.
constexpr uint32_t kt_power(int k) {
    uint32_t p = 1;
    for (int i = 0; i < k; ++i) p *= SY_KT_MULT;
    return p;
}

// 32 values from 4 groups of 8 (G = 8) or 8 groups of 4 (G = 4) whose generators start at
// start[g]: v = sum of the bytes of (x & 0x3F3F3F3F) - 126 per state x.
template <int G>
inline I8x32 kt_values(const uint32_t* start) {
#if defined(SY_CPU_INT8_AVX2)
    const __m256i mul =
        G == 8 ? _mm256_setr_epi32(int(kt_power(1)), int(kt_power(2)), int(kt_power(3)),
                                   int(kt_power(4)), int(kt_power(5)), int(kt_power(6)),
                                   int(kt_power(7)), int(kt_power(8)))
               : _mm256_setr_epi32(int(kt_power(1)), int(kt_power(2)), int(kt_power(3)),
                                   int(kt_power(4)), int(kt_power(1)), int(kt_power(2)),
                                   int(kt_power(3)), int(kt_power(4)));
    const __m256i mask = _mm256_set1_epi32(0x3F3F3F3F);
    const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    __m256i v[4];
    for (int k = 0; k < 4; ++k) {
        const __m256i x0 = G == 8 ? _mm256_set1_epi32(int(start[k]))
                                  : _mm256_setr_epi32(int(start[2 * k]), int(start[2 * k]),
                                                      int(start[2 * k]), int(start[2 * k]),
                                                      int(start[2 * k + 1]), int(start[2 * k + 1]),
                                                      int(start[2 * k + 1]), int(start[2 * k + 1]));
        const __m256i s = _mm256_and_si256(_mm256_mullo_epi32(x0, mul), mask);
        const __m256i sum = _mm256_madd_epi16(_mm256_maddubs_epi16(s, ones8), ones16);
        v[k] = _mm256_sub_epi32(sum, _mm256_set1_epi32(126));
    }
    // To bytes in order: the packs work per 128-bit lane, the permute puts the dwords back.
    const __m256i bytes =
        _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
    return {_mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))};
#else
    int8_t out[32];
    for (int g = 0; g < 32 / G; ++g) {
        uint32_t x = start[g];
        for (int t = 0; t < G; ++t) {
            x *= SY_KT_MULT;
            const uint32_t s = x & 0x3F3F3F3Fu;
            out[G * g + t] =
                int8_t(int((s & 0xFF) + ((s >> 8) & 0xFF) + ((s >> 16) & 0xFF) + (s >> 24)) - 126);
        }
    }
    return load32(out);
#endif
}

// IQ2_KT's and IQ3_KT's row scales count 1.05 and 1.01 times (as ik_llama.cpp's products).
struct Iq2Kt {
    using Block = sy_block_iq2_kt;
    static constexpr int kMeta = 4;
    static float row_scale(const void* w) { return row_scale_f32(w) * 1.05f; }
    static int scale(const Block& b, int c) {
        return sy_iq4k_values[(b.scales[c % 4] >> 4 * (c / 4)) & 0xF];
    }
    static I8x32 chunk(const Block& b, int c) {
        uint32_t start[4];
        for (int g = 0; g < 4; ++g)
            start[g] = uint32_t(b.ql[8 * c + 2 * g] | b.ql[8 * c + 2 * g + 1] << 8) + SY_KT_OFFSET;
        return kt_values<8>(start);
    }
};
struct Iq3Kt {
    using Block = sy_block_iq3_kt;
    static constexpr int kMeta = 4;
    static float row_scale(const void* w) { return row_scale_f32(w) * 1.01f; }
    static int scale(const Block& b, int c) { return (b.scales[c % 4] >> 4 * (c / 4)) & 0xF; }
    static I8x32 chunk(const Block& b, int c) {
        uint32_t start[4];
        for (int g = 0; g < 4; ++g)
            start[g] = uint32_t(b.ql[8 * c + 2 * g] | b.ql[8 * c + 2 * g + 1] << 8) + SY_KT_OFFSET;
        const I8x32 v = kt_values<8>(start);
        // |v|, negated where the sign bit is set.
        return negate_where(negate_where(v, mask_of(and8(shr8(v, 7), 1))),
                            mask_of(plane1(b.qh, c)));
    }
};
struct Iq1Kt {
    using Block = sy_block_iq1_kt;
    static constexpr int kMeta = 4;
    static float row_scale(const void* w) { return row_scale_f32(w); }
    static int scale(const Block& b, int c) { return sy_iq4k_values[b.sh[c] & 0xF]; }
    static I8x32 chunk(const Block& b, int c) {
        uint32_t start[4];
        for (int i = 0; i < 4; ++i)
            start[i] =
                uint32_t(b.ql[4 * c + i] | ((b.qh[4 * (c % 4) + i] >> 4 * (c / 4)) & 0xF) << 8 |
                         ((b.sh[c] >> (4 + i)) & 1) << 12) +
                SY_KT_OFFSET;
        return kt_values<8>(start);
    }
};
struct Iq4Kt {
    using Block = sy_block_iq4_kt;
    static constexpr int kMeta = 4;
    static float row_scale(const void* w) { return row_scale_f32(w); }
    static uint32_t shb(const Block& b, int c) {
        uint32_t w;
        std::memcpy(&w, b.shb + 4 * c, 4);
        return w;
    }
    static int scale(const Block& b, int c) { return int((shb(b, c) & 0xFF) >> 1) - 64; }
    static I8x32 chunk(const Block& b, int c) {
        const uint32_t h = shb(b, c);
        const uint32_t offset = SY_KT_OFFSET + (h & 1 ? SY_KT_OFFSET4 : 0);
        uint32_t start[8];
        for (int i = 0; i < 8; ++i) {
            const int j = 8 * c + i;
            start[i] = (uint32_t(b.ql[j] | ((b.qh[j % 32] >> 4 * (j / 32)) & 0xF) << 8) |
                        ((h >> (8 + 3 * i)) & 7) << 12) +
                       offset;
        }
        return kt_values<4>(start);
    }
};

template <typename T, int C>
void ks_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const float d = T::row_scale(w);
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
        for (int chunk = 0; chunk < 8; ++chunk) {
            const I8x32 q = T::chunk(x[i], chunk);
            const int16_t l = int16_t(T::scale(x[i], chunk));
            const Scale16 sc = scales16(l, l);
            for (int c = 0; c < C; ++c)
                sum[c] = dot_ss_scaled(sum[c], q, load32(a[c][i].qs + 32 * chunk), sc);
        }
        for (int c = 0; c < C; ++c) acc[c] = fma_i32(sum[c], a[c][i].d, acc[c]);
    }
    for (int c = 0; c < C; ++c) out[c] = d * reduce(acc[c]);
}

template <int C>
void iq4_ks_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ks_cols<Iq4Ks, C>(blocks, w, act, out);
}
template <int C>
void iq4_kss_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ks_cols<Iq4Kss, C>(blocks, w, act, out);
}
template <int C>
void iq5_ks_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ks_cols<Iq5Ks, C>(blocks, w, act, out);
}
template <int C>
void iq2_kl_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ks_cols<Iq2Kl, C>(blocks, w, act, out);
}

template <int C>
void iq1_kt_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ks_cols<Iq1Kt, C>(blocks, w, act, out);
}
template <int C>
void iq2_kt_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ks_cols<Iq2Kt, C>(blocks, w, act, out);
}
template <int C>
void iq3_kt_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ks_cols<Iq3Kt, C>(blocks, w, act, out);
}
template <int C>
void iq4_kt_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    ks_cols<Iq4Kt, C>(blocks, w, act, out);
}

}  // namespace

SY_CPU_DEFINE_VEC_DOT(iq1_kt)
SY_CPU_DEFINE_VEC_DOT(iq2_kt)
SY_CPU_DEFINE_VEC_DOT(iq3_kt)
SY_CPU_DEFINE_VEC_DOT(iq4_kt)
SY_CPU_DEFINE_VEC_DOT(iq4_ks)
SY_CPU_DEFINE_VEC_DOT(iq4_kss)
SY_CPU_DEFINE_VEC_DOT(iq5_ks)
SY_CPU_DEFINE_VEC_DOT(iq2_kl)

#if defined(SY_CPU_TILE_GEMM) && !defined(SY_CPU_TILE_GEMM512)
namespace {

// The avx2 tile path (tile_gemm256.cpp): each chunk's true values (up to 128 in magnitude: the
// tile's signed form) and its scale for both of its 16-value sub-blocks; the row scale outside.
template <typename T>
float row_tile_row256(const typename T::Block& b, int8_t* v, int32_t* l) {
    for (int c = 0; c < 8; ++c) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 32 * c), T::chunk(b, c).v);
        l[2 * c] = l[2 * c + 1] = T::scale(b, c);
    }
    return 1.0f;
}

template <typename T>
void row_tile_decode256(int64_t blocks, const void* w, int64_t row_stride, int rows,
                        WeightTile& tile) {
    decode_tile256<typename T::Block, T::kMeta, true, false, true>(
        blocks, w, row_stride, rows, tile, [](const uint8_t* p) { return T::row_scale(p); },
        row_tile_row256<T>);
}

}  // namespace

TileDecodeFn avx2_row_tile_decoder(int32_t weight_type) {
    switch (weight_type) {
        case SY_TYPE_IQ4_KS: return row_tile_decode256<Iq4Ks>;
        case SY_TYPE_IQ5_KS: return row_tile_decode256<Iq5Ks>;
        case SY_TYPE_IQ4_KSS: return row_tile_decode256<Iq4Kss>;
        case SY_TYPE_IQ2_KL: return row_tile_decode256<Iq2Kl>;
        case SY_TYPE_IQ1_KT: return row_tile_decode256<Iq1Kt>;
        case SY_TYPE_IQ2_KT: return row_tile_decode256<Iq2Kt>;
        case SY_TYPE_IQ3_KT: return row_tile_decode256<Iq3Kt>;
        case SY_TYPE_IQ4_KT: return row_tile_decode256<Iq4Kt>;
        default: return avx2_iq4_xs_tile_decoder(weight_type);
    }
}
#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
