// Dot products of the non-linear 4-bit types: IQ4_NL (32-element blocks, ActQ8x32 activations)
// and IQ4_XS (256-element super-blocks of 8 x 32 with 6-bit scales, Q8_K activations). The
// nibbles index sy_kvalues_iq4nl (signed, in [-127, 113]) through a byte shuffle.
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
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

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
