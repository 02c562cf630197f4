// The op methods of the graph builder. Each checks its node against the op contract
// (sdk/include/switchyard/op_contract.hpp, the rules every plugin's validation and the reference
// also apply) and gives the result the type and shape the contract infers.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "op_error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/op_contract.hpp"
#include "switchyard/sdk.hpp"

namespace sy {

// `type`: the result type where the caller chooses it (SY_TYPE_NONE: the op's default);
// `shape`: the result shape a named op's caller gives, or {k} for top_k.
Tensor* Graph::add_checked(Node draft, sy_dtype type, const Shape& shape) {
    const std::string label = draft.label();
    std::vector<const Tensor*> srcs(draft.src.begin(), draft.src.end());
    if (draft.src.size() > SY_MAX_SRC) {
        fail_op(label, srcs,
                "at most " + std::to_string(SY_MAX_SRC) + " sources, got " +
                    std::to_string(draft.src.size()));
    }
    for (const Tensor* s : srcs) {
        if (s == nullptr) fail_op(label, srcs, "a source is null");
        if (!owns(s)) fail_op(label, srcs, "tensor " + s->describe() + " belongs to another graph");
    }
    std::vector<sy_tensor> descriptors;
    descriptors.reserve(srcs.size());
    for (const Tensor* s : srcs) descriptors.push_back(s->descriptor());
    sy_tensor result{};
    result.struct_size = sizeof(sy_tensor);
    result.type = type;
    for (int d = 0; d < SY_MAX_DIMS; ++d) result.ne[d] = shape[d];
    sy_node raw{};
    raw.struct_size = sizeof(sy_node);
    raw.op = draft.op;
    raw.named_op = draft.op == SY_OP_NAMED ? draft.named_op.c_str() : nullptr;
    raw.named_op_version = draft.named_op_version;
    raw.n_src = static_cast<int32_t>(descriptors.size());
    for (size_t i = 0; i < descriptors.size(); ++i) raw.src[i] = &descriptors[i];
    std::copy(draft.iparams.begin(), draft.iparams.end(), raw.iparams);
    std::copy(draft.fparams.begin(), draft.fparams.end(), raw.fparams);
    raw.dst = &result;

    const sdk::OpResult r = sdk::op_result(raw);
    if (!r.ok()) fail_op(label, srcs, r.error);
    const Shape out{r.ne[0], r.ne[1], r.ne[2], r.ne[3]};
    if (draft.op == SY_OP_NAMED && r.known && (r.type != type || out != shape)) {
        fail_op(label, srcs,
                "the result " +
                    std::string(sy_dtype_info(type).name ? sy_dtype_info(type).name : "type?") +
                    " " + shape.str() + " differs from the schema's " + sy_dtype_info(r.type).name +
                    " " + out.str());
    }
    Tensor* dst = add_node(draft.op, std::move(draft.src), static_cast<sy_dtype>(r.type), out);
    Node& n = nodes_.back();
    n.named_op = std::move(draft.named_op);
    n.named_op_version = draft.named_op_version;
    n.iparams = draft.iparams;
    n.fparams = draft.fparams;
    return dst;
}

namespace {

Node draft(sy_op op, std::vector<Tensor*> src) {
    Node n;
    n.op = op;
    n.src = std::move(src);
    return n;
}

}  // namespace

Tensor* Graph::add(Tensor* a, Tensor* b) {
    return add_checked(draft(SY_OP_ADD, {a, b}));
}
Tensor* Graph::mul(Tensor* a, Tensor* b) {
    return add_checked(draft(SY_OP_MUL, {a, b}));
}
Tensor* Graph::div(Tensor* a, Tensor* b) {
    return add_checked(draft(SY_OP_DIV, {a, b}));
}
Tensor* Graph::silu(Tensor* a) {
    return add_checked(draft(SY_OP_SILU, {a}));
}
Tensor* Graph::gelu(Tensor* a) {
    return add_checked(draft(SY_OP_GELU, {a}));
}
Tensor* Graph::sigmoid(Tensor* a) {
    return add_checked(draft(SY_OP_SIGMOID, {a}));
}

Tensor* Graph::scale(Tensor* a, float scale, float bias) {
    Node n = draft(SY_OP_SCALE, {a});
    n.fparams[0] = scale;
    n.fparams[1] = bias;
    return add_checked(std::move(n));
}

Tensor* Graph::rms_norm(Tensor* a, float eps) {
    Node n = draft(SY_OP_RMS_NORM, {a});
    n.fparams[0] = eps;
    return add_checked(std::move(n));
}

Tensor* Graph::mul_mat(Tensor* a, Tensor* b) {
    return add_checked(draft(SY_OP_MUL_MAT, {a, b}));
}

Tensor* Graph::mul_mat_id(Tensor* w, Tensor* x, Tensor* ids) {
    return add_checked(draft(SY_OP_MUL_MAT_ID, {w, x, ids}));
}

Tensor* Graph::get_rows(Tensor* a, Tensor* ids, sy_dtype type) {
    return add_checked(draft(SY_OP_GET_ROWS, {a, ids}), type);
}

Tensor* Graph::rope(Tensor* x, Tensor* positions, const RopeParams& p) {
    Node n = draft(SY_OP_ROPE, {x, positions});
    n.iparams[0] = p.n_dims;
    n.iparams[1] = p.mode;
    n.iparams[2] = p.n_ctx_orig;
    n.fparams[0] = p.freq_base;
    n.fparams[1] = p.freq_scale;
    n.fparams[2] = p.ext_factor;
    n.fparams[3] = p.attn_factor;
    n.fparams[4] = p.beta_fast;
    n.fparams[5] = p.beta_slow;
    return add_checked(std::move(n));
}

Tensor* Graph::softmax(Tensor* x, const SoftmaxParams& p) {
    Node n = p.mask ? draft(SY_OP_SOFTMAX, {x, p.mask}) : draft(SY_OP_SOFTMAX, {x});
    n.fparams[0] = p.scale;
    n.iparams[0] = p.causal ? 1 : 0;
    n.iparams[1] = p.causal_offset;
    return add_checked(std::move(n));
}

Tensor* Graph::argsort(Tensor* a, bool descending) {
    Node n = draft(SY_OP_ARGSORT, {a});
    n.iparams[0] = descending ? 1 : 0;
    return add_checked(std::move(n));
}

Tensor* Graph::top_k(Tensor* a, int64_t k) {
    return add_checked(draft(SY_OP_TOP_K, {a}), SY_TYPE_NONE, Shape{k});
}

Tensor* Graph::drop_ids(Tensor* ids, Tensor* values, int64_t kept, float threshold) {
    Node n = draft(SY_OP_DROP_IDS, {ids, values});
    if (kept < 1 || kept > INT32_MAX) {
        fail_op("drop_ids", {ids, values},
                "kept = " + std::to_string(kept) + " must be in [1, INT32_MAX]");
    }
    n.iparams[0] = static_cast<int32_t>(kept);
    n.fparams[0] = threshold;
    return add_checked(std::move(n));
}

Tensor* Graph::sum_rows(Tensor* a) {
    return add_checked(draft(SY_OP_SUM_ROWS, {a}));
}

Tensor* Graph::concat(Tensor* a, Tensor* b, int d) {
    Node n = draft(SY_OP_CONCAT, {a, b});
    n.iparams[0] = d;
    return add_checked(std::move(n));
}

Tensor* Graph::cpy(Tensor* a, sy_dtype type) {
    return add_checked(draft(SY_OP_CPY, {a}), type);
}

Tensor* Graph::cpy(Tensor* a, Tensor* dst) {
    check_mine("cpy", {a, dst});
    // The contract of a copy into `dst`: the result of cpy(a, dst's type), in dst's shape.
    sy_tensor src = a->descriptor(), out = dst->descriptor();
    sy_node raw{};
    raw.struct_size = sizeof(sy_node);
    raw.op = SY_OP_CPY;
    raw.n_src = 1;
    raw.src[0] = &src;
    raw.dst = &out;
    if (const std::string why = sdk::check_op(raw); !why.empty()) fail_op("cpy", {a, dst}, why);
    if (a->base() == dst->base()) fail_op("cpy", {a, dst}, "source and destination share memory");
    Node node = draft(SY_OP_CPY, {a});
    node.dst = dst;
    nodes_.push_back(std::move(node));
    return dst;
}

Tensor* Graph::cont(Tensor* a) {
    return add_checked(draft(SY_OP_CONT, {a}));
}

Tensor* Graph::named(std::string name, uint32_t schema_version, std::span<Tensor* const> srcs,
                     sy_dtype type, const Shape& shape, const NamedOpParams& params) {
    const std::string label = name + " v" + std::to_string(schema_version);
    if (name.empty()) throw Error("named op: the name is empty");
    if (sy_dtype_info(type).name == nullptr) {
        throw Error(label + ": unknown result type id " + std::to_string(static_cast<int>(type)));
    }
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        if (shape[d] < 1)
            throw Error(label + ": result shape " + shape.str() + " has a dimension < 1");
    }
    if (params.iparams.size() > SY_MAX_PARAMS || params.fparams.size() > SY_MAX_PARAMS) {
        throw Error(label + ": at most " + std::to_string(SY_MAX_PARAMS) +
                    " parameters of each kind");
    }
    Node n = draft(SY_OP_NAMED, std::vector<Tensor*>(srcs.begin(), srcs.end()));
    n.named_op = name;
    n.named_op_version = schema_version;
    std::copy(params.iparams.begin(), params.iparams.end(), n.iparams.begin());
    std::copy(params.fparams.begin(), params.fparams.end(), n.fparams.begin());
    Tensor* dst = add_checked(std::move(n), type, shape);
    dst->set_name(name + "#" + std::to_string(dst->id()));
    return dst;
}

}  // namespace sy
