#include "switchyard/llm/fused_ops.hpp"

#include "switchyard/named_ops.h"

namespace sy::llm {

Tensor* FusedOps::expert_swiglu(Tensor* up, Tensor* gate, Tensor* x, Tensor* ids) {
    if (ops_.fused_moe)
        return g_.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                        {up, gate, x, ids}, SY_TYPE_F32, {up->ne(1), ids->ne(0), ids->ne(1)});
    return g_.mul(g_.silu(g_.mul_mat_id(gate, x, ids)), g_.mul_mat_id(up, x, ids));
}

Tensor* FusedOps::swiglu(Tensor* up, Tensor* gate, Tensor* x) {
    if (!ops_.fused_moe || gate->type() != up->type())
        return g_.mul(g_.silu(g_.mul_mat(gate, x)), g_.mul_mat(up, x));
    const int64_t K = gate->ne(0), N = gate->ne(1), T = x->ne(1);
    Tensor* par = g_.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                           {g_.reshape(up, {K, N, 1}), g_.reshape(gate, {K, N, 1}),
                            g_.reshape(x, {K, 1, T}), zero_ids(T)},
                           SY_TYPE_F32, {N, 1, T});
    return g_.reshape(par, {N, T});
}

Tensor* FusedOps::zero_ids(int64_t tokens) {
    static const int32_t kZero = 0;
    Tensor* zero = g_.input("expert_zero", SY_TYPE_I32, {1});
    zero->set_data(const_cast<int32_t*>(&kZero));
    return g_.view(zero, {1, tokens}, {4, 0, 0, 0}, 0);
}

}  // namespace sy::llm
