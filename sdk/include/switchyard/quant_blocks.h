/*
 * Block layouts of the GGUF quantization types, byte for byte as GGUF files store them (the
 * public ggml format; docs/iquants.md describes the i-quants). Plain C so that any plugin can
 * use them.
 * Halves are IEEE binary16 bit patterns (uint16_t); convert with sdk.hpp's fp16_to_f32.
 */
#ifndef SWITCHYARD_QUANT_BLOCKS_H
#define SWITCHYARD_QUANT_BLOCKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SY_QK4_0 32
#define SY_QK4_1 32
#define SY_QK5_0 32
#define SY_QK5_1 32
#define SY_QK8_0 32
#define SY_QK8_1 32
#define SY_QK4_NL 32
#define SY_QK_K 256
#define SY_K_SCALE_SIZE 12

typedef uint16_t sy_half;

/* x = d * (q - 8), q in [0, 15]; element j in the low nibble of qs[j], element j + 16 in the
   high nibble of qs[j]. */
typedef struct { sy_half d; uint8_t qs[SY_QK4_0 / 2]; } sy_block_q4_0;
/* x = d * q + m */
typedef struct { sy_half d; sy_half m; uint8_t qs[SY_QK4_1 / 2]; } sy_block_q4_1;
/* 5th bit of element j is bit j of qh (little-endian u32); x = d * (q - 16) */
typedef struct { sy_half d; uint8_t qh[4]; uint8_t qs[SY_QK5_0 / 2]; } sy_block_q5_0;
/* x = d * q + m */
typedef struct { sy_half d; sy_half m; uint8_t qh[4]; uint8_t qs[SY_QK5_1 / 2]; } sy_block_q5_1;
/* x = d * q */
typedef struct { sy_half d; int8_t qs[SY_QK8_0]; } sy_block_q8_0;
/* activation format: s = d * sum(qs) */
typedef struct { sy_half d; sy_half s; int8_t qs[SY_QK8_1]; } sy_block_q8_1;

/* 16 sub-blocks of 16: scales[i] low nibble = scale, high nibble = min; x = d*sc*q - dmin*m */
typedef struct {
    uint8_t scales[SY_QK_K / 16];
    uint8_t qs[SY_QK_K / 4];
    sy_half d;
    sy_half dmin;
} sy_block_q2_K;
/* 16 sub-blocks of 16, 6-bit scales packed in 12 bytes, high bit in hmask */
typedef struct {
    uint8_t hmask[SY_QK_K / 8];
    uint8_t qs[SY_QK_K / 4];
    uint8_t scales[12];
    sy_half d;
} sy_block_q3_K;
/* 8 sub-blocks of 32, 6-bit scale and min each packed in 12 bytes; x = d*sc*q - dmin*m */
typedef struct {
    sy_half d;
    sy_half dmin;
    uint8_t scales[SY_K_SCALE_SIZE];
    uint8_t qs[SY_QK_K / 2];
} sy_block_q4_K;
typedef struct {
    sy_half d;
    sy_half dmin;
    uint8_t scales[SY_K_SCALE_SIZE];
    uint8_t qh[SY_QK_K / 8];
    uint8_t qs[SY_QK_K / 2];
} sy_block_q5_K;
/* 16 sub-blocks of 16, int8 scales; x = d * sc * (q - 32), q 6 bits (4 in ql, 2 in qh) */
typedef struct {
    uint8_t ql[SY_QK_K / 2];
    uint8_t qh[SY_QK_K / 4];
    int8_t scales[SY_QK_K / 16];
    sy_half d;
} sy_block_q6_K;
/* activation format of the K-quant dot products (mainline layout, 292 bytes):
   bsums[i] = sum of qs[16 i .. 16 i + 15] */
typedef struct {
    float d;
    int8_t qs[SY_QK_K];
    int16_t bsums[SY_QK_K / 16];
} sy_block_q8_K;
/* x = d * kvalues_iq4nl[q] */
typedef struct { sy_half d; uint8_t qs[SY_QK4_NL / 2]; } sy_block_iq4_nl;
/* 8 sub-blocks of 32 with 6-bit scales: low 4 bits in scales_l nibbles, high 2 bits in
   scales_h; x = d * (ls - 32) * kvalues_iq4nl[q] */
typedef struct {
    sy_half d;
    uint16_t scales_h;
    uint8_t scales_l[SY_QK_K / 64];
    uint8_t qs[SY_QK_K / 2];
} sy_block_iq4_xs;

/* The i-quants of 256-element super-blocks (ggml-common.h): 8-value groups are indices into a
   codebook of sign-free grid points (switchyard/iquant_grids.h), with separately stored signs.
   IQ2_XXS: per 32 values two u32 words: the first holds four 8-bit indices into iq2xxs_grid, the
   second four 7-bit sign indices into ksigns_iq2xs (bits 0-27) and a 4-bit scale ls (bits
   28-31); x = d * (0.5 + ls) / 4 * grid * sign. */
typedef struct { sy_half d; uint16_t qs[SY_QK_K / 8]; } sy_block_iq2_xxs;
/* IQ2_XS: qs[i] = 9-bit index into iq2xs_grid | 7-bit sign index << 9; scales: two 4-bit
   scales per 32 values (low nibble: first 16); x = d * (0.5 + ls) / 4 * grid * sign. */
typedef struct {
    sy_half d;
    uint16_t qs[SY_QK_K / 8];
    uint8_t scales[SY_QK_K / 32];
} sy_block_iq2_xs;
/* IQ2_S: qs[0..31] the low 8 bits of 10-bit iq2s_grid indices, qs[32..63] the sign bytes (one
   per 8 values), qh 2 high index bits per group; scales as IQ2_XS. */
typedef struct {
    sy_half d;
    uint8_t qs[SY_QK_K / 4];
    uint8_t qh[SY_QK_K / 32];
    uint8_t scales[SY_QK_K / 32];
} sy_block_iq2_s;
/* IQ3_XXS: qs[0..63] 8-bit indices into iq3xxs_grid (4 values each); qs[64..95] one u32 per 32
   values: four 7-bit sign indices and a 4-bit scale ls; x = d * (0.5 + ls) / 2 * grid * sign. */
typedef struct { sy_half d; uint8_t qs[3 * SY_QK_K / 8]; } sy_block_iq3_xxs;
/* IQ3_S: 9-bit iq3s_grid indices (low 8 in qs, high bit in qh), explicit sign bits, 4-bit
   scales (two per byte, one per 32 values); x = d * (1 + 2 ls) * grid * sign. */
typedef struct {
    sy_half d;
    uint8_t qs[SY_QK_K / 4];
    uint8_t qh[SY_QK_K / 32];
    uint8_t signs[SY_QK_K / 8];
    uint8_t scales[SY_QK_K / 64];
} sy_block_iq3_s;
/* IQ1_S: per 32 values a u16 qh: 3 high bits of each of four 11-bit iq1s_grid indices (bits
   0-11), a 3-bit scale ls (12-14), the sign of the shift delta (15);
   x = d * (2 ls + 1) * (grid + delta), delta = -/+ IQ1S_DELTA. */
typedef struct {
    sy_half d;
    uint8_t qs[SY_QK_K / 8];
    uint16_t qh[SY_QK_K / 32];
} sy_block_iq1_s;
/* IQ1_M: no d field: the f16 super-block scale is spread over the top 4 bits of the four u16
   scale words; qh holds per 8 values 3 high index bits and the delta's sign; 3-bit scales per
   16 values; x = d * (2 ls + 1) * (grid + delta). */
typedef struct {
    uint8_t qs[SY_QK_K / 8];
    uint8_t qh[SY_QK_K / 16];
    uint8_t scales[SY_QK_K / 32];
} sy_block_iq1_m;
/* IQ1_M_R4 (ik_llama.cpp, type id 229) with its rows de-interleaved: each row starts with an f16
   d (row_meta_size 2), then per 256 values: qs and qh as IQ1_M's (per 32 values ib: qs[4 ib + g]
   the low 8 index bits of 8-value group g; qh[2 ib + h] the high 3 bits of group 2 h in bits 0-2,
   its delta's sign in bit 3, group 2 h + 1's in bits 4-7), and scales[ib] two 4-bit scales l (low
   nibble: the first 16 values); x = d * l * (grid + delta), delta = -/+ IQ1M_DELTA. Unlike
   IQ1_M, l is used as it is (not 2 l + 1), so it is no IQ1_M block. */
typedef struct {
    uint8_t qs[SY_QK_K / 8];
    uint8_t qh[SY_QK_K / 16];
    uint8_t scales[SY_QK_K / 32];
} sy_block_iq1_m_r4_rows;
/* The bits of IQ1_M's f16 d from its scales read as four u16 words sc[0..3]: the words' top
   nibbles, sc[0]'s lowest. */
#define SY_IQ1M_D_BITS(sc)                                                    \
    ((uint16_t)(((sc)[0] >> 12) | (((sc)[1] >> 8) & 0x00f0) |                 \
                (((sc)[2] >> 4) & 0x0f00) | ((sc)[3] & 0xf000)))

/* The non-linear 16-entry table of IQ4_NL and IQ4_XS. */
static const int8_t sy_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

/* ik_llama.cpp's types (its ggml-common.h; docs/ik-quants.md has the layouts in full).
   Q6_0: x = d * (q - 32), q 6 bits: low nibbles in qs (values j and j + 16 of byte j), bits 4-5
   in qh (byte j % 8, bits 4 (j / 8) .. +3 for values j and j + 16). */
typedef struct {
    sy_half d;
    uint8_t qh[SY_QK4_0 / 4];
    uint8_t qs[SY_QK4_0 / 2];
} sy_block_q6_0;
/* The IQ*_K super-blocks: 16 sub-blocks of 16 values, each with an integer scale and an `extra`
   bit that picks the second (shifted) half of the type's value table; x = d * scale * value.
   IQ2_K: 4-bit scales (nibble - 8); 2-bit indices, byte 32 (n / 128) + n % 32, bits
   2 ((n / 32) % 4), into sy_iq2nl_values. */
typedef struct {
    sy_half d;
    uint16_t extra;
    uint8_t scales[SY_QK_K / 32];
    uint8_t qs[SY_QK_K / 4];
} sy_block_iq2_k;
/* IQ3_K: scale = (2 nibble + 1), negative where its scales_h bit is set; 3-bit indices: the low
   2 bits as IQ2_K's, bit 2 in qh[n % 32] bit n / 32; into sy_iq3nl_values. */
typedef struct {
    sy_half d;
    uint16_t extra;
    uint16_t scales_h;
    uint8_t scales_l[SY_QK_K / 32];
    uint8_t qs[SY_QK_K / 4];
    uint8_t qh[SY_QK_K / 8];
} sy_block_iq3_k;
/* IQ4_K: 6-bit scales (low 4 in scales_l nibble s % 2 of byte s / 2, high 2 in scales_h byte
   s / 4 bits 2 (s % 4)), scale = S - 32; 4-bit indices as IQ4_XS's (per 32 values: low nibbles
   the first 16, high nibbles the next 16) into sy_iq4k_values. */
typedef struct {
    sy_half d;
    uint16_t extra;
    uint8_t scales_h[SY_QK_K / 64];
    uint8_t scales_l[SY_QK_K / 32];
    uint8_t qs[SY_QK_K / 2];
} sy_block_iq4_k;
/* IQ5_K: scales as IQ4_K; 5-bit indices: the low 4 in qs (per 64 values: low nibbles the first
   32, high nibbles the next 32), bit 4 in qh[n % 32] bit n / 32; into sy_iq5nl_values. */
typedef struct {
    sy_half d;
    uint16_t extra;
    uint8_t scales_h[SY_QK_K / 64];
    uint8_t scales_l[SY_QK_K / 32];
    uint8_t qs[SY_QK_K / 2];
    uint8_t qh[SY_QK_K / 8];
} sy_block_iq5_k;
/* IQ6_K: int8 scales; 6-bit indices: the low 4 as IQ5_K's, bits 4-5 in qh byte
   32 (n / 128) + n % 32, bits 2 ((n / 32) % 4); into sy_iq6nl_values. */
typedef struct {
    sy_half d;
    uint16_t extra;
    int8_t scales[SY_QK_K / 16];
    uint8_t qs[SY_QK_K / 2];
    uint8_t qh[SY_QK_K / 4];
} sy_block_iq6_k;

/* ik_llama.cpp's row-scaled types: a row is its scale (f32 for IQ4_KS, IQ4_KSS, IQ5_KS; f16 for
   IQ2_KS, IQ3_KS, IQ2_KL; sy_dtype_traits.row_meta_size) followed by these 256-value blocks,
   whose sub-blocks of 32 values carry an integer scale relative to it. */
/* IQ2_KS: extra bits 0-7 = sub-block b on the shifted table, bits 8-15 = bit 4 of its scale;
   low 4 scale bits in scales nibble b % 2 of byte b / 2; scale = S - 16; 2-bit indices in IQ2_K's
   plane order into sy_iq2nl_values. */
typedef struct {
    uint16_t extra;
    uint8_t scales[SY_QK_K / 64];
    uint8_t qs[SY_QK_K / 4];
} sy_block_iq2_ks;
/* IQ3_KS: extra bits 0-7 = bit 4 of sub-block b's scale, bits 8-15 = shifted table; low 4 scale
   bits in scales byte b % 4, nibble b / 4; scale = S - 16; 3-bit indices as IQ3_K's into
   sy_iq3nl_values. */
typedef struct {
    uint16_t extra;
    uint8_t scales[SY_QK_K / 64];
    uint8_t qs[SY_QK_K / 4];
    uint8_t qh[SY_QK_K / 8];
} sy_block_iq3_ks;
/* IQ4_KS: scales[b] bit 0 = shifted table, scale = (scales[b] & 254) - 127; 4-bit indices as
   IQ4_K's into sy_iq4k_values. */
typedef struct {
    uint8_t scales[SY_QK_K / 32];
    uint8_t qs[SY_QK_K / 2];
} sy_block_iq4_ks;
/* IQ4_KSS: 128 little-endian u16 words, 8 per sub-block b. Word k of b: bit 0 = bit k of b's
   IQ4_KS scale byte; a = word & 0xFFFE, v = a ^ (a >> 1) holds the 4-bit indices of values 2k,
   2k + 16, 2k + 1, 2k + 17 of the sub-block in its nibbles 0-3. */
typedef struct {
    uint8_t qs[SY_QK_K / 2];
} sy_block_iq4_kss;
/* IQ5_KS: scales as IQ4_KS; 5-bit indices as IQ5_K's into sy_iq5nl_values. */
typedef struct {
    uint8_t scales[SY_QK_K / 32];
    uint8_t qs[SY_QK_K / 2];
    uint8_t qh[SY_QK_K / 8];
} sy_block_iq5_ks;
/* IQ2_KL: values in pairs, a 5-bit code per pair into sy_iq2kl_values. Sub-block b's 6-bit scale:
   low 4 in scales_l byte b % 4 nibble b / 4, high 2 in scales_h bits 2b; scale = S - 32. Pair p
   of sub-block b (values 32 b + 2 p, + 1): low 4 code bits in qs[16 (b / 2) + p] nibble b % 2,
   bit 4 in qh[p] bit b. */
typedef struct {
    uint16_t scales_h;
    uint8_t scales_l[SY_QK_K / 64];
    uint8_t qs[SY_QK_K / 4];
    uint8_t qh[SY_QK_K / 16];
} sy_block_iq2_kl;

/* ik_llama.cpp's trellis types: row-scaled (an f32 d in front of each row); each group of G
   values (G = 8, or 4 for IQ4_KT) is generated from a code c by
       x = c + offset; repeat G times: x = x * SY_KT_MULT (mod 2^32),
       v = sum of the 4 bytes of (x & 0x3F3F3F3F) - 126      (-126 .. 126)
   with offset SY_KT_OFFSET (IQ4_KT: + SY_KT_OFFSET4 where its sub-block's flag is set), and
   value = (d * sub-block scale) * v. */
#define SY_KT_MULT 0xCBAC1FEDu
#define SY_KT_OFFSET 4096u
#define SY_KT_OFFSET4 32768u
/* IQ2_KT: scales byte c = sub-block c's index into the first 16 sy_iq4k_values (low nibble) and
   sub-block c + 4's (high nibble); 32 little-endian u16 codes, code g giving values 8g .. 8g+7. */
typedef struct {
    uint8_t scales[SY_QK_K / 64];
    uint8_t ql[SY_QK_K / 4];
} sy_block_iq2_kt;
/* IQ3_KT: as IQ2_KT with unsigned scale nibbles (0..15) and |v|; sign of value n is bit n / 32
   of qh[n % 32]. */
typedef struct {
    uint8_t scales[SY_QK_K / 64];
    uint8_t ql[SY_QK_K / 4];
    uint8_t qh[SY_QK_K / 8];
} sy_block_iq3_kt;
/* IQ1_KT: 13-bit codes of groups g = 4 b + i of sub-block b: low 8 bits ql[g], bits 8-11 in qh
   byte 4 (b % 4) + i (low nibble for b < 4), bit 12 = bit 4 + i of sh[b]; scale index into the
   first 16 sy_iq4k_values in sh[b]'s low nibble. */
typedef struct {
    uint8_t sh[SY_QK_K / 32];
    uint8_t ql[SY_QK_K / 8];
    uint8_t qh[SY_QK_K / 16];
} sy_block_iq1_kt;
/* IQ4_KT: groups of 4; u32 shb[b] per sub-block: bit 0 = the extra offset, bits 1-7 = scale + 64,
   bits 8 + 3i .. 10 + 3i = bits 12-14 of group i's 15-bit code; low 8 bits of group j (= 8 b + i)
   in ql[j], bits 8-11 in qh[j % 32] (low nibble for j < 32). */
typedef struct {
    uint8_t shb[SY_QK_K / 8];
    uint8_t ql[SY_QK_K / 4];
    uint8_t qh[SY_QK_K / 8];
} sy_block_iq4_kt;

/* Their value tables: the base half, then the half an `extra` bit selects, which is the base
   plus a constant (SY_IQ*_SHIFT), so a dot product can use the base half and add the shift
   times the activations' sum. The INIT macros let device code make its own copies. */
#define SY_IQ2NL_SHIFT 5
#define SY_IQ3NL_SHIFT 4
#define SY_IQ4K_SHIFT 4
#define SY_IQ5NL_SHIFT 2
#define SY_IQ6NL_SHIFT 1
#define SY_IQ2NL_VALUES_INIT {-31, -13, 1, 17, -26, -8, 6, 22}
static const int8_t sy_iq2nl_values[8] = SY_IQ2NL_VALUES_INIT;
#define SY_IQ3NL_VALUES_INIT {-63, -40, -23, -10, 1,  13, 28, 47, \
                                           -59, -36, -19, -6,  5,  17, 32, 51}
static const int8_t sy_iq3nl_values[16] = SY_IQ3NL_VALUES_INIT;
#define SY_IQ4K_VALUES_INIT { \
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113, \
    -123, -100, -79, -61, -45, -31, -18, -6,  5, 17, 29, 42, 57, 73, 93, 117}
static const int8_t sy_iq4k_values[32] = SY_IQ4K_VALUES_INIT;
#define SY_IQ5NL_VALUES_INIT { \
    -126, -114, -103, -92, -83, -74, -65, -57, -50, -43, -36, -30, -24, -18, -12, -6, \
    -1,   5,    11,   17,  23,  29,  36,  43,  51,  59,  68,  77,  87,  97,  109, 121, \
    -124, -112, -101, -90, -81, -72, -63, -55, -48, -41, -34, -28, -22, -16, -10, -4, \
    1,    7,    13,   19,  25,  31,  38,  45,  53,  61,  70,  79,  89,  99,  111, 123}
static const int8_t sy_iq5nl_values[64] = SY_IQ5NL_VALUES_INIT;
#define SY_IQ6NL_VALUES_INIT { \
    -127, -121, -115, -109, -104, -98, -93, -88, -84, -79, -74, -70, -66, -62, -58, -54, \
    -51,  -47,  -44,  -40,  -37,  -34, -31, -28, -25, -22, -19, -16, -13, -11, -8,  -5, \
    -2,   0,    3,    6,    9,    12,  14,  17,  20,  23,  27,  30,  33,  36,  40,  44, \
    47,   51,   55,   59,   63,   68,  72,  77,  82,  87,  92,  98,  103, 109, 115, 121, \
    -126, -120, -114, -108, -103, -97, -92, -87, -83, -78, -73, -69, -65, -61, -57, -53, \
    -50,  -46,  -43,  -39,  -36,  -33, -30, -27, -24, -21, -18, -15, -12, -10, -7,  -4, \
    -1,   1,    4,    7,    10,   13,  15,  18,  21,  24,  28,  31,  34,  37,  41,  45, \
    48,   52,   56,   60,   64,   69,  73,  78,  83,  88,  93,  99,  104, 110, 116, 122}
static const int8_t sy_iq6nl_values[128] = SY_IQ6NL_VALUES_INIT;
/* IQ2_KL's 32 pairs of values (first in the low byte, second in the high one, as int8): 32 of
   the 64 pairs of the first 8 entries of sy_iq3nl_values. */
#define SY_IQ2KL_VALUES_INIT { \
    0xe9c1, 0x0dc1, 0xc1d8, 0xf6d8, 0x0dd8, 0x2fd8, 0xd8e9, 0xe9e9, 0x01e9, 0x0de9, 0x1ce9, \
    0xc1f6, 0x01f6, 0x0df6, 0x2ff6, 0xe901, 0xf601, 0x0101, 0x0d01, 0x1c01, 0xd80d, 0xe90d, \
    0xf60d, 0x010d, 0x0d0d, 0xc11c, 0xe91c, 0x011c, 0x1c1c, 0x2f1c, 0xe92f, 0x0d2f}
static const uint16_t sy_iq2kl_values[32] = SY_IQ2KL_VALUES_INIT;

#ifdef __cplusplus
static_assert(sizeof(sy_block_q4_0) == 18, "q4_0");
static_assert(sizeof(sy_block_q4_1) == 20, "q4_1");
static_assert(sizeof(sy_block_q5_0) == 22, "q5_0");
static_assert(sizeof(sy_block_q5_1) == 24, "q5_1");
static_assert(sizeof(sy_block_q8_0) == 34, "q8_0");
static_assert(sizeof(sy_block_q8_1) == 36, "q8_1");
static_assert(sizeof(sy_block_q2_K) == 84, "q2_K");
static_assert(sizeof(sy_block_q3_K) == 110, "q3_K");
static_assert(sizeof(sy_block_q4_K) == 144, "q4_K");
static_assert(sizeof(sy_block_q5_K) == 176, "q5_K");
static_assert(sizeof(sy_block_q6_K) == 210, "q6_K");
static_assert(sizeof(sy_block_q8_K) == 292, "q8_K");
static_assert(sizeof(sy_block_iq4_nl) == 18, "iq4_nl");
static_assert(sizeof(sy_block_iq4_xs) == 136, "iq4_xs");
static_assert(sizeof(sy_block_iq2_xxs) == 66, "iq2_xxs");
static_assert(sizeof(sy_block_iq2_xs) == 74, "iq2_xs");
static_assert(sizeof(sy_block_iq2_s) == 82, "iq2_s");
static_assert(sizeof(sy_block_iq3_xxs) == 98, "iq3_xxs");
static_assert(sizeof(sy_block_iq3_s) == 110, "iq3_s");
static_assert(sizeof(sy_block_iq1_s) == 50, "iq1_s");
static_assert(sizeof(sy_block_iq1_m) == 56, "iq1_m");
static_assert(sizeof(sy_block_iq1_m_r4_rows) == 56, "iq1_m_r4 rows");
static_assert(sizeof(sy_block_q6_0) == 26, "q6_0");
static_assert(sizeof(sy_block_iq2_k) == 76, "iq2_k");
static_assert(sizeof(sy_block_iq3_k) == 110, "iq3_k");
static_assert(sizeof(sy_block_iq4_k) == 144, "iq4_k");
static_assert(sizeof(sy_block_iq5_k) == 176, "iq5_k");
static_assert(sizeof(sy_block_iq6_k) == 212, "iq6_k");
static_assert(sizeof(sy_block_iq2_ks) == 70, "iq2_ks");
static_assert(sizeof(sy_block_iq3_ks) == 102, "iq3_ks");
static_assert(sizeof(sy_block_iq4_ks) == 136, "iq4_ks");
static_assert(sizeof(sy_block_iq4_kss) == 128, "iq4_kss");
static_assert(sizeof(sy_block_iq5_ks) == 168, "iq5_ks");
static_assert(sizeof(sy_block_iq2_kl) == 86, "iq2_kl");
static_assert(sizeof(sy_block_iq2_kt) == 68, "iq2_kt");
static_assert(sizeof(sy_block_iq3_kt) == 100, "iq3_kt");
static_assert(sizeof(sy_block_iq1_kt) == 56, "iq1_kt");
static_assert(sizeof(sy_block_iq4_kt) == 128, "iq4_kt");
}
#endif

#endif /* SWITCHYARD_QUANT_BLOCKS_H */
