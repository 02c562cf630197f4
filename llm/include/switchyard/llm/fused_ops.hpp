// Named ops with their decomposition beside them, as MLX keeps a fused op's fallback next to it:
// each function gives the named node when the backend that runs the session's graphs provides
// the op (NamedOps, chosen once per session by Model::choose_named_ops) and the same computation
// from core ops otherwise. A model asks here and does not branch on the choice itself.
#pragma once

#include <cstdint>

#include "switchyard/core/graph.hpp"
#include "switchyard/llm/model.hpp"

namespace sy::llm {

class FusedOps {
  public:
    FusedOps(Graph& graph, const NamedOps& ops) : g_(graph), ops_(ops) {}

    // SwiGLU of the experts each token selected (moe.fused_up_gate):
    //   silu(gate_e x) * (up_e x) for every selected e;
    //   up, gate {K, N, E}; x {K, 1, T}; ids {k, T} I32 -> {N, k, T}.
    // Decomposed: two mul_mat_id products, silu and mul.
    Tensor* expert_swiglu(Tensor* up, Tensor* gate, Tensor* x, Tensor* ids);

    // The same for a dense FFN: up, gate {K, N}; x {K, T} -> {N, T}. Fused as one "expert" that
    // every token uses (one job over both matrices instead of two products, a SiLU and a
    // multiply) when up and gate share a type, as the op requires.
    Tensor* swiglu(Tensor* up, Tensor* gate, Tensor* x);

    // attn.flash and attn.mla are used (the graph then needs no K.Q scores).
    bool flash() const { return ops_.flash; }

  private:
    // Expert ids {1, T} that are all 0: one I32 zero seen T times (stride 0).
    Tensor* zero_ids(int64_t tokens);

    Graph& g_;
    NamedOps ops_;
};

}  // namespace sy::llm
