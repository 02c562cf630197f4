#include "compute.hpp"

#include <cstring>

#include "capabilities.hpp"
#include "ops/ops.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
namespace {

using OpFn = void (*)(ThreadPool&, const sy_node&);

OpFn op_function(int32_t op) {
    switch (op) {
        case SY_OP_ADD: return compute_add;
        case SY_OP_MUL: return compute_mul;
        case SY_OP_DIV: return compute_div;
        case SY_OP_SCALE: return compute_scale;
        case SY_OP_RMS_NORM: return compute_rms_norm;
        case SY_OP_GET_ROWS: return compute_get_rows;
        case SY_OP_ROPE: return compute_rope;
        case SY_OP_SOFTMAX: return compute_softmax;
        case SY_OP_SILU: return compute_silu;
        case SY_OP_GELU: return compute_gelu;
        case SY_OP_SIGMOID: return compute_sigmoid;
        case SY_OP_ARGSORT: return compute_argsort;
        case SY_OP_TOP_K: return compute_top_k;
        case SY_OP_DROP_IDS: return compute_drop_ids;
        case SY_OP_SUM_ROWS: return compute_sum_rows;
        case SY_OP_CONCAT: return compute_concat;
        case SY_OP_CPY: return compute_cpy;
        case SY_OP_CONT: return compute_cont;
        default: return nullptr;
    }
}

// The matrix products, which may read interleaved weights; false for other nodes. validate_node
// admits only the named ops of the capability table (named_ops.h).
bool compute_product(ThreadPool& pool, InterleavedWeights* interleaved, const sy_node& node) {
    switch (node.op) {
        case SY_OP_MUL_MAT: compute_mul_mat(pool, node, interleaved); return true;
        case SY_OP_MUL_MAT_ID: compute_mul_mat_id(pool, node, interleaved); return true;
        case SY_OP_NAMED:
            if (std::strcmp(node.named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0)
                compute_moe_fused_up_gate(pool, node, interleaved);
            else
                compute_attention(pool, node);
            return true;
        default: return false;
    }
}

}  // namespace

sy_status compute_nodes(ThreadPool& pool, InterleavedWeights* interleaved,
                        const sy_node* const* nodes, size_t count) {
    if (count > 0 && nodes == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "compute: nodes is NULL for %zu nodes", count);
    for (size_t i = 0; i < count; ++i) {
        if (sy_status s = validation::validate_node(nodes[i], validation::DataChecks::kFull,
                                                    validation_rules());
            s.code)
            return s;
        // An empty dst has nothing to write, and its data (like an empty source's) may be NULL,
        // so it is not even addressed.
        if (sdk::nelements(*nodes[i]->dst) == 0) continue;
        if (compute_product(pool, interleaved, *nodes[i])) continue;
        const OpFn fn = op_function(nodes[i]->op);
        if (fn == nullptr)  // validate_node refuses every op without a function; kept for safety
            return sdk::error(SY_ERR_UNSUPPORTED, "op id %d has no cpu kernel", nodes[i]->op);
        fn(pool, *nodes[i]);
    }
    return sdk::ok();
}

}  // namespace sy::cpu
