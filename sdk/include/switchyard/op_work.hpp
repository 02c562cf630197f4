// What an op reads that depends on its inputs' values, written once for everyone who estimates
// an op's work: the core's placement and roofline, the executor's staging, and the plugins' cost
// models (cpu, blas, cuda). Header-only, C++ side of the SDK.
//
// Expert products (mul_mat_id, moe.fused_up_gate) read only the experts their ids select. Which
// ones is known only at run time, so an estimate made before counts the most a batch can touch:
// every (token, expert) pair a different expert, up to all of them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "switchyard/named_ops.h"
#include "switchyard/ops.h"
#include "switchyard/plugin.h"

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

}  // namespace sy::sdk
