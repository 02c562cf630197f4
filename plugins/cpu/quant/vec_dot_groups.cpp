// AVX-512 VBMI + VNNI dot products of the 32-element blocks Q8_0, Q4_0 and IQ4_NL, 8 blocks per
// step. Per step the weight bytes are loaded whole (masked past the row's end) and vpermt2b picks
// the quant bytes and the f16 scales out of them, so that one 512-bit vpdpbusd covers 2 blocks
// (Q8_0) or, low and high nibbles together, 4 blocks (Q4_0, IQ4_NL). The int32 lanes are not
// summed per block: they become floats and meet a vector holding each lane's block scale
// d_w * d_a, so no horizontal sums run inside the loop.
//
// vpdpbusd multiplies unsigned by signed bytes: weights are made unsigned with an offset o
// (Q8_0: q + 128; Q4_0: its nibble, q - 8 + 8; IQ4_NL: table value + 128), and the offset's share
// o * d_w * d_a * sum q_a is subtracted per block from ActQ8G8::s (= d_a * sum q_a).
//
// Each type has a step decoder (weights of 8 blocks -> unsigned vectors and scales) and an
// accumulator (one decoded step against one activation group), shared by the two forms: one
// weight row against up to 4 activation rows (_cols), and up to 4 weight rows against one
// activation row (_rows, for GEMV), which apply the same operations in the same order per
// (row, column) and so give the same bits.
#include "quant/int8_simd.hpp"
#include "quant/quant_kernels.hpp"

#if defined(__AVX512VBMI__) && defined(__AVX512VNNI__) && defined(__AVX512BW__) && \
    defined(__AVX512F__) && defined(__F16C__)
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <type_traits>

#include "quant/column_sums512.hpp"

#define SY_CPU_GROUP_KERNELS 1
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

#if defined(SY_CPU_GROUP_KERNELS)
namespace {

// Bytes [p, p + 64) of a row, zero where at or past `left` bytes (left may be <= 0); kWhole
// when the caller knows that all 64 are there.
template <bool kWhole>
inline __m512i load64(const uint8_t* p, int64_t left) {
    if (kWhole || left >= 64) return _mm512_loadu_si512(p);
    if (left <= 0) return _mm512_setzero_si512();
    return _mm512_maskz_loadu_epi8(__mmask64((uint64_t(1) << left) - 1), p);
}

// The 8 f32 scales of d_w (from f16 bytes) times d_a.
inline __m256 block_scales(__m128i f16_scales, const float* d_a) {
    return _mm256_mul_ps(_mm256_cvtph_ps(f16_scales), _mm256_loadu_ps(d_a));
}

// Constant tables, built at compile time (a static initializer with AVX-512 instructions would
// run when the host merely probes this variant on a machine without them).
struct alignas(64) Bytes64 {
    uint8_t b[64];
};
struct alignas(64) Lanes16 {
    int32_t v[16];
};
// Byte k = f(k): a vpermt2b index into 128 bytes, or a vpshufb table.
template <typename F>
constexpr Bytes64 bytes64(F f) {
    Bytes64 t{};
    for (int k = 0; k < 64; ++k) t.b[k] = uint8_t(f(k));
    return t;
}
// Lanes of `per_lane` int32 each to their block among 8: lane l -> first + l / per_lane.
constexpr Lanes16 lane_blocks(int first, int per_lane) {
    Lanes16 t{};
    for (int l = 0; l < 16; ++l) t.v[l] = first + l / per_lane;
    return t;
}
inline __m512i load(const Bytes64& t) {
    return _mm512_load_si512(t.b);
}
inline __m512i load(const Lanes16& t) {
    return _mm512_load_si512(t.v);
}

// How much of a step (8 blocks) lies inside the row: all of it (loads need no masks), part of
// it (masked loads), or at most its lower 4 blocks (masked, and the upper half is not decoded at
// all: the tail of K = 1408, DeepSeek's expert width).
enum class Part { kWhole, kMasked, kLowHalf };
template <Part P>
using PartTag = std::integral_constant<Part, P>;

// Runs step(g, part) for the steps of 8 blocks of a row of `blocks`, part a PartTag.
template <typename Step>
inline void for_each_group(int64_t blocks, Step step) {
    const int64_t whole = blocks / 8;
    for (int64_t g = 0; g < whole; ++g) step(g, PartTag<Part::kWhole>{});
    if (blocks % 8 > 4)
        step(whole, PartTag<Part::kMasked>{});
    else if (blocks % 8 > 0)
        step(whole, PartTag<Part::kLowHalf>{});
}

// Software prefetch for R rows read side by side, kPrefetchAhead bytes ahead in all (the reason
// is i8::prefetch_ahead's). Where the R rows together are shorter than that distance, the rows
// read next are the following R: one sweep over the span at R times the pace of a row covers
// them, as if they were one long row. Longer rows get a stream each, kPrefetchAhead / R bytes
// ahead of where that row is read, going on into the same row of the next R (rows r + R, ...)
// past its end. (The sweep alone fetched rows 2 and 3 late when rows are long, as DeepSeek's
// dense down projection is: 6.2 KB per Q4_0 row; per-row streams alone slowed the expert
// products, whose rows of 1.1 KB are read in short runs.)
template <int R>
class RowsPrefetch {
  public:
    RowsPrefetch(const uint8_t* x, int64_t row_stride, int64_t row_bytes)
        : at_(x),
          stride_(row_stride),
          row_bytes_(row_bytes),
          sweep_(R * row_stride <= i8::kPrefetchAhead) {
        assert(row_bytes > 0);  // K >= 256 here (quant_kernel)
        if (sweep_) {
            at_ += i8::kPrefetchAhead;
        } else {
            advance(i8::kPrefetchAhead / R);
        }
    }
    // Prefetches what the next `bytes` of each row need, then moves on.
    void step(int64_t bytes) {
        if (sweep_) {
            fetch(at_, R * bytes);
            at_ += R * bytes;
            return;
        }
        // A stream that reaches its row's end goes on at the start of row r + R.
        const int64_t here = std::min(bytes, row_bytes_ - offset_);
        for (int r = 0; r < R; ++r) {
            fetch(at_ + r * stride_, here);
            if (here < bytes) fetch(at_ + r * stride_ + (R * stride_ - offset_), bytes - here);
        }
        advance(bytes);
    }

  private:
    static void fetch(const uint8_t* p, int64_t bytes) {
        for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, 3);
    }
    void advance(int64_t bytes) {
        at_ += bytes;
        offset_ += bytes;
        for (; offset_ >= row_bytes_; offset_ -= row_bytes_) at_ += R * stride_ - row_bytes_;
    }
    const uint8_t* at_;   // the sweep, or row 0's stream (row r's is r * stride_ further)
    int64_t offset_ = 0;  // the streams' offset inside their rows
    const int64_t stride_, row_bytes_;
    const bool sweep_;
};

// One activation group's vectors, loaded once per step: the several-rows forms use them for
// every row.
struct ActGroup {
    __m512i qs[4];
    __m256 d, s;
    explicit ActGroup(const ActQ8G8& ag)
        : qs{_mm512_loadu_si512(ag.qs), _mm512_loadu_si512(ag.qs + 64),
             _mm512_loadu_si512(ag.qs + 128), _mm512_loadu_si512(ag.qs + 192)},
          d(_mm256_loadu_ps(ag.d)),
          s(_mm256_loadu_ps(ag.s)) {}

    // Blocks 0-3 of ag, also as blocks 4-7 (pair_rows).
    static ActGroup low_half_twice(const ActQ8G8& ag) {
        return ActGroup(_mm512_loadu_si512(ag.qs), _mm512_loadu_si512(ag.qs + 64),
                        _mm256_broadcast_ps(reinterpret_cast<const __m128*>(ag.d)),
                        _mm256_broadcast_ps(reinterpret_cast<const __m128*>(ag.s)));
    }

  private:
    ActGroup(__m512i q0, __m512i q1, __m256 d4, __m256 s4) : qs{q0, q1, q0, q1}, d(d4), s(s4) {}
};

// The two forms over a codec (Q8Codec, NibbleCodec: kStepBytes per 8 blocks, step<P>() decodes
// one, accumulate<P>() adds one decoded step against an activation group): one weight row
// against C activation rows, and R weight rows (row_stride bytes apart) against one activation
// row, whose step activation vectors and per-call setup then serve all R rows (GEMV has no other
// columns to share them). Both apply the same operations in the same order per output.
template <int C, typename Codec>
inline void groups_cols(const Codec& k, int64_t blocks, const void* w, const void* const* act,
                        float* out) {
    constexpr int64_t S = Codec::kStepBytes;
    const uint8_t* x = static_cast<const uint8_t*>(w);
    const int64_t row_bytes = blocks * (S / 8);
    const ActQ8G8* a[C];
    for (int c = 0; c < C; ++c) a[c] = static_cast<const ActQ8G8*>(act[c]);
    ColumnSums<C> sums;
    for_each_group(blocks, [&](int64_t g, auto part) {
        constexpr Part P = decltype(part)::value;
        const uint8_t* p = x + S * g;
        i8::prefetch_ahead(p, S);
        const auto s = k.template step<P>(p, row_bytes - S * g);
        for (int c = 0; c < C; ++c)
            k.template accumulate<P>(s, ActGroup(a[c][g]), sums.acc[c], sums.off[c]);
    });
    sums.store(k.offset, out);
}

// Rows of 4 blocks (K = 128: the per-head attn_k_b of MLA) that lie back to back fill one step
// per two rows, against the activation's 4 blocks repeated as blocks 4-7: the lower half of the
// step's products goes to the first row, the upper half to the second. Each row gets the
// operations that its own Part::kLowHalf step in groups_cols would apply, in the same order, so
// the same bits; a step per row would spend as much work on the empty upper half.
template <int R, typename Codec>
inline void pair_rows(const Codec& k, const uint8_t* x, const ActQ8G8& a, float* out) {
    constexpr int64_t S = Codec::kStepBytes;
    const ActGroup ag = ActGroup::low_half_twice(a);
    ColumnSums<R> sums;
    int r = 0;
    for (; r + 1 < R; r += 2) {
        const auto step = k.template step<Part::kWhole>(x + S / 2 * r, S);
        __m256 off = _mm256_setzero_ps();
        k.template accumulate<Part::kWhole>(step, ag, sums.acc[r], sums.acc[r + 1], off);
        sums.off[r] = _mm256_maskz_mov_ps(0x0F, off);              // the first row's blocks
        sums.off[r + 1] = _mm256_permute2f128_ps(off, off, 0x81);  // the second's, moved down
    }
    if (r < R) {  // an odd last row: its own half step
        const auto step = k.template step<Part::kLowHalf>(x + S / 2 * r, S / 2);
        k.template accumulate<Part::kLowHalf>(step, ActGroup(a), sums.acc[r], sums.off[r]);
    }
    sums.store(k.offset, out);
}

template <int R, typename Codec>
inline void groups_rows(const Codec& k, int64_t blocks, const void* w, int64_t row_stride,
                        const void* act, float* out) {
    constexpr int64_t S = Codec::kStepBytes;
    const uint8_t* x = static_cast<const uint8_t*>(w);
    if (blocks == 4 && row_stride == S / 2)
        return pair_rows<R>(k, x, *static_cast<const ActQ8G8*>(act), out);
    const int64_t row_bytes = blocks * (S / 8);
    const ActQ8G8* a = static_cast<const ActQ8G8*>(act);
    ColumnSums<R> sums;  // here one accumulator per weight row
    RowsPrefetch<R> prefetch(x, row_stride, row_bytes);
    for_each_group(blocks, [&](int64_t g, auto part) {
        constexpr Part P = decltype(part)::value;
        prefetch.step(S);
        const ActGroup ag(a[g]);
        for (int r = 0; r < R; ++r) {
            const auto s = k.template step<P>(x + r * row_stride + S * g, row_bytes - S * g);
            k.template accumulate<P>(s, ag, sums.acc[r], sums.off[r]);
        }
    });
    sums.store(k.offset, out);
}

// ---- Q8_0: 34-byte blocks, 272 bytes per step -------------------------------------------------

// qs of blocks 2k, 2k+1 from bytes [64k, 64k + 128): block 2k starts at 2 + 68k - 64k.
constexpr Bytes64 kQ8QsIndex[4] = {
    bytes64([](int k) { return 2 + 34 * (k / 32) + k % 32; }),
    bytes64([](int k) { return 6 + 34 * (k / 32) + k % 32; }),
    bytes64([](int k) { return 10 + 34 * (k / 32) + k % 32; }),
    bytes64([](int k) { return 14 + 34 * (k / 32) + k % 32; }),
};
// f16 scales of blocks 0-3 from bytes [0, 128), of blocks 4-7 (at 136 + 34 j) from [128, 256).
constexpr Bytes64 kQ8ScaleIndexLo = bytes64([](int k) { return k < 8 ? 34 * (k / 2) + k % 2 : 0; });
constexpr Bytes64 kQ8ScaleIndexHi =
    bytes64([](int k) { return k >= 8 && k < 16 ? 8 + 34 * (k / 2 - 4) + k % 2 : 0; });
constexpr Lanes16 kQ8LaneBlocks[4] = {lane_blocks(0, 8), lane_blocks(2, 8), lane_blocks(4, 8),
                                      lane_blocks(6, 8)};

// The constant vectors of the Q8_0 kernels, loaded once per call.
struct Q8Tables {
    __m512i qs_index[4] = {load(kQ8QsIndex[0]), load(kQ8QsIndex[1]), load(kQ8QsIndex[2]),
                           load(kQ8QsIndex[3])};
    __m512i d_index_lo = load(kQ8ScaleIndexLo), d_index_hi = load(kQ8ScaleIndexHi);
    __m512i lane_block[4] = {load(kQ8LaneBlocks[0]), load(kQ8LaneBlocks[1]), load(kQ8LaneBlocks[2]),
                             load(kQ8LaneBlocks[3])};
    __m512i flip = _mm512_set1_epi8(char(0x80));
};

// One step (8 blocks) of a Q8_0 row decoded: the weights + 128, two blocks per vector, and the
// blocks' f32 scales.
struct Q8Step {
    __m512i u[4];
    __m256 dw;
};

// Q8_0's step decoder and accumulator, for the drivers groups_cols / groups_rows below.
struct Q8Codec {
    static constexpr int64_t kStepBytes = 272;
    Q8Tables t;
    float offset = 128.0f;  // what the unsigned weights exceed the true values by

    template <Part P>
    Q8Step step(const uint8_t* p, int64_t left) const {
        constexpr bool kWhole = P == Part::kWhole;
        const __m512i z0 = load64<kWhole>(p, left), z1 = load64<kWhole>(p + 64, left - 64),
                      z2 = load64<kWhole>(p + 128, std::min<int64_t>(left - 128, 64));
        if constexpr (P == Part::kLowHalf) {  // blocks 0-3: bytes [0, 136)
            const __m128i d16 = _mm512_castsi512_si128(
                _mm512_maskz_permutex2var_epi8(0x00FF, z0, t.d_index_lo, z1));
            return {{_mm512_xor_si512(_mm512_permutex2var_epi8(z0, t.qs_index[0], z1), t.flip),
                     _mm512_xor_si512(_mm512_permutex2var_epi8(z1, t.qs_index[1], z2), t.flip),
                     _mm512_setzero_si512(), _mm512_setzero_si512()},
                    _mm256_cvtph_ps(d16)};
        }
        const __m512i z3 = load64<kWhole>(p + 192, left - 192),
                      z4 = load64<false>(p + 256, std::min<int64_t>(left - 256, 16));
        const __m128i d16 = _mm512_castsi512_si128(
            _mm512_or_si512(_mm512_maskz_permutex2var_epi8(0x00FF, z0, t.d_index_lo, z1),
                            _mm512_maskz_permutex2var_epi8(0xFF00, z2, t.d_index_hi, z3)));
        return {{_mm512_xor_si512(_mm512_permutex2var_epi8(z0, t.qs_index[0], z1), t.flip),
                 _mm512_xor_si512(_mm512_permutex2var_epi8(z1, t.qs_index[1], z2), t.flip),
                 _mm512_xor_si512(_mm512_permutex2var_epi8(z2, t.qs_index[2], z3), t.flip),
                 _mm512_xor_si512(_mm512_permutex2var_epi8(z3, t.qs_index[3], z4), t.flip)},
                _mm256_cvtph_ps(d16)};
    }

    // acc_lo += the step's dot products of blocks 0-3 with activation group a, scaled, and
    // acc_hi += those of blocks 4-7 (one accumulator for both, but in pair_rows); off += d_w * a.s.
    // Part::kLowHalf skips the upper blocks, which are zero (adding their zero products would leave
    // the same bits).
    template <Part P>
    void accumulate(const Q8Step& w, const ActGroup& a, __m512& acc_lo, __m512& acc_hi,
                    __m256& off) const {
        const __m512 d16x = _mm512_castps256_ps512(_mm256_mul_ps(w.dw, a.d));
        for (int k = 0; k < (P == Part::kLowHalf ? 2 : 4); ++k) {
            __m512& acc = k < 2 ? acc_lo : acc_hi;
            const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.u[k], a.qs[k]);
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot),
                                  _mm512_permutexvar_ps(t.lane_block[k], d16x), acc);
        }
        off = _mm256_fmadd_ps(w.dw, a.s, off);
    }
    template <Part P>
    void accumulate(const Q8Step& w, const ActGroup& a, __m512& acc, __m256& off) const {
        accumulate<P>(w, a, acc, acc, off);
    }
};

template <int C>
void q8_0_groups_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    groups_cols<C>(Q8Codec{}, blocks, w, act, out);
}

template <int R>
void q8_0_groups_rows(int64_t blocks, const void* w, int64_t row_stride, const void* act,
                      float* out) {
    groups_rows<R>(Q8Codec{}, blocks, w, row_stride, act, out);
}

// ---- Q4_0 and IQ4_NL: 18-byte blocks, 144 bytes per step ----------------------------------------

// qs of blocks 0-3 from bytes [0, 128), of blocks 4-7 (at 74 + 18 j) from [64, 192).
constexpr Bytes64 kNibbleQsIndexLo = bytes64([](int k) { return 2 + 18 * (k / 16) + k % 16; });
constexpr Bytes64 kNibbleQsIndexHi = bytes64([](int k) { return 10 + 18 * (k / 16) + k % 16; });
constexpr Bytes64 kNibbleScaleIndex =
    bytes64([](int k) { return k < 16 ? 18 * (k / 2) + k % 2 : 0; });
constexpr Lanes16 kNibbleLaneBlocksLo = lane_blocks(0, 4), kNibbleLaneBlocksHi = lane_blocks(4, 4);

// The constant vectors of the nibble kernels, loaded once per call.
struct NibbleTables {
    __m512i qs_index_lo = load(kNibbleQsIndexLo), qs_index_hi = load(kNibbleQsIndexHi);
    __m512i d_index = load(kNibbleScaleIndex);
    __m512i lane_lo = load(kNibbleLaneBlocksLo), lane_hi = load(kNibbleLaneBlocksHi);
    __m512i low4 = _mm512_set1_epi8(0x0F);
};

// One step (8 blocks) of a weight row decoded: unsigned weights u in the nibble order of
// ActQ8G8 and the blocks' f32 scales.
struct NibbleStep {
    __m512i u[4];
    __m256 dw;
};

// The step decoder and accumulator of the nibble types, for groups_cols / groups_rows.
template <typename ToUnsigned>
struct NibbleCodec {
    static constexpr int64_t kStepBytes = 144;
    NibbleTables t;
    ToUnsigned to_unsigned;  // nibbles -> unsigned weights
    float offset;            // what the unsigned weights exceed the true values by

    template <Part P>
    NibbleStep step(const uint8_t* p, int64_t left) const {
        constexpr bool kWhole = P == Part::kWhole;
        const __m512i z0 = load64<kWhole>(p, left), z1 = load64<kWhole>(p + 64, left - 64);
        const __m512i q_lo = _mm512_permutex2var_epi8(z0, t.qs_index_lo, z1);
        const __m256 dw =
            _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutex2var_epi8(z0, t.d_index, z1)));
        // Low nibbles are elements 0-15 of each block, high nibbles 16-31.
        const __m512i u0 = to_unsigned(_mm512_and_si512(q_lo, t.low4)),
                      u1 = to_unsigned(_mm512_and_si512(_mm512_srli_epi16(q_lo, 4), t.low4));
        if constexpr (P == Part::kLowHalf) {  // blocks 0-3: bytes [0, 72)
            return {{u0, u1, _mm512_setzero_si512(), _mm512_setzero_si512()}, dw};
        }
        const __m512i z2 = load64<false>(p + 128, std::min<int64_t>(left - 128, 16));
        const __m512i q_hi = _mm512_permutex2var_epi8(z1, t.qs_index_hi, z2);
        return {{u0, u1, to_unsigned(_mm512_and_si512(q_hi, t.low4)),
                 to_unsigned(_mm512_and_si512(_mm512_srli_epi16(q_hi, 4), t.low4))},
                dw};
    }

    // As Q8Codec's: blocks 0-3 into acc_lo, blocks 4-7 into acc_hi; Part::kLowHalf skips the
    // upper blocks.
    template <Part P>
    void accumulate(const NibbleStep& w, const ActGroup& a, __m512& acc_lo, __m512& acc_hi,
                    __m256& off) const {
        const __m512 d16x = _mm512_castps256_ps512(_mm256_mul_ps(w.dw, a.d));
        __m512i dot_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.u[0], a.qs[0]);
        dot_lo = _mm512_dpbusd_epi32(dot_lo, w.u[1], a.qs[1]);
        acc_lo = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_lo), _mm512_permutexvar_ps(t.lane_lo, d16x),
                                 acc_lo);
        if constexpr (P != Part::kLowHalf) {
            __m512i dot_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w.u[2], a.qs[2]);
            dot_hi = _mm512_dpbusd_epi32(dot_hi, w.u[3], a.qs[3]);
            acc_hi = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_hi),
                                     _mm512_permutexvar_ps(t.lane_hi, d16x), acc_hi);
        }
        off = _mm256_fmadd_ps(w.dw, a.s, off);
    }
    template <Part P>
    void accumulate(const NibbleStep& w, const ActGroup& a, __m512& acc, __m256& off) const {
        accumulate<P>(w, a, acc, acc, off);
    }
};

template <typename ToUnsigned>
NibbleCodec<ToUnsigned> nibble_codec(ToUnsigned to_unsigned, float offset) {
    return {NibbleTables{}, to_unsigned, offset};
}

// Q4_0's nibbles are its weights + 8 already.
inline auto q4_0_codec() {
    return nibble_codec([](__m512i q) { return q; }, 8.0f);
}

// IQ4_NL's values + 128, in every 16-byte lane for vpshufb (the SDK's table is not constexpr;
// this initializer is plain scalar code, run on first use).
inline auto iq4_nl_codec() {
    static const Bytes64 unsigned_values =
        bytes64([](int k) { return sy_kvalues_iq4nl[k % 16] + 128; });
    const __m512i table = load(unsigned_values);
    return nibble_codec([table](__m512i q) { return _mm512_shuffle_epi8(table, q); }, 128.0f);
}

template <int C>
void q4_0_groups_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    groups_cols<C>(q4_0_codec(), blocks, w, act, out);
}

template <int R>
void q4_0_groups_rows(int64_t blocks, const void* w, int64_t row_stride, const void* act,
                      float* out) {
    groups_rows<R>(q4_0_codec(), blocks, w, row_stride, act, out);
}

template <int C>
void iq4_nl_groups_cols(int64_t blocks, const void* w, const void* const* act, float* out) {
    groups_cols<C>(iq4_nl_codec(), blocks, w, act, out);
}

template <int R>
void iq4_nl_groups_rows(int64_t blocks, const void* w, int64_t row_stride, const void* act,
                        float* out) {
    groups_rows<R>(iq4_nl_codec(), blocks, w, row_stride, act, out);
}

SY_CPU_DEFINE_VEC_DOT(q8_0_groups)
SY_CPU_DEFINE_VEC_DOT_ROWS(q8_0_groups)
SY_CPU_DEFINE_VEC_DOT(q4_0_groups)
SY_CPU_DEFINE_VEC_DOT_ROWS(q4_0_groups)
SY_CPU_DEFINE_VEC_DOT(iq4_nl_groups)
SY_CPU_DEFINE_VEC_DOT_ROWS(iq4_nl_groups)

}  // namespace

QuantKernel group_kernel(int32_t weight_type) {
    const auto kernel = [](VecDotFn dot, VecDotRowsFn rows, QuantizeActFn quantize) {
        QuantKernel k{dot, quantize, 32, 256, sizeof(ActQ8G8)};
        k.dot_rows = rows;
        return k;
    };
    switch (weight_type) {
        case SY_TYPE_Q8_0:
            return kernel(vec_dot_q8_0_groups, vec_dot_rows_q8_0_groups, quantize_act_g8_natural);
        case SY_TYPE_Q4_0:
            return kernel(vec_dot_q4_0_groups, vec_dot_rows_q4_0_groups, quantize_act_g8_nibbles);
        case SY_TYPE_IQ4_NL:
            return kernel(vec_dot_iq4_nl_groups, vec_dot_rows_iq4_nl_groups,
                          quantize_act_g8_nibbles);
        default: return {nullptr, nullptr, 0, 0, 0};
    }
}

#else

QuantKernel group_kernel(int32_t) {
    return {nullptr, nullptr, 0, 0, 0};
}

#endif

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
