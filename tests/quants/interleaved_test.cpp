// ik_llama.cpp's row-interleaved layouts (interleaved.hpp): every type converts to its base rows
// and back exactly, and for the layouts most files use, the values the base rows decode to equal
// a per-element decoder of the interleaved struct written from docs/ik-quants.md 6.2 (an
// independent reading of the same layout).
#include "switchyard/interleaved.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

namespace q = sy::quants;
using Bytes = std::vector<uint8_t>;

// A group of rows of n values in the base type, quantized from Gaussian values (valid scales).
Bytes base_group(const q::InterleavedType& t, int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> x(size_t(n * t.rows));
    for (float& v : x) v = g(rng);
    Bytes rows(size_t(t.rows * q::row_size(t.base, n)));
    q::quantize_rows(t.base, x.data(), rows.data(), t.rows, n, 1);
    return rows;
}

int64_t row_length(const q::InterleavedType& t) {
    return sy_dtype_info(t.base).block_size == 1 ? 64 : 2 * sy_dtype_info(t.base).block_size * 4;
}

float f16(const uint8_t* p);
int grid_byte(uint64_t entry, int j);

TEST(Interleaved, EveryTypeRoundTripsExactly) {
    const auto types = q::interleaved_types();
    ASSERT_GE(types.size(), 24u);
    for (const q::InterleavedType& t : types) {
        SCOPED_TRACE(t.name);
        const int64_t n = std::max<int64_t>(row_length(t), q::interleaved_row_unit(t));
        if (t.repackable) {
            const Bytes rows = base_group(t, n, uint32_t(t.id));
            Bytes packed(rows.size()), back(rows.size());
            q::interleave(t, rows.data(), packed.data(), n);
            EXPECT_NE(packed, rows) << "interleaving moved nothing";
            q::deinterleave(t, packed.data(), back.data(), n);
            EXPECT_EQ(back, rows);
        }
        // And random bytes the other way round: every bit has one place.
        std::mt19937 rng(7);
        Bytes random(size_t(t.rows * q::interleaved_row_size(t, n)));
        Bytes there(size_t(t.rows * q::row_size(t.base, n))), again(random.size());
        for (uint8_t& b : random) b = uint8_t(rng());
        q::deinterleave(t, random.data(), there.data(), n);
        q::interleave(t, there.data(), again.data(), n);
        EXPECT_EQ(again, random);
    }
}

// IQ1_S_R4 (one f16 scale per row, 6 bytes per 32 values) decodes as ik_llama.cpp's
// dequantize_row_iq1_s_r4 does; its IQ1_S rows give the same values; IQ1_S rows quantized with
// one scale each can be written as it, and rows whose blocks have different scales cannot.
TEST(Interleaved, Iq1sR4IsReadAsIq1s) {
    const q::InterleavedType& t = *q::interleaved_type(219);
    EXPECT_FALSE(t.repackable);
    EXPECT_EQ(q::interleaved_of(SY_TYPE_IQ1_S), nullptr);
    const int64_t n = 512;
    EXPECT_EQ(q::interleaved_row_size(t, n), 2 + 16 * 6);
    std::mt19937 rng(11);
    Bytes group(size_t(4 * q::interleaved_row_size(t, n)));
    for (uint8_t& b : group) b = uint8_t(rng());
    for (int k = 0; k < 4; ++k) {  // finite scales: f16 0.001 .. 0.06
        const uint16_t h = uint16_t(0x1400 + rng() % 0x1000);
        std::memcpy(group.data() + 2 * k, &h, 2);
    }
    const int64_t row_bytes = q::row_size(SY_TYPE_IQ1_S, n);
    Bytes rows(size_t(4 * row_bytes));
    q::deinterleave(t, group.data(), rows.data(), n);
    std::vector<float> y(static_cast<size_t>(n));
    for (int k = 0; k < 4; ++k) {
        q::dequantize_row(SY_TYPE_IQ1_S, rows.data() + k * row_bytes, y.data(), n);
        const float d = f16(group.data() + 2 * k);
        for (int64_t b = 0; b < n / 32; ++b) {
            const uint8_t* s = group.data() + 8 + 24 * b;
            uint16_t h;
            std::memcpy(&h, s + 16 + 2 * k, 2);
            const float dl = d * float(2 * ((h >> 12) & 7) + 1);
            const float shift = (h & 0x8000) ? -SY_IQ1S_DELTA : SY_IQ1S_DELTA;
            for (int i = 0; i < 4; ++i) {
                const int index = s[4 * i + k] | ((h >> (3 * i)) & 7) << 8;
                for (int j = 0; j < 8; ++j) {
                    const auto g = int8_t(grid_byte(sy_iq1s_grid[index], j));
                    ASSERT_FLOAT_EQ(y[size_t(32 * b + 8 * i + j)], dl * (float(g) + shift))
                        << "row " << k << " element " << 32 * b + 8 * i + j;
                }
            }
        }
    }
    // Rows quantized with one scale each have it, and lose little against IQ1_S's scale per block.
    {
        const int64_t m = 2048;
        std::normal_distribution<float> gauss(0.0f, 1.0f);
        std::vector<float> x(size_t(4 * m));
        for (float& v : x) v = gauss(rng);
        const int64_t rb = q::row_size(SY_TYPE_IQ1_S, m);
        Bytes one(size_t(4 * rb)), plain(one.size()), r4(size_t(4 * q::interleaved_row_size(t, m)));
        Bytes back(one.size());
        q::quantize_rows_one_scale(SY_TYPE_IQ1_S, x.data(), one.data(), 4, m, 1);
        q::quantize_rows(SY_TYPE_IQ1_S, x.data(), plain.data(), 4, m, 1);
        q::interleave(t, one.data(), r4.data(), m);
        q::deinterleave(t, r4.data(), back.data(), m);
        EXPECT_EQ(back, one);
        const auto rms = [&](const Bytes& quantized) {
            std::vector<float> z(static_cast<size_t>(m));
            double err = 0, ref = 0;
            for (int k = 0; k < 4; ++k) {
                q::dequantize_row(SY_TYPE_IQ1_S, quantized.data() + k * rb, z.data(), m);
                for (int64_t i = 0; i < m; ++i) {
                    const double e = z[size_t(i)] - x[size_t(k * m + i)];
                    err += e * e;
                    ref += double(x[size_t(k * m + i)]) * x[size_t(k * m + i)];
                }
            }
            return std::sqrt(err / ref);
        };
        EXPECT_LT(rms(one), 1.1 * rms(plain)) << rms(one) << " against " << rms(plain);
        EXPECT_THROW(q::quantize_rows_one_scale(SY_TYPE_IQ2_XXS, x.data(), one.data(), 1, 256, 1),
                     std::invalid_argument);
    }
    // A row whose blocks have different scales has no IQ1_S_R4 form.
    rows[size_t(row_bytes / 2 + 0)] ^= 1;  // the second block's d of row 0 (2 blocks a row)
    Bytes back(group.size());
    EXPECT_THROW(q::interleave(t, rows.data(), back.data(), n), std::invalid_argument);
    EXPECT_THROW(q::deinterleave(t, group.data(), rows.data(), 96), std::invalid_argument);
}

TEST(Interleaved, NamesIdsAndErrors) {
    ASSERT_NE(q::interleaved_type(339), nullptr);
    EXPECT_EQ(q::interleaved_type(339)->base, SY_TYPE_IQ4_K);
    EXPECT_EQ(q::interleaved_type("IQ4_KS_R4")->id, 344);
    EXPECT_EQ(q::interleaved_type(4), nullptr);
    EXPECT_EQ(q::interleaved_of(SY_TYPE_Q8_0)->id, 208);
    const q::InterleavedType& t = *q::interleaved_type(339);
    Bytes b(4096);
    EXPECT_THROW(q::deinterleave(t, b.data(), b.data() + 2048, 100), std::invalid_argument);
}

// ---- the priority layouts, element by element ------------------------------------------------

float f16(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return sy::sdk::fp16_to_f32(h);
}
float f32(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
}
int nibble(const uint8_t* p, int byte, int high) {
    return (p[byte] >> (4 * high)) & 0xF;
}
// P4: element e of a 32-value block of row k in its 64 bytes.
int p4(const uint8_t* qs, int k, int e) {
    const int i = e % 4;
    static const int where[8][2] = {{0, 0},  {32, 0}, {0, 1},  {32, 1},
                                    {16, 0}, {48, 0}, {16, 1}, {48, 1}};
    const int* w = where[e / 4];
    return nibble(qs, 4 * k + i + w[0], w[1]);
}
int p2(const uint8_t* qs, int k, int e) {
    return (qs[4 * k + e % 4 + 16 * (e / 16)] >> (2 * ((e / 4) % 4))) & 3;
}

// Value of row k, element n of a row of interleaved bytes (one group), by the spec.
using Formula = std::function<float(const uint8_t* group, int k, int64_t n, int64_t row_n)>;

float q8_0_r8(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 32) * 272;
    const int e = int(n % 32), l = (e % 16) / 4, i = e % 4;
    const int8_t v = int8_t(s[16 + 128 * (e / 16) + 32 * l + 4 * k + i]);
    return f16(s + 2 * k) * float(v);
}
float q4_0_r8(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 32) * 144;
    const int e = int(n % 32), j = e % 16;  // Q4_0 byte j holds elements j, j + 16
    return f16(s + 2 * k) * float(nibble(s + 16, 32 * (j / 4) + 4 * k + j % 4, e / 16) - 8);
}
float iq4_k_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 576;
    const int ib = int(n % 256) / 32, e = int(n % 32), half = e / 16;
    const int is = 8 * ib + k + 4 * half;
    const int sc =
        (nibble(s + 32, is % 32, is / 32) | ((s[16 + is % 16] >> (2 * (is / 16))) & 3) << 4) - 32;
    const int extra = (s[8 + k + 4 * half] >> ib) & 1;
    return (f16(s + 2 * k) * float(sc)) *
           float(sy_iq4k_values[16 * extra + p4(s + 64 + 64 * ib, k, e)]);
}
float iq2_k_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 304;
    const int ib = int(n % 256) / 32, e = int(n % 32), half = e / 16;
    const int is = 8 * ib + k + 4 * half;
    const int sc = nibble(s + 16, is % 32, is / 32) - 8;
    const int extra = (s[8 + k + 4 * half] >> ib) & 1;
    return (f16(s + 2 * k) * float(sc)) *
           float(sy_iq2nl_values[4 * extra + p2(s + 48 + 32 * ib, k, e)]);
}
float iq3_k_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 440;
    const int ib = int(n % 256) / 32, e = int(n % 32), half = e / 16;
    const int is = 8 * ib + k + 4 * half;
    int sc = 2 * nibble(s + 24, is % 32, is / 32) + 1;
    if ((s[16 + is % 8] >> (is / 8)) & 1) sc = -sc;
    const int extra = (s[8 + k + 4 * half] >> ib) & 1;
    const int hi = (s[312 + 16 * ib + 4 * k + e % 4] >> (e / 4)) & 1;
    const int index = p2(s + 56 + 32 * ib, k, e) | hi << 2;
    return (f16(s + 2 * k) * float(sc)) * float(sy_iq3nl_values[8 * extra + index]);
}
float iq4_ks_r4(const uint8_t* g, int k, int64_t n, int64_t row_n) {
    const float d = f32(g + 4 * k);
    const uint8_t* s = g + 16 + (n / 256) * 544;
    (void)row_n;
    const int ib = int(n % 256) / 32, e = int(n % 32);
    const int sc = s[4 * ib + k];
    return (d * float((sc & 254) - 127)) *
           float(sy_iq4k_values[16 * (sc & 1) + p4(s + 32 + 64 * ib, k, e)]);
}
float q4_k_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 576;
    const int ib = int(n % 256) / 32, e = int(n % 32), is = 4 * ib + k;
    const int h = (s[16 + is % 16] >> (4 * (is / 16))) & 0xF;
    const int sc = (s[32 + is] & 0xF) | (h & 3) << 4, mn = (s[32 + is] >> 4) | (h >> 2) << 4;
    const float d = f16(s + 2 * k), dmin = f16(s + 2 * (k + 4));
    return (d * float(sc)) * float(p4(s + 64 + 64 * ib, k, e)) - dmin * float(mn);
}
float q6_k_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 840;
    const int ib = int(n % 256) / 32, e = int(n % 32), qq = e / 4, i = e % 4;
    const int sc = int8_t(s[8 + 8 * ib + k + 4 * (e / 16)]);
    static const int slot[4] = {0, 2, 1, 3};  // pairs: elements i, i+8, i+4, i+12
    const int hi = (s[72 + 32 * ib + 4 * k + i + 16 * (qq / 4)] >> (2 * slot[qq % 4])) & 3;
    const int v = (p4(s + 328 + 64 * ib, k, e) | hi << 4) - 32;
    return (f16(s + 2 * k) * float(sc)) * float(v);
}
float iq4_xs_r8(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 1088;
    const int ib = int(n % 256) / 32, e = int(n % 32), is = 8 * ib + k;
    const int sc =
        (nibble(s + 32, is % 32, is / 32) | ((s[16 + is % 16] >> (2 * (is / 16))) & 3) << 4) - 32;
    const int l = e / 8, r = e % 8;
    const int v = nibble(s + 64 + 128 * ib, 32 * l + 4 * k + r % 4, r / 4);
    return (f16(s + 2 * k) * float(sc)) * float(sy_iq4k_values[v]);
}

// ---- the codebook layouts (docs/ik-quants.md 6.3), element by element ----------------------

// The 8 signs of a sas / IQ2_XS_R4 byte as ik's kernels get them: bit 0 cleared, then the byte
// xor itself shifted right by one (bit j set: value j of the group is negative).
int signs_of(uint8_t byte) {
    const unsigned y = byte & 0xFEu;
    return int((y ^ (y >> 1)) & 0xFFu);
}
int grid_byte(uint64_t entry, int j) {
    return int((entry >> (8 * j)) & 0xFF);
}
float iq2_xxs_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 264;
    const int ib = int(n % 256) / 32, e = int(n % 32), grp = e / 8;
    const uint8_t* sas = s + 8 + 4 * (4 * ib + k);
    int scale = 0;
    for (int m = 0; m < 4; ++m) scale |= (sas[m] & 1) << m;
    const int v = grid_byte(sy_iq2xxs_grid[s[136 + 16 * ib + 4 * k + grp]], e % 8);
    const float sign = (signs_of(sas[grp]) >> (e % 8)) & 1 ? -1.0f : 1.0f;
    return 0.125f * f16(s + 2 * k) * float(2 * scale + 1) * float(v) * sign;
}
float iq3_xxs_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 392;
    const int ib = int(n % 256) / 32, e = int(n % 32);
    const uint8_t* sas = s + 8 + 4 * (4 * ib + k);
    int scale = 0;
    for (int m = 0; m < 4; ++m) scale |= (sas[m] & 1) << m;
    const int v = grid_byte(sy_iq3xxs_grid[s[136 + 32 * ib + 8 * k + e / 4]], e % 4);
    const float sign = (signs_of(sas[e / 8]) >> (e % 8)) & 1 ? -1.0f : 1.0f;
    return 0.25f * f16(s + 2 * k) * float(2 * scale + 1) * float(v) * sign;
}
float iq2_xs_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 296;
    const int ib = int(n % 256) / 32, e = int(n % 32), grp = e / 8;
    const uint8_t* q = s + 8 + 2 * (16 * ib + 4 * k + grp);
    const int index = q[0] | (q[1] & 1) << 8;
    const int nib = nibble(s, 264 + 4 * ib + k, grp / 2);
    const float sign = (signs_of(q[1]) >> (e % 8)) & 1 ? -1.0f : 1.0f;
    return 0.125f * f16(s + 2 * k) * float(2 * nib + 1) *
           float(grid_byte(sy_iq2xs_grid[index], e % 8)) * sign;
}
float iq2_s_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 328;
    const int ib = int(n % 256) / 32, e = int(n % 32), grp = e / 8;
    const int index =
        s[8 + 16 * ib + 4 * k + grp] | ((s[136 + 4 * ib + k] << (8 - 2 * grp)) & 0x300);
    const int nib = nibble(s, 296 + 4 * ib + k, grp / 2);
    const float sign = (s[168 + 16 * ib + 4 * k + grp] >> (e % 8)) & 1 ? -1.0f : 1.0f;
    return 0.125f * f16(s + 2 * k) * float(2 * nib + 1) *
           float(grid_byte(sy_iq2s_grid[index], e % 8)) * sign;
}
float iq3_s_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const uint8_t* s = g + (n / 256) * 440;
    const int ib = int(n % 256) / 32, e = int(n % 32), j = e / 4;  // grid byte j of the block
    const int at = 8 + 32 * ib + 8 * (j % 4) + k + 4 * (j / 4);
    const int index = s[at] | ((s[264 + 4 * ib + k] >> j) & 1) << 8;
    const int b = e % 8, m = e / 8;  // bit b of the block's sign byte m
    const float sign = (s[296 + 16 * ib + 4 * k + b % 4] >> (2 * m + b / 4)) & 1 ? -1.0f : 1.0f;
    const int l = 4 * ib + k;
    const int nib = nibble(s, 424 + l % 16, l / 16);
    return f16(s + 2 * k) * float(1 + 2 * nib) * float(grid_byte(sy_iq3s_grid[index], e % 4)) *
           sign;
}

// IQ1_M_R4: the rows' f16 scales, then per 32 values 28 bytes qs[16], qh[8], scales[4]; half i
// (16 values, two groups of 8) of row k: grid indices qs[8 i + k] and qs[8 i + k + 4] with qh[4 i
// + k]'s low and high 3 bits, delta negative where bit 3 or bit 7 is set, scale nibble i of
// scales[k]; value d * scale * (grid + delta).
float iq1_m_r4(const uint8_t* g, int k, int64_t n, int64_t) {
    const float d = f16(g + 2 * k);
    const uint8_t* s = g + 8 + (n / 256) * 224 + 28 * ((n % 256) / 32);
    const int e = int(n % 32), i = e / 16, l = (e / 8) % 2;
    const int qh = s[16 + 4 * i + k];
    const int index = s[8 * i + k + 4 * l] | ((qh >> (4 * l)) & 7) << 8;
    const float delta = (qh >> (3 + 4 * l)) & 1 ? -SY_IQ1M_DELTA : SY_IQ1M_DELTA;
    const float dl = d * float(nibble(s + 24, k, i));
    return dl * (float(int8_t(grid_byte(sy_iq1s_grid[index], e % 8))) + delta);
}

struct Check {
    int32_t id;
    Formula formula;
};

TEST(Interleaved, PriorityLayoutsDecodeAsTheSpecSays) {
    const Check checks[] = {
        {208, q8_0_r8},    {202, q4_0_r8},   {339, iq4_k_r4}, {337, iq2_k_r4},  {338, iq3_k_r4},
        {344, iq4_ks_r4},  {212, q4_k_r4},   {214, q6_k_r4},  {223, iq4_xs_r8}, {216, iq2_xxs_r4},
        {218, iq3_xxs_r4}, {217, iq2_xs_r4}, {222, iq2_s_r4}, {221, iq3_s_r4},  {229, iq1_m_r4}};
    for (const Check& c : checks) {
        const q::InterleavedType& t = *q::interleaved_type(c.id);
        SCOPED_TRACE(t.name);
        const int64_t n = 512;
        const Bytes rows = base_group(t, n, 3);
        Bytes packed(rows.size());
        q::interleave(t, rows.data(), packed.data(), n);
        const int64_t row_bytes = q::row_size(t.base, n);
        std::vector<float> y(static_cast<size_t>(n));
        for (int k = 0; k < t.rows; ++k) {
            q::dequantize_row(t.base, rows.data() + k * row_bytes, y.data(), n);
            for (int64_t i = 0; i < n; ++i)
                ASSERT_FLOAT_EQ(c.formula(packed.data(), k, i, n), y[size_t(i)])
                    << "row " << k << " element " << i;
        }
    }
}

}  // namespace
