// Quantized matrix products: the weights stay in their GGUF blocks (quant_blocks.h) and each
// activation row is quantized once per op to an 8-bit block format, so that every block's dot
// product is an integer one (int8_simd.hpp):
//   ActQ8x32 (Q8_0 / Q8_1 semantics, f32 scales)  for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL;
//   sy_block_q8_K                                 for Q2_K ... Q6_K, IQ4_XS and the codebook
//                                                 i-quants (IQ1_S ... IQ3_S).
// Error: the products are exact in int32; the activation rounding (|x - d q| <= d / 2 with
// d = max|x| / 127) is the only approximation.
#pragma once

#include <cstdint>
#include <cstring>

#include "simd.hpp"
#include "switchyard/quant_blocks.h"

#if defined(__AVX512VNNI__) && defined(__AVX512BW__) && defined(__AVX512F__)
#define SY_CPU_TILE_GEMM 1     // the tile path (below)
#define SY_CPU_TILE_GEMM512 1  // tile_gemm512.cpp's products
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SY_CPU_TILE_GEMM 1  // tile_gemm256.cpp's products, for the types it has decoders of
#endif

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

// 32 activations: x ~ d * qs; sum = sum(qs), for the weight types with an offset or a minimum.
struct ActQ8x32 {
    float d;
    int32_t sum;
    int8_t qs[32];
};

// AVX-512 VBMI kernels (vec_dot_groups.cpp): 8 blocks of 32 activations in the order the
// kernel's weight decoding produces, zero-padded past the row's end.
//   natural order (Q8_0):           qs[32 b + j] = element j of block b
//   nibble order (Q4_0, IQ4_NL):    blocks 0-3 then 4-7, each half as [b lo 16][..] then
//                                   [b hi 16][..]: qs[128 h + 16 (b % 4) + j] = element j of
//                                   block 4 h + b % 4, qs[128 h + 64 + 16 (b % 4) + j] = its
//                                   element 16 + j
// d[b] the scale and s[b] = d[b] * sum of block b's qs (for the weights' offsets).
struct ActQ8G8 {
    int8_t qs[256];
    float d[8];
    float s[8];
};

// The 8 6-bit scales and 8 6-bit mins of Q4_K / Q5_K from their 12 packed bytes q:
//   j < 4:  scale = q[j] & 63,                          min = q[j + 4] & 63
//   j >= 4: scale = (q[j + 4] & 15) | (q[j - 4] >> 6) << 4,
//           min = (q[j + 4] >> 4) | (q[j] >> 6) << 4
// computed four bytes at a time in 32-bit words.
inline void scales_mins_k4(const uint8_t* q, uint8_t (&sc)[8], uint8_t (&mn)[8]) {
    uint32_t w[3];
    std::memcpy(w, q, 12);
    const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, bits45 = 0x30303030;
    const uint32_t s[2] = {w[0] & low6, (w[2] & low4) | ((w[0] >> 2) & bits45)};
    const uint32_t m[2] = {w[1] & low6, ((w[2] >> 4) & low4) | ((w[1] >> 2) & bits45)};
    std::memcpy(sc, s, 8);
    std::memcpy(mn, m, 8);
}

// Dot products of one weight row (`blocks` weight blocks at w) with `cols` (1..kMaxDotCols)
// quantized activation rows; out[c] = the dot product with act[c].
using VecDotFn = void (*)(int64_t blocks, const void* w, const void* const* act, int cols,
                          float* out);
// One row of n floats (n a multiple of the weight block) into the kernel's activation format.
using QuantizeActFn = void (*)(const float* x, void* y, int64_t n);
constexpr int kMaxDotCols = 4;
// Dot products of `rows` (1..kMaxDotRows) weight rows, row_stride bytes apart, with one quantized
// activation row; out[r] = the dot product of row r. Bit for bit what VecDotFn gives per row.
using VecDotRowsFn = void (*)(int64_t blocks, const void* w, int64_t row_stride, const void* act,
                              int rows, float* out);
constexpr int kMaxDotRows = 4;

// Products with many activation columns decode each group of 16 weight rows once into a tile
// and run every column over it (tile_gemm512.cpp as below; tile_gemm256.cpp, the avx2 build, with
// vpmaddubsw and vpmaddwd instead of vpdpbusd and vpmulld). Per 256-value block: the true values as
// int8, 4 consecutive values of row r in 32-bit lane r; each 16-value sub-block's integer scale l_j
// per row; the row's offset term; a float block scale per row; and one float scale per row. A
// column meets it as unsigned bytes a + 128 (ActU8K), one vpdpbusd per 4 values and 16 rows:
//   sum_k a_k v_k = sum_j l_j sum_(k in j) (a_k + 128) v_k - 128 sum_j l_j V_j
// with V_j the sum of sub-block j's values: the second term is the weights' own (offsets).
// Exact in int32: |sum over a sub-block| <= 16 * 255 * 128, times |l_j| <= 128, 16 sub-blocks.
// Types with mins (Q2_K, Q4_K, Q5_K: x = d l_j q - dmin m_j) add -dmin sum_j m_j B_j, B_j the
// column's sum over sub-block j (ActU8K's bsums), as one vpdpwssd per two sub-blocks.
struct WeightTile {
    int8_t*
        values;  // blocks * 4096: block b, values 4 p .. 4 p + 3 of row r at 4096 b + 64 p + 4 r
    int32_t* scales;   // blocks * 256: l_j of row r at 256 b + 16 j + r
    int32_t* offsets;  // blocks * 16: -128 sum_j l_j V_j of row r at 16 b + r
    float* d;          // blocks * 16: the float block scale of row r at 16 b + r
    int32_t* mins;     // blocks * 256: m_2i, m_2i+1 (int16) of row r at 256 b + 16 i + r, i < 8
    float* dmin;       // blocks * 16: dmin of row r at 16 b + r
    bool has_mins;     // whether mins and dmin are set (by the type's decoder)
    bool scales32;     // whether l_2i = l_2i+1 throughout (a scale per 32 values; one vpmulld each)
    float row_scale[16];
    // avx2 (tile_gemm256.cpp): values up to 128 in magnitude, taken as |v| against the activations
    // with v's sign (offsets then unused); else |v| <= 64 against a + 128.
    bool signed_values = false;
};
// Decodes rows [0, rows) (rows <= 16, row_stride bytes apart, `blocks` blocks each) into `tile`;
// rows past `rows` become zeros.
using TileDecodeFn = void (*)(int64_t blocks, const void* w, int64_t row_stride, int rows,
                              WeightTile& tile);
// 256 activations in natural order as unsigned bytes, x ~ d * (qs - 128): the values and scale
// of quantize_act_q8_K plus 128, and the sums of its 16-value sub-blocks (without the 128).
struct ActU8K {
    float d;
    int16_t bsums[16];
    uint8_t qs[256];
};
// The fewest columns a product takes the tile path for, by default: below, the per-row kernels'
// decoding costs less than a tile's (about 70 cycles per row and block, where a column then costs
// about 7 and a column of the per-row kernels about 15; docs/design-measurements.md#tile-columns).
constexpr int64_t kTileMinColumns = 12;

struct QuantKernel {
    VecDotFn dot;
    QuantizeActFn quantize;
    int64_t weight_block;  // elements per weight block: 32 or 256
    int64_t act_group;     // elements per activation unit: 32 (ActQ8x32), 256 (Q8_K, ActQ8G8)
    int64_t act_bytes;     // bytes per activation unit
    VecDotRowsFn dot_rows = nullptr;  // where the kernel has a several-row form (GEMV)
    // Weights row-interleaved 16 rows at a time (interleaved_weights.hpp): `interleaved` takes
    // the blocks of one 16-row group and writes out[16 c + r] for column c, row r; `dot` is then
    // the plain kernel of the same activation format, for reference.
    VecDotFn interleaved = nullptr;
    // Where the variant has a tile path (with_tile): its decoder, and the fewest columns it takes.
    TileDecodeFn tile_decode = nullptr;
    int64_t tile_min_columns = kTileMinColumns;

    int64_t act_row_bytes(int64_t K) const { return (K + act_group - 1) / act_group * act_bytes; }
    // Where a row of K activations keeps its ActU8K blocks (kernels with a tile_decode).
    int64_t tile_act_offset(int64_t K) const {
        return K / 256 * (act_bytes - int64_t(sizeof(ActU8K)));
    }
};

// The kernel for a weight type and rows of K values, or {nullptr, ...} for a type without one.
// The wide 8-block kernels take K >= 256, and K = 128 (the per-head attn_k_b of MLA): there the
// several-rows form fills a step with two adjacent rows, and the one-row form decodes half a
// step per row for up to 4 columns: a faster GEMV, and no slower at 64 columns
// (docs/design-measurements.md#wide-kernels-k128). Other short rows keep the per-block kernels:
// a step per row would be mostly empty.
QuantKernel quant_kernel(int32_t weight_type, int64_t K);

// n (a multiple of 32 / 256) floats into n / 32 ActQ8x32 or n / 256 sy_block_q8_K.
void quantize_act_q8x32(const float* x, ActQ8x32* y, int64_t n);
void quantize_act_q8_K(const float* x, sy_block_q8_K* y, int64_t n);
// quantize_act_q8_K as a QuantizeActFn.
void quantize_act_q8_K_row(const float* x, void* y, int64_t n);
// n (a multiple of 256) floats into n / 256 sy_block_q8_K in Q4_K's nibble order: in each half of
// 128 values the second and third 32-value quarters change places, so that the low nibbles of a
// Q4_K super-block's 64 bytes qs[64 h, 64 h + 64) meet qs[128 h, 128 h + 64) and their high
// nibbles qs[128 h + 64, 128 h + 128). bsums stay in the natural order.
void quantize_act_q8_K_nibbles(const float* x, void* y, int64_t n);
// n (a multiple of 256) floats into n / 256 sy_block_q8_K in Q2_K's plane order: 32-value chunk
// 2 g + h of a block holds its natural chunk 4 h + g, so that bit plane g of a 64-byte Q2_K (or
// IQ2_K) qs meets one 64-byte load. bsums stay in the natural order.
void quantize_act_q8_K_q2k(const float* x, void* y, int64_t n);
// n (a multiple of 256) floats into n / 256 sy_block_q8_K in IQ4_K's quarter order: in each half k
// of 128 values, qs[128 k + 64 h + 16 j + i] = value 128 k + 32 j + 16 h + i, so that the low
// (h = 0) and high nibbles of 64 bytes of IQ4_K's qs meet one 64-byte load each. bsums natural.
void quantize_act_q8_K_quarters(const float* x, void* y, int64_t n);
// n (a multiple of 256) floats into n / 256 ActU8K.
void quantize_act_u8_K(const float* x, ActU8K* y, int64_t n);
// A kernel with its tile decoder, taken from `min_columns` columns on: a product that may take
// that many has ActU8K blocks after the kernel's own in each activation row (act_bytes counts
// both; QuantizedActivations writes them).
inline QuantKernel with_tile(QuantKernel k, TileDecodeFn decode,
                             int64_t min_columns = kTileMinColumns) {
    k.act_bytes += int64_t(sizeof(ActU8K));
    k.tile_decode = decode;
    k.tile_min_columns = min_columns;
    return k;
}
// Weight rows [n0, n1) x `count` columns (act, out, out_row_stride as quant_matmul_block) through
// 16-row tiles (tile_gemm512.cpp, tile_gemm256.cpp); the kernel has a tile_decode.
void tile_matmul_block(const QuantKernel& kernel, const char* a, int64_t a_row_stride, int64_t n0,
                       int64_t n1, int64_t K, const void* const* act, float* const* out,
                       int64_t count, int64_t out_row_stride);

// The avx2 variant's tile decoder of a weight type (tile_gemm256.cpp), or nullptr: IQ2_K ... IQ6_K,
// IQ2_KS, IQ3_KS, Q3_K (vec_dot_ikquants.cpp), the codebook i-quants IQ1_S ... IQ3_S
// (vec_dot_iquants.cpp), Q2_K, Q4_K, Q5_K, Q6_K (vec_dot_kquants.cpp), IQ4_KS, IQ5_KS, IQ4_KSS,
// IQ2_KL, IQ1_KT ... IQ4_KT (vec_dot_ikrows.cpp) and IQ4_XS (vec_dot_iq4.cpp).
TileDecodeFn avx2_tile_decoder(int32_t weight_type);
TileDecodeFn avx2_codebook_tile_decoder(int32_t weight_type);
TileDecodeFn avx2_kquant_tile_decoder(int32_t weight_type);
TileDecodeFn avx2_row_tile_decoder(int32_t weight_type);
TileDecodeFn avx2_iq4_xs_tile_decoder(int32_t weight_type);

// n (a multiple of 32) floats into ceil(n / 256) ActQ8G8, natural or nibble order.
void quantize_act_g8_natural(const float* x, void* y, int64_t n);
void quantize_act_g8_nibbles(const float* x, void* y, int64_t n);

// The product of row-interleaved weights (interleaved_weights.hpp) with ActQ8x32 activations
// (vec_dot_interleaved.cpp), or nullptr where the variant has none.
VecDotFn interleaved_dot(int32_t weight_type);
// The kernel for weights of that type in the interleaved layout, or {nullptr, ...} where the
// variant has no interleaved product for it.
QuantKernel interleaved_kernel(int32_t weight_type);

// The AVX-512 VBMI kernels on ActQ8G8 activations, or {nullptr, ...} where the variant has none
// (vec_dot_groups.cpp).
QuantKernel group_kernel(int32_t weight_type);
// The AVX-512 Q2_K, Q4_K, Q5_K, Q6_K kernels on Q8_K activations (Q4_K's and Q5_K's in nibble
// order, Q2_K's in plane order), or {nullptr, ...} where the variant has none
// (vec_dot_kquants512.cpp).
QuantKernel wide_kquant_kernel(int32_t weight_type);
// The AVX-512 VBMI kernels of IQ2_K ... IQ6_K, IQ2_KS ... IQ5_KS, IQ4_KSS, IQ2_KL and of Q3_K and
// IQ4_XS, on Q8_K activations in their own element order, or {nullptr, ...} where the variant has
// none (vec_dot_ikquants512.cpp).
QuantKernel wide_ikquant_kernel(int32_t weight_type);
// The AVX-512 VNNI IQ1_KT ... IQ4_KT kernels on activations stored four times each (IQ3_KT: as
// 32-bit lanes), or
// {nullptr, ...} where the variant has none (vec_dot_trellis512.cpp).
QuantKernel wide_trellis_kernel(int32_t weight_type);
// The AVX-512 VBMI IQ2_XXS / IQ3_XXS kernels that decode the codebook in registers, on Q8_K
// activations in their own element order, or {nullptr, ...} where the variant has none
// (vec_dot_codebooks512.cpp).
QuantKernel codebook_kernel(int32_t weight_type);

// Per-family kernels (vec_dot_*.cpp).
void vec_dot_q4_0(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q4_1(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q5_0(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q5_1(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q8_0(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q8_kv(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq4_nl(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq4_xs(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq2_xxs(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq2_xs(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq2_s(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq3_xxs(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq3_s(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq1_s(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq1_m(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq1_m_r4_rows(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q2_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q3_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q4_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q5_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q6_K(int64_t, const void*, const void* const*, int, float*);
void vec_dot_q6_0(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq2_k(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq3_k(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq4_k(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq5_k(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq6_k(int64_t, const void*, const void* const*, int, float*);
// The row-scaled types: w is the row (its scale, then the blocks).
void vec_dot_iq2_ks(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq3_ks(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq4_ks(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq4_kss(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq5_ks(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq2_kl(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq1_kt(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq2_kt(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq3_kt(int64_t, const void*, const void* const*, int, float*);
void vec_dot_iq4_kt(int64_t, const void*, const void* const*, int, float*);

// Defines vec_dot_<name> from a template `name##_cols<C>` of the same signature, expanding the
// run-time column count (1..kMaxDotCols) into the template argument.
#define SY_CPU_DEFINE_VEC_DOT(name)                                                      \
    void vec_dot_##name(int64_t blocks, const void* w, const void* const* act, int cols, \
                        float* out) {                                                    \
        switch (cols) {                                                                  \
            case 1: name##_cols<1>(blocks, w, act, out); break;                          \
            case 2: name##_cols<2>(blocks, w, act, out); break;                          \
            case 3: name##_cols<3>(blocks, w, act, out); break;                          \
            default: name##_cols<4>(blocks, w, act, out); break;                         \
        }                                                                                \
    }

// Defines vec_dot_rows_<name> from a template `name##_rows<R>` (VecDotRowsFn).
#define SY_CPU_DEFINE_VEC_DOT_ROWS(name)                                                         \
    void vec_dot_rows_##name(int64_t blocks, const void* w, int64_t row_stride, const void* act, \
                             int rows, float* out) {                                             \
        switch (rows) {                                                                          \
            case 1: name##_rows<1>(blocks, w, row_stride, act, out); break;                      \
            case 2: name##_rows<2>(blocks, w, row_stride, act, out); break;                      \
            case 3: name##_rows<3>(blocks, w, row_stride, act, out); break;                      \
            default: name##_rows<4>(blocks, w, row_stride, act, out); break;                     \
        }                                                                                        \
    }

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
