// MUL_MAT_ID, the experts' matrix product (ops.h):
//   dst[n, u, t] = sum_k W[k, n, ids[u, t]] * X[k, u % U1, t]
// The (u, t) slots are grouped by expert first (a counting sort), so each expert's weights are
// streamed once for all the tokens routed to it, as one small matrix product; ids were checked
// to lie in [0, E) before this runs. Block-quantized experts meet activation rows quantized once
// up front (quant/quant_matmul.hpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/activation_rows.hpp"
#include "ops/matmul_tile.hpp"
#include "ops/ops.hpp"
#include "quant/quant_matmul.hpp"

namespace sy::cpu {
namespace {

struct Slot {
    int64_t u, t;
};

struct ExpertBlock {
    int64_t expert;
    int64_t row_block;
    int64_t first_slot, slot_count;  // range of the expert-sorted slots
};

}  // namespace

void compute_mul_mat_id(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& w = *node.src[0];
    const sy_tensor& x = *node.src[1];
    const sy_tensor& ids = *node.src[2];
    const sy_tensor& dst = *node.dst;
    const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2];
    const int64_t U = ids.ne[0], T = ids.ne[1], U1 = x.ne[1];
    if (K == 0) return fill_with_zeros(dst);

    auto expert_of = [&](int64_t u, int64_t t) {
        int32_t e;
        std::memcpy(&e, static_cast<const char*>(ids.data) + u * ids.nb[0] + t * ids.nb[1], 4);
        return int64_t(e);
    };
    // Counting sort of the slots by expert.
    std::vector<int64_t> start(size_t(E) + 1, 0);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t u = 0; u < U; ++u) ++start[size_t(expert_of(u, t)) + 1];
    for (int64_t e = 0; e < E; ++e) start[size_t(e) + 1] += start[size_t(e)];
    std::vector<Slot> slots(size_t(U * T));
    {
        std::vector<int64_t> fill(start.begin(), start.end() - 1);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t u = 0; u < U; ++u) slots[size_t(fill[size_t(expert_of(u, t))]++)] = {u, t};
    }

    int64_t parts = 0;  // (expert, column block) pairs
    for (int64_t e = 0; e < E; ++e)
        parts += (start[size_t(e) + 1] - start[size_t(e)] + kBlockCols - 1) / kBlockCols;
    const int64_t block_rows = rows_per_task(N, parts, pool.size());
    const int64_t row_blocks = (N + block_rows - 1) / block_rows;
    std::vector<ExpertBlock> blocks;
    for (int64_t e = 0; e < E; ++e)
        for (int64_t s = start[size_t(e)]; s < start[size_t(e) + 1]; s += kBlockCols)
            for (int64_t rb = 0; rb < row_blocks; ++rb)
                blocks.push_back({e, rb, s, std::min(kBlockCols, start[size_t(e) + 1] - s)});

    const QuantKernel qk = quant_kernel(w.type);
    if (qk.dot != nullptr) {
        const QuantizedActivations xq(pool, x, qk);
        pool.parallel_for(int64_t(blocks.size()), [&](int64_t task) {
            const ExpertBlock& blk = blocks[size_t(task)];
            const void* b_rows[kBlockCols];
            float* out[kBlockCols];
            for (int64_t c = 0; c < blk.slot_count; ++c) {
                const Slot& s = slots[size_t(blk.first_slot + c)];
                b_rows[c] = xq.row(s.u % U1, s.t, 0);
                out[c] = reinterpret_cast<float*>(row_at(dst, s.u, s.t, 0));
            }
            const char* weights = static_cast<const char*>(w.data) + blk.expert * w.nb[2];
            const int64_t n0 = blk.row_block * block_rows;
            quant_matmul_block(qk, weights, w.nb[1], n0, std::min(N, n0 + block_rows), K, b_rows,
                               out, blk.slot_count, dst.nb[0]);
        });
        return;
    }
    const ActivationRows xr(pool, x);
    pool.parallel_for(int64_t(blocks.size()), [&](int64_t task) {
        const ExpertBlock& blk = blocks[size_t(task)];
        const float* b_rows[kBlockCols];
        float* out[kBlockCols];
        for (int64_t c = 0; c < blk.slot_count; ++c) {
            const Slot& s = slots[size_t(blk.first_slot + c)];
            b_rows[c] = xr.row(s.u % U1, s.t, 0);
            out[c] = reinterpret_cast<float*>(row_at(dst, s.u, s.t, 0));
        }
        const char* weights = static_cast<const char*>(w.data) + blk.expert * w.nb[2];
        const int64_t n0 = blk.row_block * block_rows;
        matmul_block(w.type, weights, w.nb[1], n0, std::min(N, n0 + block_rows), K,
                     BlockColumns{b_rows, out, blk.slot_count, dst.nb[0]});
    });
}

}  // namespace sy::cpu
