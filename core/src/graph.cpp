// Graph structure: tensors, views, nodes, outputs, the shape signature. The per-op shape rules
// are in graph_ops.cpp.
#include "switchyard/core/graph.hpp"

#include <algorithm>
#include <atomic>

#include "op_error.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/op_work.hpp"
#include "switchyard/sdk.hpp"

namespace sy {

namespace {

std::atomic<uint64_t> next_graph_serial{1};

template <typename T>
void append_raw(std::string& out, const T& value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

}  // namespace

std::string op_label(int32_t op, std::string_view named_op, uint32_t named_op_version) {
    if (op == SY_OP_NAMED) return std::string(named_op) + " v" + std::to_string(named_op_version);
    const char* name = sdk::op_name(op);
    return name ? name : "op " + std::to_string(op);
}

bool is_product_op(std::string_view op) {
    return op == "mul_mat" || op == "mul_mat_id" || op.starts_with("moe.");
}

std::string Node::label() const {
    return op_label(op, named_op, named_op_version);
}

Node::ExpertSources Node::expert_sources() const {
    const sdk::ExpertOperands e =
        sdk::expert_operands(op, named_op.c_str(), named_op_version, src.size());
    if (!e.any()) return {};
    ExpertSources out{{}, src[size_t(e.ids)]};
    for (int i = 0; i < e.n_weights; ++i) out.weights.push_back(src[size_t(e.weights[i])]);
    return out;
}

Graph::Graph() : serial_(next_graph_serial++) {}
Graph::~Graph() = default;

bool Graph::owns(const Tensor* t) const {
    return t != nullptr && t->id() >= 0 && static_cast<size_t>(t->id()) < tensors_.size() &&
           tensors_[static_cast<size_t>(t->id())].get() == t;
}

void Graph::check_mine(const char* what, std::initializer_list<const Tensor*> ts) const {
    for (const Tensor* t : ts) {
        if (t == nullptr) fail_op(what, ts, "a source is null");
        if (!owns(t)) fail_op(what, ts, "tensor " + t->describe() + " belongs to another graph");
    }
}

Tensor* Graph::add_tensor(std::string name, sy_dtype type, const Shape& shape,
                          const Strides& strides, TensorKind kind) {
    signatures_.clear();
    const auto id = static_cast<int32_t>(tensors_.size());
    tensors_.push_back(std::unique_ptr<Tensor>(
        new Tensor(serial_, id, std::move(name), type, shape, strides, kind)));
    return tensors_.back().get();
}

Tensor* Graph::add_leaf(std::string name, sy_dtype type, const Shape& shape, TensorKind kind) {
    const char* what = kind == TensorKind::weight ? "weight" : "input";
    const sy_dtype_traits traits = sy_dtype_info(type);
    if (traits.name == nullptr) {
        throw Error(std::string(what) + " '" + name + "': unknown type id " +
                    std::to_string(static_cast<int>(type)));
    }
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        if (shape[d] < 1) {
            throw Error(std::string(what) + " '" + name + "' " + shape.str() +
                        ": every dimension must be >= 1");
        }
    }
    if (shape[0] % traits.block_size != 0) {
        throw Error(std::string(what) + " '" + name + "' " + traits.name + " " + shape.str() +
                    ": ne0 must be a multiple of the block size " +
                    std::to_string(traits.block_size));
    }
    return add_tensor(std::move(name), type, shape, packed_strides(type, shape), kind);
}

Tensor* Graph::input(std::string name, sy_dtype type, const Shape& shape) {
    return add_leaf(std::move(name), type, shape, TensorKind::input);
}

Tensor* Graph::weight(std::string name, sy_dtype type, const Shape& shape) {
    return add_leaf(std::move(name), type, shape, TensorKind::weight);
}

Tensor* Graph::add_view(Tensor* t, std::string name, const Shape& shape, const Strides& strides,
                        uint64_t offset) {
    Tensor* base = t->base();
    Tensor* v = add_tensor(std::move(name), t->type(), shape, strides, TensorKind::view);
    v->base_ = base;
    v->offset_ = t->offset() + offset;
    return v;
}

Tensor* Graph::view(Tensor* t, const Shape& shape, const Strides& strides, uint64_t offset) {
    check_mine("view", {t});
    const sy_dtype_traits traits = sy_dtype_info(t->type());
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        if (shape[d] < 1)
            fail_op("view", {t}, "view shape " + shape.str() + " has a dimension < 1");
        if (strides[static_cast<size_t>(d)] < 0) {
            fail_op("view", {t}, "negative strides are not supported");
        }
    }
    if (strides[0] != traits.type_size || shape[0] % traits.block_size != 0) {
        fail_op("view", {t},
                "rows must stay packed: nb0 must be " + std::to_string(traits.type_size) +
                    " and ne0 whole blocks");
    }
    sy_tensor d = sdk::make_tensor(t->type(), shape[0], shape[1], shape[2], shape[3]);
    for (int i = 0; i < SY_MAX_DIMS; ++i) d.nb[i] = strides[static_cast<size_t>(i)];
    const uint64_t end = t->offset() + offset + static_cast<uint64_t>(sdk::nbytes(d));
    const uint64_t base_bytes = static_cast<uint64_t>(t->base()->bytes());
    if (end > base_bytes) {
        fail_op("view", {t, t->base()},
                "view " + shape.str() + " at offset " + std::to_string(offset) + " ends at byte " +
                    std::to_string(end) + ", past the " + std::to_string(base_bytes) +
                    " bytes of its base");
    }
    return add_view(t, t->name() + " (view)", shape, strides, offset);
}

Tensor* Graph::reshape(Tensor* t, const Shape& shape) {
    check_mine("reshape", {t});
    if (!t->is_contiguous()) {
        fail_op("reshape", {t},
                "only a contiguous tensor can be reshaped (use cont() first); strides are {" +
                    std::to_string(t->nb(0)) + ", " + std::to_string(t->nb(1)) + ", " +
                    std::to_string(t->nb(2)) + ", " + std::to_string(t->nb(3)) + "}");
    }
    if (shape.elements() != t->elements() ||
        std::any_of(shape.ne.begin(), shape.ne.end(), [](int64_t n) { return n < 1; })) {
        fail_op("reshape", {t},
                "cannot reshape " + std::to_string(t->elements()) + " elements to " + shape.str());
    }
    if (shape[0] % sy_dtype_info(t->type()).block_size != 0) {
        fail_op("reshape", {t}, "ne0 of " + shape.str() + " is not a whole number of blocks");
    }
    // A row-scaled type's rows each start with their scale: a reshape must keep them.
    if (sy_dtype_info(t->type()).row_meta_size > 0 && shape[0] != t->ne(0)) {
        fail_op("reshape", {t},
                "ne0 of " + shape.str() + " differs from the tensor's, and each row of " +
                    sy_dtype_info(t->type()).name + " carries its own scale");
    }
    return add_view(t, t->name() + " (reshaped)", shape, packed_strides(t->type(), shape), 0);
}

Tensor* Graph::permute(Tensor* t, std::array<int, SY_MAX_DIMS> axes) {
    check_mine("permute", {t});
    std::array<bool, SY_MAX_DIMS> seen{};
    for (int a : axes) {
        if (a < 0 || a >= SY_MAX_DIMS || seen[static_cast<size_t>(a)]) {
            fail_op("permute", {t},
                    "axes {" + std::to_string(axes[0]) + ", " + std::to_string(axes[1]) + ", " +
                        std::to_string(axes[2]) + ", " + std::to_string(axes[3]) +
                        "} are not a permutation of 0..3");
        }
        seen[static_cast<size_t>(a)] = true;
    }
    if (sy_dtype_info(t->type()).block_size != 1 && axes[0] != 0) {
        fail_op("permute", {t}, "a block-quantized tensor keeps dimension 0 in place");
    }
    Shape shape;
    Strides strides{};
    for (size_t i = 0; i < SY_MAX_DIMS; ++i) {
        const auto to = static_cast<size_t>(axes[i]);
        shape.ne[to] = t->shape().ne[i];
        strides[to] = t->strides()[i];
    }
    return add_view(t, t->name() + " (permuted)", shape, strides, 0);
}

Tensor* Graph::transpose(Tensor* t) {
    check_mine("transpose", {t});
    Tensor* v = permute(t, {1, 0, 2, 3});
    v->set_name(t->name() + " (transposed)");
    return v;
}

Tensor* Graph::add_node(sy_op op, std::vector<Tensor*> src, sy_dtype type, const Shape& shape) {
    Tensor* dst = add_tensor(std::string(sdk::op_name(op)) + "#" + std::to_string(tensors_.size()),
                             type, shape, packed_strides(type, shape), TensorKind::intermediate);
    dst->producer_ = static_cast<int32_t>(nodes_.size());
    Node node;
    node.op = op;
    node.src = std::move(src);
    node.dst = dst;
    nodes_.push_back(std::move(node));
    return dst;
}

void Graph::mark_output(Tensor* t) {
    check_mine("mark_output", {t});
    signatures_.clear();
    if (!t->output_) {
        t->output_ = true;
        outputs_.push_back(t);
    }
}

std::vector<int32_t> Graph::all_nodes() const {
    std::vector<int32_t> order(nodes_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    return order;
}

void Graph::move_view(Tensor* v, int64_t bytes) {
    check_mine("move_view", {v});
    if (!v->is_view()) fail_op("move_view", {v}, v->describe() + " is not a view");
    const int64_t offset = static_cast<int64_t>(v->offset_) + bytes;
    const sy_tensor d = v->descriptor();
    const uint64_t base_bytes = static_cast<uint64_t>(v->base()->bytes());
    if (offset < 0 || static_cast<uint64_t>(offset) + uint64_t(sdk::nbytes(d)) > base_bytes)
        fail_op("move_view", {v, v->base()},
                "moved by " + std::to_string(bytes) + " bytes, view " + v->shape().str() +
                    " would span bytes " + std::to_string(offset) + " .. " +
                    std::to_string(offset + sdk::nbytes(d)) + " of a base of " +
                    std::to_string(base_bytes));
    v->offset_ = static_cast<uint64_t>(offset);
}

void Graph::shift_iparam(int32_t node, size_t index, int32_t delta) {
    if (node < 0 || static_cast<size_t>(node) >= nodes_.size() || index >= SY_MAX_PARAMS)
        throw Error("shift_iparam: no parameter " + std::to_string(index) + " of node " +
                    std::to_string(node) + " in a graph of " + std::to_string(nodes_.size()) +
                    " nodes");
    nodes_[static_cast<size_t>(node)].iparams[index] += delta;
}

std::string Graph::shape_signature(std::span<const int32_t> order) const {
    return signature(order, true);
}

std::string Graph::structure_signature(std::span<const int32_t> order) const {
    return signature(order, false);
}

std::string Graph::signature(std::span<const int32_t> order, bool shapes) const {
    for (const Signature& s : signatures_)
        if (s.shapes == shapes && std::ranges::equal(s.order, order)) return s.text;
    if (signatures_.size() >= 4) signatures_.erase(signatures_.begin());
    signatures_.push_back({{order.begin(), order.end()}, shapes, compute_signature(order, shapes)});
    return signatures_.back().text;
}

std::string Graph::compute_signature(std::span<const int32_t> order, bool shapes) const {
    std::string sig;
    sig.reserve(tensors_.size() * 80 + order.size() * 48);
    append_raw(sig, tensors_.size());
    for (const auto& t : tensors_) {
        append_raw(sig, static_cast<int32_t>(t->kind()));
        append_raw(sig, t->base()->id());
        append_raw(sig, t->is_output());
        // A view takes its memory from its root: its shape and offset are bound per run, so the
        // cache views of successive decode steps (one token longer each) leave the key alone.
        if (t->base() != t.get()) continue;
        append_raw(sig, static_cast<int32_t>(t->type()));
        if (!shapes) continue;
        append_raw(sig, t->shape().ne);
        append_raw(sig, t->strides());
    }
    append_raw(sig, order.size());
    for (int32_t i : order) {
        if (i < 0 || static_cast<size_t>(i) >= nodes_.size()) {
            throw Error("node index " + std::to_string(i) + " is outside the graph (" +
                        std::to_string(nodes_.size()) + " nodes)");
        }
        const Node& n = nodes_[static_cast<size_t>(i)];
        append_raw(sig, i);
        append_raw(sig, static_cast<int32_t>(n.op));
        append_raw(sig, n.named_op.size());
        sig += n.named_op;
        append_raw(sig, n.named_op_version);
        append_raw(sig, n.src.size());
        for (const Tensor* s : n.src) append_raw(sig, s ? s->id() : -1);
        append_raw(sig, n.dst->id());
    }
    return sig;
}

}  // namespace sy
