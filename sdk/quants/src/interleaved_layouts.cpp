// Where every field of ik_llama.cpp's row-interleaved structs comes from
// (docs/ik-quants.md 6.1-6.3: its repack functions, restated). Notation: row k of the group,
// 32-value block ib of a super-block, element e (0..31) of that block, n = 32 ib + e within the
// super-block, i = e % 4 and q = e / 4. Base block offsets are those of quant_blocks.h.
#include "interleaved_layouts.hpp"

namespace sy::quants::detail {
namespace {

// "P4": the 4-bit indices of row k's block ib in the 64 bytes of that block position:
//   byte 4k + i      low/high nibble = e = i / i + 8
//   byte 4k + i + 16 low/high nibble = e = i + 16 / i + 24
//   byte 4k + i + 32 low/high nibble = e = i + 4 / i + 12
//   byte 4k + i + 48 low/high nibble = e = i + 20 / i + 28
int p4_byte(int k, int e) {
    const int q = e / 4;
    return 4 * k + e % 4 + 16 * ((q >> 2) & 1) + 32 * (q & 1);
}
int p4_shift(int e) {
    return 4 * ((e / 4 >> 1) & 1);
}
// "P2": 2-bit indices in 32 bytes per block position: byte 4k + i + 16 (q / 4) holds elements
// i, i + 4, i + 8, i + 12 (of the block's first or second half) in bit pairs 0, 2, 4, 6.
int p2_byte(int k, int e) {
    return 4 * k + e % 4 + 16 * (e / 16);
}
int p2_shift(int e) {
    return 2 * ((e / 4) % 4);
}
// Which nibble slot l (0..3) of P4 an element sits in (the 16-byte quarter of the 64), and high
// (1) or low nibble: what Q5_0_R4 / Q6_0_R4 index their high bits by.
int p4_quarter(int e) {
    const int q = e / 4;
    return ((q >> 2) & 1) + 2 * (q & 1);
}
int p4_high(int e) {
    return (e / 4 >> 1) & 1;
}

// Base index bits of element n of a 256-value block, per layout family.
// Q2_K / Q3_K / IQ2_K / IQ3_K planes: byte 32 (n / 128) + n % 32, shift 2 ((n / 32) % 4).
int plane_byte(int n) {
    return 32 * (n / 128) + n % 32;
}
int plane_shift(int n) {
    return 2 * ((n / 32) % 4);
}
// Nibbles per 32 values (IQ4_XS, IQ4_K, IQ4_KS; and Q4_0 per block): byte 16 (n / 32) + n % 16.
int nib32_byte(int n) {
    return 16 * (n / 32) + n % 16;
}
int nib32_shift(int n) {
    return 4 * ((n % 32) / 16);
}
// Nibbles per 64 values (Q4_K, Q5_K, IQ5_K, IQ5_KS): byte 32 (n / 64) + n % 32.
int nib64_byte(int n) {
    return 32 * (n / 64) + n % 32;
}
int nib64_shift(int n) {
    return 4 * ((n % 64) / 32);
}

// The 6-bit scale and min of Q4_K / Q5_K sub-block j from their 12 bytes at `at`: low 4 and
// high 2 bits of each, as (byte, shift).
struct Field {
    int byte, shift;
};
struct ScaleMin {
    Field sc_lo, sc_hi, m_lo, m_hi;
};
ScaleMin k4_scale_min(int at, int j) {
    if (j < 4) return {{at + j, 0}, {at + j, 4}, {at + j + 4, 0}, {at + j + 4, 4}};
    return {{at + j + 4, 0}, {at + j - 4, 6}, {at + j + 4, 4}, {at + j, 6}};
}

// The R4 layouts of Q4_K_R4 / Q5_K_R4's scales: is = 4 ib + k; low nibbles of scale and min in
// scales_l[is], the high bits in scales_h[is % 16], a 4-bit field at 4 (is / 16): scale's bits
// 0-1, min's 2-3.
void k4_scales(StructLinker& L, int k, int ib, int base_at, int scales_h, int scales_l) {
    const ScaleMin f = k4_scale_min(base_at, ib);
    const int is = 4 * ib + k;
    L.bits(k, f.sc_lo.byte, f.sc_lo.shift, scales_l + is, 0, 4);
    L.bits(k, f.m_lo.byte, f.m_lo.shift, scales_l + is, 4, 4);
    L.bits(k, f.sc_hi.byte, f.sc_hi.shift, scales_h + is % 16, 4 * (is / 16), 2);
    L.bits(k, f.m_hi.byte, f.m_hi.shift, scales_h + is % 16, 4 * (is / 16) + 2, 2);
}

// The 16-value sub-block scales of the IQ*_K_R4 types and Q3_K_R4: sub-block s = 2 ib + half of
// row k goes to is = 8 ib + k + 4 half; 4 bits at `low` + is % 32 nibble is / 32 and, where
// given, 2 high bits at `high` + is % 16 bits 2 (is / 16).
int r4_scale_index(int k, int s) {
    return 8 * (s / 2) + k + 4 * (s % 2);
}
// The `extra` bit of sub-block s: extra[k + 4 half] bit ib.
void r4_extra(StructLinker& L, int k, int base_extra, int struct_extra) {
    for (int s = 0; s < 16; ++s)
        L.bits(k, base_extra + s / 8, s % 8, struct_extra + k + 4 * (s % 2), s / 2, 1);
}
// The 6-bit scales of IQ4_K / IQ5_K (low 4 at base_l + s / 2 nibble s % 2, high 2 at
// base_h + s / 4 bits 2 (s % 4)).
void r4_scales6(StructLinker& L, int k, int base_h, int base_l, int scales_h, int scales_l) {
    for (int s = 0; s < 16; ++s) {
        const int is = r4_scale_index(k, s);
        L.bits(k, base_l + s / 2, 4 * (s % 2), scales_l + is % 32, 4 * (is / 32), 4);
        L.bits(k, base_h + s / 4, 2 * (s % 4), scales_h + is % 16, 2 * (is / 16), 2);
    }
}

void q4_0_r8(StructLinker& L) {  // d[8], qs[128]: row k byte 4l + i to 32 l + 4 k + i
    for (int k = 0; k < 8; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int j = 0; j < 16; ++j) L.bytes(k, 2 + j, 16 + 32 * (j / 4) + 4 * k + j % 4, 1);
    }
}

void q8_0_r8(StructLinker& L) {  // d[8], qs[256]
    for (int k = 0; k < 8; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int e = 0; e < 32; ++e)
            L.bytes(k, 2 + e, 16 + 128 * (e / 16) + 32 * ((e % 16) / 4) + 4 * k + e % 4, 1);
    }
}

void iq4_nl_r4(StructLinker& L) {  // d[4], qs[64] (P4)
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int e = 0; e < 32; ++e)
            L.bits(k, 2 + e % 16, 4 * (e / 16), 8 + p4_byte(k, e), p4_shift(e), 4);
    }
}

void q5_0_r4(StructLinker& L) {  // d[4], qh[16], qs[64]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int e = 0; e < 32; ++e) {
            L.bits(k, 6 + e % 16, 4 * (e / 16), 24 + p4_byte(k, e), p4_shift(e), 4);
            L.bits(k, 2 + e / 8, e % 8, 8 + 4 * k + e % 4, p4_quarter(e) + 4 * p4_high(e), 1);
        }
    }
}

void q6_0_r4(StructLinker& L) {  // d[4], qh[32], qs[64]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int e = 0; e < 32; ++e) {
            L.bits(k, 10 + e % 16, 4 * (e / 16), 40 + p4_byte(k, e), p4_shift(e), 4);
            const int j = e % 16, l = p4_quarter(e);
            L.bits(k, 2 + j % 8, 4 * (j / 8) + 2 * (e / 16), 8 + 4 * k + e % 4 + 16 * (l % 2),
                   2 * (l / 2) + 4 * p4_high(e), 2);
        }
    }
}

void iq4_xs_r8(StructLinker& L) {  // d[8], scales_h[16], scales_l[32], qs[1024]
    for (int k = 0; k < 8; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int ib = 0; ib < 8; ++ib) {
            const int is = 8 * ib + k;
            L.bits(k, 4 + ib / 2, 4 * (ib % 2), 32 + is % 32, 4 * (is / 32), 4);
            L.bits(k, 2 + ib / 4, 2 * (ib % 4), 16 + is % 16, 2 * (is / 16), 2);
            for (int e = 0; e < 32; ++e) {  // byte 32 l + 4 k + i: elements 8 l + i, + 4
                const int l = e / 8, r = e % 8;
                L.bits(k, 8 + nib32_byte(32 * ib + e), nib32_shift(32 * ib + e),
                       64 + 128 * ib + 32 * l + 4 * k + r % 4, 4 * (r / 4), 4);
            }
        }
    }
}

void q4_k_r4(StructLinker& L) {  // d[8] (d, then dmin), scales_h[16], scales_l[32], qs[512]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        L.bytes(k, 2, 2 * (k + 4), 2);
        for (int ib = 0; ib < 8; ++ib) {
            k4_scales(L, k, ib, 4, 16, 32);
            for (int e = 0; e < 32; ++e)
                L.bits(k, 16 + nib64_byte(32 * ib + e), nib64_shift(32 * ib + e),
                       64 + 64 * ib + p4_byte(k, e), p4_shift(e), 4);
        }
    }
}

void q5_k_r4(StructLinker& L) {  // d[8], scales_h[16], scales_l[32], qh[128], qs[512]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        L.bytes(k, 2, 2 * (k + 4), 2);
        for (int ib = 0; ib < 8; ++ib) {
            k4_scales(L, k, ib, 4, 16, 32);
            for (int e = 0; e < 32; ++e) {
                const int n = 32 * ib + e, q = e / 4;
                L.bits(k, 48 + nib64_byte(n), nib64_shift(n), 192 + 64 * ib + p4_byte(k, e),
                       p4_shift(e), 4);
                // qh[16 ib + 4 k + i] bits: elements i, i+8, i+4, i+12, i+16, i+24, i+20, i+28
                L.bits(k, 16 + n % 32, n / 32, 64 + 16 * ib + 4 * k + e % 4,
                       4 * (q / 4) + 2 * (q % 2) + (q / 2) % 2, 1);
            }
        }
    }
}

void q6_k_r4(StructLinker& L) {  // d[4], scales[64], qh[256], ql[512]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 208, 2 * k, 2);
        for (int ib = 0; ib < 8; ++ib) {
            L.bytes(k, 192 + 2 * ib, 8 + 8 * ib + k, 1);
            L.bytes(k, 192 + 2 * ib + 1, 8 + 8 * ib + k + 4, 1);
            for (int e = 0; e < 32; ++e) {
                const int n = 32 * ib + e, h = n / 128, m = n % 128, q = e / 4;
                L.bits(k, 64 * h + m % 64, 4 * (m / 64), 328 + 64 * ib + p4_byte(k, e), p4_shift(e),
                       4);
                // qh[32 ib + 4 k + i (+ 16)] pairs: elements i, i+8, i+4, i+12 (+ 16)
                L.bits(k, 128 + 32 * h + m % 32, 2 * (m / 32),
                       72 + 32 * ib + 4 * k + e % 4 + 16 * (q / 4), 2 * (2 * (q % 2) + (q % 4) / 2),
                       2);
            }
        }
    }
}

void q2_k_r4(StructLinker& L) {  // d[8] (d, then dmin), scales[64], qs[256]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 80, 2 * k, 2);
        L.bytes(k, 82, 2 * (k + 4), 2);
        for (int s = 0; s < 16; ++s) L.bytes(k, s, 16 + 4 * s + k, 1);
        for (int ib = 0; ib < 8; ++ib)
            for (int e = 0; e < 32; ++e)
                L.bits(k, 16 + plane_byte(32 * ib + e), plane_shift(32 * ib + e),
                       80 + 32 * ib + p2_byte(k, e), p2_shift(e), 2);
    }
}

void q3_k_r4(StructLinker& L) {  // d[4], scales_h[16], scales_l[32], qh[128], qs[256]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 108, 2 * k, 2);
        for (int s = 0; s < 16; ++s) {  // Q3_K's 6-bit scales in its 12 bytes at 96
            const int is = r4_scale_index(k, s);
            if (s < 8)
                L.bits(k, 96 + s, 0, 24 + is % 32, 4 * (is / 32), 4);
            else
                L.bits(k, 96 + s - 8, 4, 24 + is % 32, 4 * (is / 32), 4);
            L.bits(k, 104 + s % 4, 2 * (s / 4), 8 + is % 16, 2 * (is / 16), 2);
        }
        for (int ib = 0; ib < 8; ++ib)
            for (int e = 0; e < 32; ++e) {
                const int n = 32 * ib + e;
                L.bits(k, 32 + plane_byte(n), plane_shift(n), 184 + 32 * ib + p2_byte(k, e),
                       p2_shift(e), 2);
                L.bits(k, n % 32, n / 32, 56 + 16 * ib + 4 * k + e % 4, e / 4, 1);
            }
    }
}

void iq2_k_r4(StructLinker& L) {  // d[4], extra[8], scales[32], qs[256]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        r4_extra(L, k, 2, 8);
        for (int s = 0; s < 16; ++s) {
            const int is = r4_scale_index(k, s);
            L.bits(k, 4 + s / 2, 4 * (s % 2), 16 + is % 32, 4 * (is / 32), 4);
        }
        for (int ib = 0; ib < 8; ++ib)
            for (int e = 0; e < 32; ++e)
                L.bits(k, 12 + plane_byte(32 * ib + e), plane_shift(32 * ib + e),
                       48 + 32 * ib + p2_byte(k, e), p2_shift(e), 2);
    }
}

void iq3_k_r4(StructLinker& L) {  // d[4], extra[8], scales_h[8], scales_l[32], qs[256], qh[128]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        r4_extra(L, k, 2, 8);
        for (int s = 0; s < 16; ++s) {
            const int is = r4_scale_index(k, s);
            L.bits(k, 6 + s / 2, 4 * (s % 2), 24 + is % 32, 4 * (is / 32), 4);
            L.bits(k, 4 + s / 8, s % 8, 16 + is % 8, is / 8, 1);  // the scale's sign
        }
        for (int ib = 0; ib < 8; ++ib)
            for (int e = 0; e < 32; ++e) {
                const int n = 32 * ib + e;
                L.bits(k, 14 + plane_byte(n), plane_shift(n), 56 + 32 * ib + p2_byte(k, e),
                       p2_shift(e), 2);
                L.bits(k, 78 + n % 32, n / 32, 312 + 16 * ib + 4 * k + e % 4, e / 4, 1);
            }
    }
}

void iq4_k_r4(StructLinker& L) {  // d[4], extra[8], scales_h[16], scales_l[32], qs[512]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        r4_extra(L, k, 2, 8);
        r4_scales6(L, k, 4, 8, 16, 32);
        for (int ib = 0; ib < 8; ++ib)
            for (int e = 0; e < 32; ++e)
                L.bits(k, 16 + nib32_byte(32 * ib + e), nib32_shift(32 * ib + e),
                       64 + 64 * ib + p4_byte(k, e), p4_shift(e), 4);
    }
}

void iq5_k_r4(StructLinker& L) {  // d[4], extra[8], scales_h[16], scales_l[32], qs[512], qh[128]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        r4_extra(L, k, 2, 8);
        r4_scales6(L, k, 4, 8, 16, 32);
        for (int ib = 0; ib < 8; ++ib)
            for (int e = 0; e < 32; ++e) {
                const int n = 32 * ib + e, q = e / 4;
                L.bits(k, 16 + nib64_byte(n), nib64_shift(n), 64 + 64 * ib + p4_byte(k, e),
                       p4_shift(e), 4);
                // qh[16 ib + 4 k + i] bits: elements i, i+8, i+16, i+24, i+4, i+12, i+20, i+28
                L.bits(k, 144 + n % 32, n / 32, 576 + 16 * ib + 4 * k + e % 4, 4 * (q % 2) + q / 2,
                       1);
            }
    }
}

void iq4_ks_r4(StructLinker& L) {  // (row scales in front of the group) scales[32], qs[512]
    for (int k = 0; k < 4; ++k)
        for (int ib = 0; ib < 8; ++ib) {
            L.bytes(k, ib, 4 * ib + k, 1);
            for (int e = 0; e < 32; ++e)
                L.bits(k, 8 + nib32_byte(32 * ib + e), nib32_shift(32 * ib + e),
                       32 + 64 * ib + p4_byte(k, e), p4_shift(e), 4);
        }
}

void iq5_ks_r4(StructLinker& L) {  // (row scales in front) scales[32], qs[512], qh[128]
    for (int k = 0; k < 4; ++k)
        for (int ib = 0; ib < 8; ++ib) {
            L.bytes(k, ib, 4 * ib + k, 1);
            for (int e = 0; e < 32; ++e) {
                const int n = 32 * ib + e, q = e / 4;
                L.bits(k, 8 + nib64_byte(n), nib64_shift(n), 32 + 64 * ib + p4_byte(k, e),
                       p4_shift(e), 4);
                L.bits(k, 136 + n % 32, n / 32, 544 + 16 * ib + 4 * k + e % 4, 4 * (q % 2) + q / 2,
                       1);
            }
        }
}

// The codebook types' interleaved structs. Base blocks (quant_blocks.h): IQ2_XXS d, then per 32
// values 4 grid bytes and a u32 of four 7-bit sign indices (bits 7 m) and a 4-bit scale (bits
// 28-31) at 2 + 8 ib; IQ3_XXS d, 64 grid bytes (8 per ib), that u32 at 66 + 4 ib; IQ2_XS d, u16
// qs at 2 (9-bit index | sign index << 9), scales at 66; IQ2_S d, qs at 2, signs at 34, qh at
// 66, scales at 74; IQ3_S d, qs at 2, qh at 66, signs at 74, scales at 106.

// `sas` of IQ2_XXS_R4 / IQ3_XXS_R4: u32 [4 ib + k] whose byte m is group m's scrambled sign
// index << 1 | bit m of the scale.
void xxs_sas(StructLinker& L, int k, int ib, int base_u32, int sas) {
    const int at = sas + 4 * (4 * ib + k);
    for (int m = 0; m < 4; ++m) {
        L.bits(k, base_u32, 7 * m, at + m, 1, 7);
        L.bits(k, base_u32, 28 + m, at + m, 0, 1);
        L.scramble(at + m);
    }
}

void iq2_xxs_r4(StructLinker& L) {  // d[4], sas[128], qs[128]: qs[16 ib + 4 k + i]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int ib = 0; ib < 8; ++ib) {
            for (int i = 0; i < 4; ++i) L.bytes(k, 2 + 8 * ib + i, 136 + 16 * ib + 4 * k + i, 1);
            xxs_sas(L, k, ib, 2 + 8 * ib + 4, 8);
        }
    }
}

void iq3_xxs_r4(StructLinker& L) {  // d[4], sas[128], qs[256]: qs[32 ib + 8 k + i]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int ib = 0; ib < 8; ++ib) {
            for (int i = 0; i < 8; ++i) L.bytes(k, 2 + 8 * ib + i, 136 + 32 * ib + 8 * k + i, 1);
            xxs_sas(L, k, ib, 66 + 4 * ib, 8);
        }
    }
}

void iq2_xs_r4(StructLinker& L) {  // d[4], u16 qs[128], scales[32]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int ib = 0; ib < 8; ++ib) {
            for (int i = 0; i < 4; ++i) {  // qs[16 ib + 4 k + i] = index | scrambled sign << 9
                const int from = 2 + 2 * (4 * ib + i), to = 8 + 2 * (16 * ib + 4 * k + i);
                L.bytes(k, from, to, 2);
                L.scramble(to + 1);
            }
            L.bytes(k, 66 + ib, 264 + 4 * ib + k, 1);
        }
    }
}

void iq2_s_r4(StructLinker& L) {  // d[4], qs[128], qh[32], signs[128], scales[32]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int ib = 0; ib < 8; ++ib) {
            for (int i = 0; i < 4; ++i) {
                L.bytes(k, 2 + 4 * ib + i, 8 + 16 * ib + 4 * k + i, 1);
                L.bytes(k, 34 + 4 * ib + i, 168 + 16 * ib + 4 * k + i, 1);
            }
            L.bytes(k, 66 + ib, 136 + 4 * ib + k, 1);
            L.bytes(k, 74 + ib, 296 + 4 * ib + k, 1);
        }
    }
}

void iq3_s_r4(StructLinker& L) {  // d[4], qs[256], qh[32], signs[128], scales[16]
    for (int k = 0; k < 4; ++k) {
        L.bytes(k, 0, 2 * k, 2);
        for (int ib = 0; ib < 8; ++ib) {
            for (int i = 0; i < 4; ++i) {  // grid bytes i and i + 4 at 32 ib + 8 i + k (+ 4)
                L.bytes(k, 2 + 8 * ib + i, 8 + 32 * ib + 8 * i + k, 1);
                L.bytes(k, 2 + 8 * ib + i + 4, 8 + 32 * ib + 8 * i + k + 4, 1);
            }
            L.bytes(k, 66 + ib, 264 + 4 * ib + k, 1);
            // signs[16 ib + 4 k + i] bits 2 m, 2 m + 1 = bits i, 4 + i of sign byte m
            for (int m = 0; m < 4; ++m)
                for (int i = 0; i < 4; ++i) {
                    L.bits(k, 74 + 4 * ib + m, i, 296 + 16 * ib + 4 * k + i, 2 * m, 1);
                    L.bits(k, 74 + 4 * ib + m, 4 + i, 296 + 16 * ib + 4 * k + i, 2 * m + 1, 1);
                }
            const int l = 4 * ib + k;  // the 32-value block's scale nibble
            L.bits(k, 106 + ib / 2, 4 * (ib % 2), 424 + l % 16, 4 * (l / 16), 4);
        }
    }
}

// IQ1_M_R4: per 32 values a 28-byte block of the 4 rows, qs[16], qh[8], scales[4] (the rows' f16
// scales in front of the group); one 256-value position is 8 of them. Row k's half h (16 values,
// groups 2 h and 2 h + 1) of 32-block b: qs[8 h + k] and qs[8 h + k + 4], qh[4 h + k]; scales[k]
// its two 4-bit scales. The rows' block (sy_block_iq1_m_r4_rows): qs at 0, qh at 32, scales 48.
void iq1_m_r4(StructLinker& L) {
    for (int k = 0; k < 4; ++k)
        for (int b = 0; b < 8; ++b) {
            const int at = 28 * b;
            for (int h = 0; h < 2; ++h) {
                L.bytes(k, 4 * b + 2 * h, at + 8 * h + k, 1);
                L.bytes(k, 4 * b + 2 * h + 1, at + 8 * h + k + 4, 1);
                L.bytes(k, 32 + 2 * b + h, at + 16 + 4 * h + k, 1);
            }
            L.bytes(k, 48 + b, at + 24 + k, 1);
        }
}

void bf16_r16(StructLinker& L) {  // per 2 values: row k's two at 4 k
    for (int k = 0; k < 16; ++k) L.bytes(k, 0, 4 * k, 4);
}

}  // namespace

void describe(int32_t id, StructLinker& link) {
    switch (id) {
        case 202: return q4_0_r8(link);
        case 206: return q5_0_r4(link);
        case 208: return q8_0_r8(link);
        case 210: return q2_k_r4(link);
        case 211: return q3_k_r4(link);
        case 212: return q4_k_r4(link);
        case 213: return q5_k_r4(link);
        case 214: return q6_k_r4(link);
        case 216: return iq2_xxs_r4(link);
        case 217: return iq2_xs_r4(link);
        case 218: return iq3_xxs_r4(link);
        case 221: return iq3_s_r4(link);
        case 222: return iq2_s_r4(link);
        case 229: return iq1_m_r4(link);
        case 220: return iq4_nl_r4(link);
        case 223: return iq4_xs_r8(link);
        case 230: return bf16_r16(link);
        case 233: return q6_0_r4(link);
        case 337: return iq2_k_r4(link);
        case 338: return iq3_k_r4(link);
        case 339: return iq4_k_r4(link);
        case 340: return iq5_k_r4(link);
        case 344: return iq4_ks_r4(link);
        case 352: return iq5_ks_r4(link);
        default:
            throw std::logic_error("interleaved layout: no description of type " +
                                   std::to_string(id));
    }
}

}  // namespace sy::quants::detail
