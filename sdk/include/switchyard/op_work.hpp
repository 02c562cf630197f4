// The work of an op (its arithmetic and the bytes it moves) and what it reads that depends on
// its inputs' values, written once for everyone who estimates an op's cost: the core's placement
// and roofline, the executor's staging, and the plugins' cost models (cpu, blas, cuda).
// Header-only, C++ side of the SDK.
//
// Expert products (mul_mat_id, moe.fused_up_gate) read only the experts their ids select. Which
// ones is known only at run time, so an estimate made before counts the most a batch can touch:
// every (token, expert) pair a different expert, up to all of them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "switchyard/named_ops.h"
#include "switchyard/ops.h"
#include "switchyard/plugin.h"
#include "switchyard/sdk.hpp"

namespace sy::sdk {

// The operands of an expert product: its expert weights {K, N, E} (src indices) and its ids
// {k, T} (k experts for each of T tokens). mul_mat_id: weights src0, ids src2;
// moe.fused_up_gate: up src0 and gate src1, ids src3. None (ids < 0) for any other node.
struct ExpertOperands {
    int weights[2] = {-1, -1};
    int n_weights = 0;
    int ids = -1;

    bool any() const { return ids >= 0; }
    bool is_weight(int src) const {
        return n_weights > 0 && (src == weights[0] || (n_weights > 1 && src == weights[1]));
    }
};

inline ExpertOperands expert_operands(int32_t op, const char* named_op, uint32_t version,
                                      size_t n_src) {
    ExpertOperands e;
    if (op == SY_OP_MUL_MAT_ID && n_src >= 3) {
        e.weights[0] = 0;
        e.n_weights = 1;
        e.ids = 2;
    } else if (op == SY_OP_NAMED && named_op != nullptr &&
               std::strcmp(named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0 &&
               version == SY_NAMED_MOE_FUSED_UP_GATE_VERSION && n_src >= 4) {
        e.weights[0] = 0;
        e.weights[1] = 1;
        e.n_weights = 2;
        e.ids = 3;
    }
    return e;
}

// By the sources present (a caller need not set n_src).
inline ExpertOperands expert_operands(const sy_node& node) {
    size_t present = 0;
    while (present < SY_MAX_SRC && node.src[present] != nullptr) ++present;
    return expert_operands(node.op, node.named_op, node.named_op_version, present);
}

// The experts a batch of `pairs` (token, expert) choices can touch out of `experts`.
inline double experts_touched(double experts, double pairs) {
    return std::max(0.0, std::min(experts, pairs));
}

// An expert product's reach: E experts, k * T pairs, the experts they can touch; zeros for any
// other node.
struct ExpertReach {
    double experts = 0, pairs = 0, touched = 0;
};

inline ExpertReach expert_reach(const sy_node& node) {
    const ExpertOperands e = expert_operands(node);
    if (!e.any() || node.src[e.weights[0]] == nullptr || node.src[e.ids] == nullptr) return {};
    ExpertReach r;
    r.experts = double(node.src[e.weights[0]]->ne[2]);
    r.pairs = double(node.src[e.ids]->ne[0]) * double(node.src[e.ids]->ne[1]);
    r.touched = experts_touched(r.experts, r.pairs);
    return r;
}

// The work of one node: flops = arithmetic operations (an FMA counts 2, exp and its kin about a
// dozen), bytes = the bytes it reads and writes at least once. A roofline turns them into time:
// max(flops / peak, bytes / bandwidth) + a launch.
struct OpWork {
    double flops = 0.0;
    double bytes = 0.0;
};

// Bytes of a tensor's elements (not of the span its strides reach: a view reads what it shows).
inline double element_bytes(const sy_tensor* t) {
    if (t == nullptr) return 0.0;
    const sy_dtype_traits tr = sy_dtype_info(t->type);
    if (tr.block_size <= 0) return 0.0;
    return double(nelements(*t)) / tr.block_size * tr.type_size;
}

// Operation counts of the transcendental functions, in flops, as polynomial kernels run them.
constexpr double kExpFlops = 12.0;
constexpr double kTrigFlops = 30.0;

// The work of a node that keeps the op contract (op_contract.hpp). Expert products count the
// experts their batch can touch (expert_reach); get_rows reads only the gathered rows; a named
// op outside named_ops.h counts its bytes only.
inline OpWork op_work(const sy_node& node) {
    const sy_tensor& dst = *node.dst;
    const double n_dst = double(nelements(dst));
    const double n_src0 = node.src[0] ? double(nelements(*node.src[0])) : 0.0;
    OpWork w;
    w.bytes = element_bytes(node.dst);
    for (const sy_tensor* src : node.src) w.bytes += element_bytes(src);
    switch (node.op) {
        case SY_OP_ADD:
        case SY_OP_MUL:
        case SY_OP_DIV:
        case SY_OP_SUM_ROWS: w.flops = std::max(n_dst, n_src0); break;
        case SY_OP_SCALE: w.flops = 2.0 * n_dst; break;
        case SY_OP_RMS_NORM: w.flops = 4.0 * n_dst; break;
        case SY_OP_SILU:
        case SY_OP_SIGMOID: w.flops = (kExpFlops + 3.0) * n_dst; break;
        case SY_OP_GELU: w.flops = (kExpFlops + 7.0) * n_dst; break;
        case SY_OP_SOFTMAX: w.flops = (kExpFlops + 5.0) * n_dst; break;
        case SY_OP_ROPE:
            // Per element a rotation; per (token, pair) one angle: cos and sin.
            w.flops = 6.0 * n_dst + kTrigFlops * double(node.src[0]->ne[2]) * node.iparams[0];
            break;
        case SY_OP_MUL_MAT:
            // dst {N, M, B2, B3}: K multiply-adds per element.
            w.flops = 2.0 * double(node.src[0]->ne[0]) * n_dst;
            break;
        case SY_OP_ARGSORT:
        case SY_OP_TOP_K:
            w.flops = n_src0 * std::log2(std::max(2.0, double(node.src[0]->ne[0])));
            break;
        case SY_OP_GET_ROWS: {
            // Only the gathered rows of src0: as many values as dst holds, in src0's type.
            const sy_dtype_traits tr = sy_dtype_info(node.src[0]->type);
            w.bytes = element_bytes(&dst) + element_bytes(node.src[1]) +
                      n_dst / tr.block_size * tr.type_size;
            break;
        }
        default: break;  // data movement: bytes only
    }
    const ExpertOperands experts = expert_operands(node);
    if (experts.any()) {
        // n_weights products of K multiply-adds per dst element, over the touched experts only.
        const sy_tensor& weights = *node.src[experts.weights[0]];
        w.flops = 2.0 * experts.n_weights * double(weights.ne[0]) * n_dst;
        const ExpertReach reach = expert_reach(node);
        if (reach.experts > 0) {
            const double unread = element_bytes(&weights) * (1.0 - reach.touched / reach.experts);
            w.bytes -= unread * experts.n_weights;
        }
    } else if (node.op == SY_OP_NAMED && node.named_op && node.src[0] && node.src[1] &&
               (std::strcmp(node.named_op, SY_NAMED_ATTN_FLASH) == 0 ||
                std::strcmp(node.named_op, SY_NAMED_ATTN_MLA) == 0)) {
        // attention: Q.K and p.V for every (query row, head, key), and an exp per pair.
        const sy_tensor& q = *node.src[0];
        const double pairs = double(q.ne[1]) * double(q.ne[2]) * double(node.src[1]->ne[1]);
        w.flops = pairs * (2.0 * double(q.ne[0]) + 2.0 * double(dst.ne[0]) + kExpFlops);
    }
    return w;
}

}  // namespace sy::sdk
