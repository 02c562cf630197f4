// MUL_MAT, "rows times rows" (ops.h):
//   dst[n, m, b2, b3] = sum_k A[k, n, b2 / (B2/A2), b3 / (B3/A3)] * B[k, m, b2, b3]
// Work is split into blocks of rows_per_task() weight rows x kBlockCols activation rows per batch
// matrix (of all batch matrices together when one weight matrix serves them all); threads take
// blocks from the pool's counter. Consecutive blocks share their
// activation rows (the row-block index varies fastest), which keeps those in cache.
// Block-quantized weights take the same split with activation rows quantized once up front
// (quant/quant_matmul.hpp).
#include <algorithm>

#include "ops/activation_rows.hpp"
#include "ops/matmul_tile.hpp"
#include "ops/ops.hpp"
#include "quant/quant_matmul.hpp"

namespace sy::cpu {
namespace {

// One activation column of the product: row m of batch entry (b2, b3).
struct Column {
    int64_t m, b2, b3;
};

// Runs tile(weights, b_rows, out, count, n0, n1) for every block of weight rows [n0, n1) x at
// most kBlockCols activation columns, on the pool: `weights` points at the (broadcast) weight
// matrix of those columns, b_rows[c] at column c's activation row in `b` (ActivationRows or
// QuantizedActivations) and out[c] at its dst column. A weight matrix shared by every batch entry
// (a.ne2 = a.ne3 = 1) takes the columns of all entries together, so its rows are read once for all
// of them (the attention products of one query against cached keys shared by all heads).
template <typename Rows, typename Tile>
void for_each_tile(ThreadPool& pool, const sy_tensor& a, const Rows& b, const sy_tensor& dst,
                   Tile&& tile) {
    const int64_t N = a.ne[1], M = dst.ne[1];
    const int64_t B2 = dst.ne[2], B3 = dst.ne[3];
    const int64_t bcast2 = B2 / a.ne[2], bcast3 = B3 / a.ne[3];
    const bool shared = a.ne[2] == 1 && a.ne[3] == 1;
    // Column groups that share one weight matrix: every column, or each batch entry's M.
    const int64_t groups = shared ? 1 : B2 * B3;
    const int64_t per_group = shared ? M * B2 * B3 : M;
    const int64_t col_blocks = (per_group + kBlockCols - 1) / kBlockCols;
    const int64_t block_rows = rows_per_task(N, groups * col_blocks, pool.size());
    const int64_t row_blocks = (N + block_rows - 1) / block_rows;
    pool.parallel_for(groups * col_blocks * row_blocks, [&](int64_t task) {
        const int64_t row_block = task % row_blocks;
        int64_t rest = task / row_blocks;
        const int64_t col_block = rest % col_blocks;
        const int64_t group = rest / col_blocks;
        const int64_t c0 = col_block * kBlockCols;
        const int64_t count = std::min(kBlockCols, per_group - c0);
        Column cols[kBlockCols];
        for (int64_t c = 0; c < count; ++c) {
            const int64_t flat = group * per_group + c0 + c;  // (m, b2, b3), m fastest
            cols[c] = {flat % M, (flat / M) % B2, flat / (M * B2)};
        }
        const char* weights = static_cast<const char*>(a.data) + (cols[0].b2 / bcast2) * a.nb[2] +
                              (cols[0].b3 / bcast3) * a.nb[3];
        const int64_t n0 = row_block * block_rows;
        decltype(b.row(0, 0, 0)) b_rows[kBlockCols];
        float* out[kBlockCols];
        for (int64_t c = 0; c < count; ++c) {
            b_rows[c] = b.row(cols[c].m, cols[c].b2, cols[c].b3);
            out[c] = reinterpret_cast<float*>(row_at(dst, cols[c].m, cols[c].b2, cols[c].b3));
        }
        tile(weights, b_rows, out, count, n0, std::min(N, n0 + block_rows));
    });
}

void mul_mat_quantized(ThreadPool& pool, const sy_node& node, const sy_tensor& a,
                       const QuantKernel& qk) {
    const sy_tensor& dst = *node.dst;
    const QuantizedActivations b(pool, *node.src[1], qk, sdk::nrows(*node.src[1]));
    for_each_tile(pool, a, b, dst,
                  [&](const char* weights, const void* const* b_rows, float* const* out,
                      int64_t count, int64_t n0, int64_t n1) {
                      quant_matmul_block(qk, weights, a.nb[1], n0, n1, a.ne[0], b_rows, out, count,
                                         dst.nb[0]);
                  });
}

}  // namespace

void compute_mul_mat(ThreadPool& pool, const sy_node& node, InterleavedWeights* interleaved) {
    const sy_tensor& a = *node.src[0];
    const sy_tensor& dst = *node.dst;
    if (a.ne[0] == 0) return fill_with_zeros(dst);
    const ProductWeights w = product_weights(pool, a, interleaved);
    if (w.kernel.dot != nullptr) return mul_mat_quantized(pool, node, w.tensor, w.kernel);
    const ActivationRows b(pool, *node.src[1]);
    for_each_tile(pool, a, b, dst,
                  [&](const char* weights, const float* const* b_rows, float* const* out,
                      int64_t count, int64_t n0, int64_t n1) {
                      matmul_block(a.type, weights, a.nb[1], n0, n1, a.ne[0],
                                   BlockColumns{b_rows, out, count, dst.nb[0]});
                  });
}

}  // namespace sy::cpu
