// The graph builder: tensors and the nodes that compute them, in build (= topological) order.
// A model file reads top to bottom:
//
//   Graph g;
//   Tensor* x = g.input("inp_embd", SY_TYPE_F32, {n_embd, n_tokens});
//   Tensor* h = g.mul(g.rms_norm(x, eps), attn_norm);
//   Tensor* q = g.mul_mat(wq, h);
//   g.mark_output(q);
//
// Every op method checks its sources against the contract in ops.h and infers the result's
// shape; a mismatch throws sy::Error naming the op, the tensors (by name) and their shapes.
// Views (view, reshape, permute, transpose) are descriptors over the same bytes: no node.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/core/tensor.hpp"
#include "switchyard/ops.h"

namespace sy {

// "mul_mat", or "moe.fused_up_gate v1" for a named op (SY_OP_NAMED with its schema version).
std::string op_label(int32_t op, std::string_view named_op, uint32_t named_op_version);

// A matrix product: mul_mat, mul_mat_id or a moe.* named op (by key or label).
bool is_product_op(std::string_view op);

struct Node {
    sy_op op = SY_OP_NONE;
    std::string named_op;  // "moe.fused_up_gate" when op == SY_OP_NAMED
    uint32_t named_op_version = 0;
    std::vector<Tensor*> src;
    Tensor* dst = nullptr;
    std::array<int32_t, SY_MAX_PARAMS> iparams{};
    std::array<float, SY_MAX_PARAMS> fparams{};

    // "mul_mat", or "moe.fused_up_gate v1" for a named op.
    std::string label() const;
    // The name a policy, a plan or a profile calls the op by: the label without the schema
    // version ("mul_mat", "moe.fused_up_gate").
    std::string key() const { return op == SY_OP_NAMED ? named_op : label(); }
    bool is_product() const { return is_product_op(key()); }
    // The tensors the node reads and writes: its sources, then its result.
    std::vector<const Tensor*> touched() const {
        std::vector<const Tensor*> out(src.begin(), src.end());
        out.push_back(dst);
        return out;
    }

    // The expert weights {K, N, E} an expert product reads (MUL_MAT_ID's src[0]; the up and gate
    // experts of moe.fused_up_gate) and its expert ids {U, T}: only the experts the ids name are
    // read. Empty weights and a null ids for any other node.
    struct ExpertSources {
        std::vector<const Tensor*> weights;
        const Tensor* ids = nullptr;
    };
    ExpertSources expert_sources() const;
};

// ROPE parameters (ops.h, SY_OP_ROPE); the YaRN fields matter only when ext_factor != 0.
struct RopeParams {
    int32_t n_dims = 0;  // rotated dimensions of each head (even, <= head size)
    int32_t mode = SY_ROPE_NORMAL;
    int32_t n_ctx_orig = 0;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;
    float ext_factor = 0.0f;
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
};

// SOFTMAX parameters (ops.h, SY_OP_SOFTMAX): softmax(x * scale + mask (+ causal mask)).
struct SoftmaxParams {
    Tensor* mask = nullptr;  // optional, F32 or F16, {n, R1, ...}
    float scale = 1.0f;
    bool causal = false;  // element j of row i is masked when j > i + causal_offset
    int32_t causal_offset = 0;
};

// Parameters of a plugin-provided named op; their meaning is the op's schema (named_ops.h).
struct NamedOpParams {
    std::vector<int32_t> iparams;
    std::vector<float> fparams;
};

class Graph {
  public:
    Graph();
    Graph(Graph&&) noexcept = default;
    Graph& operator=(Graph&&) noexcept = default;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    ~Graph();

    // ---- leaves: external memory, bound with Tensor::set_data --------------------------------
    Tensor* input(std::string name, sy_dtype type, const Shape& shape);
    Tensor* weight(std::string name, sy_dtype type, const Shape& shape);

    // ---- views: no copy, no node ---------------------------------------------------------------
    // `shape` and `strides` at `offset` bytes from t's element (0,0,0,0); must stay inside t's
    // base tensor.
    Tensor* view(Tensor* t, const Shape& shape, const Strides& strides, uint64_t offset);
    // Same bytes, new shape with the same number of elements; t must be contiguous.
    Tensor* reshape(Tensor* t, const Shape& shape);
    // ggml semantics: dimension i of t becomes dimension axes[i] of the result.
    Tensor* permute(Tensor* t, std::array<int, SY_MAX_DIMS> axes);
    // Swaps dimensions 0 and 1.
    Tensor* transpose(Tensor* t);

    // ---- built-in ops (ops.h) -------------------------------------------------------------------
    Tensor* add(Tensor* a, Tensor* b);  // b broadcasts over a
    Tensor* mul(Tensor* a, Tensor* b);  // b broadcasts over a
    Tensor* div(Tensor* a, Tensor* b);  // b broadcasts over a
    Tensor* scale(Tensor* a, float scale, float bias = 0.0f);
    Tensor* rms_norm(Tensor* a, float eps);
    // a {K, N, A2, A3} (weights), b {K, M, B2, B3} F32 -> {N, M, B2, B3} F32
    Tensor* mul_mat(Tensor* a, Tensor* b);
    // w {K, N, E}, x {K, U1, T} F32, ids {U, T} I32 -> {N, U, T} F32
    Tensor* mul_mat_id(Tensor* w, Tensor* x, Tensor* ids);
    // rows of a {K, R, B2, B3} picked by ids {n, B2, B3} I32 -> {K, n, B2, B3} of `type`
    Tensor* get_rows(Tensor* a, Tensor* ids, sy_dtype type = SY_TYPE_F32);
    // x {D, H, T}, positions {T} I32
    Tensor* rope(Tensor* x, Tensor* positions, const RopeParams& params);
    Tensor* softmax(Tensor* x, const SoftmaxParams& params = {});
    Tensor* silu(Tensor* a);
    Tensor* gelu(Tensor* a);
    Tensor* sigmoid(Tensor* a);
    Tensor* argsort(Tensor* a, bool descending = false);  // -> I32, same shape
    Tensor* top_k(Tensor* a, int64_t k);                  // -> I32 {k, R, ...}
    // ids {k, R, ...} I32 ranked by values (F32, same shape): ids after the first `kept` whose
    // value is not above threshold * the row's first value become SY_ID_NONE -> I32
    Tensor* drop_ids(Tensor* ids, Tensor* values, int64_t kept, float threshold);
    Tensor* sum_rows(Tensor* a);  // -> {1, R, B2, B3}
    Tensor* concat(Tensor* a, Tensor* b, int dim);
    Tensor* cpy(Tensor* a, sy_dtype type);  // converted copy into a new packed tensor
    Tensor* cpy(Tensor* a, Tensor* dst);    // copy into an existing tensor (a cache view); -> dst
    Tensor* cont(Tensor* a);                // packed copy of a (transposed) view

    // A plugin-provided op (named_ops.h): the caller gives the result's type and shape. Those of
    // the schemas in named_ops.h are checked against their rules (op_contract.hpp); a backend's
    // own named op is checked by the backend that provides it.
    Tensor* named(std::string name, uint32_t schema_version, std::span<Tensor* const> srcs,
                  sy_dtype type, const Shape& shape, const NamedOpParams& params = {});
    Tensor* named(std::string name, uint32_t schema_version, std::initializer_list<Tensor*> srcs,
                  sy_dtype type, const Shape& shape, const NamedOpParams& params = {}) {
        return named(std::move(name), schema_version,
                     std::span<Tensor* const>(srcs.begin(), srcs.size()), type, shape, params);
    }

    // ---- reuse: what a graph built once may change between runs --------------------------------
    // Moves view v `bytes` along its base (a reused decode graph's cache writes, a token further
    // each step); it must stay inside the base, as view() checks. Neither changes the graph's
    // signatures: a view's offset and a node's parameters are bound per run.
    void move_view(Tensor* v, int64_t bytes);
    // Adds delta to integer parameter `index` of node `node` (a causal offset).
    void shift_iparam(int32_t node, size_t index, int32_t delta);

    // ---- results and inspection --------------------------------------------------------------
    // Outputs live until the end of the graph, so the caller can read them after a run.
    void mark_output(Tensor* t);

    const std::vector<std::unique_ptr<Tensor>>& tensors() const { return tensors_; }
    const std::vector<Node>& nodes() const { return nodes_; }
    const std::vector<Tensor*>& outputs() const { return outputs_; }
    // 0, 1, ..., nodes().size() - 1: the whole graph as an execution order.
    std::vector<int32_t> all_nodes() const;
    // Identifies this graph object (kept by moves) so an executor can tell graphs apart.
    uint64_t serial() const { return serial_; }
    // This graph object as far as it has grown (GraphStamp).
    GraphStamp stamp() const { return {serial_, tensors_.size(), nodes_.size()}; }
    bool owns(const Tensor* t) const;

    // Everything about `order` that a memory plan depends on: tensors' kinds, roots and
    // outputs, the roots' types, shapes and strides, and each node's op and tensors (not the
    // views' shapes and offsets: a view's memory is its root's). Equal signatures (from graphs
    // built the same way again, e.g. every decode step) can reuse one plan.
    std::string shape_signature(std::span<const int32_t> order) const;
    // The same without the roots' shapes and strides: graphs built the same way for other
    // sizes (decode steps over a longer cache) have equal structure signatures.
    std::string structure_signature(std::span<const int32_t> order) const;

  private:
    std::string signature(std::span<const int32_t> order, bool shapes) const;
    std::string compute_signature(std::span<const int32_t> order, bool shapes) const;
    Tensor* add_tensor(std::string name, sy_dtype type, const Shape& shape, const Strides& strides,
                       TensorKind kind);
    Tensor* add_leaf(std::string name, sy_dtype type, const Shape& shape, TensorKind kind);
    Tensor* add_view(Tensor* t, std::string name, const Shape& shape, const Strides& strides,
                     uint64_t offset);
    // Appends a node writing a new packed tensor of `type` and `shape`.
    Tensor* add_node(sy_op op, std::vector<Tensor*> src, sy_dtype type, const Shape& shape);
    // Appends `draft` (op, sources, parameters) after checking it against the op contract
    // (op_contract.hpp), with the result's type and shape the contract infers. `type`: the
    // result type where the caller chooses it (SY_TYPE_NONE: the op's own); `shape`: the result
    // a named op's caller gives, or {k} for top_k.
    Tensor* add_checked(Node draft, sy_dtype type = SY_TYPE_NONE, const Shape& shape = {});
    void check_mine(const char* what, std::initializer_list<const Tensor*> ts) const;

    // The signatures last computed, for a graph run again unchanged (a reused decode graph):
    // dropped when a tensor or node is added.
    struct Signature {
        std::vector<int32_t> order;
        bool shapes = false;
        std::string text;
    };
    mutable std::vector<Signature> signatures_;

    uint64_t serial_;
    std::vector<std::unique_ptr<Tensor>> tensors_;
    std::vector<Node> nodes_;
    std::vector<Tensor*> outputs_;
};

}  // namespace sy
