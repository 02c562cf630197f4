// MUL_MAT_ID, the experts' matrix product (ops.h):
//   dst[n, u, t] = sum_k W[k, n, ids[u, t]] * X[k, u % U1, t]
// and the named op moe.fused_up_gate v1 (named_ops.h), the same product with the up and gate
// experts at once followed by act(gate) * up.
// The (u, t) slots are grouped by expert first (a counting sort), so each expert's weights are
// streamed once for all the tokens routed to it, as one small matrix product; ids were checked
// to lie in [0, E) or be SY_ID_NONE before this runs. A dropped slot (SY_ID_NONE) gets zeros
// and costs nothing else. Block-quantized experts meet activation rows quantized once
// up front (quant/quant_matmul.hpp); the fused op quantizes them once for both products.
#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "ops/activation_rows.hpp"
#include "ops/matmul_tile.hpp"
#include "ops/ops.hpp"
#include "quant/quant_matmul.hpp"
#include "simd_math.hpp"

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

// The work of one expert product: slots sorted by expert, cut into tasks of block_rows weight
// rows against at most kBlockCols slots of one expert.
struct ExpertSchedule {
    std::vector<Slot> slots;
    std::vector<Slot> dropped;  // SY_ID_NONE slots
    std::vector<ExpertBlock> blocks;
    int64_t block_rows = 0;

    ExpertSchedule(const sy_tensor& ids, int64_t E, int64_t N, int threads) {
        const int64_t U = ids.ne[0], T = ids.ne[1];
        auto expert_of = [&](int64_t u, int64_t t) {
            int32_t e;
            std::memcpy(&e, static_cast<const char*>(ids.data) + u * ids.nb[0] + t * ids.nb[1], 4);
            return int64_t(e);
        };
        // Counting sort of the slots by expert.
        std::vector<int64_t> start(size_t(E) + 1, 0);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t u = 0; u < U; ++u) {
                const int64_t e = expert_of(u, t);
                if (e == SY_ID_NONE)
                    dropped.push_back({u, t});
                else
                    ++start[size_t(e) + 1];
            }
        for (int64_t e = 0; e < E; ++e) start[size_t(e) + 1] += start[size_t(e)];
        slots.resize(size_t(start[size_t(E)]));
        std::vector<int64_t> fill(start.begin(), start.end() - 1);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t u = 0; u < U; ++u)
                if (const int64_t e = expert_of(u, t); e != SY_ID_NONE)
                    slots[size_t(fill[size_t(e)]++)] = {u, t};

        int64_t parts = 0;  // (expert, column block) pairs
        for (int64_t e = 0; e < E; ++e)
            parts += (start[size_t(e) + 1] - start[size_t(e)] + kBlockCols - 1) / kBlockCols;
        block_rows = rows_per_task(N, parts, threads);
        const int64_t row_blocks = (N + block_rows - 1) / block_rows;
        for (int64_t e = 0; e < E; ++e)
            for (int64_t s = start[size_t(e)]; s < start[size_t(e) + 1]; s += kBlockCols)
                for (int64_t rb = 0; rb < row_blocks; ++rb)
                    blocks.push_back({e, rb, s, std::min(kBlockCols, start[size_t(e) + 1] - s)});
    }
};

// dst {N, U, T} is zero at the dropped slots.
void zero_dropped(const sy_tensor& dst, const std::vector<Slot>& dropped) {
    const float zero = 0.0f;
    for (const Slot& s : dropped) {
        char* d = row_at(dst, s.u, s.t, 0);
        for (int64_t n = 0; n < dst.ne[0]; ++n) std::memcpy(d + n * dst.nb[0], &zero, 4);
    }
}

// Rows [n0, n1) of one expert's product for the block's slots, written through `out` (element
// of row n0 per slot, rows out_stride bytes apart). Activations: quantized rows when the weight
// type has a quant kernel, packed F32 rows otherwise; any weights of the type it was made for.
// An expert's product has at most all the slots of the op (ids' U x T) for columns.
class ExpertProduct {
  public:
    ExpertProduct(ThreadPool& pool, const QuantKernel& qk, const sy_tensor& x, const sy_tensor& ids)
        : qk_(qk), U1_(x.ne[1]) {
        if (qk_.dot != nullptr)
            xq_.emplace(pool, x, qk_, ids.ne[0] * ids.ne[1]);
        else
            xr_.emplace(pool, x);
    }

    void run(const sy_tensor& w, const ExpertBlock& blk, const Slot* slots, int64_t n0, int64_t n1,
             float* const* out, int64_t out_stride) const {
        const int64_t K = w.ne[0];
        const char* rows = static_cast<const char*>(w.data) + blk.expert * w.nb[2] + n0 * w.nb[1];
        if (qk_.dot != nullptr) {
            const void* act[kBlockCols];
            for (int64_t c = 0; c < blk.slot_count; ++c)
                act[c] = xq_->row(slots[c].u % U1_, slots[c].t, 0);
            quant_matmul_block(qk_, rows, w.nb[1], 0, n1 - n0, K, act, out, blk.slot_count,
                               out_stride);
        } else {
            const float* act[kBlockCols];
            for (int64_t c = 0; c < blk.slot_count; ++c)
                act[c] = xr_->row(slots[c].u % U1_, slots[c].t, 0);
            matmul_block(w.type, rows, w.nb[1], 0, n1 - n0, K,
                         BlockColumns{act, out, blk.slot_count, out_stride});
        }
    }

  private:
    const QuantKernel qk_;
    const int64_t U1_;
    std::optional<QuantizedActivations> xq_;
    std::optional<ActivationRows> xr_;
};

}  // namespace

void compute_mul_mat_id(ThreadPool& pool, const sy_node& node, InterleavedWeights* interleaved) {
    const ProductWeights pw = product_weights(pool, *node.src[0], interleaved);
    const sy_tensor& w = pw.tensor;
    const sy_tensor& x = *node.src[1];
    const sy_tensor& ids = *node.src[2];
    const sy_tensor& dst = *node.dst;
    if (w.ne[0] == 0) return fill_with_zeros(dst);
    const ExpertSchedule plan(ids, w.ne[2], w.ne[1], pool.size());
    zero_dropped(dst, plan.dropped);
    const ExpertProduct product(pool, pw.kernel, x, ids);
    pool.parallel_for(int64_t(plan.blocks.size()), [&](int64_t task) {
        const ExpertBlock& blk = plan.blocks[size_t(task)];
        const Slot* slots = plan.slots.data() + blk.first_slot;
        const int64_t n0 = blk.row_block * plan.block_rows;
        const int64_t n1 = std::min(w.ne[1], n0 + plan.block_rows);
        float* out[kBlockCols];
        for (int64_t c = 0; c < blk.slot_count; ++c)
            out[c] =
                reinterpret_cast<float*>(row_at(dst, slots[c].u, slots[c].t, 0) + n0 * dst.nb[0]);
        product.run(w, blk, slots, n0, n1, out, dst.nb[0]);
    });
}

void compute_moe_fused_up_gate(ThreadPool& pool, const sy_node& node,
                               InterleavedWeights* interleaved) {
    // Up and gate share their type, so one quantization of x serves both; where only one of them
    // has an interleaved copy (memory ran out), neither is read interleaved.
    ProductWeights up_w = product_weights(pool, *node.src[0], interleaved);
    ProductWeights gate_w = product_weights(pool, *node.src[1], interleaved);
    if ((up_w.kernel.interleaved == nullptr) != (gate_w.kernel.interleaved == nullptr)) {
        up_w = product_weights(pool, *node.src[0], nullptr);
        gate_w = product_weights(pool, *node.src[1], nullptr);
    }
    const sy_tensor& up = up_w.tensor;
    const sy_tensor& gate = gate_w.tensor;
    const sy_tensor& x = *node.src[2];
    const sy_tensor& ids = *node.src[3];
    const sy_tensor& dst = *node.dst;
    const bool gelu = node.iparams[0] == 1;
    if (up.ne[0] == 0) return fill_with_zeros(dst);  // act(0) * 0
    const ExpertSchedule plan(ids, up.ne[2], up.ne[1], pool.size());
    zero_dropped(dst, plan.dropped);
    const ExpertProduct product(pool, up_w.kernel, x, ids);
    const int64_t rows = plan.block_rows;
    pool.parallel_for(int64_t(plan.blocks.size()), [&](int64_t task) {
        const ExpertBlock& blk = plan.blocks[size_t(task)];
        const Slot* slots = plan.slots.data() + blk.first_slot;
        const int64_t n0 = blk.row_block * rows;
        const int64_t n1 = std::min(up.ne[1], n0 + rows);
        // Both products land in scratch, one packed run of rows per slot, then combine.
        thread_local std::vector<float> scratch;
        scratch.resize(size_t(2 * kBlockCols * rows));
        float* g_out[kBlockCols];
        float* u_out[kBlockCols];
        for (int64_t c = 0; c < blk.slot_count; ++c) {
            g_out[c] = scratch.data() + c * rows;
            u_out[c] = scratch.data() + (kBlockCols + c) * rows;
        }
        product.run(gate, blk, slots, n0, n1, g_out, sizeof(float));
        product.run(up, blk, slots, n0, n1, u_out, sizeof(float));
        for (int64_t c = 0; c < blk.slot_count; ++c) {
            float* g = g_out[c];
            if (gelu)
                simd::map<simd::gelu>(g, g, n1 - n0);
            else
                simd::map<simd::silu>(g, g, n1 - n0);
            char* d = row_at(dst, slots[c].u, slots[c].t, 0) + n0 * dst.nb[0];
            for (int64_t n = 0; n < n1 - n0; ++n) {
                const float v = g[n] * u_out[c][n];
                std::memcpy(d + n * dst.nb[0], &v, sizeof v);
            }
        }
    });
}

}  // namespace sy::cpu
