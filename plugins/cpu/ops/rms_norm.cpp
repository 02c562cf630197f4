// RMS_NORM: per row over ne0, dst = x / sqrt(mean(x^2) + eps), eps = fparams[0] (ops.h).
// Two passes over each row (sum of squares, then scale), both chunked, so rows of any type and
// stride need no temporary copy.
#include <cmath>

#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {

void compute_rms_norm(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& dst = *node.dst;
    const float eps = node.fparams[0];
    const int64_t ne0 = dst.ne[0];
    for_each_row(pool, dst, 2 * ne0, [&](RowIndex r) {
        const RowView in(src, row_at(src, r));
        const RowView out(dst, row_at(dst, r));
        float in_buf[kChunk], out_buf[kChunk];
        float sum_sq = 0.0f;
        for (int64_t j = 0; j < ne0; j += kChunk) {
            const int64_t n = ne0 - j < kChunk ? ne0 - j : kChunk;
            sum_sq += simd::sum_of_squares(in.read(j, n, in_buf), n);
        }
        const float inv_rms = 1.0f / std::sqrt(sum_sq / float(ne0) + eps);
        for (int64_t j = 0; j < ne0; j += kChunk) {
            const int64_t n = ne0 - j < kChunk ? ne0 - j : kChunk;
            float* o = out.output(j, out_buf);
            simd::scale_shift(in.read(j, n, in_buf), o, n, inv_rms, 0.0f);
            out.commit(j, n, o);
        }
    });
}

}  // namespace sy::cpu
