// ARGSORT (ops.h): per row, dst (I32) = the indices that sort src0 (F32), ascending
// (iparams[0] = 0) or descending (1); equal values keep index order (a stable sort). NaN sorts
// after every number in both orders, which keeps the comparison a strict weak order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "ops/ops.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {

void compute_argsort(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& dst = *node.dst;
    const bool descending = node.iparams[0] == 1;
    const int64_t n = src.ne[0];
    const int64_t min_rows = 4096 / (n > 0 ? n : 1) + 1;
    pool.parallel_ranges(sdk::nrows(dst), min_rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> values(static_cast<size_t>(n));
        std::vector<int32_t> order(static_cast<size_t>(n));
        for (int64_t r = r0; r < r1; ++r) {
            const RowIndex i = row_index(dst, r);
            const char* in = row_at(src, i);
            for (int64_t j = 0; j < n; ++j) std::memcpy(&values[size_t(j)], in + j * src.nb[0], 4);
            std::iota(order.begin(), order.end(), 0);
            std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
                const float vx = values[size_t(x)], vy = values[size_t(y)];
                if (std::isnan(vx)) return false;
                if (std::isnan(vy)) return true;
                return descending ? vx > vy : vx < vy;
            });
            char* out = row_at(dst, i);
            for (int64_t j = 0; j < n; ++j) std::memcpy(out + j * dst.nb[0], &order[size_t(j)], 4);
        }
    });
}

}  // namespace sy::cpu
