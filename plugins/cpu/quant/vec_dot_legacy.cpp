// Dot products of the 32-element "legacy" quant blocks Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 with ActQ8x32
// activations. Each weight block is decoded once into 32 bytes and meets every column:
//   Q8_0, Q4_0 (q - 8), Q5_0 (q - 16): signed bytes, dot_ss, times d_w * d_a;
//   Q4_1, Q5_1: unsigned q, dot_us, times d_w * d_a, plus m_w * s_a (s_a = d_a * sum q_a).
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

// Runs decode(block) -> I8x32 (signed values) over the row and dot_ss against every column.
template <int C, typename Block, typename Decode>
inline void dot_signed_blocks(int64_t blocks, const void* w, const void* const* act, float* out,
                              Decode decode) {
    const Block* x = static_cast<const Block*>(w);
    const ActQ8x32* a[C];
    F32x8 acc[C];
    for (int c = 0; c < C; ++c) {
        a[c] = static_cast<const ActQ8x32*>(act[c]);
        acc[c] = zerof();
    }
    for (int64_t i = 0; i < blocks; ++i) {
        const I8x32 q = decode(x[i]);
        const float d = sdk::fp16_to_f32(x[i].d);
        for (int c = 0; c < C; ++c) {
            const I32x8 p = dot_ss(zero32(), q, load32(a[c][i].qs));
            acc[c] = fma_i32(p, d * a[c][i].d, acc[c]);
        }
    }
    for (int c = 0; c < C; ++c) out[c] = reduce(acc[c]);
}

// The same for unsigned values with a per-block offset m: adds m * s_a.
template <int C, typename Block, typename Decode>
inline void dot_unsigned_blocks(int64_t blocks, const void* w, const void* const* act, float* out,
                                Decode decode) {
    const Block* x = static_cast<const Block*>(w);
    const ActQ8x32* a[C];
    F32x8 acc[C];
    float offsets[C];
    for (int c = 0; c < C; ++c) {
        a[c] = static_cast<const ActQ8x32*>(act[c]);
        acc[c] = zerof();
        offsets[c] = 0.0f;
    }
    for (int64_t i = 0; i < blocks; ++i) {
        const I8x32 q = decode(x[i]);
        const float d = sdk::fp16_to_f32(x[i].d);
        const float m = sdk::fp16_to_f32(x[i].m);
        for (int c = 0; c < C; ++c) {
            const I32x8 p = dot_us(zero32(), q, load32(a[c][i].qs));
            acc[c] = fma_i32(p, d * a[c][i].d, acc[c]);
            offsets[c] += m * a[c][i].s;
        }
    }
    for (int c = 0; c < C; ++c) out[c] = reduce(acc[c]) + offsets[c];
}

inline uint32_t high_bits(const uint8_t (&qh)[4]) {
    uint32_t h;
    std::memcpy(&h, qh, 4);
    return h;
}

template <int C>
void q8_0_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    dot_signed_blocks<C, sy_block_q8_0>(blocks, w, act, out,
                                        [](const sy_block_q8_0& b) { return load32(b.qs); });
}

template <int C>
void q4_0_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    dot_signed_blocks<C, sy_block_q4_0>(blocks, w, act, out, [](const sy_block_q4_0& b) {
        return sub8(nibbles16(b.qs), splat8(8));
    });
}

template <int C>
void q5_0_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    dot_signed_blocks<C, sy_block_q5_0>(blocks, w, act, out, [](const sy_block_q5_0& b) {
        const I8x32 q = or8(nibbles16(b.qs), and8(bits32(high_bits(b.qh)), 0x10));
        return sub8(q, splat8(16));
    });
}

template <int C>
void q4_1_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    dot_unsigned_blocks<C, sy_block_q4_1>(blocks, w, act, out,
                                          [](const sy_block_q4_1& b) { return nibbles16(b.qs); });
}

template <int C>
void q5_1_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    dot_unsigned_blocks<C, sy_block_q5_1>(blocks, w, act, out, [](const sy_block_q5_1& b) {
        return or8(nibbles16(b.qs), and8(bits32(high_bits(b.qh)), 0x10));
    });
}

}  // namespace

SY_CPU_DEFINE_VEC_DOT(q8_0)
SY_CPU_DEFINE_VEC_DOT(q4_0)
SY_CPU_DEFINE_VEC_DOT(q5_0)
SY_CPU_DEFINE_VEC_DOT(q4_1)
SY_CPU_DEFINE_VEC_DOT(q5_1)

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
