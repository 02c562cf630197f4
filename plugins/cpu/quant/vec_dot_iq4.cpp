// Dot products of the non-linear 4-bit types: IQ4_NL (32-element blocks, ActQ8x32 activations)
// and IQ4_XS (256-element super-blocks of 8 x 32 with 6-bit scales, Q8_K activations). The
// nibbles index sy_kvalues_iq4nl (signed, in [-127, 113]) through a byte shuffle.
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
#include "quant/tile256.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

template <int C>
void iq4_nl_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const sy_block_iq4_nl* x = static_cast<const sy_block_iq4_nl*>(w);
    const ActQ8x32* a[C];
    F32x8 acc[C];
    for (int c = 0; c < C; ++c) {
        a[c] = static_cast<const ActQ8x32*>(act[c]);
        acc[c] = zerof();
    }
    for (int64_t i = 0; i < blocks; ++i) {
        prefetch_ahead(&x[i], sizeof x[i]);
        const I8x32 q = lut16(sy_kvalues_iq4nl, nibbles16(x[i].qs));
        const float d = h2f(x[i].d);
        for (int c = 0; c < C; ++c) {
            const I32x8 p = dot_ss(zero32(), q, load32(a[c][i].qs));
            acc[c] = fma_i32(p, d * a[c][i].d, acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) out[c] = reduce(acc[c]);
}

template <int C>
void iq4_xs_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    const sy_block_iq4_xs* x = static_cast<const sy_block_iq4_xs*>(w);
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
        for (int ib = 0; ib < 8; ++ib) {
            const int ls = ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                           (((x[i].scales_h >> (2 * ib)) & 3) << 4);
            const I8x32 q = lut16(sy_kvalues_iq4nl, nibbles16(x[i].qs + 16 * ib));
            const Scale16 s = scales16(int16_t(ls - 32), int16_t(ls - 32));
            for (int c = 0; c < C; ++c)
                sum[c] = dot_ss_scaled(sum[c], q, load32(a[c][i].qs + 32 * ib), s);
        }
        const float d = h2f(x[i].d);
        for (int c = 0; c < C; ++c) acc[c] = fma_i32(sum[c], d * a[c][i].d, acc[c]);
    }
    for (int c = 0; c < C; ++c) out[c] = reduce(acc[c]);
}

}  // namespace

SY_CPU_DEFINE_VEC_DOT(iq4_nl)
SY_CPU_DEFINE_VEC_DOT(iq4_xs)

#if defined(SY_CPU_TILE_GEMM) && !defined(SY_CPU_TILE_GEMM512)
namespace {

// The avx2 tile path (tile_gemm256.cpp): IQ4_XS's table values (-127 .. 113: the tile's signed
// form) and its 6-bit scales minus 32, per 32 values.
float iq4_xs_tile_row256(const sy_block_iq4_xs& b, int8_t* v, int32_t* l) {
    for (int ib = 0; ib < 8; ++ib) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + 32 * ib),
                            lut16(sy_kvalues_iq4nl, nibbles16(b.qs + 16 * ib)).v);
        l[2 * ib] = l[2 * ib + 1] = (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                                     (((b.scales_h >> (2 * ib)) & 3) << 4)) -
                                    32;
    }
    return h2f(b.d);
}

void iq4_xs_tile_decode256(int64_t blocks, const void* w, int64_t row_stride, int rows,
                           WeightTile& tile) {
    decode_tile256<sy_block_iq4_xs, 0, true, false, true>(
        blocks, w, row_stride, rows, tile, [](const uint8_t*) { return 1.0f; }, iq4_xs_tile_row256);
}

}  // namespace

TileDecodeFn avx2_iq4_xs_tile_decoder(int32_t weight_type) {
    return weight_type == SY_TYPE_IQ4_XS ? iq4_xs_tile_decode256 : nullptr;
}
#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
