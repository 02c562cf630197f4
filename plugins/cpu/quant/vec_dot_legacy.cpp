// Dot products of the 32-element "legacy" quant blocks Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (and the rows
// of ik_llama.cpp's Q8_KV) with ActQ8x32 activations. Each weight block is decoded once into 32
// bytes and meets every column:
//   Q8_0: signed bytes, dot_ss, times d_w * d_a;
//   Q4_0 (q - 8), Q5_0 (q - 16): unsigned q, dot_us from lanes holding the offset's share;
//   Q4_1, Q5_1: unsigned q, dot_us, times d_w * d_a, plus m_w * d_a * sum q_a.
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {
namespace {

using namespace i8;

// The f16 scale d of a block that has one.
constexpr auto kBlockScale = [](const auto& b) { return h2f(b.d); };

// Two blocks per step with separate accumulators: one FMA chain per block would wait on the FMA
// latency (4 cycles) rather than on the loads. init(a) starts the block's int32 lanes; scale(b)
// is the block's weight scale.
template <int C, typename Block, typename Decode, typename Dot, typename Init,
          typename Scale = decltype(kBlockScale)>
inline void dot_blocks(int64_t blocks, const void* w, const void* const* act, float* out,
                       Decode decode, Dot dot, Init init, Scale scale = kBlockScale) {
    const Block* x = static_cast<const Block*>(w);
    const ActQ8x32* a[C];
    F32x8 acc0[C], acc1[C];
    for (int c = 0; c < C; ++c) {
        a[c] = static_cast<const ActQ8x32*>(act[c]);
        acc0[c] = zerof();
        acc1[c] = zerof();
    }
    int64_t i = 0;
    for (; i + 2 <= blocks; i += 2) {
        const I8x32 q0 = decode(x[i]), q1 = decode(x[i + 1]);
        const float d0 = scale(x[i]), d1 = scale(x[i + 1]);
        for (int c = 0; c < C; ++c) {
            const ActQ8x32& a0 = a[c][i];
            const ActQ8x32& a1 = a[c][i + 1];
            acc0[c] = fma_i32(dot(init(a0), q0, load32(a0.qs)), d0 * a0.d, acc0[c]);
            acc1[c] = fma_i32(dot(init(a1), q1, load32(a1.qs)), d1 * a1.d, acc1[c]);
        }
    }
    for (; i < blocks; ++i) {
        const I8x32 q = decode(x[i]);
        const float d = scale(x[i]);
        for (int c = 0; c < C; ++c) {
            const ActQ8x32& ai = a[c][i];
            acc0[c] = fma_i32(dot(init(ai), q, load32(ai.qs)), d * ai.d, acc0[c]);
        }
    }
    for (int c = 0; c < C; ++c) out[c] = reduce(addf(acc0[c], acc1[c]));
}

constexpr auto kSigned = [](I32x8 acc, I8x32 q, I8x32 s) { return dot_ss(acc, q, s); };
constexpr auto kUnsigned = [](I32x8 acc, I8x32 q, I8x32 s) { return dot_us(acc, q, s); };
constexpr auto kFromZero = [](const ActQ8x32&) { return zero32(); };

// Signed values: dot_ss, times d_w * d_a.
template <int C, typename Block, typename Decode>
inline void dot_signed_blocks(int64_t blocks, const void* w, const void* const* act, float* out,
                              Decode decode) {
    dot_blocks<C, Block>(blocks, w, act, out, decode, kSigned, kFromZero);
}

// Unsigned values q with x = d_w * (q - 8 * k): dot_us (no sign juggling) from lanes that start
// at -k * sum q_a, so that the 8 lanes together hold sum (q - 8 k) q_a; times d_w * d_a.
template <int C, int K, typename Block, typename Decode>
inline void dot_offset_blocks(int64_t blocks, const void* w, const void* const* act, float* out,
                              Decode decode) {
    dot_blocks<C, Block>(blocks, w, act, out, decode, kUnsigned,
                         [](const ActQ8x32& a) { return splat32(-K * a.sum); });
}

// Unsigned values with a per-block minimum m: x = d_w * q + m, adds m * d_a * sum q_a.
template <int C, typename Block, typename Decode>
inline void dot_unsigned_blocks(int64_t blocks, const void* w, const void* const* act, float* out,
                                Decode decode) {
    dot_blocks<C, Block>(blocks, w, act, out, decode, kUnsigned, kFromZero);
    const Block* x = static_cast<const Block*>(w);
    for (int c = 0; c < C; ++c) {
        const ActQ8x32* a = static_cast<const ActQ8x32*>(act[c]);
        float sum = 0.0f;
        for (int64_t i = 0; i < blocks; ++i) sum += h2f(x[i].m) * a[i].d * float(a[i].sum);
        out[c] += sum;
    }
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
    dot_offset_blocks<C, 1, sy_block_q4_0>(blocks, w, act, out,
                                           [](const sy_block_q4_0& b) { return nibbles16(b.qs); });
}

template <int C>
void q5_0_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    dot_offset_blocks<C, 2, sy_block_q5_0>(blocks, w, act, out, [](const sy_block_q5_0& b) {
        return or8(nibbles16(b.qs), and8(bits32(high_bits(b.qh)), 0x10));
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

// Q8_KV (ik_llama.cpp's row-scaled 8-bit rows): the row's f32 d and int32 sum, then int8 q in
// 32-value blocks without scales of their own; the row's d once at the end.
struct Q8KvBlock {
    int8_t qs[32];
};
template <int C>
void q8_kv_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    float d;
    std::memcpy(&d, w, 4);
    dot_blocks<C, Q8KvBlock>(
        blocks, static_cast<const uint8_t*>(w) + 8, act, out,
        [](const Q8KvBlock& b) { return load32(b.qs); }, kSigned, kFromZero,
        [](const Q8KvBlock&) { return 1.0f; });
    for (int c = 0; c < C; ++c) out[c] *= d;
}

}  // namespace

SY_CPU_DEFINE_VEC_DOT(q8_kv)
SY_CPU_DEFINE_VEC_DOT(q8_0)
SY_CPU_DEFINE_VEC_DOT(q4_0)
SY_CPU_DEFINE_VEC_DOT(q5_0)
SY_CPU_DEFINE_VEC_DOT(q4_1)
SY_CPU_DEFINE_VEC_DOT(q5_1)

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
