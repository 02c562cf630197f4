// SUM_ROWS: dst {1, R, B2, B3} = sum over ne0 of src0 (ops.h).
#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {

void compute_sum_rows(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& dst = *node.dst;
    const int64_t ne0 = src.ne[0];
    for_each_row(pool, dst, ne0, [&](RowIndex r) {
        float total = 0.0f;
        if (ne0 == 0) {  // the empty sum; src may have no data at all
            sdk::store_f32(dst.type, row_at(dst, r), total);
            return;
        }
        const RowView in(src, row_at(src, r));
        float buf[kChunk];
        for (int64_t j = 0; j < ne0; j += kChunk) {
            const int64_t n = ne0 - j < kChunk ? ne0 - j : kChunk;
            total += simd::sum(in.read(j, n, buf), n);
        }
        sdk::store_f32(dst.type, row_at(dst, r), total);
    });
}

}  // namespace sy::cpu
