// SOFTMAX over ne0 of y = x * scale + mask (+ causal mask), ops.h:
//   mask (optional, F32/F16) row [i1 % R1, i2 % ne2, i3 % ne3]; causal (iparams[0]) makes
//   element j of row i1 -inf when j > i1 + iparams[1]; a row that is -inf everywhere gives zeros.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {
namespace {

// y = x * scale + mask, then the causal cut, for one row.
void masked_logits(const RowView& x, const RowView* mask, float scale, int64_t causal_limit,
                   int64_t n, float* y) {
    float buf[kChunk];
    for (int64_t j = 0; j < n; j += kChunk) {
        const int64_t len = n - j < kChunk ? n - j : kChunk;
        simd::scale_shift(x.read(j, len, buf), y + j, len, scale, 0.0f);
        if (mask) {
            const float* m = mask->read(j, len, buf);
            for (int64_t i = 0; i < len; ++i) y[j + i] += m[i];
        }
    }
    for (int64_t j = causal_limit + 1 > 0 ? causal_limit + 1 : 0; j < n; ++j) y[j] = -INFINITY;
}

}  // namespace

void compute_softmax(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor* mask = node.src[1];
    const sy_tensor& dst = *node.dst;
    const float scale = node.fparams[0];
    const bool causal = node.iparams[0] != 0;
    const int64_t offset = node.iparams[1];
    const int64_t n = dst.ne[0];
    const int64_t min_rows = kMinElementsPerTask / (n > 0 ? n : 1) + 1;
    pool.parallel_ranges(sdk::nrows(dst), min_rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> y(static_cast<size_t>(n));
        for (int64_t row = r0; row < r1; ++row) {
            const RowIndex r = row_index(dst, row);
            const RowView x(src, row_at(src, r));
            const RowView out(dst, row_at(dst, r));
            std::optional<RowView> m;
            if (mask)
                m.emplace(*mask, row_at(*mask, r.i1 % mask->ne[1], r.i2 % mask->ne[2],
                                        r.i3 % mask->ne[3]));
            const int64_t causal_limit = causal ? r.i1 + offset : n;
            masked_logits(x, m ? &*m : nullptr, scale, causal_limit, n, y.data());

            const float max = simd::max_of(y.data(), n);
            if (max == -INFINITY) {
                std::fill(y.begin(), y.end(), 0.0f);
            } else {
                const float sum = simd::exp_shifted(y.data(), y.data(), n, max);
                simd::scale_shift(y.data(), y.data(), n, 1.0f / sum, 0.0f);
            }
            float out_buf[kChunk];
            for (int64_t j = 0; j < n; j += kChunk) {
                const int64_t len = n - j < kChunk ? n - j : kChunk;
                float* o = out.output(j, out_buf);
                std::memcpy(o, y.data() + j, size_t(len) * sizeof(float));
                out.commit(j, len, o);
            }
        }
    });
}

}  // namespace sy::cpu
