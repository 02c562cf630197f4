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
/* The bits of IQ1_M's f16 d from its scales read as four u16 words sc[0..3]: the words' top
   nibbles, sc[0]'s lowest. */
#define SY_IQ1M_D_BITS(sc)                                                    \
    ((uint16_t)(((sc)[0] >> 12) | (((sc)[1] >> 8) & 0x00f0) |                 \
                (((sc)[2] >> 4) & 0x0f00) | ((sc)[3] & 0xf000)))

/* The non-linear 16-entry table of IQ4_NL and IQ4_XS. */
static const int8_t sy_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

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
}
#endif

#endif /* SWITCHYARD_QUANT_BLOCKS_H */
