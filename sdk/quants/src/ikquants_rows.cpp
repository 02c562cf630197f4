// ik_llama.cpp's row-scaled types IQ2_KS, IQ3_KS, IQ4_KS, IQ4_KSS, IQ5_KS and IQ2_KL
// (docs/ik-quants.md, 3.7-3.12). A row is its scale d (f16 for IQ2_KS, IQ3_KS, IQ2_KL; f32 for
// the others) followed by 256-value blocks whose 32-value sub-blocks carry an integer scale l and,
// but for IQ2_KL, a flag for the shifted table half:
//   y = (d * l) * value,
// with d * l formed first (for an f32 d it rounds), as ik_llama.cpp's decoders do.
//
// Quantizing (switchyard's own search, of the kind ik's quantizers make): per sub-block the best
// float scale on each table half (ik_fit.hpp), the better half; d puts the row's largest
// sub-block scale on the end of the integer range; every sub-block's scale is rounded onto it,
// both halves are tried again at that scale, and d is refitted by weighted least squares over
// the whole row. IQ4_KSS (whose encoding has no room for a group of four indices with an odd
// number of set bits) then searches each sub-block's halves and nearby scales again with that
// rule applied (the cheapest change of one index per odd group), and refits d, twice.
// IQ2_KL fits pairs of values on its 32-entry pair table the same way.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "ik_fit.hpp"
#include "row_scale.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace sy::quants::detail {
namespace {

using namespace ik;

constexpr int kSub = 32;               // values per sub-block
constexpr int kSubs = SY_QK_K / kSub;  // sub-blocks per block

const NearestIndex kIq4ksNearest[2] = {{16, sy_iq4k_values}, {16, sy_iq4k_values + 16}};
const NearestIndex kIq5ksNearest[2] = {{32, sy_iq5nl_values}, {32, sy_iq5nl_values + 32}};
constexpr Table kIq2ks{sy_iq2nl_values, 4, -16, 15, false};
constexpr Table kIq3ks{sy_iq3nl_values, 8, -16, 15, false};
constexpr Table kIq4ks{sy_iq4k_values, 16, -127, 127, true, kIq4ksNearest};
constexpr Table kIq5ks{sy_iq5nl_values, 32, -127, 127, true, kIq5ksNearest};

// A fitted row: d, per sub-block its integer scale and table half, per value its index.
struct RowFit {
    float d = 0;
    std::vector<int> scale;
    std::vector<uint8_t> half;
    std::vector<uint8_t> L;
    std::vector<float> w;  // the fit's weights
};

// The fit weights of a row (sigma2 = 2 mean(x^2) per super-block, as the IQ*_K quantizers).
std::vector<float> row_weights(const float* x, int64_t n, const float* importance) {
    std::vector<float> w(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i += SY_QK_K) {
        const float sigma2 = 2 * sum_of_squares(x + i, SY_QK_K) / float(SY_QK_K);
        subblock_weights(x + i, importance ? importance + i : nullptr, sigma2, SY_QK_K, kSub,
                         w.data() + i);
    }
    return w;
}

float round_d(float d, bool f16) {
    return f16 ? from_half(to_half(d)) : d;
}

// d on the far end of the integer range from the largest sub-block scale (see ikquants.cpp).
float range_scale(const Table& t, float max_scale) {
    return -t.scale_lo > t.scale_hi ? max_scale / float(t.scale_lo)
                                    : std::fabs(max_scale) / float(t.scale_hi);
}

// d refitted by weighted least squares over the row: sum w x q / sum w q^2, q = l * value.
float refit_d(const Table& t, const float* x, const RowFit& r, float fallback) {
    double sxy = 0, syy = 0;
    for (size_t k = 0; k < r.L.size(); ++k) {
        const size_t s = k / kSub;
        const double q = double(r.scale[s]) * t.values[r.half[s] * t.n + r.L[k]];
        sxy += r.w[k] * x[k] * q;
        syy += r.w[k] * q * q;
    }
    return syy > 0 && sxy > 0 ? float(sxy / syy) : fallback;
}

RowFit fit_row(const Table& t, const float* x, int64_t n, const float* importance, bool f16) {
    const int64_t subs = n / kSub;
    RowFit r;
    r.scale.assign(size_t(subs), 0);
    r.half.assign(size_t(subs), 0);
    r.L.assign(size_t(n), 0);
    r.w = row_weights(x, n, importance);
    std::vector<float> sub_scale(static_cast<size_t>(subs));
    float max_scale = 0;
    for (int64_t s = 0; s < subs; ++s) {
        float score0, score1;
        const float* xs = x + kSub * s;
        const float* ws = r.w.data() + kSub * s;
        const float d0 = best_scale(kSub, xs, ws, t, 0, score0);
        const float d1 = best_scale(kSub, xs, ws, t, 1, score1);
        sub_scale[size_t(s)] = score1 > score0 ? d1 : d0;
        if (std::fabs(sub_scale[size_t(s)]) > std::fabs(max_scale))
            max_scale = sub_scale[size_t(s)];
    }
    const float d = round_d(range_scale(t, max_scale), f16);
    if (d == 0) {
        // Odd scales have no 0: 1 (times d = 0).
        std::fill(r.scale.begin(), r.scale.end(), t.odd_scales ? 1 : 0);
        return r;
    }
    const float id = 1 / d;
    const uint8_t zero = uint8_t(best_index_int8(t.n, t.values, 0.f));
    for (int64_t s = 0; s < subs; ++s) {
        const int l = round_scale(t, id * sub_scale[size_t(s)]);
        r.scale[size_t(s)] = l;
        const float* xs = x + kSub * s;
        const float* ws = r.w.data() + kSub * s;
        uint8_t* Ls = r.L.data() + kSub * s;
        if (l == 0) {
            std::fill(Ls, Ls + kSub, zero);
            continue;
        }
        const float idl = 1 / (d * float(l));
        uint8_t Lh[2][kSub];
        double err[2] = {0, 0};
        for (int half = 0; half < 2; ++half) {
            const int8_t* values = t.values + half * t.n;
            for (int j = 0; j < kSub; ++j) {
                Lh[half][j] = uint8_t(t.index(half, idl * xs[j]));
                const double e = xs[j] - double(d) * l * values[Lh[half][j]];
                err[half] += ws[j] * e * e;
            }
        }
        const int half = err[1] < err[0] ? 1 : 0;
        r.half[size_t(s)] = uint8_t(half);
        std::copy(Lh[half], Lh[half] + kSub, Ls);
    }
    r.d = round_d(refit_d(t, x, r, d), f16);
    return r;
}

// Row layout: the scale, then the blocks.

// The IQ4_KS / IQ5_KS scale byte: bit 0 the half, bits 1-7 the odd scale l as l + 127.
uint8_t ks_scale_byte(int l, int half) {
    return uint8_t((l + 127) | half);
}
int ks_scale(uint8_t byte) {
    return (byte & 254) - 127;
}

// The position in sub-block-relative order of the four indices of IQ4_KSS's word k: values
// 2k, 2k + 16, 2k + 1, 2k + 17, in nibbles 0-3.
constexpr int kKssOrder[4] = {0, 16, 1, 17};

// ---- IQ2_KL: pairs on a 32-entry table ----------------------------------------------------------

int8_t kl_first(int c) {
    return int8_t(sy_iq2kl_values[c] & 0xFF);
}
int8_t kl_second(int c) {
    return int8_t(sy_iq2kl_values[c] >> 8);
}

// The pair code nearest (weighted) to (a, b) in table units: the first c of least
// e = wa (a - first_c)^2 + wb (b - second_c)^2.
#if defined(__SSE2__)
// Four codes per step: each lane keeps the first code of its least e (codes lane, lane + 4, ...),
// then the lanes' least e wins, the smaller code on ties: the first code of least e overall, with
// every e computed in the same float operations as one at a time.
struct KlPairsF {
    alignas(16) float first[32];
    alignas(16) float second[32];
};
const KlPairsF kKlPairsF = [] {
    KlPairsF t{};
    for (int c = 0; c < 32; ++c) {
        t.first[c] = float(kl_first(c));
        t.second[c] = float(kl_second(c));
    }
    return t;
}();

int nearest_pair(float a, float b, float wa, float wb) {
    const __m128 va = _mm_set1_ps(a), vb = _mm_set1_ps(b);
    const __m128 vwa = _mm_set1_ps(wa), vwb = _mm_set1_ps(wb);
    __m128 best_e = _mm_set1_ps(INFINITY);
    __m128i best_c = _mm_setzero_si128();
    __m128i c = _mm_setr_epi32(0, 1, 2, 3);
    for (int v = 0; v < 8; ++v, c = _mm_add_epi32(c, _mm_set1_epi32(4))) {
        const __m128 ea = _mm_sub_ps(va, _mm_load_ps(kKlPairsF.first + 4 * v));
        const __m128 eb = _mm_sub_ps(vb, _mm_load_ps(kKlPairsF.second + 4 * v));
        const __m128 e =
            _mm_add_ps(_mm_mul_ps(_mm_mul_ps(vwa, ea), ea), _mm_mul_ps(_mm_mul_ps(vwb, eb), eb));
        const __m128 lt = _mm_cmplt_ps(e, best_e);
        best_e = _mm_or_ps(_mm_and_ps(lt, e), _mm_andnot_ps(lt, best_e));
        const __m128i lti = _mm_castps_si128(lt);
        best_c = _mm_or_si128(_mm_and_si128(lti, c), _mm_andnot_si128(lti, best_c));
    }
    alignas(16) float e[4];
    alignas(16) int32_t code[4];
    _mm_store_ps(e, best_e);
    _mm_store_si128(reinterpret_cast<__m128i*>(code), best_c);
    int best = 0;
    for (int lane = 1; lane < 4; ++lane)
        if (e[lane] < e[best] || (e[lane] == e[best] && code[lane] < code[best])) best = lane;
    return code[best];
}
#else
int nearest_pair(float a, float b, float wa, float wb) {
    int best = 0;
    float best_e = INFINITY;
    for (int c = 0; c < 32; ++c) {
        const float ea = a - kl_first(c), eb = b - kl_second(c);
        const float e = wa * ea * ea + wb * eb * eb;
        if (e < best_e) best_e = e, best = c;
    }
    return best;
}
#endif

// Codes of the 16 pairs of a sub-block at inverse scale id, and sum w q x, sum w q^2.
void fit_pairs(const float* x, const float* w, float id, uint8_t* codes, float& sumqx,
               float& sumq2) {
    sumqx = sumq2 = 0;
    for (int p = 0; p < kSub / 2; ++p) {
        const int c = nearest_pair(id * x[2 * p], id * x[2 * p + 1], w[2 * p], w[2 * p + 1]);
        codes[p] = uint8_t(c);
        const float q0 = kl_first(c), q1 = kl_second(c);
        sumqx += w[2 * p] * q0 * x[2 * p] + w[2 * p + 1] * q1 * x[2 * p + 1];
        sumq2 += w[2 * p] * q0 * q0 + w[2 * p + 1] * q1 * q1;
    }
}

float best_pair_scale(const float* x, const float* w) {
    float amax = 0, max = 0;
    for (int j = 0; j < kSub; ++j)
        if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), max = x[j];
    if (amax < kGroupMaxEps) return 0;
    uint8_t codes[kSub / 2];
    float best_d = 0, score = 0;
    for (const float end : {-63.f, 47.f}) {  // the pair values' ends
        for (int itry = -kNtry; itry <= kNtry; ++itry) {
            const float id = (end + float(itry) * std::fabs(end) / 64.f) / max;
            float sumqx, sumq2;
            fit_pairs(x, w, id, codes, sumqx, sumq2);
            if (sumq2 > 0 && sumqx * sumqx > score * sumq2) {
                score = sumqx * sumqx / sumq2;
                best_d = sumqx / sumq2;
            }
        }
    }
    return best_d;
}

}  // namespace

// ---- IQ2_KS, IQ3_KS, IQ4_KS, IQ5_KS ----------------------------------------------------------

namespace {

// Fits a row on table t and writes it: its scale (f16 or f32), then per block what pack puts
// there from the block's 8 sub-block scales and halves and its 256 indices.
template <typename Block, typename Pack>
void write_row(const Table& t, bool f16, const float* x, void* vy, int64_t n,
               const float* importance, Pack pack) {
    const RowFit r = fit_row(t, x, n, importance, f16);
    store_d(vy, r.d, f16);
    auto* y = row_blocks<Block>(vy, f16 ? 2 : 4);
    for (int64_t i = 0; i < n / SY_QK_K; ++i) {
        std::memset(&y[i], 0, sizeof y[i]);
        pack(y[i], r.scale.data() + kSubs * i, r.half.data() + kSubs * i, r.L.data() + SY_QK_K * i);
    }
}

// y[k] = (d * scale(block, k / 32)) * value(block, k) over a row.
template <typename Block, typename Scale, typename Value>
void read_row(const void* vx, float* y, int64_t n, bool f16, Scale scale, Value value) {
    const float d = f16 ? row_d_f16(vx) : row_d_f32(vx);
    const auto* x = row_blocks<Block>(vx, f16 ? 2 : 4);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, y += SY_QK_K)
        for (int k = 0; k < SY_QK_K; ++k) {
            const float dl = d * float(scale(x[i], k / kSub));
            y[k] = dl * float(value(x[i], k));
        }
}

// The 2- and 3-bit indices (IQ2_K's planes; bit 2 of IQ3_KS's in qh).
int index2(const uint8_t* qs, int k) {
    return (qs[plane_byte(k)] >> plane_shift(k)) & 3;
}
int index3(const uint8_t* qs, const uint8_t* qh, int k) {
    return index2(qs, k) | ((qh[k % 32] >> (k / 32)) & 1) << 2;
}
int index4(const uint8_t* qs, int k) {
    return (qs[nibble_byte(k, 32)] >> nibble_shift(k, 32)) & 0xF;
}
int index5(const uint8_t* qs, const uint8_t* qh, int k) {
    return ((qs[nibble_byte(k, 64)] >> nibble_shift(k, 64)) & 0xF) | ((qh[k % 32] >> (k / 32)) & 1)
                                                                         << 4;
}

}  // namespace

void quantize_iq2_ks_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    write_row<sy_block_iq2_ks>(
        kIq2ks, true, x, vy, n, importance,
        [](sy_block_iq2_ks& y, const int* scale, const uint8_t* half, const uint8_t* L) {
            for (int b = 0; b < kSubs; ++b) {
                const int S = scale[b] + 16;
                y.scales[b / 2] |= uint8_t((S & 0xF) << 4 * (b % 2));
                y.extra = uint16_t(y.extra | (S >> 4) << (8 + b) | half[b] << b);
            }
            for (int k = 0; k < SY_QK_K; ++k)
                y.qs[plane_byte(k)] |= uint8_t(L[k] << plane_shift(k));
        });
}

void dequantize_iq2_ks(const void* vx, float* y, int64_t n) {
    read_row<sy_block_iq2_ks>(
        vx, y, n, true,
        [](const sy_block_iq2_ks& b, int s) {
            return (((b.scales[s / 2] >> 4 * (s % 2)) & 0xF) | ((b.extra >> (8 + s)) & 1) << 4) -
                   16;
        },
        [](const sy_block_iq2_ks& b, int k) {
            return sy_iq2nl_values[4 * ((b.extra >> (k / kSub)) & 1) + index2(b.qs, k)];
        });
}

void quantize_iq3_ks_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    write_row<sy_block_iq3_ks>(
        kIq3ks, true, x, vy, n, importance,
        [](sy_block_iq3_ks& y, const int* scale, const uint8_t* half, const uint8_t* L) {
            for (int b = 0; b < kSubs; ++b) {
                const int S = scale[b] + 16;
                y.scales[b % 4] |= uint8_t((S & 0xF) << 4 * (b / 4));
                y.extra = uint16_t(y.extra | (S >> 4) << b | half[b] << (8 + b));
            }
            for (int k = 0; k < SY_QK_K; ++k) {
                y.qs[plane_byte(k)] |= uint8_t((L[k] & 3) << plane_shift(k));
                y.qh[k % 32] |= uint8_t((L[k] >> 2) << (k / 32));
            }
        });
}

void dequantize_iq3_ks(const void* vx, float* y, int64_t n) {
    read_row<sy_block_iq3_ks>(
        vx, y, n, true,
        [](const sy_block_iq3_ks& b, int s) {
            return (((b.scales[s % 4] >> 4 * (s / 4)) & 0xF) | ((b.extra >> s) & 1) << 4) - 16;
        },
        [](const sy_block_iq3_ks& b, int k) {
            return sy_iq3nl_values[8 * ((b.extra >> (8 + k / kSub)) & 1) + index3(b.qs, b.qh, k)];
        });
}

void quantize_iq4_ks_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    write_row<sy_block_iq4_ks>(
        kIq4ks, false, x, vy, n, importance,
        [](sy_block_iq4_ks& y, const int* scale, const uint8_t* half, const uint8_t* L) {
            for (int b = 0; b < kSubs; ++b) y.scales[b] = ks_scale_byte(scale[b], half[b]);
            for (int k = 0; k < SY_QK_K; ++k)
                y.qs[nibble_byte(k, 32)] |= uint8_t(L[k] << nibble_shift(k, 32));
        });
}

void dequantize_iq4_ks(const void* vx, float* y, int64_t n) {
    read_row<sy_block_iq4_ks>(
        vx, y, n, false, [](const sy_block_iq4_ks& b, int s) { return ks_scale(b.scales[s]); },
        [](const sy_block_iq4_ks& b, int k) {
            return sy_iq4k_values[16 * (b.scales[k / kSub] & 1) + index4(b.qs, k)];
        });
}

void quantize_iq5_ks_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    write_row<sy_block_iq5_ks>(
        kIq5ks, false, x, vy, n, importance,
        [](sy_block_iq5_ks& y, const int* scale, const uint8_t* half, const uint8_t* L) {
            for (int b = 0; b < kSubs; ++b) y.scales[b] = ks_scale_byte(scale[b], half[b]);
            for (int k = 0; k < SY_QK_K; ++k) {
                y.qs[nibble_byte(k, 64)] |= uint8_t((L[k] & 0xF) << nibble_shift(k, 64));
                y.qh[k % 32] |= uint8_t((L[k] >> 4) << (k / 32));
            }
        });
}

void dequantize_iq5_ks(const void* vx, float* y, int64_t n) {
    read_row<sy_block_iq5_ks>(
        vx, y, n, false, [](const sy_block_iq5_ks& b, int s) { return ks_scale(b.scales[s]); },
        [](const sy_block_iq5_ks& b, int k) {
            return sy_iq5nl_values[32 * (b.scales[k / kSub] & 1) + index5(b.qs, b.qh, k)];
        });
}

// ---- IQ4_KSS ---------------------------------------------------------------------------------

// The indices of one 32-value sub-block at scale dl on a table half, each word's four (values
// 2k, 2k + 16, 2k + 1, 2k + 17) with an even number of set bits: the nearest entries, then in a
// word whose bits are odd the one index changed, to one of the other parity, that costs least.
// Returns the weighted squared error.
double kss_assign(const float* x, const float* w, float dl, const int8_t* values,
                  const NearestIndex& nearest, uint8_t* L) {
    const float id = 1 / dl;
    for (int j = 0; j < kSub; ++j) L[j] = uint8_t(nearest(id * x[j]));
    double err = 0;
    for (int k = 0; k < 8; ++k) {
        int pos[4], parity = 0;
        for (int m = 0; m < 4; ++m) {
            pos[m] = 2 * k + kKssOrder[m];
            parity ^= std::popcount(unsigned(L[pos[m]]));
        }
        if (parity & 1) {
            float best = INFINITY;
            int best_pos = pos[0], best_q = L[pos[0]] ^ 1;
            for (const int p : pos) {
                const uint8_t q0 = L[p];
                const float e0 = x[p] - dl * values[q0];
                for (int q = 0; q < 16; ++q) {
                    if (((std::popcount(unsigned(q)) ^ std::popcount(unsigned(q0))) & 1) == 0)
                        continue;
                    const float e = x[p] - dl * values[q];
                    const float cost = w[p] * (e * e - e0 * e0);
                    if (cost < best) best = cost, best_pos = p, best_q = q;
                }
            }
            L[best_pos] = uint8_t(best_q);
        }
        for (const int p : pos) {
            const double e = x[p] - double(dl) * values[L[p]];
            err += w[p] * e * e;
        }
    }
    return err;
}

// IQ4_KSS: IQ4_KS's fit, then, with the parity rule in the search: per sub-block, both table
// halves and the odd scales next to the fitted one, each assigned under the rule, the least
// error kept; d refitted over the row; and once more at the refitted d.
void quantize_iq4_kss_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    RowFit r = fit_row(kIq4ks, x, n, importance, false);
    for (int pass = 0; pass < 2 && r.d != 0; ++pass) {
        for (int64_t s = 0; s < n / kSub; ++s) {
            const float* xs = x + kSub * s;
            const float* ws = r.w.data() + kSub * s;
            uint8_t* Ls = r.L.data() + kSub * s;
            const int l0 = r.scale[size_t(s)];
            double best = INFINITY;
            uint8_t L[kSub];
            for (int half = 0; half < 2; ++half)
                for (const int l : {l0 - 2, l0, l0 + 2}) {
                    if (l < kIq4ks.scale_lo || l > kIq4ks.scale_hi) continue;
                    const double e = kss_assign(xs, ws, r.d * float(l), kIq4ks.values + 16 * half,
                                                kIq4ks.nearest[half], L);
                    if (e < best) {
                        best = e;
                        r.scale[size_t(s)] = l;
                        r.half[size_t(s)] = uint8_t(half);
                        std::copy(L, L + kSub, Ls);
                    }
                }
        }
        r.d = refit_d(kIq4ks, x, r, r.d);
    }
    store_d(vy, r.d, false);
    auto* y = row_blocks<sy_block_iq4_kss>(vy, 4);
    for (int64_t i = 0; i < n / SY_QK_K; ++i) {
        for (int b = 0; b < kSubs; ++b) {
            const size_t s = size_t(kSubs * i + b);
            const uint8_t scale = ks_scale_byte(r.scale[s], r.half[s]);
            const uint8_t* L = r.L.data() + kSub * s;
            for (int k = 0; k < 8; ++k) {
                unsigned v = 0;
                for (int m = 0; m < 4; ++m) v |= unsigned(L[2 * k + kKssOrder[m]]) << 4 * m;
                // t with t ^ (t << 1) = v: the prefix XOR of v's bits (v has even parity, so
                // bit 15 comes out right).
                unsigned t = 0, bit = 0;
                for (int j = 0; j < 15; ++j) {
                    bit ^= (v >> j) & 1;
                    t |= bit << j;
                }
                const uint16_t word = uint16_t((t << 1) | ((scale >> k) & 1));
                std::memcpy(y[i].qs + 2 * (8 * b + k), &word, 2);
            }
        }
    }
}

void dequantize_iq4_kss(const void* vx, float* y, int64_t n) {
    const float d = row_d_f32(vx);
    const auto* x = row_blocks<sy_block_iq4_kss>(vx, 4);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, y += SY_QK_K) {
        for (int b = 0; b < kSubs; ++b) {
            uint16_t w[8];
            std::memcpy(w, x[i].qs + 16 * b, 16);
            unsigned scale = 0;
            for (int k = 0; k < 8; ++k) scale |= unsigned(w[k] & 1) << k;
            const float dl = d * float(ks_scale(uint8_t(scale)));
            const int8_t* values = sy_iq4k_values + 16 * (scale & 1);
            for (int k = 0; k < 8; ++k) {
                const unsigned a = w[k] & 0xFFFEu;
                const unsigned v = (a ^ (a >> 1)) & 0xFFFFu;
                for (int m = 0; m < 4; ++m)
                    y[kSub * b + 2 * k + kKssOrder[m]] = dl * float(values[(v >> 4 * m) & 0xF]);
            }
        }
    }
}

// ---- IQ2_KL ----------------------------------------------------------------------------------

void quantize_iq2_kl_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    const int64_t subs = n / kSub;
    const std::vector<float> w = row_weights(x, n, importance);
    std::vector<float> sub_scale(static_cast<size_t>(subs));
    float max_scale = 0;
    for (int64_t s = 0; s < subs; ++s) {
        sub_scale[size_t(s)] = best_pair_scale(x + kSub * s, w.data() + kSub * s);
        if (std::fabs(sub_scale[size_t(s)]) > std::fabs(max_scale))
            max_scale = sub_scale[size_t(s)];
    }
    float d = from_half(to_half(max_scale / -32.f));
    std::vector<int> scale(static_cast<size_t>(subs), 0);
    std::vector<uint8_t> codes(size_t(n / 2), 17);  // pair 17 is (1, 1), the nearest to zero
    if (d != 0) {
        const float id = 1 / d;
        double sxy = 0, syy = 0;
        for (int64_t s = 0; s < subs; ++s) {
            const int l = std::clamp(nearest_int(id * sub_scale[size_t(s)]), -32, 31);
            scale[size_t(s)] = l;
            if (l == 0) continue;
            float sumqx, sumq2;
            fit_pairs(x + kSub * s, w.data() + kSub * s, 1 / (d * float(l)),
                      codes.data() + kSub / 2 * s, sumqx, sumq2);
            sxy += double(l) * sumqx;
            syy += double(l) * l * sumq2;
        }
        if (syy > 0 && sxy > 0) d = float(sxy / syy);
    }
    store_d(vy, d, true);
    auto* y = row_blocks<sy_block_iq2_kl>(vy, 2);
    for (int64_t i = 0; i < n / SY_QK_K; ++i) {
        std::memset(&y[i], 0, sizeof y[i]);
        for (int b = 0; b < kSubs; ++b) {
            const size_t s = size_t(kSubs * i + b);
            const int S = scale[s] + 32;
            y[i].scales_h = uint16_t(y[i].scales_h | (S >> 4) << 2 * b);
            y[i].scales_l[b % 4] |= uint8_t((S & 0xF) << 4 * (b / 4));
            for (int p = 0; p < kSub / 2; ++p) {
                const int c = codes[kSub / 2 * s + size_t(p)];
                y[i].qs[16 * (b / 2) + p] |= uint8_t((c & 0xF) << 4 * (b % 2));
                y[i].qh[p] |= uint8_t((c >> 4) << b);
            }
        }
    }
}

void dequantize_iq2_kl(const void* vx, float* y, int64_t n) {
    const float d = row_d_f16(vx);
    const auto* x = row_blocks<sy_block_iq2_kl>(vx, 2);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, y += SY_QK_K) {
        for (int b = 0; b < kSubs; ++b) {
            const int S = ((x[i].scales_l[b % 4] >> 4 * (b / 4)) & 0xF) |
                          (((x[i].scales_h >> 2 * b) & 3) << 4);
            const float dl = d * float(S - 32);
            for (int p = 0; p < kSub / 2; ++p) {
                const int c = ((x[i].qs[16 * (b / 2) + p] >> 4 * (b % 2)) & 0xF) |
                              (((x[i].qh[p] >> b) & 1) << 4);
                y[kSub * b + 2 * p] = dl * float(kl_first(c));
                y[kSub * b + 2 * p + 1] = dl * float(kl_second(c));
            }
        }
    }
}

#define SY_IK_ROW_QUANTIZER(name)                              \
    void quantize_##name(const float* x, void* y, int64_t n) { \
        quantize_##name##_weighted(x, y, n, nullptr);          \
    }
SY_IK_ROW_QUANTIZER(iq2_ks)
SY_IK_ROW_QUANTIZER(iq3_ks)
SY_IK_ROW_QUANTIZER(iq4_ks)
SY_IK_ROW_QUANTIZER(iq4_kss)
SY_IK_ROW_QUANTIZER(iq5_ks)
SY_IK_ROW_QUANTIZER(iq2_kl)
#undef SY_IK_ROW_QUANTIZER

// ---- Q8_KV -----------------------------------------------------------------------------------
// ik_llama.cpp's 8-bit KV-cache rows (docs/ik-quants.md 5): f32 d = max|x| / 127, int32 sum of the
// row's q (what its dot products take as the activation sum), then n int8 q = round-half-even
// (x * (1 / d)); y = d * q. A row of zeros is d = 0, sum = 0, q = 0.

void quantize_q8_kv(const float* x, void* vy, int64_t n) {
    float amax = 0.0f;
    for (int64_t j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
    auto* row = static_cast<uint8_t*>(vy);
    auto* q = reinterpret_cast<int8_t*>(row + 8);
    int32_t sum = 0;
    const float d = amax / 127.0f;
    if (amax == 0.0f) {
        std::memset(q, 0, size_t(n));
    } else {
        const float id = 1.0f / d;
        for (int64_t j = 0; j < n; ++j) {
            q[j] = int8_t(std::nearbyint(x[j] * id));  // the default rounding: half to even
            sum += q[j];
        }
    }
    std::memcpy(row, &d, 4);
    std::memcpy(row + 4, &sum, 4);
}

void dequantize_q8_kv(const void* vx, float* y, int64_t n) {
    const float d = row_d_f32(vx);
    const auto* q = reinterpret_cast<const int8_t*>(static_cast<const uint8_t*>(vx) + 8);
    for (int64_t j = 0; j < n; ++j) y[j] = d * float(q[j]);
}

}  // namespace sy::quants::detail
