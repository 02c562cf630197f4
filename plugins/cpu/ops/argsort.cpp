// ARGSORT, TOP_K and DROP_IDS: per-row orderings and selections of indices (ops.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "ops/ops.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {

namespace {

// Per row of src0 (F32): its values and the indices 0 .. n-1, ordered by order(values, indices)
// (which sorts all or a part of them); the first dst.ne0 indices written to the dst row (I32).
template <class Order>
void order_rows(ThreadPool& pool, const sy_node& node, Order order) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& dst = *node.dst;
    const int64_t n = src.ne[0], k = dst.ne[0];
    const int64_t min_rows = 4096 / (n > 0 ? n : 1) + 1;
    pool.parallel_ranges(sdk::nrows(dst), min_rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> values(static_cast<size_t>(n));
        std::vector<int32_t> indices(static_cast<size_t>(n));
        for (int64_t r = r0; r < r1; ++r) {
            const RowIndex i = row_index(dst, r);
            const char* in = row_at(src, i);
            for (int64_t j = 0; j < n; ++j) std::memcpy(&values[size_t(j)], in + j * src.nb[0], 4);
            std::iota(indices.begin(), indices.end(), 0);
            order(values, indices);
            char* out = row_at(dst, i);
            for (int64_t j = 0; j < k; ++j)
                std::memcpy(out + j * dst.nb[0], &indices[size_t(j)], 4);
        }
    });
}

}  // namespace

// ARGSORT (ops.h): per row, dst (I32) = the indices that sort src0 (F32), ascending
// (iparams[0] = 0) or descending (1); equal values keep index order (a stable sort). NaN sorts
// after every number in both orders, which keeps the comparison a strict weak order.
void compute_argsort(ThreadPool& pool, const sy_node& node) {
    const bool descending = node.iparams[0] == 1;
    order_rows(pool, node, [descending](const std::vector<float>& v, std::vector<int32_t>& idx) {
        std::stable_sort(idx.begin(), idx.end(), [&](int32_t x, int32_t y) {
            const float vx = v[size_t(x)], vy = v[size_t(y)];
            if (std::isnan(vx)) return false;
            if (std::isnan(vy)) return true;
            return descending ? vx > vy : vx < vy;
        });
    });
}

// TOP_K (ops.h): per row, dst (I32) {k, ...} = indices of the k = dst.ne0 largest values of src0
// (F32), largest first; equal values put the lower index first. A partial sort under the total
// order (value descending, index ascending; NaN below every number) gives exactly that.
void compute_top_k(ThreadPool& pool, const sy_node& node) {
    const int64_t k = node.dst->ne[0];
    order_rows(pool, node, [k](const std::vector<float>& v, std::vector<int32_t>& idx) {
        std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int32_t x, int32_t y) {
            const float vx = v[size_t(x)], vy = v[size_t(y)];
            const bool nx = std::isnan(vx), ny = std::isnan(vy);
            if (nx != ny) return ny;  // a number ranks above NaN
            if (!nx && vx != vy) return vx > vy;
            return x < y;
        });
    });
}

// DROP_IDS (ops.h): per row, id j stays when j < m = iparams[0] or its value is above
// t = fparams[0] times the row's first value; the others become SY_ID_NONE (smart expert
// reduction: the experts whose score is far below the best one's are not computed).
void compute_drop_ids(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& ids = *node.src[0];
    const sy_tensor& values = *node.src[1];
    const sy_tensor& dst = *node.dst;
    const int64_t k = dst.ne[0], m = node.iparams[0];
    const float t = node.fparams[0];
    const int64_t min_rows = 4096 / (k > 0 ? k : 1) + 1;
    pool.parallel_ranges(sdk::nrows(dst), min_rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const RowIndex i = row_index(dst, r);
            const char* in = row_at(ids, i);
            const char* v = row_at(values, i);
            char* out = row_at(dst, i);
            float first;
            std::memcpy(&first, v, 4);
            for (int64_t j = 0; j < k; ++j) {
                float value;
                std::memcpy(&value, v + j * values.nb[0], 4);
                int32_t id = SY_ID_NONE;
                if (j < m || value > t * first) std::memcpy(&id, in + j * ids.nb[0], 4);
                std::memcpy(out + j * dst.nb[0], &id, 4);
            }
        }
    });
}

}  // namespace sy::cpu
