// The 32-element "legacy" formats Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and the Q8_1 activation format,
// following ggml's quantize_row_*_ref: one scale (and min) per block from the block's extremes.
// With an importance matrix, ggml's quantize_row_q4_0_impl ... q5_1_impl: each block fitted by
// the scale searches of the K-quants, weighted by importance * sqrt(sigma2 + x^2) with sigma2
// the row's mean square (Q8_0 ignores the matrix, as in ggml).
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "internal.hpp"

namespace sy::quants::detail {
namespace {

// The value of largest magnitude, sign kept (the first one on ties).
float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, int n, float& min, float& max) {
    min = FLT_MAX;
    max = -FLT_MAX;
    for (int j = 0; j < n; ++j) {
        min = std::min(min, x[j]);
        max = std::max(max, x[j]);
    }
}

// The 5th bits of 32 quants as the little-endian u32 qh (bit j = element j).
void store_qh(uint8_t* qh, uint32_t bits) { std::memcpy(qh, &bits, 4); }
uint32_t load_qh(const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    return bits;
}

// 32 quants of 4 bits: element j in the low nibble of qs[j], element j + 16 in the high one.
template <typename Level>
void store_4bit(const Level* L, uint8_t* qs) {
    for (int j = 0; j < 16; ++j) qs[j] = uint8_t(L[j] | (L[j + 16] << 4));
}

// 32 quants of 5 bits: the low 4 as store_4bit, the 5th of element j at bit j of qh.
template <typename Level>
void store_5bit(const Level* L, uint8_t* qs, uint8_t* qh) {
    uint32_t bits = 0;
    for (int j = 0; j < 32; ++j) bits |= uint32_t((L[j] & 0x10u) >> 4) << j;
    for (int j = 0; j < 16; ++j) qs[j] = uint8_t((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
    store_qh(qh, bits);
}

// The weighted fit of one row, block by block: `fit` takes a block, its weights and its output.
template <typename Block, typename Fit>
void quantize_weighted(const float* x, Block* y, int64_t n, const float* importance, Fit fit) {
    constexpr int qk = 32;
    const float sigma2 = sum_of_squares(x, n) / float(n);
    float weights[qk];
    for (int64_t i = 0; i < n / qk; ++i, x += qk, importance += qk) {
        importance_weights(x, importance, sigma2, qk, weights);
        fit(x, weights, y[i]);
    }
}

}  // namespace

void quantize_q4_0(const float* x, void* vy, int64_t n) {
    constexpr int qk = SY_QK4_0;
    auto* y = static_cast<sy_block_q4_0*>(vy);
    for (int64_t i = 0; i < n / qk; ++i, x += qk) {
        const float d = signed_absmax(x, qk) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        for (int j = 0; j < qk / 2; ++j) {
            const uint8_t q0 = uint8_t(std::min(15, int(int8_t(x[j] * id + 8.5f))));
            const uint8_t q1 = uint8_t(std::min(15, int(int8_t(x[qk / 2 + j] * id + 8.5f))));
            y[i].qs[j] = uint8_t(q0 | (q1 << 4));
        }
    }
}

void quantize_q4_0_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    if (!importance) {
        quantize_q4_0(x, vy, n);
        return;
    }
    quantize_weighted(x, static_cast<sy_block_q4_0*>(vy), n, importance,
                      [](const float* xb, const float* w, sy_block_q4_0& b) {
                          int8_t L[SY_QK4_0];
                          b.d = to_half(make_qx_quants(SY_QK4_0, 8, xb, L, w));
                          store_4bit(L, b.qs);
                      });
}

void dequantize_q4_0(const void* vx, float* y, int64_t n) {
    constexpr int qk = SY_QK4_0;
    const auto* x = static_cast<const sy_block_q4_0*>(vx);
    for (int64_t i = 0; i < n / qk; ++i, y += qk) {
        const float d = from_half(x[i].d);
        for (int j = 0; j < qk / 2; ++j) {
            y[j] = float((x[i].qs[j] & 0x0F) - 8) * d;
            y[j + qk / 2] = float((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void quantize_q4_1(const float* x, void* vy, int64_t n) {
    constexpr int qk = SY_QK4_1;
    auto* y = static_cast<sy_block_q4_1*>(vy);
    for (int64_t i = 0; i < n / qk; ++i, x += qk) {
        float min, max;
        min_max(x, qk, min, max);
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        y[i].m = to_half(min);
        for (int j = 0; j < qk / 2; ++j) {
            const uint8_t q0 = uint8_t(std::min(15, int(int8_t((x[j] - min) * id + 0.5f))));
            const uint8_t q1 =
                uint8_t(std::min(15, int(int8_t((x[qk / 2 + j] - min) * id + 0.5f))));
            y[i].qs[j] = uint8_t(q0 | (q1 << 4));
        }
    }
}

void quantize_q4_1_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    if (!importance) {
        quantize_q4_1(x, vy, n);
        return;
    }
    quantize_weighted(x, static_cast<sy_block_q4_1*>(vy), n, importance,
                      [](const float* xb, const float* w, sy_block_q4_1& b) {
                          uint8_t L[SY_QK4_1], Laux[SY_QK4_1];
                          float min;
                          b.d = to_half(make_qkx3_quants(SY_QK4_1, 15, xb, w, L, &min, Laux, -0.9f,
                                                         0.05f, 36, false));
                          b.m = to_half(-min);
                          store_4bit(L, b.qs);
                      });
}

void dequantize_q4_1(const void* vx, float* y, int64_t n) {
    constexpr int qk = SY_QK4_1;
    const auto* x = static_cast<const sy_block_q4_1*>(vx);
    for (int64_t i = 0; i < n / qk; ++i, y += qk) {
        const float d = from_half(x[i].d);
        const float m = from_half(x[i].m);
        for (int j = 0; j < qk / 2; ++j) {
            y[j] = float(x[i].qs[j] & 0x0F) * d + m;
            y[j + qk / 2] = float(x[i].qs[j] >> 4) * d + m;
        }
    }
}

void quantize_q5_0(const float* x, void* vy, int64_t n) {
    constexpr int qk = SY_QK5_0;
    auto* y = static_cast<sy_block_q5_0*>(vy);
    for (int64_t i = 0; i < n / qk; ++i, x += qk) {
        const float d = signed_absmax(x, qk) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        uint32_t qh = 0;
        for (int j = 0; j < qk / 2; ++j) {
            const uint8_t q0 = uint8_t(std::min(31, int(int8_t(x[j] * id + 16.5f))));
            const uint8_t q1 = uint8_t(std::min(31, int(int8_t(x[qk / 2 + j] * id + 16.5f))));
            y[i].qs[j] = uint8_t((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= uint32_t((q0 & 0x10u) >> 4) << j;
            qh |= uint32_t((q1 & 0x10u) >> 4) << (j + qk / 2);
        }
        store_qh(y[i].qh, qh);
    }
}

void quantize_q5_0_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    if (!importance) {
        quantize_q5_0(x, vy, n);
        return;
    }
    quantize_weighted(x, static_cast<sy_block_q5_0*>(vy), n, importance,
                      [](const float* xb, const float* w, sy_block_q5_0& b) {
                          int8_t L[SY_QK5_0];
                          b.d = to_half(make_qx_quants(SY_QK5_0, 16, xb, L, w));
                          store_5bit(L, b.qs, b.qh);
                      });
}

void dequantize_q5_0(const void* vx, float* y, int64_t n) {
    constexpr int qk = SY_QK5_0;
    const auto* x = static_cast<const sy_block_q5_0*>(vx);
    for (int64_t i = 0; i < n / qk; ++i, y += qk) {
        const float d = from_half(x[i].d);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < qk / 2; ++j) {
            const int h0 = int((qh >> j) << 4) & 0x10;
            const int h1 = int(qh >> (j + 12)) & 0x10;
            y[j] = float(((x[i].qs[j] & 0x0F) | h0) - 16) * d;
            y[j + qk / 2] = float(((x[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

void quantize_q5_1(const float* x, void* vy, int64_t n) {
    constexpr int qk = SY_QK5_1;
    auto* y = static_cast<sy_block_q5_1*>(vy);
    for (int64_t i = 0; i < n / qk; ++i, x += qk) {
        float min, max;
        min_max(x, qk, min, max);
        const float d = (max - min) / ((1 << 5) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        y[i].m = to_half(min);
        uint32_t qh = 0;
        for (int j = 0; j < qk / 2; ++j) {
            const uint8_t q0 = uint8_t((x[j] - min) * id + 0.5f);
            const uint8_t q1 = uint8_t((x[qk / 2 + j] - min) * id + 0.5f);
            y[i].qs[j] = uint8_t((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= uint32_t((q0 & 0x10u) >> 4) << j;
            qh |= uint32_t((q1 & 0x10u) >> 4) << (j + qk / 2);
        }
        store_qh(y[i].qh, qh);
    }
}

void quantize_q5_1_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    if (!importance) {
        quantize_q5_1(x, vy, n);
        return;
    }
    quantize_weighted(x, static_cast<sy_block_q5_1*>(vy), n, importance,
                      [](const float* xb, const float* w, sy_block_q5_1& b) {
                          uint8_t L[SY_QK5_1], Laux[SY_QK5_1];
                          float min;
                          b.d = to_half(make_qkx3_quants(SY_QK5_1, 31, xb, w, L, &min, Laux, -0.9f,
                                                         0.05f, 36, false));
                          b.m = to_half(-min);
                          store_5bit(L, b.qs, b.qh);
                      });
}

void dequantize_q5_1(const void* vx, float* y, int64_t n) {
    constexpr int qk = SY_QK5_1;
    const auto* x = static_cast<const sy_block_q5_1*>(vx);
    for (int64_t i = 0; i < n / qk; ++i, y += qk) {
        const float d = from_half(x[i].d);
        const float m = from_half(x[i].m);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < qk / 2; ++j) {
            const int h0 = int((qh >> j) << 4) & 0x10;
            const int h1 = int(qh >> (j + 12)) & 0x10;
            y[j] = float((x[i].qs[j] & 0x0F) | h0) * d + m;
            y[j + qk / 2] = float((x[i].qs[j] >> 4) | h1) * d + m;
        }
    }
}

void quantize_q8_0(const float* x, void* vy, int64_t n) {
    constexpr int qk = SY_QK8_0;
    auto* y = static_cast<sy_block_q8_0*>(vy);
    for (int64_t i = 0; i < n / qk; ++i, x += qk) {
        float amax = 0.0f;
        for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        for (int j = 0; j < qk; ++j) y[i].qs[j] = int8_t(std::round(x[j] * id));
    }
}

void dequantize_q8_0(const void* vx, float* y, int64_t n) {
    constexpr int qk = SY_QK8_0;
    const auto* x = static_cast<const sy_block_q8_0*>(vx);
    for (int64_t i = 0; i < n / qk; ++i, y += qk) {
        const float d = from_half(x[i].d);
        for (int j = 0; j < qk; ++j) y[j] = float(x[i].qs[j]) * d;
    }
}

void quantize_q8_1(const float* x, void* vy, int64_t n) {
    constexpr int qk = SY_QK8_1;
    auto* y = static_cast<sy_block_q8_1*>(vy);
    for (int64_t i = 0; i < n / qk; ++i, x += qk) {
        float amax = 0.0f;
        for (int j = 0; j < qk; ++j) amax = std::max(amax, std::fabs(x[j]));
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = to_half(d);
        int sum = 0;
        for (int j = 0; j < qk / 2; ++j) {
            y[i].qs[j] = int8_t(std::round(x[j] * id));
            y[i].qs[qk / 2 + j] = int8_t(std::round(x[qk / 2 + j] * id));
            sum += y[i].qs[j] + y[i].qs[qk / 2 + j];
        }
        y[i].s = to_half(float(sum) * d);
    }
}

void dequantize_q8_1(const void* vx, float* y, int64_t n) {
    constexpr int qk = SY_QK8_1;
    const auto* x = static_cast<const sy_block_q8_1*>(vx);
    for (int64_t i = 0; i < n / qk; ++i, y += qk) {
        const float d = from_half(x[i].d);
        for (int j = 0; j < qk; ++j) y[j] = float(x[i].qs[j]) * d;
    }
}

}  // namespace sy::quants::detail
