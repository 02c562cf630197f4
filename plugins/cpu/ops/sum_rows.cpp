// SUM_ROWS: dst {1, R, B2, B3} = sum over ne0 of src0 (ops.h).
#include <algorithm>

#include "ops/ops.hpp"
#include "ops/row_loops.hpp"

namespace sy::cpu {
namespace {

// An F32 source whose rows are adjacent element by element (nb1 = 4: the transposed view that
// sums the k expert outputs of a MoE layer): kLanes rows at a time, one vector load per element
// index, instead of a strided walk along each row.
bool sums_across_rows(const sy_tensor& src) {
    return src.type == SY_TYPE_F32 && src.nb[1] == 4 && src.ne[0] > 0 && src.ne[1] > 0;
}

void sum_across_rows(ThreadPool& pool, const sy_tensor& src, const sy_tensor& dst) {
    const int64_t R = src.ne[1], ne0 = src.ne[0];
    const int64_t chunks = (R + simd::kLanes - 1) / simd::kLanes;
    pool.parallel_ranges(
        src.ne[2] * src.ne[3] * chunks, kMinElementsPerTask / (ne0 * simd::kLanes) + 1,
        [&](int64_t c0, int64_t c1) {
            for (int64_t c = c0; c < c1; ++c) {
                const int64_t chunk = c % chunks, slice = c / chunks;
                const int64_t i2 = slice % src.ne[2], i3 = slice / src.ne[2];
                const int64_t r0 = chunk * simd::kLanes;
                const int64_t n = std::min<int64_t>(simd::kLanes, R - r0);
                const char* in = row_at(src, r0, i2, i3);
                float sums[simd::kLanes];
                if (n == simd::kLanes) {
                    simd::F32x acc = simd::zero();
                    for (int64_t i = 0; i < ne0; ++i)
                        acc = simd::add(
                            acc, simd::load(reinterpret_cast<const float*>(in + i * src.nb[0])));
                    simd::store(sums, acc);
                } else {
                    for (int64_t r = 0; r < n; ++r) {
                        sums[r] = 0.0f;
                        for (int64_t i = 0; i < ne0; ++i)
                            sums[r] += reinterpret_cast<const float*>(in + i * src.nb[0])[r];
                    }
                }
                for (int64_t r = 0; r < n; ++r)
                    sdk::store_f32(dst.type, row_at(dst, r0 + r, i2, i3), sums[r]);
            }
        });
}

}  // namespace

void compute_sum_rows(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& dst = *node.dst;
    const int64_t ne0 = src.ne[0];
    if (sums_across_rows(src)) return sum_across_rows(pool, src, dst);
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
