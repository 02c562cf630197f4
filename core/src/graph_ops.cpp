// The op methods of the graph builder: each checks its sources against the op's contract in
// ops.h and infers the result's type and shape.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "op_error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/sdk.hpp"

namespace sy {

namespace {

std::string type_name(sy_dtype type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "type " + std::to_string(static_cast<int>(type));
}

bool is_float(const Tensor* t) {
    return sdk::is_float_type(t->type());
}

// Types a weight operand (mul_mat, mul_mat_id, get_rows) may have. ops.h lists float types for
// this ABI minor and announces quantized ones; which a backend accepts is its capability table's
// business, so the builder checks only that rows are whole blocks.
bool is_weight_type(sy_dtype type) {
    const sy_dtype_traits tr = sy_dtype_info(type);
    return sdk::is_float_type(type) || (tr.name != nullptr && tr.block_size > 1);
}

std::string dim(const Tensor* t, int d) {
    return std::to_string(t->ne(d));
}

// CPY converts between float types, and between f32 and a block type (ops.h).
bool cpy_converts(sy_dtype from, sy_dtype to) {
    const auto blocks = [](sy_dtype t) { return sy_dtype_info(t).block_size > 1; };
    if (sdk::is_float_type(from) && sdk::is_float_type(to)) return true;
    return (blocks(from) && to == SY_TYPE_F32) || (from == SY_TYPE_F32 && blocks(to));
}

}  // namespace

Tensor* Graph::unary(sy_op op, Tensor* a) {
    const char* name = sdk::op_name(op);
    check_mine(name, {a});
    if (!is_float(a)) fail_op(name, {a}, "needs a float type (f32, f16, bf16)");
    Tensor* dst = add_node(op, {a}, a->type(), a->shape());
    return dst;
}

Tensor* Graph::elementwise(sy_op op, Tensor* a, Tensor* b) {
    const char* name = sdk::op_name(op);
    check_mine(name, {a, b});
    if (!is_float(a) || !is_float(b)) fail_op(name, {a, b}, "needs float types (f32, f16, bf16)");
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        if (a->ne(d) % b->ne(d) != 0) {
            fail_op(name, {a, b},
                    "the second source must broadcast over the first, but ne" + std::to_string(d) +
                        " = " + dim(b, d) + " does not divide " + dim(a, d));
        }
    }
    return add_node(op, {a, b}, a->type(), a->shape());
}

Tensor* Graph::add(Tensor* a, Tensor* b) {
    return elementwise(SY_OP_ADD, a, b);
}
Tensor* Graph::mul(Tensor* a, Tensor* b) {
    return elementwise(SY_OP_MUL, a, b);
}

Tensor* Graph::div(Tensor* a, Tensor* b) {
    return elementwise(SY_OP_DIV, a, b);
}
Tensor* Graph::silu(Tensor* a) {
    return unary(SY_OP_SILU, a);
}
Tensor* Graph::gelu(Tensor* a) {
    return unary(SY_OP_GELU, a);
}
Tensor* Graph::sigmoid(Tensor* a) {
    return unary(SY_OP_SIGMOID, a);
}

Tensor* Graph::scale(Tensor* a, float scale, float bias) {
    Tensor* dst = unary(SY_OP_SCALE, a);
    nodes_.back().fparams[0] = scale;
    nodes_.back().fparams[1] = bias;
    return dst;
}

Tensor* Graph::rms_norm(Tensor* a, float eps) {
    check_mine("rms_norm", {a});
    if (!(eps > 0.0f)) fail_op("rms_norm", {a}, "eps must be > 0, got " + std::to_string(eps));
    Tensor* dst = unary(SY_OP_RMS_NORM, a);
    nodes_.back().fparams[0] = eps;
    return dst;
}

Tensor* Graph::mul_mat(Tensor* a, Tensor* b) {
    check_mine("mul_mat", {a, b});
    if (!is_weight_type(a->type())) {
        fail_op("mul_mat", {a, b}, "src0 must be a float or block-quantized type");
    }
    if (b->type() != SY_TYPE_F32) fail_op("mul_mat", {a, b}, "src1 must be f32");
    if (a->nb(0) != sy_dtype_info(a->type()).type_size) {
        fail_op("mul_mat", {a, b}, "rows of src0 must be contiguous (nb0 = element size)");
    }
    if (a->ne(0) != b->ne(0)) {
        fail_op("mul_mat", {a, b}, "ne0 (K) must agree: " + dim(a, 0) + " vs " + dim(b, 0));
    }
    if (b->ne(2) % a->ne(2) != 0 || b->ne(3) % a->ne(3) != 0) {
        fail_op("mul_mat", {a, b},
                "src0's batch dims {" + dim(a, 2) + ", " + dim(a, 3) + "} must divide src1's {" +
                    dim(b, 2) + ", " + dim(b, 3) + "}");
    }
    return add_node(SY_OP_MUL_MAT, {a, b}, SY_TYPE_F32, {a->ne(1), b->ne(1), b->ne(2), b->ne(3)});
}

Tensor* Graph::mul_mat_id(Tensor* w, Tensor* x, Tensor* ids) {
    check_mine("mul_mat_id", {w, x, ids});
    if (!is_weight_type(w->type())) {
        fail_op("mul_mat_id", {w, x, ids}, "src0 must be a float or block-quantized type");
    }
    if (x->type() != SY_TYPE_F32) fail_op("mul_mat_id", {w, x, ids}, "src1 must be f32");
    if (ids->type() != SY_TYPE_I32) fail_op("mul_mat_id", {w, x, ids}, "ids must be i32");
    if (w->ne(3) != 1 || x->ne(3) != 1 || ids->ne(2) != 1 || ids->ne(3) != 1) {
        fail_op("mul_mat_id", {w, x, ids}, "expects w {K, N, E}, x {K, U1, T}, ids {U, T}");
    }
    if (w->ne(0) != x->ne(0)) {
        fail_op("mul_mat_id", {w, x, ids}, "ne0 (K) must agree: " + dim(w, 0) + " vs " + dim(x, 0));
    }
    if (ids->ne(1) != x->ne(2)) {
        fail_op("mul_mat_id", {w, x, ids},
                "ids.ne1 (T) " + dim(ids, 1) + " must equal x.ne2 " + dim(x, 2));
    }
    if (x->ne(1) != 1 && x->ne(1) != ids->ne(0)) {
        fail_op("mul_mat_id", {w, x, ids},
                "x.ne1 must be 1 or ids.ne0 (U) " + dim(ids, 0) + ", got " + dim(x, 1));
    }
    return add_node(SY_OP_MUL_MAT_ID, {w, x, ids}, SY_TYPE_F32, {w->ne(1), ids->ne(0), ids->ne(1)});
}

Tensor* Graph::get_rows(Tensor* a, Tensor* ids, sy_dtype type) {
    check_mine("get_rows", {a, ids});
    if (ids->type() != SY_TYPE_I32) fail_op("get_rows", {a, ids}, "ids must be i32");
    if (ids->ne(1) != a->ne(2) || ids->ne(2) != a->ne(3) || ids->ne(3) != 1) {
        fail_op(
            "get_rows", {a, ids},
            "ids {n, B2, B3} must match src0's batch dims {" + dim(a, 2) + ", " + dim(a, 3) + "}");
    }
    if (type != a->type() && !(type == SY_TYPE_F32 && is_weight_type(a->type()))) {
        fail_op("get_rows", {a, ids},
                "result type " + type_name(type) + " must be f32 or the source's type");
    }
    return add_node(SY_OP_GET_ROWS, {a, ids}, type, {a->ne(0), ids->ne(0), a->ne(2), a->ne(3)});
}

Tensor* Graph::rope(Tensor* x, Tensor* positions, const RopeParams& p) {
    check_mine("rope", {x, positions});
    if (!is_float(x)) fail_op("rope", {x, positions}, "needs a float type (f32, f16, bf16)");
    if (x->ne(3) != 1) fail_op("rope", {x, positions}, "expects x {D, H, T}");
    if (positions->type() != SY_TYPE_I32) fail_op("rope", {x, positions}, "positions must be i32");
    if (positions->ne(0) != x->ne(2) || positions->shape().elements() != positions->ne(0)) {
        fail_op("rope", {x, positions}, "positions must be {T} with T = x.ne2 = " + dim(x, 2));
    }
    if (p.n_dims <= 0 || p.n_dims % 2 != 0 || p.n_dims > x->ne(0)) {
        fail_op(
            "rope", {x, positions},
            "n_dims " + std::to_string(p.n_dims) + " must be even and in (0, " + dim(x, 0) + "]");
    }
    if (p.mode != SY_ROPE_NORMAL && p.mode != SY_ROPE_NEOX) {
        fail_op("rope", {x, positions},
                "mode must be 0 (normal) or 2 (NeoX), got " + std::to_string(p.mode));
    }
    Tensor* dst = add_node(SY_OP_ROPE, {x, positions}, x->type(), x->shape());
    Node& n = nodes_.back();
    n.iparams[0] = p.n_dims;
    n.iparams[1] = p.mode;
    n.iparams[2] = p.n_ctx_orig;
    n.fparams[0] = p.freq_base;
    n.fparams[1] = p.freq_scale;
    n.fparams[2] = p.ext_factor;
    n.fparams[3] = p.attn_factor;
    n.fparams[4] = p.beta_fast;
    n.fparams[5] = p.beta_slow;
    return dst;
}

Tensor* Graph::softmax(Tensor* x, const SoftmaxParams& p) {
    Tensor* mask = p.mask;
    if (mask)
        check_mine("softmax", {x, mask});
    else
        check_mine("softmax", {x});
    if (!is_float(x)) fail_op("softmax", {x}, "needs a float type (f32, f16, bf16)");
    std::vector<Tensor*> src{x};
    if (mask) {
        if (mask->type() != SY_TYPE_F32 && mask->type() != SY_TYPE_F16) {
            fail_op("softmax", {x, mask}, "the mask must be f32 or f16");
        }
        if (mask->ne(0) != x->ne(0)) {
            fail_op("softmax", {x, mask},
                    "mask.ne0 " + dim(mask, 0) + " must equal x.ne0 " + dim(x, 0));
        }
        src.push_back(mask);
    }
    Tensor* dst = add_node(SY_OP_SOFTMAX, std::move(src), x->type(), x->shape());
    Node& n = nodes_.back();
    n.fparams[0] = p.scale;
    n.iparams[0] = p.causal ? 1 : 0;
    n.iparams[1] = p.causal_offset;
    return dst;
}

Tensor* Graph::argsort(Tensor* a, bool descending) {
    check_mine("argsort", {a});
    if (a->type() != SY_TYPE_F32) fail_op("argsort", {a}, "needs f32");
    Tensor* dst = add_node(SY_OP_ARGSORT, {a}, SY_TYPE_I32, a->shape());
    nodes_.back().iparams[0] = descending ? 1 : 0;
    return dst;
}

Tensor* Graph::top_k(Tensor* a, int64_t k) {
    check_mine("top_k", {a});
    if (a->type() != SY_TYPE_F32) fail_op("top_k", {a}, "needs f32");
    if (k < 1 || k > a->ne(0)) {
        fail_op("top_k", {a}, "k = " + std::to_string(k) + " must be in [1, " + dim(a, 0) + "]");
    }
    return add_node(SY_OP_TOP_K, {a}, SY_TYPE_I32, {k, a->ne(1), a->ne(2), a->ne(3)});
}

Tensor* Graph::drop_ids(Tensor* ids, Tensor* values, int64_t kept, float threshold) {
    check_mine("drop_ids", {ids, values});
    if (ids->type() != SY_TYPE_I32 || values->type() != SY_TYPE_F32)
        fail_op("drop_ids", {ids, values}, "needs i32 ids and f32 values");
    if (ids->shape() != values->shape())
        fail_op("drop_ids", {ids, values}, "ids and values differ in shape");
    if (kept < 1 || kept > INT32_MAX)
        fail_op("drop_ids", {ids, values},
                "kept = " + std::to_string(kept) + " must be in [1, INT32_MAX]");
    if (!(threshold >= 0.0f) || !std::isfinite(threshold))
        fail_op("drop_ids", {ids, values},
                "threshold " + std::to_string(threshold) + " must be finite and >= 0");
    Tensor* dst = add_node(SY_OP_DROP_IDS, {ids, values}, SY_TYPE_I32, ids->shape());
    nodes_.back().iparams[0] = static_cast<int32_t>(kept);
    nodes_.back().fparams[0] = threshold;
    return dst;
}

Tensor* Graph::sum_rows(Tensor* a) {
    check_mine("sum_rows", {a});
    if (!is_float(a)) fail_op("sum_rows", {a}, "needs a float type (f32, f16, bf16)");
    return add_node(SY_OP_SUM_ROWS, {a}, a->type(), {1, a->ne(1), a->ne(2), a->ne(3)});
}

Tensor* Graph::concat(Tensor* a, Tensor* b, int d) {
    check_mine("concat", {a, b});
    if (d < 0 || d >= SY_MAX_DIMS) {
        fail_op("concat", {a, b}, "dimension " + std::to_string(d) + " is not in [0, 3]");
    }
    if (a->type() != b->type()) fail_op("concat", {a, b}, "sources must have the same type");
    if (sy_dtype_info(a->type()).block_size != 1) {
        fail_op("concat", {a, b}, "block-quantized types cannot be concatenated");
    }
    Shape shape = a->shape();
    for (int i = 0; i < SY_MAX_DIMS; ++i) {
        if (i != d && a->ne(i) != b->ne(i)) {
            fail_op("concat", {a, b},
                    "sources must agree on ne" + std::to_string(i) + ": " + dim(a, i) + " vs " +
                        dim(b, i));
        }
    }
    shape[d] = a->ne(d) + b->ne(d);
    Tensor* dst = add_node(SY_OP_CONCAT, {a, b}, a->type(), shape);
    nodes_.back().iparams[0] = d;
    return dst;
}

Tensor* Graph::cpy(Tensor* a, sy_dtype type) {
    check_mine("cpy", {a});
    if (!cpy_converts(a->type(), type)) {
        fail_op("cpy", {a},
                "converts between float types, or between f32 and a block type; asked for " +
                    type_name(type));
    }
    if (a->ne(0) % sy_dtype_info(type).block_size != 0)
        fail_op("cpy", {a}, "ne0 is not a whole number of " + type_name(type) + " blocks");
    return add_node(SY_OP_CPY, {a}, type, a->shape());
}

Tensor* Graph::cpy(Tensor* a, Tensor* dst) {
    check_mine("cpy", {a, dst});
    if (!cpy_converts(a->type(), dst->type()))
        fail_op("cpy", {a, dst}, "converts between float types, or between f32 and a block type");
    if (a->shape() != dst->shape()) fail_op("cpy", {a, dst}, "shapes must be equal");
    if (a->base() == dst->base()) fail_op("cpy", {a, dst}, "source and destination share memory");
    Node node;
    node.op = SY_OP_CPY;
    node.src = {a};
    node.dst = dst;
    nodes_.push_back(std::move(node));
    return dst;
}

Tensor* Graph::cont(Tensor* a) {
    check_mine("cont", {a});
    return add_node(SY_OP_CONT, {a}, a->type(), a->shape());
}

Tensor* Graph::named(std::string name, uint32_t schema_version, std::span<Tensor* const> srcs,
                     sy_dtype type, const Shape& shape, const NamedOpParams& params) {
    const std::string label = name + " v" + std::to_string(schema_version);
    if (name.empty()) throw Error("named op: the name is empty");
    if (srcs.size() > SY_MAX_SRC) {
        throw Error(label + ": at most " + std::to_string(SY_MAX_SRC) + " sources, got " +
                    std::to_string(srcs.size()));
    }
    for (const Tensor* s : srcs) {
        if (!owns(s)) {
            throw Error(label + ": source " + (s ? s->describe() : std::string("null")) +
                        " is not a tensor of this graph");
        }
    }
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
    Tensor* dst =
        add_node(SY_OP_NAMED, std::vector<Tensor*>(srcs.begin(), srcs.end()), type, shape);
    dst->set_name(name + "#" + std::to_string(dst->id()));
    Node& n = nodes_.back();
    n.named_op = std::move(name);
    n.named_op_version = schema_version;
    std::copy(params.iparams.begin(), params.iparams.end(), n.iparams.begin());
    std::copy(params.fparams.begin(), params.fparams.end(), n.fparams.begin());
    return dst;
}

}  // namespace sy
