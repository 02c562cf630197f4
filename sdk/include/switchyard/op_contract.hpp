// The op contract of ops.h and named_ops.h as one function: the type and shape of the result
// that a node's sources and parameters make, or what about them is wrong. Written once and used
// by everyone who checks a node: the graph builder (core), validate_node (sdk/validation, which
// every plugin's supports() and compute() run) and the reference (sdk/reference).
// Header-only, C++ side of the SDK.
//
// What this checks: the sources an op needs, their element types and shapes, the parameters,
// and the layout rules of ops.h (rows of a product's weights contiguous; the blocks of a
// block-quantized row adjacent). What it leaves to its callers: tensor descriptors (sizes,
// strides and buffers, validation.hpp), index values read from tensors (known only with the
// data), and which types a backend implements (its capability rows).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "switchyard/dtype.h"
#include "switchyard/named_ops.h"
#include "switchyard/ops.h"
#include "switchyard/plugin.h"
#include "switchyard/sdk.hpp"

namespace sy::sdk {

// The result of op_result: dst's type and shape, or `error` (what is wrong, without the op's
// name: each caller labels it its own way).
struct OpResult {
    int32_t type = SY_TYPE_NONE;
    int64_t ne[SY_MAX_DIMS] = {1, 1, 1, 1};
    std::string error;
    // False for a named op this header has no rules for (a backend's own): its provider checks
    // it, and the result is the caller's dst as given.
    bool known = true;

    bool ok() const { return error.empty(); }
};

namespace contract_detail {

inline std::string shape_text(const int64_t* ne) {
    return "{" + std::to_string(ne[0]) + ", " + std::to_string(ne[1]) + ", " +
           std::to_string(ne[2]) + ", " + std::to_string(ne[3]) + "}";
}

inline std::string type_text(int32_t type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "type " + std::to_string(type);
}

inline bool is_float(int32_t type) {
    return type == SY_TYPE_F32 || type == SY_TYPE_F16 || type == SY_TYPE_BF16;
}

inline bool is_block(int32_t type) {
    const sy_dtype_traits tr = sy_dtype_info(type);
    return tr.name != nullptr && tr.block_size > 1;
}

// The operand types of a weight (mul_mat, mul_mat_id, the cache and K/V of attention): float
// types and block-quantized ones (which a backend accepts is its capability rows' business).
inline bool is_weight(int32_t type) {
    return is_float(type) || is_block(type);
}

// Builds one result; each check returns false after recording the first thing wrong.
class Rules {
  public:
    explicit Rules(const sy_node& node) : node_(node) {}

    OpResult result;

    bool fail(const std::string& what) {
        result.error = what;
        return false;
    }

    // Source i, present: the op needs it.
    const sy_tensor* need(int i, const char* role) {
        const sy_tensor* t = i < SY_MAX_SRC ? node_.src[i] : nullptr;
        if (t == nullptr) fail(std::string("missing ") + role);
        return t;
    }

    bool type_is(const sy_tensor& t, int32_t type, const char* role) {
        if (t.type == type) return true;
        return fail(std::string(role) + " must be " + type_text(type) + ", got " +
                    type_text(t.type));
    }
    bool float_type(const sy_tensor& t, const char* role) {
        if (is_float(t.type)) return true;
        return fail(std::string(role) + " needs a float type (f32, f16, bf16), got " +
                    type_text(t.type));
    }
    // A product's weights: float or whole blocks side by side, rows contiguous.
    bool weight_rows(const sy_tensor& t, const char* role) {
        if (!is_weight(t.type))
            return fail(std::string(role) + " must be a float or block-quantized type, got " +
                        type_text(t.type));
        if (!whole_blocks(t, role)) return false;
        if (t.nb[0] != sy_dtype_info(t.type).type_size)
            return fail("rows of " + std::string(role) + " must be contiguous (nb0 = " +
                        std::to_string(sy_dtype_info(t.type).type_size) + ", element size), got " +
                        std::to_string(t.nb[0]));
        return true;
    }
    // K, V or the latent cache of attention: float or block-quantized rows of whole blocks.
    bool kv_operand(const sy_tensor& t, const char* role) {
        if (!is_weight(t.type))
            return fail(std::string(role) + " must be a float or block-quantized type, got " +
                        type_text(t.type));
        return whole_blocks(t, role);
    }
    // A block-quantized row is whole blocks, side by side (nb0 = the block's bytes).
    bool whole_blocks(const sy_tensor& t, const char* role) {
        const sy_dtype_traits tr = sy_dtype_info(t.type);
        if (tr.block_size <= 1) return true;
        if (t.ne[0] % tr.block_size != 0)
            return fail(std::string(role) + " ne0 = " + std::to_string(t.ne[0]) +
                        " is not a whole number of " + tr.name + " blocks of " +
                        std::to_string(tr.block_size));
        if (t.nb[0] != tr.type_size)
            return fail(
                std::string(role) + " (" + tr.name + ") has nb0 = " + std::to_string(t.nb[0]) +
                "; the blocks of a row must be adjacent (nb0 = " + std::to_string(tr.type_size) +
                ")");
        return true;
    }
    bool shape_is(const sy_tensor& t, const char* role, int64_t n0, int64_t n1, int64_t n2,
                  int64_t n3, const char* letters) {
        if (t.ne[0] == n0 && t.ne[1] == n1 && t.ne[2] == n2 && t.ne[3] == n3) return true;
        const int64_t want[4] = {n0, n1, n2, n3};
        return fail(std::string(role) + " " + shape_text(t.ne) + ", expected " + letters + " = " +
                    shape_text(want));
    }
    // The result type the caller chose (dst's), SY_TYPE_NONE without a dst.
    int32_t chosen_type() const { return node_.dst ? node_.dst->type : SY_TYPE_NONE; }

    bool set(int32_t type, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
        result.type = type;
        result.ne[0] = n0, result.ne[1] = n1, result.ne[2] = n2, result.ne[3] = n3;
        return true;
    }
    bool set(int32_t type, const int64_t* ne) { return set(type, ne[0], ne[1], ne[2], ne[3]); }

  private:
    const sy_node& node_;
};

// Elementwise and row ops whose result is a float tensor of src0's shape, in the chosen float
// type (the builder chooses src0's).
inline bool float_like_src0(Rules& r) {
    const sy_tensor* a = r.need(0, "src0");
    if (!a || !r.float_type(*a, "src0")) return false;
    const int32_t type = r.chosen_type() == SY_TYPE_NONE ? a->type : r.chosen_type();
    if (!is_float(type))
        return r.fail("the result needs a float type (f32, f16, bf16), got " + type_text(type));
    return r.set(type, a->ne);
}

inline bool binary(Rules& r, const sy_node& n) {
    const sy_tensor* b = r.need(1, "src1");
    if (!b || !float_like_src0(r) || !r.float_type(*b, "src1")) return false;
    const sy_tensor& a = *n.src[0];
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        const bool divides = b->ne[d] == 0 ? a.ne[d] == 0 : a.ne[d] % b->ne[d] == 0;
        if (!divides)
            return r.fail("src1 must broadcast over src0, but ne" + std::to_string(d) + " = " +
                          std::to_string(b->ne[d]) + " does not divide " + std::to_string(a.ne[d]));
    }
    return true;
}

inline bool rms_norm(Rules& r, const sy_node& n) {
    if (!float_like_src0(r)) return false;
    const float eps = n.fparams[0];
    if (!(eps > 0.0f) || !std::isfinite(eps))
        return r.fail("eps must be > 0 and finite, got " + std::to_string(eps));
    return true;
}

inline bool mul_mat(Rules& r) {
    const sy_tensor* a = r.need(0, "src0 (A)");
    const sy_tensor* b = a ? r.need(1, "src1 (B)") : nullptr;
    if (!b || !r.weight_rows(*a, "src0 (A)") || !r.type_is(*b, SY_TYPE_F32, "src1 (B)"))
        return false;
    if (a->ne[0] != b->ne[0])
        return r.fail("ne0 (K) must agree: " + std::to_string(a->ne[0]) + " vs " +
                      std::to_string(b->ne[0]));
    for (int d = 2; d < SY_MAX_DIMS; ++d)
        if (a->ne[d] < 1 || b->ne[d] % a->ne[d] != 0)
            return r.fail("src0's batch dims {" + std::to_string(a->ne[2]) + ", " +
                          std::to_string(a->ne[3]) + "} must divide src1's {" +
                          std::to_string(b->ne[2]) + ", " + std::to_string(b->ne[3]) + "}");
    return r.set(SY_TYPE_F32, a->ne[1], b->ne[1], b->ne[2], b->ne[3]);
}

// W {K, N, E} (and a second set of the same type and shape for the fused op), X {K, U1, T},
// ids {U, T} -> {N, U, T}, U1 = 1 or U.
inline bool experts(Rules& r, int n_weights) {
    static const char* const kWeights[2][2] = {{"src0 (experts)", nullptr},
                                               {"src0 (up experts)", "src1 (gate experts)"}};
    const char* const* roles = kWeights[n_weights - 1];
    const char* x_role = n_weights == 1 ? "src1 (X)" : "src2 (X)";
    const char* ids_role = n_weights == 1 ? "src2 (ids)" : "src3 (ids)";
    const sy_tensor* w = r.need(0, roles[0]);
    const sy_tensor* w2 = w && n_weights == 2 ? r.need(1, roles[1]) : w;
    const sy_tensor* x = w2 ? r.need(n_weights, x_role) : nullptr;
    const sy_tensor* ids = x ? r.need(n_weights + 1, ids_role) : nullptr;
    if (!ids || !r.weight_rows(*w, roles[0])) return false;
    if (n_weights == 2) {
        if (!r.weight_rows(*w2, roles[1])) return false;
        if (w2->type != w->type)
            return r.fail(std::string(roles[1]) + " is " + type_text(w2->type) + ", " + roles[0] +
                          " " + type_text(w->type) + ": they must have one type");
    }
    if (!r.type_is(*x, SY_TYPE_F32, x_role) || !r.type_is(*ids, SY_TYPE_I32, ids_role))
        return false;
    const int64_t K = w->ne[0], N = w->ne[1], E = w->ne[2], U = ids->ne[0], T = ids->ne[1];
    if (!r.shape_is(*w, roles[0], K, N, E, 1, "{K, N, E, 1}")) return false;
    if (n_weights == 2 && !r.shape_is(*w2, roles[1], K, N, E, 1, "src0's")) return false;
    if (!r.shape_is(*ids, ids_role, U, T, 1, 1, "{U, T, 1, 1}")) return false;
    if (x->ne[0] != K)
        return r.fail("ne0 (K) must agree: " + std::to_string(K) + " vs " +
                      std::to_string(x->ne[0]));
    if (x->ne[2] != T || x->ne[3] != 1)
        return r.fail(std::string(x_role) + " " + shape_text(x->ne) +
                      " must be {K, U1, T, 1} with" + " T = ids.ne1 = " + std::to_string(T));
    if (x->ne[1] != 1 && x->ne[1] != U)
        return r.fail(std::string(x_role) + " ne1 must be 1 or ids.ne0 (U) " + std::to_string(U) +
                      ", got " + std::to_string(x->ne[1]));
    return r.set(SY_TYPE_F32, N, U, T, 1);
}

inline bool get_rows(Rules& r) {
    const sy_tensor* a = r.need(0, "src0");
    const sy_tensor* ids = a ? r.need(1, "src1 (ids)") : nullptr;
    if (!ids || !r.type_is(*ids, SY_TYPE_I32, "src1 (ids)")) return false;
    if (!r.whole_blocks(*a, "src0")) return false;
    if (ids->ne[1] != a->ne[2] || ids->ne[2] != a->ne[3] || ids->ne[3] != 1)
        return r.fail("src1 (ids) " + shape_text(ids->ne) + " must be {n, B2, B3, 1} with src0's" +
                      " batch dims {" + std::to_string(a->ne[2]) + ", " + std::to_string(a->ne[3]) +
                      "}");
    const int32_t type = r.chosen_type() == SY_TYPE_NONE ? a->type : r.chosen_type();
    if (type != a->type && !(type == SY_TYPE_F32 && is_weight(a->type)))
        return r.fail("result type " + type_text(type) + " must be f32 or the source's type " +
                      type_text(a->type));
    return r.set(type, a->ne[0], ids->ne[0], a->ne[2], a->ne[3]);
}

inline bool rope(Rules& r, const sy_node& n) {
    const sy_tensor* pos = r.need(1, "src1 (positions)");
    if (!pos || !float_like_src0(r)) return false;
    const sy_tensor& x = *n.src[0];
    if (x.ne[3] != 1) return r.fail("src0 " + shape_text(x.ne) + " must be {D, H, T, 1}");
    if (!r.type_is(*pos, SY_TYPE_I32, "src1 (positions)")) return false;
    if (!r.shape_is(*pos, "src1 (positions)", x.ne[2], 1, 1, 1, "{T}")) return false;
    const int32_t n_dims = n.iparams[0], mode = n.iparams[1];
    if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > x.ne[0])
        return r.fail("n_dims " + std::to_string(n_dims) +
                      " (iparams[0]) must be even and in (0, " + std::to_string(x.ne[0]) + "]");
    if (mode != SY_ROPE_NORMAL && mode != SY_ROPE_NEOX)
        return r.fail("mode (iparams[1]) must be 0 (normal) or 2 (NeoX), got " +
                      std::to_string(mode));
    // The angles take logarithms of freq_base, 1/freq_scale and (YaRN) n_ctx_orig / beta.
    const float freq_base = n.fparams[0], freq_scale = n.fparams[1], ext_factor = n.fparams[2];
    if (!(freq_base > 0.0f) || !std::isfinite(freq_base) || !(freq_scale > 0.0f) ||
        !std::isfinite(freq_scale))
        return r.fail("freq_base = " + std::to_string(freq_base) + " and freq_scale = " +
                      std::to_string(freq_scale) + " (fparams[0], [1]) must be finite and > 0");
    if (ext_factor != 0.0f && !(n.iparams[2] > 0 && n.fparams[4] > 0.0f && n.fparams[5] > 0.0f))
        return r.fail(
            "YaRN (ext_factor != 0) needs n_ctx_orig (iparams[2]) = " +
            std::to_string(n.iparams[2]) + ", beta_fast = " + std::to_string(n.fparams[4]) +
            " and beta_slow = " + std::to_string(n.fparams[5]) + " (fparams[4], [5]) > 0");
    return true;
}

inline bool softmax(Rules& r, const sy_node& n) {
    if (!float_like_src0(r)) return false;
    const sy_tensor& x = *n.src[0];
    if (const sy_tensor* mask = n.src[1]) {
        if (mask->type != SY_TYPE_F32 && mask->type != SY_TYPE_F16)
            return r.fail("src1 (mask) must be f32 or f16, got " + type_text(mask->type));
        if (mask->ne[0] != x.ne[0])
            return r.fail("mask.ne0 " + std::to_string(mask->ne[0]) + " must equal x.ne0 " +
                          std::to_string(x.ne[0]));
        for (int d = 1; d < SY_MAX_DIMS; ++d)
            if (mask->ne[d] < 1 && x.ne[d] > 0)
                return r.fail("src1 (mask) ne" + std::to_string(d) + " = " +
                              std::to_string(mask->ne[d]) + " cannot be broadcast");
    }
    if (n.iparams[0] != 0 && n.iparams[0] != 1)
        return r.fail("causal (iparams[0]) must be 0 or 1, got " + std::to_string(n.iparams[0]));
    return true;
}

// argsort and top_k: F32 rows in, I32 indices out; k = the chosen dst.ne0 for top_k.
inline bool ranking(Rules& r, const sy_node& n, bool top_k) {
    const sy_tensor* a = r.need(0, "src0");
    if (!a || !r.type_is(*a, SY_TYPE_F32, "src0")) return false;
    if (a->ne[0] > INT32_MAX) return r.fail("rows longer than INT32_MAX cannot be indexed by i32");
    if (!top_k) {
        if (n.iparams[0] != 0 && n.iparams[0] != 1)
            return r.fail("order (iparams[0]) must be 0 (ascending) or 1 (descending), got " +
                          std::to_string(n.iparams[0]));
        return r.set(SY_TYPE_I32, a->ne);
    }
    const int64_t k = n.dst ? n.dst->ne[0] : 0;
    if (k < 1 || k > a->ne[0])
        return r.fail("k = " + std::to_string(k) + " must be in [1, " + std::to_string(a->ne[0]) +
                      "]");
    return r.set(SY_TYPE_I32, k, a->ne[1], a->ne[2], a->ne[3]);
}

inline bool drop_ids(Rules& r, const sy_node& n) {
    const sy_tensor* ids = r.need(0, "src0 (ids)");
    const sy_tensor* values = ids ? r.need(1, "src1 (values)") : nullptr;
    if (!values || !r.type_is(*ids, SY_TYPE_I32, "src0 (ids)") ||
        !r.type_is(*values, SY_TYPE_F32, "src1 (values)") ||
        !r.shape_is(*values, "src1 (values)", ids->ne[0], ids->ne[1], ids->ne[2], ids->ne[3],
                    "src0 (ids)'s shape"))
        return false;
    if (n.iparams[0] < 1)
        return r.fail("kept (iparams[0]) = " + std::to_string(n.iparams[0]) + " must be >= 1");
    if (!(n.fparams[0] >= 0.0f) || !std::isfinite(n.fparams[0]))
        return r.fail("threshold (fparams[0]) = " + std::to_string(n.fparams[0]) +
                      " must be finite and >= 0");
    return r.set(SY_TYPE_I32, ids->ne);
}

inline bool sum_rows(Rules& r) {
    if (!float_like_src0(r)) return false;
    r.result.ne[0] = 1;
    return true;
}

inline bool concat(Rules& r, const sy_node& n) {
    const sy_tensor* a = r.need(0, "src0");
    const sy_tensor* b = a ? r.need(1, "src1") : nullptr;
    if (!b) return false;
    const int32_t dim = n.iparams[0];
    if (dim < 0 || dim >= SY_MAX_DIMS)
        return r.fail("dimension (iparams[0]) = " + std::to_string(dim) + " is not in [0, 3]");
    if (a->type != b->type)
        return r.fail("sources must have one type, got " + type_text(a->type) + " and " +
                      type_text(b->type));
    if (sy_dtype_info(a->type).block_size != 1)
        return r.fail("block-quantized types cannot be concatenated");
    int64_t ne[SY_MAX_DIMS];
    for (int i = 0; i < SY_MAX_DIMS; ++i) {
        if (i != dim && a->ne[i] != b->ne[i])
            return r.fail("sources must agree on ne" + std::to_string(i) + ": " +
                          std::to_string(a->ne[i]) + " vs " + std::to_string(b->ne[i]));
        ne[i] = i == dim ? a->ne[i] + b->ne[i] : a->ne[i];
    }
    return r.set(a->type, ne);
}

// CPY converts between float types, and between f32 and a block type; CONT keeps the type.
inline bool copy(Rules& r, bool cont) {
    const sy_tensor* a = r.need(0, "src0");
    if (!a) return false;
    const int32_t type = r.chosen_type() == SY_TYPE_NONE || cont ? a->type : r.chosen_type();
    if (cont) {
        if (r.chosen_type() != SY_TYPE_NONE && r.chosen_type() != a->type)
            return r.fail("cont keeps the type: dst is " + type_text(r.chosen_type()) + ", src0 " +
                          type_text(a->type));
    } else {
        const bool converts = (is_float(a->type) && is_float(type)) ||
                              (is_block(a->type) && type == SY_TYPE_F32) ||
                              (a->type == SY_TYPE_F32 && is_block(type));
        if (!converts)
            return r.fail("converts between float types, or between f32 and a block type; " +
                          type_text(a->type) + " -> " + type_text(type) + " is neither");
        if (is_block(type) && a->ne[0] % sy_dtype_info(type).block_size != 0)
            return r.fail("ne0 = " + std::to_string(a->ne[0]) + " is not a whole number of " +
                          type_text(type) + " blocks");
    }
    if (!r.whole_blocks(*a, "src0")) return false;
    return r.set(type, a->ne);
}

// attn.flash v1 (latent false) and attn.mla v1: Q {D, T, H} F32 against K {D, N, Hk} and
// V {Dv, N, Hk}, or against the latent cache {D, N} whose last D - R elements are the values.
inline bool attention(Rules& r, const sy_node& n, bool latent) {
    const char* k_role = latent ? "src1 (cache)" : "src1 (K)";
    const sy_tensor* q = r.need(0, "src0 (Q)");
    const sy_tensor* k = q ? r.need(1, k_role) : nullptr;
    const sy_tensor* v = k && !latent ? r.need(2, "src2 (V)") : k;
    if (!v || !r.type_is(*q, SY_TYPE_F32, "src0 (Q)")) return false;
    const int64_t D = q->ne[0], T = q->ne[1], H = q->ne[2];
    if (q->ne[3] != 1) return r.fail("src0 (Q) " + shape_text(q->ne) + " must be {D, T, H, 1}");
    if (!r.kv_operand(*k, k_role) || (!latent && !r.kv_operand(*v, "src2 (V)"))) return false;
    if (n.iparams[0] != 0 && n.iparams[0] != 1)
        return r.fail("causal (iparams[0]) must be 0 or 1, got " + std::to_string(n.iparams[0]));
    if (n.iparams[1] < 0)
        return r.fail("the causal offset (iparams[1]) is negative: " +
                      std::to_string(n.iparams[1]));
    if (!std::isfinite(n.fparams[0])) return r.fail("the scale (fparams[0]) is not finite");
    if (latent) {
        const int64_t R = n.iparams[2];
        if (R < 0 || R >= D)
            return r.fail("the rope width (iparams[2]) = " + std::to_string(R) +
                          " must lie in [0, " + std::to_string(D) + ")");
        const int64_t block = sy_dtype_info(k->type).block_size;
        if (block > 1 && R % block != 0)
            return r.fail("the rope width (iparams[2]) = " + std::to_string(R) +
                          " must be whole blocks of " + std::to_string(block) + " (src1 is " +
                          type_text(k->type) + ")");
        if (!r.shape_is(*k, k_role, D, k->ne[1], 1, 1, "{D, N, 1, 1}")) return false;
        return r.set(SY_TYPE_F32, D - R, T, H, 1);
    }
    const int64_t N = k->ne[1], Hk = k->ne[2];
    if (!r.shape_is(*k, k_role, D, N, Hk, 1, "{D, N, Hk, 1}")) return false;
    if (Hk < 1 || H % Hk != 0)
        return r.fail("the query heads (" + std::to_string(H) +
                      ") must be a multiple of the kv heads (" + std::to_string(Hk) + ")");
    if (!r.shape_is(*v, "src2 (V)", v->ne[0], N, Hk, 1, "{Dv, N, Hk, 1}")) return false;
    return r.set(SY_TYPE_F32, v->ne[0], T, H, 1);
}

inline bool named_is(const sy_node& n, const char* name, uint32_t version) {
    return n.named_op != nullptr && std::strcmp(n.named_op, name) == 0 &&
           n.named_op_version == version;
}

inline bool named(Rules& r, const sy_node& n) {
    if (named_is(n, SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION)) {
        if (!experts(r, 2)) return false;
        if (n.iparams[0] != 0 && n.iparams[0] != 1)
            return r.fail("the activation (iparams[0]) must be 0 (silu) or 1 (gelu), got " +
                          std::to_string(n.iparams[0]));
        return true;
    }
    if (named_is(n, SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION))
        return attention(r, n, false);
    if (named_is(n, SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION)) return attention(r, n, true);
    // A backend's own named op: its rules are its provider's.
    r.result.known = false;
    if (n.dst) r.set(n.dst->type, n.dst->ne);
    return true;
}

}  // namespace contract_detail

// The type and shape of the result `node` makes, or what is wrong with its sources and
// parameters. node.dst may be null; where the caller chooses part of the result it is read for
// that only: its type (the conversion of CPY, GET_ROWS's f32 or source type, the float type of
// the elementwise and row ops; src0's when dst is null), and its ne0 for TOP_K (k).
inline OpResult op_result(const sy_node& node) {
    using namespace contract_detail;
    Rules r(node);
    switch (node.op) {
        case SY_OP_ADD:
        case SY_OP_MUL:
        case SY_OP_DIV: binary(r, node); break;
        case SY_OP_SCALE:
        case SY_OP_SILU:
        case SY_OP_GELU:
        case SY_OP_SIGMOID: float_like_src0(r); break;
        case SY_OP_RMS_NORM: rms_norm(r, node); break;
        case SY_OP_MUL_MAT: mul_mat(r); break;
        case SY_OP_MUL_MAT_ID: experts(r, 1); break;
        case SY_OP_GET_ROWS: get_rows(r); break;
        case SY_OP_ROPE: rope(r, node); break;
        case SY_OP_SOFTMAX: softmax(r, node); break;
        case SY_OP_ARGSORT: ranking(r, node, false); break;
        case SY_OP_TOP_K: ranking(r, node, true); break;
        case SY_OP_DROP_IDS: drop_ids(r, node); break;
        case SY_OP_SUM_ROWS: sum_rows(r); break;
        case SY_OP_CONCAT: concat(r, node); break;
        case SY_OP_CPY: copy(r, false); break;
        case SY_OP_CONT: copy(r, true); break;
        case SY_OP_NAMED: named(r, node); break;
        default: r.fail("op id " + std::to_string(node.op) + " is not an op of ops.h"); break;
    }
    return r.result;
}

// The whole contract of a node with its dst: op_result, dst's type and shape equal to the
// result's, and dst's own layout rules (CONT's dst packed; a block-typed GET_ROWS copy keeps
// nb0). The empty string when the node keeps it.
inline std::string check_op(const sy_node& node) {
    using namespace contract_detail;
    if (node.dst == nullptr) return "dst is missing";
    OpResult r = op_result(node);
    if (!r.ok()) return r.error;
    const sy_tensor& d = *node.dst;
    if (d.type != r.type) return "dst is " + type_text(d.type) + ", expected " + type_text(r.type);
    for (int i = 0; i < SY_MAX_DIMS; ++i)
        if (d.ne[i] != r.ne[i])
            return "dst shape " + shape_text(d.ne) + ", expected " + shape_text(r.ne);
    Rules layout(node);
    if (!layout.whole_blocks(d, "dst")) return layout.result.error;
    if (node.op == SY_OP_CONT && !is_contiguous(d)) return "dst must be packed (contiguous)";
    return {};
}

}  // namespace sy::sdk
