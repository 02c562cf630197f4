// dequantize_row against the block formulas of quant_blocks.h, element by element: an
// independent per-element decoder (index arithmetic rather than the library's loops) on random
// bytes with sane scales, so layout mistakes in either direction show up.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/iquant_grids.h"
#include "switchyard/quant_blocks.h"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace {

using sy::sdk::fp16_to_f32;

// Element k of one block.
using ElementFormula = std::function<float(const uint8_t* block, int k)>;

template <typename Block>
const Block& as(const uint8_t* p) {
    return *reinterpret_cast<const Block*>(p);
}

int nibble(const uint8_t* qs, int k) {  // elements j and j + 16 share byte j
    return k < 16 ? qs[k] & 0xF : qs[k - 16] >> 4;
}

int bit(uint32_t word, int k) {
    return int(word >> k) & 1;
}

void k4_scale_min(const uint8_t* s, int j, int& sc, int& m) {
    if (j < 4) {
        sc = s[j] & 63;
        m = s[j + 4] & 63;
    } else {
        sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
        m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

// The 2-bit field of element k in the K-quant qs layout: 128-element halves of 32 bytes, field
// (k % 128) / 32 of byte k % 32.
int k_crumb(const uint8_t* qs, int k) {
    return (qs[(k / 128) * 32 + k % 32] >> (2 * ((k % 128) / 32))) & 3;
}

// The nibble of element k in Q4_K/Q5_K: 64-element groups of 32 bytes, low nibble first.
int k_nibble(const uint8_t* qs, int k) {
    const uint8_t byte = qs[(k / 64) * 32 + k % 32];
    return (k % 64) < 32 ? byte & 0xF : byte >> 4;
}

// Byte e of codebook entry i (8-byte and 4-byte grids).
int grid8(const uint64_t* grid, int i, int e) {
    return uint8_t(grid[i] >> (8 * e));
}
int grid4(const uint32_t* grid, int i, int e) {
    return uint8_t(grid[i] >> (8 * e));
}
float sign(int negative) {
    return negative ? -1.f : 1.f;
}
uint32_t u32_at(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// The i-quants, element k of a 256-value block: sub-block j = k / 32, r = k % 32, 8-value group
// g = r / 8, e = r % 8. Each expression keeps ggml's operation order, so the library's results
// must be equal, not just near (see DequantizeMatchesTheFormulaPerElement).
float iquant_formula(int32_t type, const uint8_t* p, int k) {
    const int j = k / 32, r = k % 32, g = r / 8, e = r % 8;
    switch (type) {
        case SY_TYPE_IQ2_XXS: {
            const auto& b = as<sy_block_iq2_xxs>(p);
            const uint32_t a0 = u32_at(reinterpret_cast<const uint8_t*>(b.qs + 4 * j));
            const uint32_t a1 = u32_at(reinterpret_cast<const uint8_t*>(b.qs + 4 * j + 2));
            const float db = fp16_to_f32(b.d) * (0.5f + float(a1 >> 28)) * 0.25f;
            const int s = sy_ksigns_iq2xs[(a1 >> (7 * g)) & 127] >> e & 1;
            return db * float(grid8(sy_iq2xxs_grid, int(a0 >> (8 * g)) & 255, e)) * sign(s);
        }
        case SY_TYPE_IQ2_XS: {
            const auto& b = as<sy_block_iq2_xs>(p);
            const uint16_t q = b.qs[4 * j + g];
            const int ls = g < 2 ? b.scales[j] & 15 : b.scales[j] >> 4;
            const float db = fp16_to_f32(b.d) * (0.5f + float(ls)) * 0.25f;
            const int s = sy_ksigns_iq2xs[q >> 9] >> e & 1;
            return db * float(grid8(sy_iq2xs_grid, q & 511, e)) * sign(s);
        }
        case SY_TYPE_IQ2_S: {
            const auto& b = as<sy_block_iq2_s>(p);
            const int index = b.qs[4 * j + g] | ((b.qh[j] >> (2 * g)) & 3) << 8;
            const int ls = g < 2 ? b.scales[j] & 15 : b.scales[j] >> 4;
            const float db = fp16_to_f32(b.d) * (0.5f + float(ls)) * 0.25f;
            const int s = b.qs[32 + 4 * j + g] >> e & 1;
            return db * float(grid8(sy_iq2s_grid, index, e)) * sign(s);
        }
        case SY_TYPE_IQ3_XXS: {
            const auto& b = as<sy_block_iq3_xxs>(p);
            const uint32_t aux = u32_at(b.qs + 64 + 4 * j);
            const float db = fp16_to_f32(b.d) * (0.5f + float(aux >> 28)) * 0.5f;
            const int s = sy_ksigns_iq2xs[(aux >> (7 * g)) & 127] >> e & 1;
            return db * float(grid4(sy_iq3xxs_grid, b.qs[8 * j + r / 4], r % 4)) * sign(s);
        }
        case SY_TYPE_IQ3_S: {
            const auto& b = as<sy_block_iq3_s>(p);
            const int h = r / 4;
            const int index = b.qs[8 * j + h] | ((b.qh[j] >> h) & 1) << 8;
            const float db =
                fp16_to_f32(b.d) * float(1 + 2 * ((b.scales[j / 2] >> (4 * (j % 2))) & 15));
            const int s = b.signs[4 * j + g] >> e & 1;
            return db * float(grid4(sy_iq3s_grid, index, r % 4)) * sign(s);
        }
        case SY_TYPE_IQ1_S: {
            const auto& b = as<sy_block_iq1_s>(p);
            const uint16_t qh = b.qh[j];
            const int index = b.qs[4 * j + g] | ((qh >> (3 * g)) & 7) << 8;
            const float dl = fp16_to_f32(b.d) * float(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA;
            return dl * (float(int8_t(grid8(sy_iq1s_grid, index, e))) + delta);
        }
        case SY_TYPE_IQ1_M: {
            const auto& b = as<sy_block_iq1_m>(p);
            uint16_t sc[4];
            std::memcpy(sc, b.scales, 8);
            const uint16_t dh = uint16_t((sc[0] >> 12) | (sc[1] >> 12) << 4 | (sc[2] >> 12) << 8 |
                                         (sc[3] >> 12) << 12);
            const int m = k / 16, g8 = k / 8;
            const float dl = fp16_to_f32(dh) * float(2 * ((sc[m / 4] >> (3 * (m % 4))) & 7) + 1);
            const uint8_t qh = b.qh[g8 / 2];
            const int high = g8 % 2 == 0 ? qh & 7 : (qh >> 4) & 7;
            const int negative = g8 % 2 == 0 ? qh & 0x08 : qh & 0x80;
            const float delta = negative ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA;
            return dl * (float(int8_t(grid8(sy_iq1s_grid, b.qs[g8] | high << 8, e))) + delta);
        }
        default: ADD_FAILURE() << "no formula for type " << type; return 0;
    }
}

// ik_llama.cpp's IQ*_K (docs/ik-quants.md): d * scale(sub-block k / 16) * table[extra half][index].
float ik_formula(int32_t type, const uint8_t* p, int k) {
    const int s = k / 16;
    // 2 bits of element k in the Q2_K plane order, and one bit of k in a 32-byte bit plane.
    const auto plane2 = [&](const uint8_t* q) {
        return (q[32 * (k / 128) + k % 32] >> (2 * ((k / 32) % 4))) & 3;
    };
    const auto plane1 = [&](const uint8_t* q) { return (q[k % 32] >> (k / 32)) & 1; };
    // The low nibble of element k where each `group` values share group / 2 bytes.
    const auto nib = [&](const uint8_t* q, int group) {
        const uint8_t byte = q[(k / group) * (group / 2) + k % (group / 2)];
        return k % group < group / 2 ? byte & 0xF : byte >> 4;
    };
    const auto six_bit = [&](const uint8_t* h, const uint8_t* l) {
        const int lo = (l[s / 2] >> (4 * (s % 2))) & 0xF, hi = (h[s / 4] >> (2 * (s % 4))) & 3;
        return (lo | hi << 4) - 32;
    };
    switch (type) {
        case SY_TYPE_IQ2_K: {
            const auto& b = as<sy_block_iq2_k>(p);
            const int scale = ((b.scales[s / 2] >> (4 * (s % 2))) & 0xF) - 8;
            const int e = (b.extra >> s) & 1;
            return fp16_to_f32(b.d) * float(scale) * float(sy_iq2nl_values[4 * e + plane2(b.qs)]);
        }
        case SY_TYPE_IQ3_K: {
            const auto& b = as<sy_block_iq3_k>(p);
            int scale = 2 * ((b.scales_l[s / 2] >> (4 * (s % 2))) & 0xF) + 1;
            if ((b.scales_h >> s) & 1) scale = -scale;
            const int e = (b.extra >> s) & 1;
            const int index = plane2(b.qs) | plane1(b.qh) << 2;
            return fp16_to_f32(b.d) * float(scale) * float(sy_iq3nl_values[8 * e + index]);
        }
        case SY_TYPE_IQ4_K: {
            const auto& b = as<sy_block_iq4_k>(p);
            const int e = (b.extra >> s) & 1;
            return fp16_to_f32(b.d) * float(six_bit(b.scales_h, b.scales_l)) *
                   float(sy_iq4k_values[16 * e + nib(b.qs, 32)]);
        }
        case SY_TYPE_IQ5_K: {
            const auto& b = as<sy_block_iq5_k>(p);
            const int e = (b.extra >> s) & 1;
            const int index = nib(b.qs, 64) | plane1(b.qh) << 4;
            return fp16_to_f32(b.d) * float(six_bit(b.scales_h, b.scales_l)) *
                   float(sy_iq5nl_values[32 * e + index]);
        }
        case SY_TYPE_IQ6_K: {
            const auto& b = as<sy_block_iq6_k>(p);
            const int e = (b.extra >> s) & 1;
            const int index = nib(b.qs, 64) | plane2(b.qh) << 4;
            return fp16_to_f32(b.d) * float(b.scales[s]) * float(sy_iq6nl_values[64 * e + index]);
        }
        default: return iquant_formula(type, p, k);
    }
}

float formula(int32_t type, const uint8_t* p, int k) {
    switch (type) {
        case SY_TYPE_Q4_0: {
            const auto& b = as<sy_block_q4_0>(p);
            return float(nibble(b.qs, k) - 8) * fp16_to_f32(b.d);
        }
        case SY_TYPE_Q4_1: {
            const auto& b = as<sy_block_q4_1>(p);
            return float(nibble(b.qs, k)) * fp16_to_f32(b.d) + fp16_to_f32(b.m);
        }
        case SY_TYPE_Q5_0: {
            const auto& b = as<sy_block_q5_0>(p);
            const uint32_t qh = uint32_t(b.qh[0]) | uint32_t(b.qh[1]) << 8 |
                                uint32_t(b.qh[2]) << 16 | uint32_t(b.qh[3]) << 24;
            return float((nibble(b.qs, k) | bit(qh, k) << 4) - 16) * fp16_to_f32(b.d);
        }
        case SY_TYPE_Q5_1: {
            const auto& b = as<sy_block_q5_1>(p);
            const uint32_t qh = uint32_t(b.qh[0]) | uint32_t(b.qh[1]) << 8 |
                                uint32_t(b.qh[2]) << 16 | uint32_t(b.qh[3]) << 24;
            return float(nibble(b.qs, k) | bit(qh, k) << 4) * fp16_to_f32(b.d) + fp16_to_f32(b.m);
        }
        case SY_TYPE_Q8_0: {
            const auto& b = as<sy_block_q8_0>(p);
            return float(b.qs[k]) * fp16_to_f32(b.d);
        }
        case SY_TYPE_Q8_1: {
            const auto& b = as<sy_block_q8_1>(p);
            return float(b.qs[k]) * fp16_to_f32(b.d);
        }
        case SY_TYPE_Q2_K: {
            const auto& b = as<sy_block_q2_K>(p);
            const int sc = b.scales[k / 16];
            return fp16_to_f32(b.d) * float(sc & 0xF) * float(k_crumb(b.qs, k)) -
                   fp16_to_f32(b.dmin) * float(sc >> 4);
        }
        case SY_TYPE_Q3_K: {
            const auto& b = as<sy_block_q3_K>(p);
            const int j = k / 16;
            // 6-bit scales: low 4 bits in nibbles of bytes 0..7, high 2 bits in bytes 8..11.
            const int low = (b.scales[j % 8] >> (4 * (j / 8))) & 0xF;
            const int high = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
            const int sc = (low | high << 4) - 32;
            const int hbit = (b.hmask[k % 32] >> (k / 32)) & 1;
            const int qv = k_crumb(b.qs, k) - (hbit ? 0 : 4);
            return fp16_to_f32(b.d) * float(sc) * float(qv);
        }
        case SY_TYPE_Q4_K: {
            const auto& b = as<sy_block_q4_K>(p);
            int sc, m;
            k4_scale_min(b.scales, k / 32, sc, m);
            return fp16_to_f32(b.d) * float(sc) * float(k_nibble(b.qs, k)) -
                   fp16_to_f32(b.dmin) * float(m);
        }
        case SY_TYPE_Q5_K: {
            const auto& b = as<sy_block_q5_K>(p);
            int sc, m;
            k4_scale_min(b.scales, k / 32, sc, m);
            const int hbit = (b.qh[k % 32] >> (k / 32)) & 1;  // sub-block k / 32 uses bit k / 32
            return fp16_to_f32(b.d) * float(sc) * float(k_nibble(b.qs, k) + 16 * hbit) -
                   fp16_to_f32(b.dmin) * float(m);
        }
        case SY_TYPE_Q6_K: {
            const auto& b = as<sy_block_q6_K>(p);
            const int half = k / 128, r = k % 128, quarter = r / 32, l = r % 32;
            const uint8_t lo_byte = b.ql[half * 64 + (quarter % 2) * 32 + l];
            const int lo = quarter < 2 ? lo_byte & 0xF : lo_byte >> 4;
            const int hi = (b.qh[half * 32 + l] >> (2 * quarter)) & 3;
            return fp16_to_f32(b.d) * float(b.scales[k / 16]) * float((lo | hi << 4) - 32);
        }
        case SY_TYPE_Q8_K: {
            const auto& b = as<sy_block_q8_K>(p);
            return b.d * float(b.qs[k]);
        }
        case SY_TYPE_IQ4_NL: {
            const auto& b = as<sy_block_iq4_nl>(p);
            return fp16_to_f32(b.d) * float(sy_kvalues_iq4nl[nibble(b.qs, k)]);
        }
        case SY_TYPE_IQ4_XS: {
            const auto& b = as<sy_block_iq4_xs>(p);
            const int j = k / 32;
            const int ls =
                ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4);
            return fp16_to_f32(b.d) * float(ls - 32) *
                   float(sy_kvalues_iq4nl[nibble(b.qs + 16 * j, k % 32)]);
        }
        case SY_TYPE_Q6_0: {
            const auto& b = as<sy_block_q6_0>(p);
            const int j = k % 16, upper = k / 16;  // values j and j + 16 share qs[j]
            const int low = upper ? b.qs[j] >> 4 : b.qs[j] & 0xF;
            const int high = (b.qh[j % 8] >> (4 * (j / 8) + 2 * upper)) & 3;
            return float((low | high << 4) - 32) * fp16_to_f32(b.d);
        }
        default: return ik_formula(type, p, k);
    }
}

// Random bytes with the halves (d, dmin, m) replaced by small finite values.
std::vector<uint8_t> random_blocks(int32_t type, int blocks, uint32_t seed) {
    const sy_dtype_traits t = sy_dtype_info(type);
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(size_t(blocks * t.type_size));
    for (auto& b : bytes) b = uint8_t(rng());
    std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
    auto set_half = [&](uint8_t* p) {
        const uint16_t h = sy::sdk::f32_to_fp16(scale(rng));
        std::memcpy(p, &h, 2);
    };
    for (int i = 0; i < blocks; ++i) {
        uint8_t* b = bytes.data() + size_t(i * t.type_size);
        switch (type) {
            case SY_TYPE_Q4_0:
            case SY_TYPE_Q5_0:
            case SY_TYPE_Q8_0:
            case SY_TYPE_IQ4_NL:
            case SY_TYPE_IQ4_XS:
            case SY_TYPE_IQ2_XXS:
            case SY_TYPE_IQ2_XS:
            case SY_TYPE_IQ2_S:
            case SY_TYPE_IQ3_XXS:
            case SY_TYPE_IQ3_S:
            case SY_TYPE_IQ1_S:
            case SY_TYPE_Q6_0:
            case SY_TYPE_IQ2_K:
            case SY_TYPE_IQ3_K:
            case SY_TYPE_IQ4_K:
            case SY_TYPE_IQ5_K:
            case SY_TYPE_IQ6_K: set_half(b); break;
            case SY_TYPE_IQ1_M: {  // the f16 scale in the top nibbles of the 4 scale words
                const uint16_t h = sy::sdk::f32_to_fp16(scale(rng));
                uint16_t sc[4];
                std::memcpy(sc, b + 48, 8);
                for (int w = 0; w < 4; ++w)
                    sc[w] = uint16_t((sc[w] & 0x0fff) | ((h >> (4 * w)) & 15) << 12);
                std::memcpy(b + 48, sc, 8);
                break;
            }
            case SY_TYPE_Q4_1:
            case SY_TYPE_Q5_1:
            case SY_TYPE_Q8_1:
            case SY_TYPE_Q4_K:
            case SY_TYPE_Q5_K:
                set_half(b);
                set_half(b + 2);
                break;
            case SY_TYPE_Q2_K:
                set_half(b + 80);
                set_half(b + 82);
                break;
            case SY_TYPE_Q3_K: set_half(b + 108); break;
            case SY_TYPE_Q6_K: set_half(b + 208); break;
            case SY_TYPE_Q8_K: {
                const float d = scale(rng);
                std::memcpy(b, &d, 4);
                break;
            }
            default: break;
        }
    }
    return bytes;
}

// Types compared for equality: their formulas round once (ik's: d times an integer scale is
// exact in f32, so any order gives the same float).
bool is_iquant(int32_t type) {
    return type == SY_TYPE_IQ2_XXS || type == SY_TYPE_IQ2_XS || type == SY_TYPE_IQ2_S ||
           type == SY_TYPE_IQ3_XXS || type == SY_TYPE_IQ3_S || type == SY_TYPE_IQ1_S ||
           type == SY_TYPE_IQ1_M || type == SY_TYPE_Q6_0 || type == SY_TYPE_IQ2_K ||
           type == SY_TYPE_IQ3_K || type == SY_TYPE_IQ4_K || type == SY_TYPE_IQ5_K ||
           type == SY_TYPE_IQ6_K;
}

class BlockFormula : public ::testing::TestWithParam<int32_t> {};

TEST_P(BlockFormula, DequantizeMatchesTheFormulaPerElement) {
    const int32_t type = GetParam();
    const sy_dtype_traits t = sy_dtype_info(type);
    const int blocks = 4;
    const auto bytes = random_blocks(type, blocks, 5);
    std::vector<float> y(size_t(blocks * t.block_size));
    sy::quants::dequantize_row(type, bytes.data(), y.data(), int64_t(y.size()));
    for (int i = 0; i < blocks; ++i) {
        for (int k = 0; k < t.block_size; ++k) {
            const float want = formula(type, bytes.data() + size_t(i * t.type_size), k);
            if (is_iquant(type)) {
                ASSERT_EQ(y[size_t(i * t.block_size + k)], want)
                    << t.name << " block " << i << " element " << k;
            } else {
                ASSERT_NEAR(y[size_t(i * t.block_size + k)], want, 1e-6f * (1 + std::fabs(want)))
                    << t.name << " block " << i << " element " << k;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, BlockFormula,
                         ::testing::Values(SY_TYPE_Q4_0, SY_TYPE_Q4_1, SY_TYPE_Q5_0, SY_TYPE_Q5_1,
                                           SY_TYPE_Q8_0, SY_TYPE_Q8_1, SY_TYPE_Q2_K, SY_TYPE_Q3_K,
                                           SY_TYPE_Q4_K, SY_TYPE_Q5_K, SY_TYPE_Q6_K, SY_TYPE_Q8_K,
                                           SY_TYPE_IQ4_NL, SY_TYPE_IQ4_XS, SY_TYPE_IQ2_XXS,
                                           SY_TYPE_IQ2_XS, SY_TYPE_IQ2_S, SY_TYPE_IQ3_XXS,
                                           SY_TYPE_IQ3_S, SY_TYPE_IQ1_S, SY_TYPE_IQ1_M,
                                           SY_TYPE_Q6_0, SY_TYPE_IQ2_K, SY_TYPE_IQ3_K,
                                           SY_TYPE_IQ4_K, SY_TYPE_IQ5_K, SY_TYPE_IQ6_K),
                         [](const auto& p) { return std::string(sy_dtype_info(p.param).name); });

// ---- row-scaled types --------------------------------------------------------------------------

// Element k of a row of ik_llama.cpp's row-scaled types, from the layouts of docs/ik-quants.md
// (3.7-3.12) written out per element: d is the row's scale in front of the blocks, and
// y = (d * l) * value with d * l formed first.
float row_formula(int32_t type, const uint8_t* row, int k) {
    const sy_dtype_traits t = sy_dtype_info(type);
    float d;
    if (t.row_meta_size == 2) {
        uint16_t h;
        std::memcpy(&h, row, 2);
        d = fp16_to_f32(h);
    } else {
        std::memcpy(&d, row, 4);
    }
    const uint8_t* b = row + t.row_meta_size + (k / 256) * t.type_size;
    const int n = k % 256, sb = n / 32, j = n % 32;
    const auto u16 = [&](int at) { return int(b[at] | b[at + 1] << 8); };
    const int plane2 = (b[2 + 4 + 32 * (n / 128) + n % 32] >> (2 * ((n / 32) % 4))) & 3;  // at qs
    switch (type) {
        case SY_TYPE_IQ2_KS: {  // extra u16, scales[4], qs[64]
            const int extra = u16(0);
            const int S = ((b[2 + sb / 2] >> (4 * (sb % 2))) & 0xF) | ((extra >> (8 + sb)) & 1) << 4;
            return (d * float(S - 16)) * float(sy_iq2nl_values[4 * ((extra >> sb) & 1) + plane2]);
        }
        case SY_TYPE_IQ3_KS: {  // extra u16, scales[4], qs[64], qh[32]
            const int extra = u16(0);
            const int S = ((b[2 + sb % 4] >> (4 * (sb / 4))) & 0xF) | ((extra >> sb) & 1) << 4;
            const int hi = (b[70 + n % 32] >> (n / 32)) & 1;
            return (d * float(S - 16)) *
                   float(sy_iq3nl_values[8 * ((extra >> (8 + sb)) & 1) + (plane2 | hi << 2)]);
        }
        case SY_TYPE_IQ4_KS: {  // scales[8], qs[128]
            const int sc = b[sb];
            const int q = (b[8 + 16 * sb + j % 16] >> (j < 16 ? 0 : 4)) & 0xF;
            return (d * float((sc & 254) - 127)) * float(sy_iq4k_values[16 * (sc & 1) + q]);
        }
        case SY_TYPE_IQ5_KS: {  // scales[8], qs[128], qh[32]
            const int sc = b[sb];
            const int lo = (b[8 + 32 * (n / 64) + n % 32] >> (n % 64 < 32 ? 0 : 4)) & 0xF;
            const int hi = (b[136 + n % 32] >> (n / 32)) & 1;
            return (d * float((sc & 254) - 127)) *
                   float(sy_iq5nl_values[32 * (sc & 1) + (lo | hi << 4)]);
        }
        case SY_TYPE_IQ4_KSS: {  // 128 u16 words, 8 per sub-block
            int sc = 0;
            for (int w = 0; w < 8; ++w) sc |= (u16(2 * (8 * sb + w)) & 1) << w;
            // j = 2 w + {0, 16, 1, 17}[m]
            const int w = (j % 16) / 2, m = (j % 2) * 2 + (j / 16);
            const int a = u16(2 * (8 * sb + w)) & 0xFFFE;
            const int q = ((a ^ (a >> 1)) >> (4 * m)) & 0xF;
            return (d * float((sc & 254) - 127)) * float(sy_iq4k_values[16 * (sc & 1) + q]);
        }
        case SY_TYPE_IQ2_KL: {  // scales_h u16, scales_l[4], qs[64], qh[16]
            const int S = ((b[2 + sb % 4] >> (4 * (sb / 4))) & 0xF) | ((u16(0) >> (2 * sb)) & 3) << 4;
            const int p = j / 2;
            const int code = ((b[6 + 16 * (sb / 2) + p] >> (4 * (sb % 2))) & 0xF) |
                             ((b[70 + p] >> sb) & 1) << 4;
            const int8_t v = int8_t(j % 2 ? sy_iq2kl_values[code] >> 8 : sy_iq2kl_values[code] & 0xFF);
            return (d * float(S - 32)) * float(v);
        }
        default: ADD_FAILURE() << "no formula for " << t.name; return 0;
    }
}

class RowFormula : public ::testing::TestWithParam<int32_t> {};

TEST_P(RowFormula, DequantizeMatchesTheFormulaPerElement) {
    const int32_t type = GetParam();
    const sy_dtype_traits t = sy_dtype_info(type);
    const int64_t n = 4 * 256;
    std::mt19937 rng(9);
    for (int row = 0; row < 3; ++row) {
        std::vector<uint8_t> bytes(size_t(sy::quants::row_size(type, n)));
        for (auto& b : bytes) b = uint8_t(rng());
        const float d = std::uniform_real_distribution<float>(-0.05f, 0.05f)(rng);
        if (t.row_meta_size == 2) {
            const uint16_t h = sy::sdk::f32_to_fp16(d);
            std::memcpy(bytes.data(), &h, 2);
        } else {
            std::memcpy(bytes.data(), &d, 4);
        }
        std::vector<float> y(static_cast<size_t>(n));
        sy::quants::dequantize_row(type, bytes.data(), y.data(), n);
        for (int k = 0; k < n; ++k)
            ASSERT_EQ(y[size_t(k)], row_formula(type, bytes.data(), k))
                << t.name << " row " << row << " element " << k;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, RowFormula,
                         ::testing::Values(SY_TYPE_IQ2_KS, SY_TYPE_IQ3_KS, SY_TYPE_IQ4_KS,
                                           SY_TYPE_IQ4_KSS, SY_TYPE_IQ5_KS, SY_TYPE_IQ2_KL),
                         [](const auto& p) { return std::string(sy_dtype_info(p.param).name); });

// The tables' second halves are their first plus a constant, which the dot products rely on
// (value sum = base sum + shift * activation sum); both halves ascend.
TEST(IkTables, TheShiftedHalfIsTheBasePlusTheShift) {
    const struct {
        const int8_t* values;
        int n, shift;
    } tables[] = {{sy_iq2nl_values, 4, SY_IQ2NL_SHIFT},
                  {sy_iq3nl_values, 8, SY_IQ3NL_SHIFT},
                  {sy_iq4k_values, 16, SY_IQ4K_SHIFT},
                  {sy_iq5nl_values, 32, SY_IQ5NL_SHIFT},
                  {sy_iq6nl_values, 64, SY_IQ6NL_SHIFT}};
    for (const auto& t : tables) {
        for (int i = 0; i < t.n; ++i) {
            EXPECT_EQ(t.values[t.n + i], t.values[i] + t.shift) << t.n << " entries, entry " << i;
            if (i > 0) {
                EXPECT_LT(t.values[i - 1], t.values[i]) << t.n << " entries, entry " << i;
            }
        }
    }
    // The 4-bit table's base half is IQ4_NL's.
    for (int i = 0; i < 16; ++i) EXPECT_EQ(sy_iq4k_values[i], sy_kvalues_iq4nl[i]);
}

}  // namespace
