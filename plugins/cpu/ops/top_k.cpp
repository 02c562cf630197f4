// TOP_K (ops.h): per row, dst (I32) {k, ...} = indices of the k = dst.ne0 largest values of src0
// (F32), largest first; equal values put the lower index first. A partial sort under the total
// order (value descending, index ascending; NaN below every number) gives exactly that.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "ops/ops.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {

void compute_top_k(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& dst = *node.dst;
    const int64_t n = src.ne[0], k = dst.ne[0];
    const int64_t min_rows = 4096 / (n > 0 ? n : 1) + 1;
    pool.parallel_ranges(sdk::nrows(dst), min_rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> values(static_cast<size_t>(n));
        std::vector<int32_t> order(static_cast<size_t>(n));
        for (int64_t r = r0; r < r1; ++r) {
            const RowIndex i = row_index(dst, r);
            const char* in = row_at(src, i);
            for (int64_t j = 0; j < n; ++j) std::memcpy(&values[size_t(j)], in + j * src.nb[0], 4);
            std::iota(order.begin(), order.end(), 0);
            std::partial_sort(order.begin(), order.begin() + k, order.end(),
                              [&](int32_t x, int32_t y) {
                                  const float vx = values[size_t(x)], vy = values[size_t(y)];
                                  const bool nx = std::isnan(vx), ny = std::isnan(vy);
                                  if (nx != ny) return ny;  // a number ranks above NaN
                                  if (!nx && vx != vy) return vx > vy;
                                  return x < y;
                              });
            char* out = row_at(dst, i);
            for (int64_t j = 0; j < k; ++j) std::memcpy(out + j * dst.nb[0], &order[size_t(j)], 4);
        }
    });
}

}  // namespace sy::cpu
