// ik_llama.cpp's Q6_0 and IQ2_K ... IQ6_K (docs/ik-quants.md has the layouts and where they come
// from).
//
// Decoding: y = d * scale * value with d the f16 super-block scale, scale the sub-block's integer
// scale and value an int8 table entry. d (11 significant bits) times a scale of at most 8 bits is
// exact in f32, so every order of the two products rounds once, to the same float.
//
// Quantizing (switchyard's own search; ik's quantizers do the same kind of search): per 16-value
// sub-block and per table half (base, shifted: the `extra` bit), the float scale with the least
// weighted error over 2 * kNtry + 1 candidate scales, each refitted by weighted least squares;
// the better half wins. The super-block scale d then puts the largest sub-block scale on the end
// of the integer range; each sub-block's scale is rounded onto it, both halves are tried again at
// that scale, and d is refitted by least squares over the whole super-block. Weights:
// importance * sqrt(sigma2 + x^2) with an importance matrix, sqrt(sigma2 + x^2) without
// (subblock_weights; sigma2 = 2 mean(x^2) of the super-block).
#include <algorithm>
#include <cmath>

#include "ik_fit.hpp"

namespace sy::quants::detail {
namespace {

using namespace ik;

constexpr int kSub = 16;  // values per sub-block

// One super-block: d, the 16 integer scales, the extra bits and the 256 indices (into the half
// the extra bit picks).
// A template on the table, so that its loops are compiled for the table's size (the halvings of
// a 4- or 8-entry lookup unrolled).
template <const Table& t>
void quantize_superblock(const float* x, const float* importance, float& d_out, int* scales,
                         uint16_t& extra, uint8_t* L) {
    float w[SY_QK_K];
    const float sigma2 = 2 * sum_of_squares(x, SY_QK_K) / float(SY_QK_K);
    subblock_weights(x, importance, sigma2, SY_QK_K, kSub, w);

    float sub_scale[SY_QK_K / kSub];
    float max_scale = 0;
    extra = 0;
    for (int s = 0; s < SY_QK_K / kSub; ++s) {
        float score0, score1;
        const float d0 = best_scale(kSub, x + kSub * s, w + kSub * s, t, 0, score0);
        const float d1 = best_scale(kSub, x + kSub * s, w + kSub * s, t, 1, score1);
        sub_scale[s] = score1 > score0 ? d1 : d0;
        if (score1 > score0) extra = uint16_t(extra | (1u << s));
        if (std::fabs(sub_scale[s]) > std::fabs(max_scale)) max_scale = sub_scale[s];
    }
    // The largest scale on the far end of the range: lo where it reaches further than hi (-8
    // of [-8, 7]: d takes the opposite sign), else hi.
    float d = -t.scale_lo > t.scale_hi ? max_scale / float(t.scale_lo)
                                       : std::fabs(max_scale) / float(t.scale_hi);
    if (d == 0) {
        d_out = 0;
        std::fill(scales, scales + SY_QK_K / kSub, 0);
        std::fill(L, L + SY_QK_K, uint8_t(0));
        return;
    }
    d = from_half(to_half(d));
    const float id = 1 / d;
    double sxy = 0, syy = 0;
    for (int s = 0; s < SY_QK_K / kSub; ++s) {
        const int l = round_scale(t, id * sub_scale[s]);
        scales[s] = l;
        const float* xs = x + kSub * s;
        const float* ws = w + kSub * s;
        uint8_t* Ls = L + kSub * s;
        if (l == 0) {
            std::fill(Ls, Ls + kSub, uint8_t(best_index_int8(t.n, t.values, 0.f)));
            extra = uint16_t(extra & ~(1u << s));
            continue;
        }
        // Both halves again at the rounded scale.
        const float idl = 1 / (d * float(l));
        uint8_t L0[kSub], L1[kSub];
        double err[2] = {0, 0};
        for (int half = 0; half < 2; ++half) {
            uint8_t* Lh = half ? L1 : L0;
            const int8_t* values = t.values + half * t.n;
            for (int j = 0; j < kSub; ++j) {
                Lh[j] = uint8_t(t.index(half, idl * xs[j]));
                const double e = xs[j] - double(d) * l * values[Lh[j]];
                err[half] += ws[j] * e * e;
            }
        }
        const int half = err[1] < err[0] ? 1 : 0;
        extra = uint16_t(half ? extra | (1u << s) : extra & ~(1u << s));
        std::copy(half ? L1 : L0, (half ? L1 : L0) + kSub, Ls);
        const int8_t* values = t.values + half * t.n;
        for (int j = 0; j < kSub; ++j) {
            const double q = double(l) * values[Ls[j]];
            sxy += ws[j] * xs[j] * q;
            syy += ws[j] * q * q;
        }
    }
    d_out = syy > 0 && sxy > 0 ? float(sxy / syy) : d;
}

const NearestIndex kIq4kNearest[2] = {{16, sy_iq4k_values}, {16, sy_iq4k_values + 16}};
const NearestIndex kIq5kNearest[2] = {{32, sy_iq5nl_values}, {32, sy_iq5nl_values + 32}};
const NearestIndex kIq6kNearest[2] = {{64, sy_iq6nl_values}, {64, sy_iq6nl_values + 64}};
constexpr Table kIq2k{sy_iq2nl_values, 4, -8, 7, false};
constexpr Table kIq3k{sy_iq3nl_values, 8, -31, 31, true};
constexpr Table kIq4k{sy_iq4k_values, 16, -32, 31, false, kIq4kNearest};
constexpr Table kIq5k{sy_iq5nl_values, 32, -32, 31, false, kIq5kNearest};
constexpr Table kIq6k{sy_iq6nl_values, 64, -127, 127, false, kIq6kNearest};

template <const Table& t, typename Block, typename Pack>
void quantize_rows(const float* x, void* vy, int64_t n, const float* importance, Pack pack) {
    auto* y = static_cast<Block*>(vy);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, x += SY_QK_K) {
        float d;
        int scales[SY_QK_K / kSub];
        uint16_t extra;
        uint8_t L[SY_QK_K];
        quantize_superblock<t>(x, importance ? importance + i * SY_QK_K : nullptr, d, scales, extra,
                               L);
        std::memset(&y[i], 0, sizeof(Block));
        y[i].d = to_half(d);
        y[i].extra = extra;
        pack(y[i], scales, L);
    }
}

void pack_iq2_k(sy_block_iq2_k& b, const int* scales, const uint8_t* L) {
    for (int s = 0; s < 16; ++s) b.scales[s / 2] |= uint8_t((scales[s] + 8) << 4 * (s % 2));
    for (int n = 0; n < SY_QK_K; ++n) b.qs[plane_byte(n)] |= uint8_t(L[n] << plane_shift(n));
}
void pack_iq3_k(sy_block_iq3_k& b, const int* scales, const uint8_t* L) {
    for (int s = 0; s < 16; ++s) {
        b.scales_l[s / 2] |= uint8_t(((std::abs(scales[s]) - 1) / 2) << 4 * (s % 2));
        if (scales[s] < 0) b.scales_h = uint16_t(b.scales_h | (1u << s));
    }
    for (int n = 0; n < SY_QK_K; ++n) {
        b.qs[plane_byte(n)] |= uint8_t((L[n] & 3) << plane_shift(n));
        b.qh[n % 32] |= uint8_t((L[n] >> 2) << (n / 32));
    }
}
void pack_scales6(uint8_t* scales_h, uint8_t* scales_l, const int* scales) {
    for (int s = 0; s < 16; ++s) {
        const int S = scales[s] + 32;
        scales_l[s / 2] |= uint8_t((S & 0xF) << 4 * (s % 2));
        scales_h[s / 4] |= uint8_t((S >> 4) << 2 * (s % 4));
    }
}
void pack_iq4_k(sy_block_iq4_k& b, const int* scales, const uint8_t* L) {
    pack_scales6(b.scales_h, b.scales_l, scales);
    for (int n = 0; n < SY_QK_K; ++n)
        b.qs[nibble_byte(n, 32)] |= uint8_t(L[n] << nibble_shift(n, 32));
}
void pack_iq5_k(sy_block_iq5_k& b, const int* scales, const uint8_t* L) {
    pack_scales6(b.scales_h, b.scales_l, scales);
    for (int n = 0; n < SY_QK_K; ++n) {
        b.qs[nibble_byte(n, 64)] |= uint8_t((L[n] & 0xF) << nibble_shift(n, 64));
        b.qh[n % 32] |= uint8_t((L[n] >> 4) << (n / 32));
    }
}
void pack_iq6_k(sy_block_iq6_k& b, const int* scales, const uint8_t* L) {
    for (int s = 0; s < 16; ++s) b.scales[s] = int8_t(scales[s]);
    for (int n = 0; n < SY_QK_K; ++n) {
        b.qs[nibble_byte(n, 64)] |= uint8_t((L[n] & 0xF) << nibble_shift(n, 64));
        b.qh[plane_byte(n)] |= uint8_t((L[n] >> 4) << plane_shift(n));
    }
}

// y = d * scale(s) * values[half(s)][index(n)] over the super-blocks.
template <typename Block, typename Scale, typename Index>
void dequantize_rows(const Table& t, const void* vx, float* y, int64_t n, Scale scale,
                     Index index) {
    const auto* x = static_cast<const Block*>(vx);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, y += SY_QK_K) {
        const float d = from_half(x[i].d);
        for (int k = 0; k < SY_QK_K; ++k) {
            const int s = k / kSub;
            const int half = (x[i].extra >> s) & 1;
            const float dl = d * float(scale(x[i], s));
            y[k] = dl * float(t.values[half * t.n + index(x[i], k)]);
        }
    }
}

int scale6(const uint8_t* scales_h, const uint8_t* scales_l, int s) {
    return (((scales_l[s / 2] >> 4 * (s % 2)) & 0xF) |
            (((scales_h[s / 4] >> 2 * (s % 4)) & 3) << 4)) -
           32;
}

}  // namespace

// ---- Q6_0 ------------------------------------------------------------------------------------

void quantize_q6_0_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    auto* y = static_cast<sy_block_q6_0*>(vy);
    for (int64_t i = 0; i < n / SY_QK4_0; ++i, x += SY_QK4_0) {
        int8_t L[SY_QK4_0];
        float w[SY_QK4_0];
        const float* imp = importance ? importance + i * SY_QK4_0 : nullptr;
        if (imp) {
            const float sigma2 = sum_of_squares(x, SY_QK4_0) / SY_QK4_0;
            importance_weights(x, imp, sigma2, SY_QK4_0, w);
        }
        const float d = make_qx_quants(SY_QK4_0, 32, x, L, imp ? w : nullptr);
        y[i].d = to_half(d);
        std::memset(y[i].qh, 0, sizeof y[i].qh);
        for (int j = 0; j < 16; ++j) {
            const int q0 = L[j], q1 = L[j + 16];  // 0 .. 63
            y[i].qs[j] = uint8_t((q0 & 0xF) | ((q1 & 0xF) << 4));
            const int h = (q0 >> 4) | ((q1 >> 4) << 2);
            y[i].qh[j % 8] |= uint8_t(h << 4 * (j / 8));
        }
    }
}

void quantize_q6_0(const float* x, void* vy, int64_t n) {
    quantize_q6_0_weighted(x, vy, n, nullptr);
}

void dequantize_q6_0(const void* vx, float* y, int64_t n) {
    const auto* x = static_cast<const sy_block_q6_0*>(vx);
    for (int64_t i = 0; i < n / SY_QK4_0; ++i, y += SY_QK4_0) {
        const float d = from_half(x[i].d);
        for (int j = 0; j < 16; ++j) {
            const int h = x[i].qh[j % 8] >> 4 * (j / 8);
            const int q0 = (x[i].qs[j] & 0xF) | ((h & 3) << 4);
            const int q1 = (x[i].qs[j] >> 4) | (((h >> 2) & 3) << 4);
            y[j] = float(q0 - 32) * d;
            y[j + 16] = float(q1 - 32) * d;
        }
    }
}

// ---- IQ2_K ... IQ6_K -------------------------------------------------------------------------

#define SY_IK_QUANTIZERS(name, table, block)                                                       \
    void quantize_##name##_weighted(const float* x, void* y, int64_t n, const float* importance) { \
        quantize_rows<table, block>(x, y, n, importance, pack_##name);                             \
    }                                                                                              \
    void quantize_##name(const float* x, void* y, int64_t n) {                                     \
        quantize_##name##_weighted(x, y, n, nullptr);                                              \
    }

SY_IK_QUANTIZERS(iq2_k, kIq2k, sy_block_iq2_k)
SY_IK_QUANTIZERS(iq3_k, kIq3k, sy_block_iq3_k)
SY_IK_QUANTIZERS(iq4_k, kIq4k, sy_block_iq4_k)
SY_IK_QUANTIZERS(iq5_k, kIq5k, sy_block_iq5_k)
SY_IK_QUANTIZERS(iq6_k, kIq6k, sy_block_iq6_k)
#undef SY_IK_QUANTIZERS

void dequantize_iq2_k(const void* vx, float* y, int64_t n) {
    dequantize_rows<sy_block_iq2_k>(
        kIq2k, vx, y, n,
        [](const sy_block_iq2_k& b, int s) { return ((b.scales[s / 2] >> 4 * (s % 2)) & 0xF) - 8; },
        [](const sy_block_iq2_k& b, int k) { return (b.qs[plane_byte(k)] >> plane_shift(k)) & 3; });
}

void dequantize_iq3_k(const void* vx, float* y, int64_t n) {
    dequantize_rows<sy_block_iq3_k>(
        kIq3k, vx, y, n,
        [](const sy_block_iq3_k& b, int s) {
            const int m = 2 * ((b.scales_l[s / 2] >> 4 * (s % 2)) & 0xF) + 1;
            return (b.scales_h >> s) & 1 ? -m : m;
        },
        [](const sy_block_iq3_k& b, int k) {
            return ((b.qs[plane_byte(k)] >> plane_shift(k)) & 3) |
                   (((b.qh[k % 32] >> (k / 32)) & 1) << 2);
        });
}

void dequantize_iq4_k(const void* vx, float* y, int64_t n) {
    dequantize_rows<sy_block_iq4_k>(
        kIq4k, vx, y, n,
        [](const sy_block_iq4_k& b, int s) { return scale6(b.scales_h, b.scales_l, s); },
        [](const sy_block_iq4_k& b, int k) {
            return (b.qs[nibble_byte(k, 32)] >> nibble_shift(k, 32)) & 0xF;
        });
}

void dequantize_iq5_k(const void* vx, float* y, int64_t n) {
    dequantize_rows<sy_block_iq5_k>(
        kIq5k, vx, y, n,
        [](const sy_block_iq5_k& b, int s) { return scale6(b.scales_h, b.scales_l, s); },
        [](const sy_block_iq5_k& b, int k) {
            return ((b.qs[nibble_byte(k, 64)] >> nibble_shift(k, 64)) & 0xF) |
                   (((b.qh[k % 32] >> (k / 32)) & 1) << 4);
        });
}

void dequantize_iq6_k(const void* vx, float* y, int64_t n) {
    dequantize_rows<sy_block_iq6_k>(
        kIq6k, vx, y, n, [](const sy_block_iq6_k& b, int s) { return int(b.scales[s]); },
        [](const sy_block_iq6_k& b, int k) {
            return ((b.qs[nibble_byte(k, 64)] >> nibble_shift(k, 64)) & 0xF) |
                   (((b.qh[plane_byte(k)] >> plane_shift(k)) & 3) << 4);
        });
}

}  // namespace sy::quants::detail
