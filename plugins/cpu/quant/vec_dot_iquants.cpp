// Dot products of the codebook i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, and
// IQ1_M_R4's rows: IQ1_M's codes with a plain 4-bit scale l, x = d/8 * l * (8 grid + delta_sign))
// with Q8_K activations. Each 32-value sub-block's codebook entries (iquant_grids.h) are gathered
// into one register. The IQ2/IQ3 grids hold magnitudes (unsigned bytes), so their stored signs go
// onto the activations instead (one negate per column) and the product is the unsigned x signed
// one (dot_us_scaled) with no further sign juggling; the sign masks of the parity-coded types come
// whole from ksigns64. IQ1's values are signed (8 grid + delta sign). The sub-block scales are
// integers applied in the widening multiply-add, and one float factor per super-block carries d:
//   IQ2_*    x = d/8 * (2 ls + 1) * grid * sign            grid bytes 8, 25, 43
//   IQ3_XXS  x = d/4 * (2 ls + 1) * grid * sign            grid bytes 4 .. 62
//   IQ3_S    x = d   * (2 ls + 1) * grid * sign            grid bytes 1 .. 15
//   IQ1_*    x = d/8 * (2 ls + 1) * (8 grid + delta_sign)   grid -1, 0, 1; delta = +-1/8
// All bytes stay within |w| <= 62, so the int16 pair sums of vpmaddubsw cannot saturate against
// activations |a| <= 127. The products are exact in int32; only the activations are rounded.
#include <type_traits>

#include "quant/codebook_tile_scales.hpp"
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
#include "quant/tile256.hpp"
#include "switchyard/iquant_grids.h"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

// The sign masks (0xFF where negative) of four 8-value groups from their 7-bit ksigns indices.
inline I8x32 parity_sign_mask(uint32_t packed7x4) {
    return from_u64x4(sy_ksigns64[packed7x4 & 127], sy_ksigns64[(packed7x4 >> 7) & 127],
                      sy_ksigns64[(packed7x4 >> 14) & 127], sy_ksigns64[(packed7x4 >> 21) & 127]);
}

inline int16_t odd(int ls) {
    return int16_t(2 * ls + 1);
}

// A sub-block of a magnitude type: |x| codes, the mask of negative values, the scales.
struct Magnitudes {
    I8x32 mag;
    I8x32 negative;
    Scale16 sc;
};

struct Iq2xxs {
    using Block = sy_block_iq2_xxs;
    static float factor(const Block& b) { return h2f(b.d) * 0.125f; }
    static Magnitudes decode(const Block& b, int ib) {
        uint32_t aux[2];
        std::memcpy(aux, b.qs + 4 * ib, sizeof(aux));
        const int16_t s = odd(int(aux[1] >> 28));
        return {from_u64x4(sy_iq2xxs_grid[aux[0] & 255], sy_iq2xxs_grid[(aux[0] >> 8) & 255],
                           sy_iq2xxs_grid[(aux[0] >> 16) & 255], sy_iq2xxs_grid[aux[0] >> 24]),
                parity_sign_mask(aux[1]), scales16(s, s)};
    }
};

struct Iq2xs {
    using Block = sy_block_iq2_xs;
    static float factor(const Block& b) { return h2f(b.d) * 0.125f; }
    static Magnitudes decode(const Block& b, int ib) {
        const uint16_t* q = b.qs + 4 * ib;
        return {from_u64x4(sy_iq2xs_grid[q[0] & 511], sy_iq2xs_grid[q[1] & 511],
                           sy_iq2xs_grid[q[2] & 511], sy_iq2xs_grid[q[3] & 511]),
                from_u64x4(sy_ksigns64[q[0] >> 9], sy_ksigns64[q[1] >> 9], sy_ksigns64[q[2] >> 9],
                           sy_ksigns64[q[3] >> 9]),
                scales16(odd(b.scales[ib] & 15), odd(b.scales[ib] >> 4))};
    }
};

struct Iq2s {
    using Block = sy_block_iq2_s;
    static float factor(const Block& b) { return h2f(b.d) * 0.125f; }
    static Magnitudes decode(const Block& b, int ib) {
        const uint8_t* q = b.qs + 4 * ib;
        const int h = b.qh[ib];
        uint32_t signs;
        std::memcpy(&signs, b.qs + SY_QK_K / 8 + 4 * ib, sizeof(signs));
        return {from_u64x4(sy_iq2s_grid[q[0] | ((h << 8) & 0x300)],
                           sy_iq2s_grid[q[1] | ((h << 6) & 0x300)],
                           sy_iq2s_grid[q[2] | ((h << 4) & 0x300)],
                           sy_iq2s_grid[q[3] | ((h << 2) & 0x300)]),
                bits32(signs), scales16(odd(b.scales[ib] & 15), odd(b.scales[ib] >> 4))};
    }
};

struct Iq3xxs {
    using Block = sy_block_iq3_xxs;
    static float factor(const Block& b) { return h2f(b.d) * 0.25f; }
    static Magnitudes decode(const Block& b, int ib) {
        uint32_t aux;
        std::memcpy(&aux, b.qs + SY_QK_K / 4 + 4 * ib, sizeof(aux));
        const int16_t s = odd(int(aux >> 28));
        const uint8_t* q = b.qs + 8 * ib;
        uint32_t g[8];
        for (int k = 0; k < 8; ++k) g[k] = sy_iq3xxs_grid[q[k]];
        return {from_u32x8(g), parity_sign_mask(aux), scales16(s, s)};
    }
};

struct Iq3s {
    using Block = sy_block_iq3_s;
    static float factor(const Block& b) { return h2f(b.d); }
    static Magnitudes decode(const Block& b, int ib) {
        uint32_t signs;
        std::memcpy(&signs, b.signs + 4 * ib, sizeof(signs));
        const int16_t s = odd((b.scales[ib / 2] >> (4 * (ib % 2))) & 15);
        return {gather_u32x8(sy_iq3s_grid, b.qs + 8 * ib, b.qh[ib]), bits32(signs), scales16(s, s)};
    }
};

// The delta signs of four 8-value groups (+1, or -1 where bit g of the index is set), 32 bytes
// per combination: one load instead of four selects.
struct DeltaSigns {
    int8_t v[16][32];
    constexpr DeltaSigns() : v{} {
        for (int m = 0; m < 16; ++m)
            for (int j = 0; j < 32; ++j) v[m][j] = (m >> (j / 8)) & 1 ? int8_t(-1) : int8_t(1);
    }
};
constexpr DeltaSigns kDeltaSigns;

// 8 grid + delta sign per byte (grid -1, 0, 1; the 16-bit shift's spill masked off).
inline I8x32 one_bit_values(uint64_t g0, uint64_t g1, uint64_t g2, uint64_t g3, int delta_bits) {
    const I8x32 g = and8(shl8(from_u64x4(g0, g1, g2, g3), 3), 0xF8);
    return add8(g, load32(kDeltaSigns.v[delta_bits]));
}

struct Iq1s {
    using Block = sy_block_iq1_s;
    static float factor(const Block& b) { return h2f(b.d) * 0.125f; }
    static I8x32 decode(const Block& b, int ib, Scale16& sc) {
        const uint8_t* q = b.qs + 4 * ib;
        const int h = b.qh[ib];
        sc = scales16(odd((h >> 12) & 7), odd((h >> 12) & 7));
        return one_bit_values(sy_iq1s_grid[q[0] | ((h << 8) & 0x700)],
                              sy_iq1s_grid[q[1] | ((h << 5) & 0x700)],
                              sy_iq1s_grid[q[2] | ((h << 2) & 0x700)],
                              sy_iq1s_grid[q[3] | ((h >> 1) & 0x700)], (h >> 15) * 15);
    }
};

struct Iq1m {
    using Block = sy_block_iq1_m;
    static float factor(const Block& b) {
        uint16_t sc[4];
        std::memcpy(sc, b.scales, sizeof(sc));
        return h2f(SY_IQ1M_D_BITS(sc)) * 0.125f;
    }
    static I8x32 decode(const Block& b, int ib, Scale16& sc) {
        const uint8_t* q = b.qs + 4 * ib;
        const uint8_t* h = b.qh + 2 * ib;
        uint16_t s;
        std::memcpy(&s, b.scales + 2 * (ib / 2), sizeof(s));
        sc = scales16(odd((s >> (6 * (ib % 2))) & 7), odd((s >> (6 * (ib % 2) + 3)) & 7));
        return one_bit_values(
            sy_iq1s_grid[q[0] | ((h[0] << 8) & 0x700)], sy_iq1s_grid[q[1] | ((h[0] << 4) & 0x700)],
            sy_iq1s_grid[q[2] | ((h[1] << 8) & 0x700)], sy_iq1s_grid[q[3] | ((h[1] << 4) & 0x700)],
            ((h[0] >> 3) & 1) | ((h[0] >> 6) & 2) | ((h[1] >> 1) & 4) | ((h[1] >> 4) & 8));
    }
};

// IQ1_M_R4's de-interleaved rows: IQ1_M's codes, plain 4-bit scales, the row's d outside.
struct Iq1mR4Rows {
    using Block = sy_block_iq1_m_r4_rows;
    static float factor(const Block&) { return 0.125f; }
    static I8x32 decode(const Block& b, int ib, Scale16& sc) {
        const uint8_t* q = b.qs + 4 * ib;
        const uint8_t* h = b.qh + 2 * ib;
        sc = scales16(int16_t(b.scales[ib] & 15), int16_t(b.scales[ib] >> 4));
        return one_bit_values(
            sy_iq1s_grid[q[0] | ((h[0] << 8) & 0x700)], sy_iq1s_grid[q[1] | ((h[0] << 4) & 0x700)],
            sy_iq1s_grid[q[2] | ((h[1] << 8) & 0x700)], sy_iq1s_grid[q[3] | ((h[1] << 4) & 0x700)],
            ((h[0] >> 3) & 1) | ((h[0] >> 6) & 2) | ((h[1] >> 1) & 4) | ((h[1] >> 4) & 8));
    }
};

// The super-block loop, shared: T::decode's sub-blocks against each column's Q8_K block.
template <typename T, int C, typename SubBlockDot>
void iquant_cols(int64_t blocks, const void* w, const void* const* act, float* out,
                 SubBlockDot sub_block_dot) {
    const auto* x = static_cast<const typename T::Block*>(w);
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
        for (int ib = 0; ib < SY_QK_K / 32; ++ib) sub_block_dot(x[i], ib, a, i, sum);
        const float f = T::factor(x[i]);
        for (int c = 0; c < C; ++c) acc[c] = fma_i32(sum[c], f * a[c][i].d, acc[c]);
    }
    for (int c = 0; c < C; ++c) out[c] = reduce(acc[c]);
}

// Magnitudes: each column's activations take the signs, then unsigned x signed.
template <typename T, int C>
void magnitude_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    iquant_cols<T, C>(blocks, w, act, out,
                      [](const typename T::Block& b, int ib, const sy_block_q8_K* const* a,
                         int64_t i, I32x8* sum) {
                          const Magnitudes m = T::decode(b, ib);
                          for (int c = 0; c < C; ++c)
                              sum[c] = dot_us_scaled(
                                  sum[c], m.mag,
                                  negate_where(load32(a[c][i].qs + 32 * ib), m.negative), m.sc);
                      });
}

// Signed values (IQ1).
template <typename T, int C>
void signed_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    iquant_cols<T, C>(blocks, w, act, out,
                      [](const typename T::Block& b, int ib, const sy_block_q8_K* const* a,
                         int64_t i, I32x8* sum) {
                          Scale16 sc;
                          const I8x32 q = T::decode(b, ib, sc);
                          for (int c = 0; c < C; ++c)
                              sum[c] = dot_ss_scaled(sum[c], q, load32(a[c][i].qs + 32 * ib), sc);
                      });
}

template <int C>
void iq2_xxs_cols(int64_t b, const void* w, const void* const* a, float* o) {
    magnitude_cols<Iq2xxs, C>(b, w, a, o);
}
template <int C>
void iq2_xs_cols(int64_t b, const void* w, const void* const* a, float* o) {
    magnitude_cols<Iq2xs, C>(b, w, a, o);
}
template <int C>
void iq2_s_cols(int64_t b, const void* w, const void* const* a, float* o) {
    magnitude_cols<Iq2s, C>(b, w, a, o);
}
template <int C>
void iq3_xxs_cols(int64_t b, const void* w, const void* const* a, float* o) {
    magnitude_cols<Iq3xxs, C>(b, w, a, o);
}
template <int C>
void iq3_s_cols(int64_t b, const void* w, const void* const* a, float* o) {
    magnitude_cols<Iq3s, C>(b, w, a, o);
}
template <int C>
void iq1_s_cols(int64_t b, const void* w, const void* const* a, float* o) {
    signed_cols<Iq1s, C>(b, w, a, o);
}
template <int C>
void iq1_m_cols(int64_t b, const void* w, const void* const* a, float* o) {
    signed_cols<Iq1m, C>(b, w, a, o);
}
// w is the row: its f16 d, then the blocks.
template <int C>
void iq1_m_r4_rows_cols(int64_t b, const void* w, const void* const* a, float* o) {
    uint16_t h;
    std::memcpy(&h, w, 2);
    signed_cols<Iq1mR4Rows, C>(b, static_cast<const uint8_t*>(w) + 2, a, o);
    for (int c = 0; c < C; ++c) o[c] *= h2f(h);
}

}  // namespace

SY_CPU_DEFINE_VEC_DOT(iq2_xxs)
SY_CPU_DEFINE_VEC_DOT(iq2_xs)
SY_CPU_DEFINE_VEC_DOT(iq2_s)
SY_CPU_DEFINE_VEC_DOT(iq3_xxs)
SY_CPU_DEFINE_VEC_DOT(iq3_s)
SY_CPU_DEFINE_VEC_DOT(iq1_s)
SY_CPU_DEFINE_VEC_DOT(iq1_m)
SY_CPU_DEFINE_VEC_DOT(iq1_m_r4_rows)

#if defined(SY_CPU_TILE_GEMM) && !defined(SY_CPU_TILE_GEMM512)
namespace {

// The avx2 tile path (tile_gemm256.cpp): each 32-value sub-block decoded as above, the
// magnitude types' signs put on the values, and the integer scales read from the block
// (codebook_tile_scales.hpp). Every value is at most 62 in magnitude.
template <typename T>
float codebook_tile_row256(const typename T::Block& b, int8_t* v, int32_t* l) {
    for (int ib = 0; ib < SY_QK_K / 32; ++ib) {
        I8x32 x;
        if constexpr (std::is_same_v<T, Iq1s> || std::is_same_v<T, Iq1m>) {
            Scale16 sc;
            x = T::decode(b, ib, sc);
        } else {
            const Magnitudes m = T::decode(b, ib);
            x = negate_where(m.mag, m.negative);
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 32 * ib), x.v);
    }
    tile_scales(b, l);
    return T::factor(b);
}

template <typename T, bool kScales32>
void codebook_tile_decode256(int64_t blocks, const void* w, int64_t row_stride, int rows,
                             WeightTile& tile) {
    decode_tile256<typename T::Block, 0, kScales32>(
        blocks, w, row_stride, rows, tile, [](const uint8_t*) { return 1.0f; },
        [](const typename T::Block& b, int8_t* v, int32_t* l) {
            return codebook_tile_row256<T>(b, v, l);
        });
}

}  // namespace

TileDecodeFn avx2_codebook_tile_decoder(int32_t weight_type) {
    switch (weight_type) {
        case SY_TYPE_IQ2_XXS: return codebook_tile_decode256<Iq2xxs, true>;
        case SY_TYPE_IQ2_XS: return codebook_tile_decode256<Iq2xs, false>;
        case SY_TYPE_IQ2_S: return codebook_tile_decode256<Iq2s, false>;
        case SY_TYPE_IQ3_XXS: return codebook_tile_decode256<Iq3xxs, true>;
        case SY_TYPE_IQ3_S: return codebook_tile_decode256<Iq3s, true>;
        case SY_TYPE_IQ1_S: return codebook_tile_decode256<Iq1s, true>;
        case SY_TYPE_IQ1_M: return codebook_tile_decode256<Iq1m, false>;
        default: return nullptr;
    }
}
#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
