// The named ops attn.flash v1 and attn.mla v1 (named_ops.h): attention with an online softmax.
// The K.Q scores of a block of keys are computed, exponentiated against the running maximum and
// folded into each query row's output at once; the full score matrix never exists.
//
// A task's query rows share one kv head and take the keys a block of 32 at a time, so each
// block is read once for all of them: with several rows it is widened to F32 once (F32 rows
// used in place) and both products run in register tiles; a single row reads K and V in place
// (widened in registers).
// Work is split three ways: by kv head, by chunks of query rows that share it (the query heads
// of a group and all tokens), and, when that leaves threads idle (generation: one token, one
// shared latent "head"), by ranges of keys whose partial results (max, sum, weighted values) are
// merged at the end.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "ops/activation_rows.hpp"
#include "ops/ops.hpp"
#include "simd.hpp"
#include "simd_math.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/quant_blocks.h"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
namespace {

constexpr int64_t kRowsPerChunk = 16;  // query rows per task
constexpr int64_t kKeyBlock = 32;      // keys scored together
constexpr int64_t kMinKeysPerRange = 64;

// Elements of K and V rows read in place, by type.
template <int32_t kType>
struct Elems;
template <>
struct Elems<SY_TYPE_F32> {
    static simd::F32x load(const char* row, int64_t i) {
        return simd::load(reinterpret_cast<const float*>(row) + i);
    }
    static float at(const char* row, int64_t i) { return reinterpret_cast<const float*>(row)[i]; }
};
// 16-bit elements widened to F32: F16 and BF16.
template <simd::F32x (*Load)(const uint16_t*), float (*Widen)(uint16_t)>
struct HalfElems {
    static simd::F32x load(const char* row, int64_t i) {
        return Load(reinterpret_cast<const uint16_t*>(row) + i);
    }
    static float at(const char* row, int64_t i) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        return Widen(h);
    }
};
template <>
struct Elems<SY_TYPE_F16> : HalfElems<simd::load_f16, sdk::fp16_to_f32> {};
template <>
struct Elems<SY_TYPE_BF16> : HalfElems<simd::load_bf16, sdk::bf16_to_f32> {};
// Q8_0 blocks (the quantized KV cache): d * qs. Vector loads start at multiples of kLanes, which
// divides the block's 32, so each stays inside one block.
template <>
struct Elems<SY_TYPE_Q8_0> {
    static const char* block(const char* row, int64_t i, float& d) {
        const char* b = row + (i / SY_QK8_0) * int64_t(sizeof(sy_block_q8_0));
        uint16_t h;
        std::memcpy(&h, b, 2);
        d = sdk::fp16_to_f32(h);
        return b + offsetof(sy_block_q8_0, qs) + i % SY_QK8_0;
    }
    static simd::F32x load(const char* row, int64_t i) {
        float d;
        const char* q = block(row, i, d);
        return simd::mul(simd::splat(d), simd::load_i8(reinterpret_cast<const int8_t*>(q)));
    }
    static float at(const char* row, int64_t i) {
        float d;
        return d * float(*reinterpret_cast<const int8_t*>(block(row, i, d)));
    }
};

// Q8_KV rows (ik_llama.cpp's K cache type): f32 d and an int32 sum, then one int8 per element;
// every element of the row is d * q.
template <>
struct Elems<SY_TYPE_Q8_KV> {
    static constexpr int64_t kMeta = 8;
    static float scale(const char* row) {
        float d;
        std::memcpy(&d, row, sizeof d);
        return d;
    }
    static simd::F32x load(const char* row, int64_t i) {
        return simd::mul(simd::splat(scale(row)),
                         simd::load_i8(reinterpret_cast<const int8_t*>(row + kMeta + i)));
    }
    static float at(const char* row, int64_t i) {
        return scale(row) * float(*reinterpret_cast<const int8_t*>(row + kMeta + i));
    }
};

template <typename E>
float dot(const float* q, const char* k, int64_t n) {
    simd::F32x acc = simd::zero();
    int64_t i = 0;
    for (; i + simd::kLanes <= n; i += simd::kLanes)
        acc = simd::fma(simd::load(q + i), E::load(k, i), acc);
    float s = simd::reduce_add(acc);
    for (; i < n; ++i) s += q[i] * E::at(k, i);
    return s;
}

// acc = acc * c + p * v over n values, v's elements first .. first + n - 1 of its row.
template <typename E>
void scale_add(float* acc, float c, float p, const char* v, int64_t first, int64_t n) {
    const simd::F32x vc = simd::splat(c), vp = simd::splat(p);
    int64_t i = 0;
    for (; i + simd::kLanes <= n; i += simd::kLanes)
        simd::store(acc + i,
                    simd::fma(vp, E::load(v, first + i), simd::mul(vc, simd::load(acc + i))));
    for (; i < n; ++i) acc[i] = acc[i] * c + p * E::at(v, first + i);
}

struct Attention {
    const sy_tensor& q;
    const sy_tensor& k;
    const sy_tensor& v;
    const sy_tensor& dst;
    float scale;
    bool causal;
    int64_t offset;
    int64_t v_first;  // V's element i is element v_first + i of its row (attn.mla: R)
};

// Running state of one query row over some keys.
struct RowState {
    float max, sum;
    float* acc;  // Dv values
};

// Elements first .. first + n - 1 of a K or V row as F32 at out.
template <typename E>
void widen_row(const char* row, int64_t first, int64_t n, float* out) {
    int64_t i = 0;
    for (; i + simd::kLanes <= n; i += simd::kLanes) simd::store(out + i, E::load(row, first + i));
    for (; i < n; ++i) out[i] = E::at(row, first + i);
}

// Query rows of kv head hk: pointers to their Q rows, and how many keys each may see.
struct ChunkRows {
    const float* q[kRowsPerChunk];
    int64_t limit[kRowsPerChunk];
    int64_t last;  // keys [key0, last) are visible to some row

    ChunkRows(const Attention& a, const ActivationRows& q_rows, int64_t hk, int64_t row0,
              int64_t rows, int64_t key0, int64_t key1)
        : last(key0) {
        const int64_t T = a.q.ne[1], G = a.q.ne[2] / a.k.ne[2];
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t row = row0 + r;  // t fastest, then the group's heads
            const int64_t t = row % T, h = hk * G + row / T;
            q[r] = q_rows.row(t, h, 0);
            limit[r] = std::min(key1, a.causal ? a.offset + t + 1 : key1);
            last = std::max(last, limit[r]);
        }
    }
};

// One query row against keys [key0, key1), a block of keys at a time: each K and V element is
// read once, in place (widened in registers).
template <typename EK, typename EV>
void attend_row(const Attention& a, const ActivationRows& q_rows, int64_t hk, int64_t row0,
                int64_t key0, int64_t key1, RowState& s) {
    const int64_t D = a.q.ne[0], Dv = a.v.ne[0];
    const ChunkRows chunk(a, q_rows, hk, row0, 1, key0, key1);
    const float* q = chunk.q[0];
    float scores[kKeyBlock];
    for (int64_t j0 = key0; j0 < chunk.limit[0]; j0 += kKeyBlock) {
        const int64_t n = std::min(kKeyBlock, chunk.limit[0] - j0);
        float block_max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < n; ++j) {
            scores[j] = a.scale * dot<EK>(q, row_at(a.k, j0 + j, hk, 0), D);
            block_max = std::max(block_max, scores[j]);
        }
        const float new_max = std::max(s.max, block_max);
        float c =
            s.max == -std::numeric_limits<float>::infinity() ? 0.0f : std::exp(s.max - new_max);
        s.sum *= c;
        for (int64_t j = 0; j < n; ++j) {
            const float p = std::exp(scores[j] - new_max);
            s.sum += p;
            scale_add<EV>(s.acc, c, p, row_at(a.v, j0 + j, hk, 0), a.v_first, Dv);
            c = 1.0f;
        }
        s.max = new_max;
    }
}

// Keys per step of the score tiles and value vectors per step of the value tiles: 4 x 4
// accumulators with AVX-512's 32 registers, 4 x 2 with 16.
constexpr int kScoreKeys = simd::kLanes == 16 ? 4 : 2;
constexpr int kValueVectors = simd::kLanes == 16 ? 4 : 2;

// out[r][c] = q[r] . k[c] over D values, for R query rows and C keys (rows k_stride floats apart):
// each step loads C key vectors and R query vectors for R x C FMAs.
template <int R, int C>
inline void score_tile(const float* const* q, const float* k, int64_t k_stride, int64_t D,
                       float* out, int64_t out_stride) {
    simd::F32x acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = simd::zero();
    int64_t i = 0;
    for (; i + simd::kLanes <= D; i += simd::kLanes) {
        simd::F32x kv[C];
        for (int c = 0; c < C; ++c) kv[c] = simd::load(k + c * k_stride + i);
        for (int r = 0; r < R; ++r) {
            const simd::F32x qv = simd::load(q[r] + i);
            for (int c = 0; c < C; ++c) acc[r][c] = simd::fma(qv, kv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            float v = simd::reduce_add(acc[r][c]);
            for (int64_t t = i; t < D; ++t) v += q[r][t] * k[c * k_stride + t];
            out[r * out_stride + c] = v;
        }
}

// Scores of R query rows against n keys (rows k_stride floats apart): tiles of kScoreKeys keys,
// then single keys; out row r is out_stride floats after row r - 1.
template <int R>
inline void score_rows(const float* const* q, const float* k, int64_t k_stride, int64_t D,
                       int64_t n, float* out, int64_t out_stride) {
    int64_t j = 0;
    for (; j + kScoreKeys <= n; j += kScoreKeys)
        score_tile<R, kScoreKeys>(q, k + j * k_stride, k_stride, D, out + j, out_stride);
    for (; j < n; ++j) score_tile<R, 1>(q, k + j * k_stride, k_stride, D, out + j, out_stride);
}

// o[r][0, W kLanes) = o[r] * scale[r] + sum_j p[r][j] v[j] over n keys, for R rows: each step
// loads W value vectors and broadcasts R weights for R x W FMAs.
template <int R, int W>
inline void value_tile(float* const* o, int64_t col, const float* scale, const float* p,
                       int64_t p_stride, const float* v, int64_t v_stride, int64_t n) {
    simd::F32x acc[R][W];
    for (int r = 0; r < R; ++r)
        for (int w = 0; w < W; ++w)
            acc[r][w] = simd::mul(simd::load(o[r] + col + w * simd::kLanes), simd::splat(scale[r]));
    for (int64_t j = 0; j < n; ++j) {
        simd::F32x vv[W];
        for (int w = 0; w < W; ++w) vv[w] = simd::load(v + j * v_stride + col + w * simd::kLanes);
        for (int r = 0; r < R; ++r) {
            const simd::F32x pv = simd::splat(p[r * p_stride + j]);
            for (int w = 0; w < W; ++w) acc[r][w] = simd::fma(pv, vv[w], acc[r][w]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int w = 0; w < W; ++w) simd::store(o[r] + col + w * simd::kLanes, acc[r][w]);
}

// Rows of a key block as F32, `stride` floats apart.
struct F32Rows {
    const float* data;
    int64_t stride;
};

// Rows [j0, j0 + n) of t (kv head hk), t.ne[0] elements from element `first` of each: widened
// into `scratch` (kKeyBlock rows of t.ne[0]), or the F32 rows in place.
template <typename E>
F32Rows block_as_f32(const sy_tensor& t, int64_t first, int64_t j0, int64_t n, int64_t hk,
                     bool widen, std::vector<float>& scratch) {
    if (!widen) return {reinterpret_cast<const float*>(row_at(t, j0, hk, 0)) + first, t.nb[1] / 4};
    const int64_t width = t.ne[0];
    for (int64_t j = 0; j < n; ++j)
        widen_row<E>(row_at(t, j0 + j, hk, 0), first, width, scratch.data() + j * width);
    return {scratch.data(), width};
}

// Several query rows of one kv head against keys [key0, key1) (the heads of an MLA latent, or
// of a GQA group, and the tokens of a ubatch). Per block of keys, the K and V rows are widened
// to F32 once (used in place when F32; when V lies inside each K row, as the MLA latent does,
// its values are taken from the widened K), then the block is a small matrix product twice:
// scores = Q K^T in register tiles, an online softmax per row, and O = O c + P V in register
// tiles. Each K and V value loaded feeds several rows' FMAs. A row's keys past its causal limit
// (tokens of this ubatch that other rows see) enter the value tiles with weight 0.
template <typename EK, typename EV>
void attend_rows(const Attention& a, const ActivationRows& q_rows, int64_t hk, int64_t row0,
                 int64_t rows, int64_t key0, int64_t key1, RowState* state) {
    constexpr float kNoKey = -std::numeric_limits<float>::infinity();
    const int64_t D = a.q.ne[0], Dv = a.v.ne[0];
    const ChunkRows chunk(a, q_rows, hk, row0, rows, key0, key1);
    // V inside each K row (same rows, same type): its offset in elements (whole blocks, then
    // v_first elements).
    const auto k0 = reinterpret_cast<uintptr_t>(row_at(a.k, 0, hk, 0));
    const auto v0 = reinterpret_cast<uintptr_t>(row_at(a.v, 0, hk, 0));
    const sy_dtype_traits info = sy_dtype_info(a.k.type);
    const int64_t v_offset =
        v0 >= k0 && (v0 - k0) % uint64_t(info.type_size) == 0
            ? int64_t((v0 - k0) / uint64_t(info.type_size)) * info.block_size + a.v_first
            : -1;
    const bool v_in_k = std::is_same_v<EK, EV> && a.k.type == a.v.type && a.k.nb[1] == a.v.nb[1] &&
                        v_offset >= 0 && v_offset + Dv <= D;
    // F32 rows are used in place when their stride is whole floats.
    const bool widen_k = !std::is_same_v<EK, Elems<SY_TYPE_F32>> || a.k.nb[1] % 4 != 0;
    const bool widen_v = (!std::is_same_v<EV, Elems<SY_TYPE_F32>> || a.v.nb[1] % 4 != 0) && !v_in_k;
    thread_local std::vector<float> k_scratch, v_scratch;
    if (widen_k) k_scratch.resize(size_t(kKeyBlock * D));
    if (widen_v) v_scratch.resize(size_t(kKeyBlock * Dv));

    float scores[kRowsPerChunk][kKeyBlock];
    float scale[kRowsPerChunk];
    float* out[kRowsPerChunk];
    for (int64_t r = 0; r < rows; ++r) out[r] = state[r].acc;
    for (int64_t j0 = key0; j0 < chunk.last; j0 += kKeyBlock) {
        const int64_t n = std::min(kKeyBlock, chunk.last - j0);
        // The block's K and V rows as F32.
        const F32Rows kb = block_as_f32<EK>(a.k, 0, j0, n, hk, widen_k, k_scratch);
        const F32Rows vb = v_in_k ? F32Rows{kb.data + v_offset, kb.stride}
                                  : block_as_f32<EV>(a.v, a.v_first, j0, n, hk, widen_v, v_scratch);
        const float* k = kb.data;
        const float* v = vb.data;
        const int64_t k_stride = kb.stride, v_stride = vb.stride;

        // Scores, 4 rows x kScoreKeys keys per tile.
        int64_t r = 0;
        for (; r + 4 <= rows; r += 4)
            score_rows<4>(chunk.q + r, k, k_stride, D, n, &scores[r][0], kKeyBlock);
        for (; r < rows; ++r)
            score_rows<1>(chunk.q + r, k, k_stride, D, n, &scores[r][0], kKeyBlock);

        // Online softmax: scores become weights against each row's new maximum; scale[r]
        // rescales what the row has so far. Keys past a row's limit weigh 0.
        for (r = 0; r < rows; ++r) {
            RowState& s = state[r];
            const int64_t visible = std::clamp<int64_t>(chunk.limit[r] - j0, 0, n);
            float* row = scores[r];
            float block_max = kNoKey;
            for (int64_t j = 0; j < visible; ++j) {
                row[j] *= a.scale;
                block_max = std::max(block_max, row[j]);
            }
            if (visible == 0 || block_max == kNoKey) {  // nothing (finite) to add from this block
                std::fill(row, row + n, 0.0f);
                scale[r] = 1.0f;
                continue;
            }
            const float new_max = std::max(s.max, block_max);
            scale[r] = s.max == kNoKey ? 0.0f : std::exp(s.max - new_max);
            s.sum = s.sum * scale[r] + simd::exp_shifted(row, row, visible, new_max);
            std::fill(row + visible, row + n, 0.0f);
            s.max = new_max;
        }

        // Values: 4 rows x kValueVectors vectors per tile, then single vectors and a scalar tail.
        for (r = 0; r < rows; r += 4) {
            const int64_t rn = std::min<int64_t>(4, rows - r);
            int64_t col = 0;
            if (rn == 4) {
                for (; col + kValueVectors * simd::kLanes <= Dv;
                     col += kValueVectors * simd::kLanes)
                    value_tile<4, kValueVectors>(out + r, col, scale + r, scores[r], kKeyBlock, v,
                                                 v_stride, n);
                for (; col + simd::kLanes <= Dv; col += simd::kLanes)
                    value_tile<4, 1>(out + r, col, scale + r, scores[r], kKeyBlock, v, v_stride, n);
            } else {
                for (int64_t i = 0; i < rn; ++i)
                    for (int64_t c = 0; c + simd::kLanes <= Dv; c += simd::kLanes)
                        value_tile<1, 1>(out + r + i, c, scale + r + i, scores[r + i], kKeyBlock, v,
                                         v_stride, n);
                col = Dv / simd::kLanes * simd::kLanes;
            }
            for (int64_t i = 0; i < rn; ++i)
                for (int64_t c = col; c < Dv; ++c) {
                    float acc = out[r + i][c] * scale[r + i];
                    for (int64_t j = 0; j < n; ++j) acc += scores[r + i][j] * v[j * v_stride + c];
                    out[r + i][c] = acc;
                }
        }
    }
}

// Query rows [row0, row0 + rows) of kv head hk against keys [key0, key1).
template <typename EK, typename EV>
void attend(const Attention& a, const ActivationRows& q_rows, int64_t hk, int64_t row0,
            int64_t rows, int64_t key0, int64_t key1, RowState* state) {
    if (rows == 1) return attend_row<EK, EV>(a, q_rows, hk, row0, key0, key1, state[0]);
    attend_rows<EK, EV>(a, q_rows, hk, row0, rows, key0, key1, state);
}

using AttendFn = void (*)(const Attention&, const ActivationRows&, int64_t, int64_t, int64_t,
                          int64_t, int64_t, RowState*);

template <typename EK>
AttendFn attend_for_v(int32_t v_type) {
    switch (v_type) {
        case SY_TYPE_F16: return attend<EK, Elems<SY_TYPE_F16>>;
        case SY_TYPE_BF16: return attend<EK, Elems<SY_TYPE_BF16>>;
        case SY_TYPE_Q8_0: return attend<EK, Elems<SY_TYPE_Q8_0>>;
        case SY_TYPE_Q8_KV: return attend<EK, Elems<SY_TYPE_Q8_KV>>;  // attn.mla's latents
        default: return attend<EK, Elems<SY_TYPE_F32>>;
    }
}

AttendFn attend_for(int32_t k_type, int32_t v_type) {
    switch (k_type) {
        case SY_TYPE_F16: return attend_for_v<Elems<SY_TYPE_F16>>(v_type);
        case SY_TYPE_BF16: return attend_for_v<Elems<SY_TYPE_BF16>>(v_type);
        case SY_TYPE_Q8_0: return attend_for_v<Elems<SY_TYPE_Q8_0>>(v_type);
        case SY_TYPE_Q8_KV: return attend_for_v<Elems<SY_TYPE_Q8_KV>>(v_type);
        default: return attend_for_v<Elems<SY_TYPE_F32>>(v_type);
    }
}

// dst[:, t, h] = acc / sum (zeros when no key was visible).
void store_row(const sy_tensor& dst, int64_t t, int64_t h, const float* acc, float sum) {
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    char* d = row_at(dst, t, h, 0);
    for (int64_t i = 0; i < dst.ne[0]; ++i) {
        const float val = acc[i] * inv;
        std::memcpy(d + i * dst.nb[0], &val, sizeof val);
    }
}

void flash_attention(ThreadPool& pool, const Attention& a) {
    const int64_t T = a.q.ne[1], H = a.q.ne[2], Hk = a.k.ne[2], Dv = a.v.ne[0];
    // The keys some row sees: past the causal window of the last query none does (a graph kept
    // for several decode steps reads its cache rounded up), so the key ranges split only those,
    // the same ranges whatever the rounding.
    const int64_t N = a.causal ? std::clamp<int64_t>(a.offset + T, 0, a.k.ne[1]) : a.k.ne[1];
    const int64_t rows_per_head = (H / Hk) * T;
    const int64_t row_chunks = (rows_per_head + kRowsPerChunk - 1) / kRowsPerChunk;
    const int64_t base = Hk * row_chunks;
    const int64_t wanted = 4 * int64_t(pool.size());
    const int64_t max_ranges = std::max<int64_t>(1, N / kMinKeysPerRange);
    const int64_t ranges = std::clamp<int64_t>((wanted + base - 1) / base, 1, max_ranges);
    const int64_t range_len = (N + ranges - 1) / ranges;
    const ActivationRows q_rows(pool, a.q);
    const AttendFn attend_fn = attend_for(a.k.type, a.v.type);

    // With one key range a task's rows are complete and go straight to dst; otherwise each
    // task leaves kRowsPerChunk rows of (max, sum, Dv values) to be merged.
    const int64_t stride = Dv + 2;
    // Every slot a task uses is initialized by it, so the buffer is reused without clearing. (A
    // reference: the tasks must see this thread's buffer, not their own thread_local one.)
    thread_local std::vector<float> partial_storage;
    std::vector<float>& partial = partial_storage;
    if (ranges > 1)
        partial.resize(std::max(partial.size(), size_t(base * ranges * kRowsPerChunk * stride)));
    pool.parallel_for(base * ranges, [&](int64_t task) {
        const int64_t range = task % ranges, chunk = (task / ranges) % row_chunks,
                      hk = task / (ranges * row_chunks);
        const int64_t row0 = chunk * kRowsPerChunk;
        const int64_t rows = std::min(kRowsPerChunk, rows_per_head - row0);
        thread_local std::vector<float> own;
        if (ranges == 1) own.resize(size_t(kRowsPerChunk * stride));
        float* p = ranges == 1 ? own.data() : partial.data() + task * kRowsPerChunk * stride;
        RowState state[kRowsPerChunk];
        for (int64_t r = 0; r < rows; ++r) {
            float* slot = p + r * stride;
            std::fill(slot, slot + stride, 0.0f);
            state[r] = {-std::numeric_limits<float>::infinity(), 0.0f, slot + 2};
        }
        const int64_t key0 = range * range_len;
        if (key0 < N)
            attend_fn(a, q_rows, hk, row0, rows, key0, std::min(N, key0 + range_len), state);
        for (int64_t r = 0; r < rows; ++r) {
            if (ranges == 1) {
                const int64_t row = row0 + r;
                store_row(a.dst, row % T, hk * (H / Hk) + row / T, state[r].acc, state[r].sum);
                continue;
            }
            p[r * stride] = state[r].max;
            p[r * stride + 1] = state[r].sum;
        }
    });
    if (ranges == 1) return;
    // Merge the key ranges of each query row and normalize, a row per task.
    pool.parallel_for(base * kRowsPerChunk, [&](int64_t row_task) {
        const int64_t task = row_task / kRowsPerChunk, r = row_task % kRowsPerChunk;
        const int64_t chunk = task % row_chunks, hk = task / row_chunks;
        const int64_t row0 = chunk * kRowsPerChunk;
        if (r >= std::min(kRowsPerChunk, rows_per_head - row0)) return;
        const int64_t row = row0 + r;
        float m = -std::numeric_limits<float>::infinity();
        for (int64_t g = 0; g < ranges; ++g)
            m = std::max(m, partial[size_t(((task * ranges + g) * kRowsPerChunk + r) * stride)]);
        thread_local std::vector<float> out;
        out.assign(size_t(Dv), 0.0f);
        float sum = 0.0f;
        if (m != -std::numeric_limits<float>::infinity()) {
            for (int64_t g = 0; g < ranges; ++g) {
                const float* s =
                    partial.data() + ((task * ranges + g) * kRowsPerChunk + r) * stride;
                if (s[1] == 0.0f) continue;
                const float c = std::exp(s[0] - m);
                sum += s[1] * c;
                scale_add<Elems<SY_TYPE_F32>>(out.data(), 1.0f, c,
                                              reinterpret_cast<const char*>(s + 2), 0, Dv);
            }
        }
        store_row(a.dst, row % T, hk * (H / Hk) + row / T, out.data(), sum);
    });
}

// t (a float type) as the packed F32 rows of `rows` (which packs them, t's elements not being
// adjacent).
sy_tensor packed_f32(const sy_tensor& t, const ActivationRows& rows) {
    sy_tensor f = sdk::copy_tensor(t);
    f.type = SY_TYPE_F32;
    f.data = const_cast<float*>(rows.row(0, 0, 0));
    f.nb[0] = 4;
    f.nb[1] = 4 * t.ne[0];
    f.nb[2] = f.nb[1] * t.ne[1];
    f.nb[3] = f.nb[2] * t.ne[2];
    return f;
}

}  // namespace

void compute_attention(ThreadPool& pool, const sy_node& node) {
    const bool mla = std::strcmp(node.named_op, SY_NAMED_ATTN_MLA) == 0;
    const sy_tensor& q = *node.src[0];
    const sy_tensor& k = *node.src[1];
    // attn.mla: the values are the last L elements of each cache row, read from the rows
    // themselves (a Q8_KV row's scale is at its start).
    sy_tensor latent = sdk::copy_tensor(k);
    const int64_t v_first = mla ? node.iparams[2] : 0;
    if (mla) latent.ne[0] = k.ne[0] - v_first;
    const sy_tensor& v = mla ? latent : *node.src[2];
    // Elements not adjacent (a transposed view of a float type; blocks always are): packed F32
    // copies, read in place.
    const auto adjacent = [](const sy_tensor& t) {
        return t.nb[0] == sy_dtype_info(t.type).type_size;
    };
    std::optional<ActivationRows> k_rows, v_rows;
    if (!adjacent(k)) k_rows.emplace(pool, k);
    if (!adjacent(v)) v_rows.emplace(pool, v);
    const sy_tensor kf = k_rows ? packed_f32(k, *k_rows) : k;
    const sy_tensor vf = v_rows ? packed_f32(v, *v_rows) : v;
    flash_attention(pool, Attention{q, kf, vf, *node.dst, node.fparams[0], node.iparams[0] != 0,
                                    node.iparams[1], v_first});
}

}  // namespace sy::cpu
