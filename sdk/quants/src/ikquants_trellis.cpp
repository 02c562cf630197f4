// ik_llama.cpp's trellis types IQ1_KT, IQ2_KT, IQ3_KT, IQ4_KT (docs/ik-quants.md section 4): a
// row is its f32 scale d and 256-value blocks; each group of G values (8; 4 for IQ4_KT) is
// generated from a stored code by the integer recurrence of quant_blocks.h, and scaled by its
// 32-value sub-block's scale:
//   y = ((d * f) * scale) * v      (IQ3_KT: ... * |v|, negated where the sign bit is set)
// with f = 1.05 for IQ2_KT, 1.01 for IQ3_KT and 1 for the others: ik_llama.cpp's matrix products
// (CPU and CUDA) scale the stored d so, and they are what its users' outputs come from (its
// dequantize_row_iq2_kt leaves the 1.05 out; docs/ik-quants.md 4.6). The quantizer stores its
// fitted scale divided by f.
//
// Quantizing (switchyard's own search): every code's group is computed once per type and
// bucketed by a key of its values (their signs; IQ3_KT and IQ4_KT add which are large), so a
// group of the row is matched against the codes of its own bucket and of a few buckets a sign
// or a large bit or two away (Reach). Per sub-block a few trial scales around rms(x) / rms(v) are
// fitted (codes, then the weighted least-squares scale); the sub-block scales are rounded onto the
// type's scale grid against a row scale d, the codes searched again at the rounded scales, and d
// refitted by weighted least squares over the row.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "internal.hpp"
#include "row_scale.hpp"

namespace sy::quants::detail {
namespace {

constexpr int kSub = 32;               // values per sub-block
constexpr int kSubs = SY_QK_K / kSub;  // sub-blocks per block

// The G values of the group whose generator starts at x (code plus offset).
template <int G>
void trellis(uint32_t x, int8_t* v) {
    for (int t = 0; t < G; ++t) {
        x *= SY_KT_MULT;
        const uint32_t s = x & 0x3F3F3F3Fu;
        v[t] = int8_t(int((s & 0xFF) + ((s >> 8) & 0xFF) + ((s >> 16) & 0xFF) + (s >> 24)) - 126);
    }
}

constexpr float kIq2KtFactor = 1.05f, kIq3KtFactor = 1.01f;
constexpr int kMeta = 4;  // the f32 row scale

// ---- codes of each type ------------------------------------------------------------------------

uint32_t iq2_kt_code(const sy_block_iq2_kt& b, int g) {
    return uint32_t(b.ql[2 * g] | b.ql[2 * g + 1] << 8);
}
uint32_t iq1_kt_code(const sy_block_iq1_kt& b, int g) {
    const int sb = g / 4, i = g % 4;
    return uint32_t(b.ql[g] | ((b.qh[4 * (sb % 4) + i] >> 4 * (sb / 4)) & 0xF) << 8 |
                    ((b.sh[sb] >> (4 + i)) & 1) << 12);
}
uint32_t iq4_kt_shb(const sy_block_iq4_kt& b, int sb) {
    uint32_t w;
    std::memcpy(&w, b.shb + 4 * sb, 4);
    return w;
}
uint32_t iq4_kt_code(const sy_block_iq4_kt& b, int j) {
    const uint32_t shb = iq4_kt_shb(b, j / 8);
    return uint32_t(b.ql[j] | ((b.qh[j % 32] >> 4 * (j / 32)) & 0xF) << 8) |
           ((shb >> (8 + 3 * (j % 8))) & 7) << 12;
}

// ---- the code search -------------------------------------------------------------------------

// Every code's group, bucketed by a key of its values. A bucket keeps its codes' values as
// floats, value-major (value t of code c at t * padded + c), padded to a multiple of kLanes with
// copies of its first code, so a scan over it is whole vectors.
constexpr int kLanes = 8;

// How far a group's search reaches beyond its own bucket: the buckets with the sign of one of its
// `signs` smallest values flipped, or of two of its `sign_pairs` smallest; the same for the large
// bits of the values nearest the threshold (`larges`, `large_pairs`).
struct Reach {
    int signs = 0, sign_pairs = 0, larges = 0, large_pairs = 0;
};

struct Codebook {
    int dim = 0;
    bool magnitude = false;   // values are |v| (IQ3_KT)
    bool large_bits = false;  // the key has a "large" bit per value besides the signs
    Reach reach;
    std::vector<int8_t> values;  // code-major
    struct Bucket {
        std::vector<uint32_t> codes;  // padded
        std::vector<float> v;         // dim x padded
        size_t padded() const { return codes.size(); }
    };
    std::vector<Bucket> bucket;  // by key

    int key_of(const float* y) const {
        int k = 0;
        for (int t = 0; t < dim; ++t) {
            if (!magnitude && y[t] < 0) k |= 1 << t;
            if (large_bits && std::fabs(y[t]) >= kLarge) k |= 1 << (t + (magnitude ? 0 : dim));
        }
        return k;
    }
    static constexpr float kLarge = 28.0f;
};

Codebook make_codebook(int dim, int bits, uint32_t offset, bool magnitude, bool large_bits,
                       Reach reach) {
    Codebook cb;
    cb.dim = dim;
    cb.magnitude = magnitude;
    cb.large_bits = large_bits;
    cb.reach = reach;
    const uint32_t n = 1u << bits;
    cb.values.resize(size_t(n) * size_t(dim));
    const int key_bits = (magnitude ? 0 : dim) + (large_bits ? dim : 0);
    cb.bucket.resize(size_t(1) << key_bits);
    for (uint32_t c = 0; c < n; ++c) {
        int8_t* v = cb.values.data() + size_t(c) * size_t(dim);
        if (dim == 8)
            trellis<8>(c + offset, v);
        else
            trellis<4>(c + offset, v);
        float y[8];
        for (int t = 0; t < dim; ++t) {
            if (magnitude) v[t] = int8_t(std::abs(v[t]));
            y[t] = v[t];
        }
        cb.bucket[size_t(cb.key_of(y))].codes.push_back(c);
    }
    for (auto& b : cb.bucket) {
        if (b.codes.empty()) continue;
        while (b.codes.size() % kLanes) b.codes.push_back(b.codes[0]);
        const size_t m = b.padded();
        b.v.resize(m * size_t(dim));
        for (size_t c = 0; c < m; ++c)
            for (int t = 0; t < dim; ++t)
                b.v[size_t(t) * m + c] = cb.values[size_t(b.codes[c]) * size_t(dim) + size_t(t)];
    }
    return cb;
}

// The codebooks, built once: IQ2_KT (16-bit codes, groups of 8), IQ3_KT (the same, |v|), IQ1_KT
// (13-bit), IQ4_KT (15-bit, groups of 4, both offsets). The reaches trade time for error: on
// Gaussian-like rows, IQ2_KT's (7 buckets of about 256 codes) and IQ1_KT's (11 of about 32) come
// within 2-3% of the RMS error of searching the whole book, IQ3_KT's within 1%, and IQ4_KT's
// (3 of about 128) within 3% (docs/ik-quants.md, "In switchyard today").
const Codebook& codebook(int which) {
    static std::once_flag once[5];
    static Codebook books[5];
    std::call_once(once[which], [which] {
        const Reach short_reach{1, 0, 1, 0};
        switch (which) {
            case 0:
                books[0] = make_codebook(8, 16, SY_KT_OFFSET, false, false, {3, 3, 0, 0});
                break;
            case 1: books[1] = make_codebook(8, 16, SY_KT_OFFSET, true, true, {0, 0, 3, 3}); break;
            case 2:
                books[2] = make_codebook(8, 13, SY_KT_OFFSET, false, false, {4, 4, 0, 0});
                break;
            case 3: books[3] = make_codebook(4, 15, SY_KT_OFFSET, false, true, short_reach); break;
            default:
                books[4] =
                    make_codebook(4, 15, SY_KT_OFFSET + SY_KT_OFFSET4, false, true, short_reach);
        }
    });
    return books[which];
}

using F8 = float __attribute__((vector_size(4 * kLanes)));
using I8 = int32_t __attribute__((vector_size(4 * kLanes)));

// The search's two inner loops read and write only this file's own arrays, at indices bounded by
// a bucket's size; the sanitizer builds leave them uninstrumented (instrumented, they were most
// of the sanitizer test run's time).
#define SY_HOT_LOOP __attribute__((no_sanitize("address", "undefined")))

// a_c = sum_t w_t v_tc^2 and b_c = sum_t w_t x_t v_tc over a bucket's m (padded) codes, whose
// values are v[t * m + c].
inline __attribute__((always_inline)) SY_HOT_LOOP void score_bucket_body(const float* v, size_t m,
                                                                         int dim, const float* w,
                                                                         const float* x, float* a,
                                                                         float* b) {
    // The first value sets a and b (they come uninitialised), the others add to them.
    {
        const float wt = w[0], wx = w[0] * x[0];
        for (size_t c = 0; c < m; ++c) {
            a[c] = wt * v[c] * v[c];
            b[c] = wx * v[c];
        }
        v += m;
    }
    for (int t = 1; t < dim; ++t, v += m) {
        const float wt = w[t], wx = w[t] * x[t];
        for (size_t c = 0; c < m; ++c) {
            a[c] += wt * v[c] * v[c];
            b[c] += wx * v[c];
        }
    }
}

// Per lane l, the lowest a_c - k b_c over c = l mod kLanes (m a multiple of kLanes) and its c;
// ties keep the lower c.
inline __attribute__((always_inline)) SY_HOT_LOOP void lowest_lines_body(const float* a,
                                                                         const float* b, size_t m,
                                                                         float k, F8& lo, I8& idx) {
    F8 kv;
    I8 lane, step;
    for (int l = 0; l < kLanes; ++l) lo[l] = INFINITY, kv[l] = k, idx[l] = 0, lane[l] = l;
    for (int l = 0; l < kLanes; ++l) step[l] = kLanes;
    for (size_t c = 0; c < m; c += kLanes, lane += step) {
        F8 va, vb;
        std::memcpy(&va, a + c, sizeof va);
        std::memcpy(&vb, b + c, sizeof vb);
        const F8 e = va - kv * vb;
        const I8 lt = e < lo;
        lo = lt ? e : lo;
        idx = lt ? lane : idx;
    }
}

// Both compiled for the baseline and, on x86-64, for AVX2, picked by the CPU at run time. The
// arithmetic is the same element by element (no contraction in this library), so both give the
// same bytes. (Not target_clones: its ifunc resolver runs before a sanitizer's runtime has
// started, which crashes ThreadSanitizer builds at load.)
SY_HOT_LOOP void score_bucket_base(const float* v, size_t m, int dim, const float* w,
                                   const float* x, float* a, float* b) {
    score_bucket_body(v, m, dim, w, x, a, b);
}
SY_HOT_LOOP void lowest_lines_base(const float* a, const float* b, size_t m, float k, F8& lo,
                                   I8& idx) {
    lowest_lines_body(a, b, m, k, lo, idx);
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) SY_HOT_LOOP void score_bucket_avx2(const float* v, size_t m,
                                                                   int dim, const float* w,
                                                                   const float* x, float* a,
                                                                   float* b) {
    score_bucket_body(v, m, dim, w, x, a, b);
}
__attribute__((target("avx2"))) SY_HOT_LOOP void lowest_lines_avx2(const float* a, const float* b,
                                                                   size_t m, float k, F8& lo,
                                                                   I8& idx) {
    lowest_lines_body(a, b, m, k, lo, idx);
}
bool has_avx2() {
    static const bool yes = __builtin_cpu_supports("avx2");
    return yes;
}
#endif

void score_bucket(const float* v, size_t m, int dim, const float* w, const float* x, float* a,
                  float* b) {
#if defined(__x86_64__)
    if (has_avx2()) return score_bucket_avx2(v, m, dim, w, x, a, b);
#endif
    score_bucket_base(v, m, dim, w, x, a, b);
}
void lowest_lines(const float* a, const float* b, size_t m, float k, F8& lo, I8& idx) {
#if defined(__x86_64__)
    if (has_avx2()) return lowest_lines_avx2(a, b, m, k, lo, idx);
#endif
    lowest_lines_base(a, b, m, k, lo, idx);
}

// Floats appended back to back and cleared, without the zero fill of std::vector::resize (the
// lines of the buckets a group meets: score_bucket writes every one).
class FloatStack {
  public:
    void clear() { size_ = 0; }
    size_t size() const { return size_; }
    float* data() { return data_.get(); }
    // m more floats, not initialised, at data() + the size before the call.
    void grow(size_t m) {
        if (size_ + m > capacity_) {
            const size_t capacity = std::max(2 * capacity_, size_ + m);
            auto bigger = std::make_unique_for_overwrite<float[]>(capacity);
            std::copy(data_.get(), data_.get() + size_, bigger.get());
            data_ = std::move(bigger);
            capacity_ = capacity;
        }
        size_ += m;
    }

  private:
    std::unique_ptr<float[]> data_;
    size_t size_ = 0, capacity_ = 0;
};

// The code search of one group x (weights w) at any scale s. The candidates at s are the codes of
// the bucket of y = x / s and of the buckets its book's Reach names (the signs of y's smallest
// values flipped, the large bits of the values nearest the threshold flipped); the whole book
// where all are empty. The weighted error of code c is
//   sum_t w_t (x_t / s - v_ct)^2 = sum_t w_t x_t^2 / s^2 + A_c - (2 / s) B_c,
//   A_c = sum_t w_t v_ct^2,  B_c = sum_t w_t x_t v_ct,
// so A and B are computed once per bucket the group meets, and each trial scale costs one
// multiply-add per candidate.
class GroupSearch {
  public:
    void reset(const Codebook& cb, const float* x, const float* w) {
        cb_ = &cb;
        for (int t = 0; t < cb.dim; ++t)
            x_[t] = cb.magnitude ? std::fabs(x[t]) : x[t], w_[t] = w[t];
        by_size_ = by_distance([this](int t) { return std::fabs(x_[t]); });
        scored_.clear();
        a_.clear();
        b_.clear();
    }

    // The nearest candidate code at scale s (s != 0).
    uint32_t nearest(float s) {
        const Codebook& cb = *cb_;
        float y[8];
        for (int t = 0; t < cb.dim; ++t) y[t] = x_[t] / s;
        const int key = cb.key_of(y);
        int keys[1 + 2 * (8 + 28)], count = 0;
        auto add = [&](int kk) {
            if (std::find(keys, keys + count, kk) == keys + count) keys[count++] = kk;
        };
        add(key);
        // Flips of single bits of `order`'s first `singles` values and of pairs of its first
        // `pairs`; bit t of the key is at t + shift.
        auto flips = [&](const std::array<int, 8>& order, int singles, int pairs, int shift) {
            for (int i = 0; i < singles && i < cb.dim; ++i) add(key ^ (1 << (order[i] + shift)));
            for (int i = 0; i < pairs && i < cb.dim; ++i)
                for (int j = i + 1; j < pairs && j < cb.dim; ++j)
                    add(key ^ (1 << (order[i] + shift)) ^ (1 << (order[j] + shift)));
        };
        const Reach& r = cb.reach;
        if (!cb.magnitude) flips(by_size_, r.signs, r.sign_pairs, 0);
        if (cb.large_bits)
            flips(by_distance([&](int t) { return std::fabs(std::fabs(y[t]) - Codebook::kLarge); }),
                  r.larges, r.large_pairs, cb.magnitude ? 0 : cb.dim);
        const float k = 2 / s;
        Best best;
        for (int i = 0; i < count; ++i) scan(keys[i], k, best);
        if (best.code == kNone)
            for (size_t kk = 0; kk < cb.bucket.size(); ++kk) scan(int(kk), k, best);
        return best.code;
    }

  private:
    static constexpr uint32_t kNone = ~0u;
    struct Best {
        float e = INFINITY;
        uint32_t code = kNone;
    };
    struct Scored {
        int key;
        size_t at;  // into a_, b_
    };

    // The group's value indices ordered by ascending distance(t) (ties by index).
    template <typename Distance>
    std::array<int, 8> by_distance(Distance distance) const {
        std::array<int, 8> order{};
        float dist[8];
        for (int t = 0; t < cb_->dim; ++t) {
            const float dt = distance(t);
            int at = t;
            for (; at > 0 && dist[at - 1] > dt; --at)
                dist[at] = dist[at - 1], order[at] = order[at - 1];
            dist[at] = dt, order[at] = t;
        }
        return order;
    }
    // A and B of bucket `key`, computed on first use.
    size_t scored(int key) {
        for (const Scored& s : scored_)
            if (s.key == key) return s.at;
        const Codebook::Bucket& bk = cb_->bucket[size_t(key)];
        const size_t m = bk.padded(), at = a_.size();
        a_.grow(m);
        b_.grow(m);
        score_bucket(bk.v.data(), m, cb_->dim, w_, x_, a_.data() + at, b_.data() + at);
        scored_.push_back({key, at});
        return at;
    }

    // The bucket's lowest A - k B into best (ties keep the lower code).
    void scan(int key, float k, Best& best) {
        const Codebook::Bucket& bk = cb_->bucket[size_t(key)];
        const size_t m = bk.padded();
        if (m == 0) return;
        const size_t at = scored(key);
        F8 lo;
        I8 idx;
        lowest_lines(a_.data() + at, b_.data() + at, m, k, lo, idx);
        for (int l = 0; l < kLanes; ++l)
            if (lo[l] < best.e || (lo[l] == best.e && bk.codes[size_t(idx[l])] < best.code))
                best.e = lo[l], best.code = bk.codes[size_t(idx[l])];
    }

    const Codebook* cb_ = nullptr;
    float x_[8] = {}, w_[8] = {};
    std::array<int, 8> by_size_{};  // by ascending |x|
    std::vector<Scored> scored_;
    FloatStack a_, b_;
};

// The searches of one sub-block's groups (32 values, groups of cb.dim).
class SubSearch {
  public:
    void reset(const Codebook& cb, const float* x, const float* w) {
        cb_ = &cb;
        x_ = x;
        w_ = w;
        groups_ = kSub / cb.dim;
        for (int g = 0; g < groups_; ++g) group_[g].reset(cb, x + g * cb.dim, w + g * cb.dim);
    }

    // Codes for x ~ s * v, and sum w x v, sum w v^2 over the sub-block.
    void fit(float s, uint32_t* codes, double& sxv, double& svv) {
        const Codebook& cb = *cb_;
        sxv = svv = 0;
        for (int g = 0; g < groups_; ++g) {
            codes[g] = group_[g].nearest(s);
            const int8_t* v = cb.values.data() + size_t(codes[g]) * size_t(cb.dim);
            for (int t = 0; t < cb.dim; ++t) {
                const float xt = x_[g * cb.dim + t], wt = w_[g * cb.dim + t];
                const double xv = cb.magnitude ? std::fabs(xt) : xt;
                sxv += wt * xv * v[t];
                svv += double(wt) * v[t] * v[t];
            }
        }
    }

  private:
    const Codebook* cb_ = nullptr;
    const float *x_ = nullptr, *w_ = nullptr;
    int groups_ = 0;
    GroupSearch group_[kSub / 4];
};

// The best float scale of a sub-block from three trials around rms(x) / rms(v) (rms(v) of the
// generator is about 37), each refitted once. The starts lean above 1: a random codebook fits
// best with its values spread a little wider than the data (the best single scale for Gaussian
// groups is about 1.2 rms(x) / rms(v)); these three matched or beat five starts from 0.8 to 1.25
// on Gaussian and t(5) rows, at 3/5 of the cost.
float best_sub_scale(SubSearch& search, const float* x, double& score) {
    double sum2 = 0;
    for (int j = 0; j < kSub; ++j) sum2 += double(x[j]) * x[j];
    score = 0;
    if (sum2 == 0) return 0;
    const float s0 = float(std::sqrt(sum2 / kSub) / 37.0);
    uint32_t codes[kSub];
    float best = 0;
    for (const float f : {0.9f, 1.1f, 1.3f}) {
        float s = s0 * f;
        for (int pass = 0; pass < 2; ++pass) {
            double sxv, svv;
            search.fit(s, codes, sxv, svv);
            if (svv <= 0 || sxv <= 0) break;
            if (sxv * sxv / svv > score) score = sxv * sxv / svv, best = float(sxv / svv);
            s = float(sxv / svv);
        }
    }
    return best;
}

// A type's scale grid: integer levels l (the sub-block scale is d * l).
struct Grid {
    std::vector<int> levels;  // what can be stored, each with its field value
    std::vector<int> field;
};

Grid iq4k_grid() {  // IQ1_KT, IQ2_KT: the first 16 sy_iq4k_values, both signs usable
    Grid g;
    for (int i = 0; i < 16; ++i) g.levels.push_back(sy_iq4k_values[i]), g.field.push_back(i);
    return g;
}
Grid linear_grid(int lo, int hi, int bias) {  // IQ3_KT: 0..15; IQ4_KT: -64..63 (field l + 64)
    Grid g;
    for (int l = lo; l <= hi; ++l) g.levels.push_back(l), g.field.push_back(l + bias);
    return g;
}

// A fitted row: d, per sub-block the grid index (and IQ4_KT's offset), per group its code.
struct RowFit {
    float d = 0;
    std::vector<int> level;      // grid index per sub-block
    std::vector<int> book;       // codebook per sub-block (IQ4_KT: 3 or 4)
    std::vector<uint32_t> code;  // per group
};

RowFit fit_row(const std::vector<int>& books, const Grid& grid, const float* x, int64_t n,
               const float* importance) {
    const int dim = codebook(books[0]).dim;
    const int64_t subs = n / kSub;
    std::vector<float> w(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i += SY_QK_K) {
        const float sigma2 = 2 * sum_of_squares(x + i, SY_QK_K) / float(SY_QK_K);
        subblock_weights(x + i, importance ? importance + i : nullptr, sigma2, SY_QK_K, kSub,
                         w.data() + i);
    }
    RowFit r;
    r.level.assign(size_t(subs), 0);
    r.book.assign(size_t(subs), books[0]);
    r.code.assign(size_t(n / dim), 0);
    std::vector<float> s(static_cast<size_t>(subs));
    float smax = 0;
    SubSearch search;
    for (int64_t b = 0; b < subs; ++b) {
        double best = -1;
        for (int book : books) {
            double score;
            search.reset(codebook(book), x + kSub * b, w.data() + kSub * b);
            const float sb = best_sub_scale(search, x + kSub * b, score);
            if (score > best) best = score, s[size_t(b)] = sb, r.book[size_t(b)] = book;
        }
        smax = std::max(smax, s[size_t(b)]);
    }
    int lmax = 0;
    for (int l : grid.levels) lmax = std::max(lmax, std::abs(l));
    float d = smax / float(lmax);
    // The zero level where the grid has one, else the smallest magnitude.
    size_t zero = 0;
    for (size_t k = 1; k < grid.levels.size(); ++k)
        if (std::abs(grid.levels[k]) < std::abs(grid.levels[zero])) zero = k;
    if (d == 0) {
        std::fill(r.level.begin(), r.level.end(), int(zero));
        return r;
    }
    double sxv = 0, svv = 0;
    for (int64_t b = 0; b < subs; ++b) {
        // The grid level nearest to the fitted scale (its magnitude: the codebooks are about
        // symmetric, a negative level fits -x).
        const float want = s[size_t(b)] / d;
        size_t k = zero;
        for (size_t c = 0; c < grid.levels.size(); ++c)
            if (std::fabs(std::fabs(float(grid.levels[c])) - want) <
                std::fabs(std::fabs(float(grid.levels[k])) - want))
                k = c;
        r.level[size_t(b)] = int(k);
        const int l = grid.levels[k];
        if (l == 0) continue;
        double bx, bv;
        search.reset(codebook(r.book[size_t(b)]), x + kSub * b, w.data() + kSub * b);
        search.fit(d * float(l), r.code.data() + kSub / dim * b, bx, bv);
        sxv += bx * l;
        svv += bv * double(l) * l;
    }
    if (svv > 0 && sxv > 0)
        r.d = float(sxv / svv);
    else
        r.d = d;
    return r;
}

// IQ2_KT's and IQ3_KT's shared fields of block i: scale nibbles (sub-block b in byte b % 4,
// nibble b / 4) and 32 little-endian u16 codes.
void pack_scales_codes(const RowFit& r, int64_t i, uint8_t* scales, uint8_t* ql) {
    for (int b = 0; b < kSubs; ++b)
        scales[b % 4] |= uint8_t(r.level[size_t(kSubs * i + b)] << 4 * (b / 4));
    for (int g = 0; g < 32; ++g) {
        const uint32_t c = r.code[size_t(32 * i + g)];
        ql[2 * g] = uint8_t(c);
        ql[2 * g + 1] = uint8_t(c >> 8);
    }
}

// Sign bits of IQ3_KT: bit n / 32 of qh[n % 32] where x[n] < 0.
void store_signs(const float* x, uint8_t* qh) {
    for (int k = 0; k < SY_QK_K; ++k)
        if (x[k] < 0) qh[k % 32] |= uint8_t(1 << (k / 32));
}

}  // namespace

// ---- IQ2_KT ----------------------------------------------------------------------------------

void quantize_iq2_kt_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    const RowFit r = fit_row({0}, iq4k_grid(), x, n, importance);
    const float stored = r.d / kIq2KtFactor;
    store_d(vy, stored, false);
    auto* y = row_blocks<sy_block_iq2_kt>(vy, kMeta);
    for (int64_t i = 0; i < n / SY_QK_K; ++i) {
        std::memset(&y[i], 0, sizeof y[i]);
        pack_scales_codes(r, i, y[i].scales, y[i].ql);
    }
}

void dequantize_iq2_kt(const void* vx, float* y, int64_t n) {
    const float d = row_d_f32(vx) * kIq2KtFactor;
    const auto* x = row_blocks<sy_block_iq2_kt>(vx, kMeta);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, y += SY_QK_K)
        for (int g = 0; g < 32; ++g) {
            const int b = g / 4;
            const float sl = d * float(sy_iq4k_values[(x[i].scales[b % 4] >> 4 * (b / 4)) & 0xF]);
            int8_t v[8];
            trellis<8>(iq2_kt_code(x[i], g) + SY_KT_OFFSET, v);
            for (int t = 0; t < 8; ++t) y[8 * g + t] = sl * float(v[t]);
        }
}

// ---- IQ3_KT ----------------------------------------------------------------------------------

void quantize_iq3_kt_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    const RowFit r = fit_row({1}, linear_grid(0, 15, 0), x, n, importance);
    const float stored = r.d / kIq3KtFactor;
    store_d(vy, stored, false);
    auto* y = row_blocks<sy_block_iq3_kt>(vy, kMeta);
    for (int64_t i = 0; i < n / SY_QK_K; ++i) {
        std::memset(&y[i], 0, sizeof y[i]);
        pack_scales_codes(r, i, y[i].scales, y[i].ql);
        store_signs(x + SY_QK_K * i, y[i].qh);
    }
}

void dequantize_iq3_kt(const void* vx, float* y, int64_t n) {
    const float d = row_d_f32(vx) * kIq3KtFactor;
    const auto* x = row_blocks<sy_block_iq3_kt>(vx, kMeta);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, y += SY_QK_K)
        for (int g = 0; g < 32; ++g) {
            const int b = g / 4;
            const float sl = d * float((x[i].scales[b % 4] >> 4 * (b / 4)) & 0xF);
            int8_t v[8];
            trellis<8>(uint32_t(x[i].ql[2 * g] | x[i].ql[2 * g + 1] << 8) + SY_KT_OFFSET, v);
            for (int t = 0; t < 8; ++t) {
                // The sign on the integer (a value of 0 stays +0, as the integer products give).
                const int k = 8 * g + t, a = std::abs(v[t]);
                y[k] = sl * float((x[i].qh[k % 32] >> (k / 32)) & 1 ? -a : a);
            }
        }
}

// ---- IQ1_KT ----------------------------------------------------------------------------------

void quantize_iq1_kt_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    const RowFit r = fit_row({2}, iq4k_grid(), x, n, importance);
    store_d(vy, r.d, false);
    auto* y = row_blocks<sy_block_iq1_kt>(vy, kMeta);
    for (int64_t i = 0; i < n / SY_QK_K; ++i) {
        std::memset(&y[i], 0, sizeof y[i]);
        for (int b = 0; b < kSubs; ++b) {
            y[i].sh[b] = uint8_t(r.level[size_t(kSubs * i + b)]);
            for (int j = 0; j < 4; ++j) {
                const int g = 4 * b + j;
                const uint32_t c = r.code[size_t(32 * i + g)];
                y[i].ql[g] = uint8_t(c);
                y[i].qh[4 * (b % 4) + j] |= uint8_t(((c >> 8) & 0xF) << 4 * (b / 4));
                y[i].sh[b] |= uint8_t(((c >> 12) & 1) << (4 + j));
            }
        }
    }
}

void dequantize_iq1_kt(const void* vx, float* y, int64_t n) {
    const float d = row_d_f32(vx);
    const auto* x = row_blocks<sy_block_iq1_kt>(vx, kMeta);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, y += SY_QK_K)
        for (int g = 0; g < 32; ++g) {
            const float sl = d * float(sy_iq4k_values[x[i].sh[g / 4] & 0xF]);
            int8_t v[8];
            trellis<8>(iq1_kt_code(x[i], g) + SY_KT_OFFSET, v);
            for (int t = 0; t < 8; ++t) y[8 * g + t] = sl * float(v[t]);
        }
}

// ---- IQ4_KT ----------------------------------------------------------------------------------

void quantize_iq4_kt_weighted(const float* x, void* vy, int64_t n, const float* importance) {
    const Grid grid = linear_grid(-64, 63, 64);
    const RowFit r = fit_row({3, 4}, grid, x, n, importance);
    store_d(vy, r.d, false);
    auto* y = row_blocks<sy_block_iq4_kt>(vy, kMeta);
    for (int64_t i = 0; i < n / SY_QK_K; ++i) {
        std::memset(&y[i], 0, sizeof y[i]);
        for (int b = 0; b < kSubs; ++b) {
            const size_t s = size_t(kSubs * i + b);
            uint32_t shb = uint32_t(r.book[s] == 4) | uint32_t(grid.field[size_t(r.level[s])]) << 1;
            for (int j = 0; j < 8; ++j) {
                const int group = 8 * b + j;
                const uint32_t c = r.code[size_t(64 * i + group)];
                y[i].ql[group] = uint8_t(c);
                y[i].qh[group % 32] |= uint8_t(((c >> 8) & 0xF) << 4 * (group / 32));
                shb |= ((c >> 12) & 7) << (8 + 3 * j);
            }
            std::memcpy(y[i].shb + 4 * b, &shb, 4);
        }
    }
}

void dequantize_iq4_kt(const void* vx, float* y, int64_t n) {
    const float d = row_d_f32(vx);
    const auto* x = row_blocks<sy_block_iq4_kt>(vx, kMeta);
    for (int64_t i = 0; i < n / SY_QK_K; ++i, y += SY_QK_K)
        for (int j = 0; j < 64; ++j) {
            const uint32_t shb = iq4_kt_shb(x[i], j / 8);
            const float sl = d * float(int((shb & 0xFF) >> 1) - 64);
            int8_t v[4];
            trellis<4>(iq4_kt_code(x[i], j) + SY_KT_OFFSET + (shb & 1 ? SY_KT_OFFSET4 : 0), v);
            for (int t = 0; t < 4; ++t) y[4 * j + t] = sl * float(v[t]);
        }
}

#define SY_KT_QUANTIZER(name)                                  \
    void quantize_##name(const float* x, void* y, int64_t n) { \
        quantize_##name##_weighted(x, y, n, nullptr);          \
    }
SY_KT_QUANTIZER(iq1_kt)
SY_KT_QUANTIZER(iq2_kt)
SY_KT_QUANTIZER(iq3_kt)
SY_KT_QUANTIZER(iq4_kt)
#undef SY_KT_QUANTIZER

}  // namespace sy::quants::detail
