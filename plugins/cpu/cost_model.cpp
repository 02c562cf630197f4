#include "cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "switchyard/named_ops.h"
#include "switchyard/op_work.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
namespace {

// Bytes of a tensor's elements (not of the span its strides reach: a view reads what it shows).
double data_bytes(const sy_tensor* t) {
    if (t == nullptr) return 0.0;
    const sy_dtype_traits tr = sy_dtype_info(t->type);
    if (tr.block_size <= 0) return 0.0;
    return double(sdk::nelements(*t)) / tr.block_size * tr.type_size;
}

// Rough operation counts of the transcendental functions, in FLOPs, as the polynomial kernels
// execute them.
constexpr double kExpFlops = 12.0;
constexpr double kTrigFlops = 30.0;

double all_bytes(const sy_node& node) {
    double bytes = data_bytes(node.dst);
    for (const sy_tensor* src : node.src) bytes += data_bytes(src);
    return bytes;
}

}  // namespace

NodeWork node_work(const sy_node& node) {
    const sy_tensor& dst = *node.dst;
    const double n_dst = double(sdk::nelements(dst));
    const double n_src0 = node.src[0] ? double(sdk::nelements(*node.src[0])) : 0.0;
    NodeWork w{0.0, all_bytes(node)};
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
            w.flops = 6.0 * n_dst + kTrigFlops * double(node.src[0]->ne[2]) * node.iparams[0];
            break;
        case SY_OP_MUL_MAT: {
            const sy_tensor& a = *node.src[0];
            // dst {N, M, B2, B3}, K multiply-adds per element.
            w.flops = 2.0 * double(a.ne[0]) * n_dst;
            break;
        }
        case SY_OP_NAMED:
            if (std::strcmp(node.named_op, SY_NAMED_MOE_FUSED_UP_GATE) != 0) {
                // attn.flash / attn.mla: Q.K and p.V for every query row and key.
                const sy_tensor& q = *node.src[0];
                const double pairs = double(q.ne[1]) * double(q.ne[2]) * double(node.src[1]->ne[1]);
                w.flops = pairs * (2.0 * double(q.ne[0]) + 2.0 * double(dst.ne[0]) + kExpFlops);
                break;
            }
            [[fallthrough]];  // moe.fused_up_gate: two MUL_MAT_ID products over up and gate
        case SY_OP_MUL_MAT_ID: {
            const bool fused = node.op == SY_OP_NAMED;
            const sy_tensor& weights = *node.src[0];
            w.flops = (fused ? 4.0 : 2.0) * double(weights.ne[0]) * n_dst;
            // Only the experts the ids select are read: those the batch can touch (op_work.hpp).
            const sdk::ExpertReach reach = sdk::expert_reach(node);
            const double per_expert =
                reach.experts > 0 ? data_bytes(&weights) / reach.experts : 0.0;
            w.bytes += (reach.touched * per_expert - data_bytes(&weights)) * (fused ? 2.0 : 1.0);
            break;
        }
        case SY_OP_ARGSORT:
        case SY_OP_TOP_K: {
            const double n = double(node.src[0]->ne[0]);
            w.flops = n_src0 * std::log2(std::max(2.0, n));
            break;
        }
        case SY_OP_GET_ROWS: {
            // Only the gathered rows of src0 are read: as many bytes as dst holds, in src0's type.
            const sy_tensor& src = *node.src[0];
            const sy_dtype_traits tr = sy_dtype_info(src.type);
            w.bytes =
                data_bytes(&dst) + data_bytes(node.src[1]) + n_dst / tr.block_size * tr.type_size;
            break;
        }
        default: break;  // pure data movement: bytes only
    }
    return w;
}

double estimate_ns(const CostRates& rates, const NodeWork& work) {
    const double compute_s = rates.peak_flops > 0 ? work.flops / rates.peak_flops : 0.0;
    const double memory_s = rates.memory_bandwidth > 0 ? work.bytes / rates.memory_bandwidth : 0.0;
    return std::max(compute_s, memory_s) * 1e9 + rates.launch_overhead_ns;
}

}  // namespace sy::cpu
