#include "switchyard/validation.hpp"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "switchyard/named_ops.h"
#include "switchyard/sdk.hpp"

namespace sy::validation {
namespace {

int64_t element_size(int32_t type) {
    return sy_dtype_info(type).type_size;
}

const char* row_at(const sy_tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<const char*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

bool same_shape(const sy_tensor& a, const sy_tensor& b) {
    return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

std::string shape_string(const sy_tensor& t) {
    return "{" + std::to_string(t.ne[0]) + ", " + std::to_string(t.ne[1]) + ", " +
           std::to_string(t.ne[2]) + ", " + std::to_string(t.ne[3]) + "}";
}

const char* type_name(int32_t type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "unknown type";
}

// Formats "<op> '<dst name>': <what>" as an SY_ERR_INVALID_ARGUMENT status.
class NodeErrors {
  public:
    explicit NodeErrors(const sy_node& node) : node_(node) {}

    sy_status fail(const char* format, ...) const __attribute__((format(printf, 2, 3))) {
        char what[768];
        va_list args;
        va_start(args, format);
        std::vsnprintf(what, sizeof what, format, args);
        va_end(args);
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: %s", label().c_str(), what);
    }

    std::string label() const {
        const char* op = sdk::op_name(node_.op);
        std::string s =
            node_.op == SY_OP_NAMED && node_.named_op
                ? std::string(node_.named_op) + " v" + std::to_string(node_.named_op_version)
            : op ? op
                 : "op " + std::to_string(node_.op);
        if (node_.dst && node_.dst->name && node_.dst->name[0])
            s += std::string(" '") + node_.dst->name + "'";
        return s;
    }

  private:
    const sy_node& node_;
};

std::string role_name(const char* role, const sy_tensor& t) {
    std::string s = role;
    if (t.name && t.name[0]) s += std::string(" '") + t.name + "'";
    return s;
}

bool checked_add(int64_t a, int64_t b, int64_t* out) {
    return !__builtin_add_overflow(a, b, out);
}
bool checked_mul(int64_t a, int64_t b, int64_t* out) {
    return !__builtin_mul_overflow(a, b, out);
}

// Broadcast rule of ops.h: each dimension of `b` equals or divides the matching one of `a`.
bool broadcasts_onto(const sy_tensor& b, const sy_tensor& a) {
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        if (b.ne[d] == 0) {
            if (a.ne[d] != 0) return false;
        } else if (a.ne[d] % b.ne[d] != 0) {
            return false;
        }
    }
    return true;
}

bool dims_are(const sy_tensor& t, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    return t.ne[0] == n0 && t.ne[1] == n1 && t.ne[2] == n2 && t.ne[3] == n3;
}

// Index values (row ids, expert ids) read from an I32 tensor must lie in [0, limit) or be
// SY_ID_NONE (a dropped slot, ops.h).
sy_status check_index_range(const NodeErrors& errors, const sy_tensor& ids, int64_t limit,
                            const char* what) {
    for (int64_t i3 = 0; i3 < ids.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ids.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ids.ne[1]; ++i1) {
                const char* row = row_at(ids, i1, i2, i3);
                for (int64_t i0 = 0; i0 < ids.ne[0]; ++i0) {
                    int32_t v;
                    std::memcpy(&v, row + i0 * ids.nb[0], 4);
                    if ((v < 0 && v != SY_ID_NONE) || v >= limit)
                        return errors.fail("%s [%lld, %lld, %lld, %lld] is %d, outside [0, %lld)",
                                           role_name(what, ids).c_str(), (long long)i0,
                                           (long long)i1, (long long)i2, (long long)i3, v,
                                           (long long)limit);
                }
            }
    return sdk::ok();
}

sy_status check_same_shape(const NodeErrors& errors, const sy_tensor& a, const char* a_role,
                           const sy_tensor& b, const char* b_role) {
    if (same_shape(a, b)) return sdk::ok();
    return errors.fail("%s shape %s differs from %s shape %s", role_name(a_role, a).c_str(),
                       shape_string(a).c_str(), role_name(b_role, b).c_str(),
                       shape_string(b).c_str());
}

sy_status check_elementwise(const NodeErrors& e, const sy_node& n) {
    return check_same_shape(e, *n.src[0], "src0", *n.dst, "dst");
}

// A block-quantized operand's blocks lie side by side: nb0 is one block's bytes.
sy_status check_packed_blocks(const NodeErrors& e, const sy_tensor& t, const char* role) {
    const sy_dtype_traits traits = sy_dtype_info(t.type);
    if (traits.block_size > 1 && t.nb[0] != traits.type_size)
        return e.fail("%s (%s) has nb0 = %lld; the blocks of a row must be adjacent (nb0 = %lld)",
                      role, traits.name, (long long)t.nb[0], (long long)traits.type_size);
    return sdk::ok();
}

// CPY between a float type and a block type: F32 on the float side (the conversions of ops.h).
sy_status check_cpy(const NodeErrors& e, const sy_node& n) {
    if (sy_status s = check_elementwise(e, n); s.code) return s;
    const sy_tensor& a = *n.src[0];
    const sy_tensor& d = *n.dst;
    const bool a_blocks = sy_dtype_info(a.type).block_size > 1,
               d_blocks = sy_dtype_info(d.type).block_size > 1;
    if ((a_blocks || d_blocks) && (a_blocks ? d.type : a.type) != SY_TYPE_F32)
        return e.fail("cpy %s -> %s: block-quantized types convert to and from f32 only",
                      sy_dtype_info(a.type).name, sy_dtype_info(d.type).name);
    if (sy_status s = check_packed_blocks(e, a, "src0"); s.code) return s;
    return check_packed_blocks(e, d, "dst");
}

sy_status check_binary_broadcast(const NodeErrors& e, const sy_node& n) {
    if (sy_status s = check_elementwise(e, n); s.code) return s;
    if (!broadcasts_onto(*n.src[1], *n.dst))
        return e.fail(
            "src1 shape %s does not broadcast onto dst shape %s (each dimension must "
            "divide dst's)",
            shape_string(*n.src[1]).c_str(), shape_string(*n.dst).c_str());
    return sdk::ok();
}

sy_status check_rms_norm(const NodeErrors& e, const sy_node& n) {
    if (sy_status s = check_elementwise(e, n); s.code) return s;
    const float eps = n.fparams[0];
    if (!(eps > 0.0f) || !std::isfinite(eps))
        return e.fail("eps (fparams[0]) is %g; it must be a finite value > 0", double(eps));
    return sdk::ok();
}

sy_status check_weight_rows(const NodeErrors& e, const sy_tensor& w) {
    if (w.nb[0] != element_size(w.type))
        return e.fail("weight rows of src0 must be contiguous (nb0 = %lld, element size %lld)",
                      (long long)w.nb[0], (long long)element_size(w.type));
    return sdk::ok();
}

sy_status check_mul_mat(const NodeErrors& e, const sy_node& n) {
    const sy_tensor& a = *n.src[0];
    const sy_tensor& b = *n.src[1];
    const sy_tensor& d = *n.dst;
    if (a.ne[0] != b.ne[0])
        return e.fail("src0 K = %lld differs from src1 K = %lld", (long long)a.ne[0],
                      (long long)b.ne[0]);
    if (!dims_are(d, a.ne[1], b.ne[1], b.ne[2], b.ne[3]))
        return e.fail("dst shape %s, expected {N, M, B2, B3} = {%lld, %lld, %lld, %lld}",
                      shape_string(d).c_str(), (long long)a.ne[1], (long long)b.ne[1],
                      (long long)b.ne[2], (long long)b.ne[3]);
    for (int dim = 2; dim < 4; ++dim)
        if (a.ne[dim] < 1 || b.ne[dim] % a.ne[dim] != 0)
            return e.fail("src0 ne%d = %lld must divide src1 ne%d = %lld", dim,
                          (long long)a.ne[dim], dim, (long long)b.ne[dim]);
    return check_weight_rows(e, a);
}

sy_status check_mul_mat_id(const NodeErrors& e, const sy_node& n, bool read_indices) {
    const sy_tensor& w = *n.src[0];
    const sy_tensor& x = *n.src[1];
    const sy_tensor& ids = *n.src[2];
    const sy_tensor& d = *n.dst;
    const int64_t K = w.ne[0], N = w.ne[1], E = w.ne[2];
    const int64_t U = ids.ne[0], T = ids.ne[1];
    if (w.ne[3] != 1)
        return e.fail("src0 (experts) shape %s must be {K, N, E, 1}", shape_string(w).c_str());
    if (ids.ne[2] != 1 || ids.ne[3] != 1)
        return e.fail("src2 (ids) shape %s must be {U, T, 1, 1}", shape_string(ids).c_str());
    if (x.ne[0] != K || x.ne[2] != T || x.ne[3] != 1 || (x.ne[1] != 1 && x.ne[1] != U))
        return e.fail("src1 shape %s, expected {K, U or 1, T, 1} = {%lld, %lld or 1, %lld, 1}",
                      shape_string(x).c_str(), (long long)K, (long long)U, (long long)T);
    if (!dims_are(d, N, U, T, 1))
        return e.fail("dst shape %s, expected {N, U, T, 1} = {%lld, %lld, %lld, 1}",
                      shape_string(d).c_str(), (long long)N, (long long)U, (long long)T);
    if (sy_status s = check_weight_rows(e, w); s.code) return s;
    if (read_indices) return check_index_range(e, ids, E, "src2 (expert ids)");
    return sdk::ok();
}

// moe.fused_up_gate v1 (named_ops.h): up and gate {K, N, E} alike, X {K, U or 1, T},
// ids {U, T}, dst {N, U, T}, iparams[0] the activation (0 silu, 1 gelu).
sy_status check_moe_fused_up_gate(const NodeErrors& e, const sy_node& n, bool read_indices) {
    const sy_tensor& up = *n.src[0];
    const sy_tensor& gate = *n.src[1];
    const sy_tensor& x = *n.src[2];
    const sy_tensor& ids = *n.src[3];
    const sy_tensor& d = *n.dst;
    const int64_t K = up.ne[0], N = up.ne[1], E = up.ne[2];
    const int64_t U = ids.ne[0], T = ids.ne[1];
    if (up.ne[3] != 1)
        return e.fail("src0 (up experts) shape %s must be {K, N, E, 1}", shape_string(up).c_str());
    if (!dims_are(gate, K, N, E, 1))
        return e.fail("src1 (gate experts) shape %s differs from src0 (up) %s",
                      shape_string(gate).c_str(), shape_string(up).c_str());
    if (ids.ne[2] != 1 || ids.ne[3] != 1)
        return e.fail("src3 (ids) shape %s must be {U, T, 1, 1}", shape_string(ids).c_str());
    if (x.ne[0] != K || x.ne[2] != T || x.ne[3] != 1 || (x.ne[1] != 1 && x.ne[1] != U))
        return e.fail("src2 shape %s, expected {K, U or 1, T, 1} = {%lld, %lld or 1, %lld, 1}",
                      shape_string(x).c_str(), (long long)K, (long long)U, (long long)T);
    if (!dims_are(d, N, U, T, 1))
        return e.fail("dst shape %s, expected {N, U, T, 1} = {%lld, %lld, %lld, 1}",
                      shape_string(d).c_str(), (long long)N, (long long)U, (long long)T);
    if (n.iparams[0] != 0 && n.iparams[0] != 1)
        return e.fail("iparams[0] = %d: the activation must be 0 (silu) or 1 (gelu)", n.iparams[0]);
    if (sy_status s = check_weight_rows(e, up); s.code) return s;
    if (sy_status s = check_weight_rows(e, gate); s.code) return s;
    if (read_indices) return check_index_range(e, ids, E, "src3 (expert ids)");
    return sdk::ok();
}

// attn.flash v1 (mla false) and attn.mla v1 (named_ops.h).
sy_status check_attention(const NodeErrors& e, const sy_node& n, bool mla) {
    const sy_tensor& q = *n.src[0];
    const sy_tensor& k = *n.src[1];
    const sy_tensor& d = *n.dst;
    const int64_t D = q.ne[0], T = q.ne[1], H = q.ne[2];
    if (q.ne[3] != 1)
        return e.fail("src0 (Q) shape %s must be {D, T, H, 1}", shape_string(q).c_str());
    if (n.iparams[0] != 0 && n.iparams[0] != 1)
        return e.fail("iparams[0] = %d: causal must be 0 or 1", n.iparams[0]);
    if (n.iparams[1] < 0)
        return e.fail("iparams[1] = %d: the causal offset is negative", n.iparams[1]);
    if (!std::isfinite(n.fparams[0])) return e.fail("fparams[0] (scale) is not finite");
    if (sy_status s = check_packed_blocks(e, k, mla ? "src1 (cache)" : "src1 (K)"); s.code)
        return s;
    if (!mla)
        if (sy_status s = check_packed_blocks(e, *n.src[2], "src2 (V)"); s.code) return s;
    if (mla) {
        const int64_t R = n.iparams[2];
        if (R < 0 || R >= D)
            return e.fail("iparams[2] = %lld: the rope width must lie in [0, %lld)", (long long)R,
                          (long long)D);
        const int64_t block = sy_dtype_info(k.type).block_size;
        if (block > 1 && R % block != 0)
            return e.fail(
                "iparams[2] = %lld: the rope width must be whole blocks of %lld (src1 "
                "is %s)",
                (long long)R, (long long)block, sy_dtype_info(k.type).name);
        if (k.ne[0] != D || k.ne[2] != 1 || k.ne[3] != 1)
            return e.fail("src1 (cache) shape %s, expected {%lld, N, 1, 1}",
                          shape_string(k).c_str(), (long long)D);
        if (!dims_are(d, D - R, T, H, 1))
            return e.fail("dst shape %s, expected {%lld, %lld, %lld, 1}", shape_string(d).c_str(),
                          (long long)(D - R), (long long)T, (long long)H);
        return sdk::ok();
    }
    const sy_tensor& v = *n.src[2];
    const int64_t N = k.ne[1], Hk = k.ne[2];
    if (k.ne[0] != D || k.ne[3] != 1 || Hk < 1 || H % Hk != 0)
        return e.fail(
            "src1 (K) shape %s, expected {%lld, N, Hk, 1} with %lld heads a multiple of Hk",
            shape_string(k).c_str(), (long long)D, (long long)H);
    if (v.ne[1] != N || v.ne[2] != Hk || v.ne[3] != 1)
        return e.fail("src2 (V) shape %s, expected {Dv, %lld, %lld, 1}", shape_string(v).c_str(),
                      (long long)N, (long long)Hk);
    if (!dims_are(d, v.ne[0], T, H, 1))
        return e.fail("dst shape %s, expected {%lld, %lld, %lld, 1}", shape_string(d).c_str(),
                      (long long)v.ne[0], (long long)T, (long long)H);
    return sdk::ok();
}

sy_status check_named(const NodeErrors& e, const sy_node& n, bool read_indices) {
    if (std::strcmp(n.named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0 &&
        n.named_op_version == SY_NAMED_MOE_FUSED_UP_GATE_VERSION)
        return check_moe_fused_up_gate(e, n, read_indices);
    if (std::strcmp(n.named_op, SY_NAMED_ATTN_FLASH) == 0 &&
        n.named_op_version == SY_NAMED_ATTN_FLASH_VERSION)
        return check_attention(e, n, false);
    if (std::strcmp(n.named_op, SY_NAMED_ATTN_MLA) == 0 &&
        n.named_op_version == SY_NAMED_ATTN_MLA_VERSION)
        return check_attention(e, n, true);
    // A backend's own named op: its capability row matched; the shape rules are its own.
    return sdk::ok();
}

sy_status check_get_rows(const NodeErrors& e, const sy_node& n, bool read_indices) {
    const sy_tensor& src = *n.src[0];
    const sy_tensor& ids = *n.src[1];
    const sy_tensor& d = *n.dst;
    if (ids.ne[1] != src.ne[2] || ids.ne[2] != src.ne[3] || ids.ne[3] != 1)
        return e.fail("src1 (ids) shape %s, expected {n, %lld, %lld, 1}", shape_string(ids).c_str(),
                      (long long)src.ne[2], (long long)src.ne[3]);
    if (!dims_are(d, src.ne[0], ids.ne[0], src.ne[2], src.ne[3]))
        return e.fail("dst shape %s, expected {K, n, B2, B3} = {%lld, %lld, %lld, %lld}",
                      shape_string(d).c_str(), (long long)src.ne[0], (long long)ids.ne[0],
                      (long long)src.ne[2], (long long)src.ne[3]);
    if (sy_dtype_info(src.type).block_size > 1 && d.type == src.type && d.nb[0] != src.nb[0])
        return e.fail("dst nb0 = %lld must equal src0 nb0 = %lld for a block-quantized type",
                      (long long)d.nb[0], (long long)src.nb[0]);
    if (read_indices) return check_index_range(e, ids, src.ne[1], "src1 (row ids)");
    return sdk::ok();
}

sy_status check_rope(const NodeErrors& e, const sy_node& n) {
    const sy_tensor& x = *n.src[0];
    const sy_tensor& pos = *n.src[1];
    if (sy_status s = check_elementwise(e, n); s.code) return s;
    if (x.ne[3] != 1) return e.fail("src0 shape %s must be {D, H, T, 1}", shape_string(x).c_str());
    if (!dims_are(pos, x.ne[2], 1, 1, 1))
        return e.fail("src1 (positions) shape %s, expected {T, 1, 1, 1} with T = %lld",
                      shape_string(pos).c_str(), (long long)x.ne[2]);
    const int32_t n_dims = n.iparams[0], mode = n.iparams[1];
    if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > x.ne[0])
        return e.fail("n_dims (iparams[0]) = %d must be even, > 0 and <= D = %lld", n_dims,
                      (long long)x.ne[0]);
    if (mode != SY_ROPE_NORMAL && mode != SY_ROPE_NEOX)
        return e.fail("mode (iparams[1]) = %d; expected 0 (normal) or 2 (NeoX)", mode);
    // The angle formula takes logarithms of freq_base, 1/freq_scale and (for YaRN) of
    // n_ctx_orig / beta: each must be positive.
    const float freq_base = n.fparams[0], freq_scale = n.fparams[1], ext_factor = n.fparams[2];
    if (!(freq_base > 0.0f) || !std::isfinite(freq_base) || !(freq_scale > 0.0f))
        return e.fail("freq_base = %g and freq_scale = %g (fparams[0], [1]) must be > 0",
                      double(freq_base), double(freq_scale));
    if (ext_factor != 0.0f && !(n.iparams[2] > 0 && n.fparams[4] > 0.0f && n.fparams[5] > 0.0f))
        return e.fail(
            "YaRN (ext_factor != 0) needs n_ctx_orig (iparams[2]) = %d, beta_fast = %g and "
            "beta_slow = %g (fparams[4], [5]) > 0",
            n.iparams[2], double(n.fparams[4]), double(n.fparams[5]));
    return sdk::ok();
}

sy_status check_softmax(const NodeErrors& e, const sy_node& n) {
    if (sy_status s = check_elementwise(e, n); s.code) return s;
    if (const sy_tensor* mask = n.src[1]) {
        if (mask->ne[0] != n.src[0]->ne[0])
            return e.fail("src1 (mask) ne0 = %lld differs from src0 ne0 = %lld",
                          (long long)mask->ne[0], (long long)n.src[0]->ne[0]);
        for (int d = 1; d < SY_MAX_DIMS; ++d)
            if (mask->ne[d] < 1 && n.src[0]->ne[d] > 0)
                return e.fail("src1 (mask) ne%d = %lld cannot be broadcast", d,
                              (long long)mask->ne[d]);
    }
    if (n.iparams[0] != 0 && n.iparams[0] != 1)
        return e.fail("causal (iparams[0]) = %d; expected 0 or 1", n.iparams[0]);
    return sdk::ok();
}

sy_status check_argsort(const NodeErrors& e, const sy_node& n) {
    if (sy_status s = check_elementwise(e, n); s.code) return s;
    if (n.iparams[0] != 0 && n.iparams[0] != 1)
        return e.fail("order (iparams[0]) = %d; expected 0 (ascending) or 1 (descending)",
                      n.iparams[0]);
    if (n.src[0]->ne[0] > INT32_MAX)
        return e.fail("rows longer than INT32_MAX cannot be indexed by I32");
    return sdk::ok();
}

sy_status check_top_k(const NodeErrors& e, const sy_node& n) {
    const sy_tensor& x = *n.src[0];
    const sy_tensor& d = *n.dst;
    if (d.ne[0] < 1 || d.ne[0] > x.ne[0] || !dims_are(d, d.ne[0], x.ne[1], x.ne[2], x.ne[3]))
        return e.fail("dst shape %s, expected {k in [1, %lld], %lld, %lld, %lld}",
                      shape_string(d).c_str(), (long long)x.ne[0], (long long)x.ne[1],
                      (long long)x.ne[2], (long long)x.ne[3]);
    if (x.ne[0] > INT32_MAX) return e.fail("rows longer than INT32_MAX cannot be indexed by I32");
    return sdk::ok();
}

sy_status check_drop_ids(const NodeErrors& e, const sy_node& n) {
    if (sy_status s = check_elementwise(e, n); s.code) return s;
    if (sy_status s = check_same_shape(e, *n.src[1], "src1 (values)", *n.src[0], "src0 (ids)");
        s.code)
        return s;
    if (n.iparams[0] < 1) return e.fail("kept (iparams[0]) = %d must be >= 1", n.iparams[0]);
    if (!(n.fparams[0] >= 0.0f) || !std::isfinite(n.fparams[0]))
        return e.fail("threshold (fparams[0]) = %g must be finite and >= 0", double(n.fparams[0]));
    return sdk::ok();
}

sy_status check_sum_rows(const NodeErrors& e, const sy_node& n) {
    const sy_tensor& x = *n.src[0];
    if (!dims_are(*n.dst, 1, x.ne[1], x.ne[2], x.ne[3]))
        return e.fail("dst shape %s, expected {1, %lld, %lld, %lld}", shape_string(*n.dst).c_str(),
                      (long long)x.ne[1], (long long)x.ne[2], (long long)x.ne[3]);
    return sdk::ok();
}

sy_status check_concat(const NodeErrors& e, const sy_node& n) {
    const sy_tensor& a = *n.src[0];
    const sy_tensor& b = *n.src[1];
    const sy_tensor& d = *n.dst;
    const int32_t dim = n.iparams[0];
    if (dim < 0 || dim >= SY_MAX_DIMS)
        return e.fail("dimension (iparams[0]) = %d is not in [0, 3]", dim);
    for (int i = 0; i < SY_MAX_DIMS; ++i) {
        const int64_t want = i == dim ? a.ne[i] + b.ne[i] : a.ne[i];
        if ((i != dim && b.ne[i] != a.ne[i]) || d.ne[i] != want)
            return e.fail("src0 %s and src1 %s do not concatenate along dim %d into dst %s",
                          shape_string(a).c_str(), shape_string(b).c_str(), dim,
                          shape_string(d).c_str());
    }
    return sdk::ok();
}

sy_status check_cont(const NodeErrors& e, const sy_node& n) {
    if (sy_status s = check_elementwise(e, n); s.code) return s;
    if (!sdk::is_contiguous(*n.dst)) return e.fail("dst must be packed (contiguous)");
    return sdk::ok();
}

// read_indices: index tensors are in host memory and are range-checked here.
sy_status check_op_rules(const NodeErrors& e, const sy_node& n, bool read_indices,
                         const char* backend) {
    switch (n.op) {
        case SY_OP_ADD:
        case SY_OP_MUL:
        case SY_OP_DIV: return check_binary_broadcast(e, n);
        case SY_OP_SCALE:
        case SY_OP_SILU:
        case SY_OP_GELU:
        case SY_OP_SIGMOID:
        case SY_OP_CPY: return check_cpy(e, n);
        case SY_OP_RMS_NORM: return check_rms_norm(e, n);
        case SY_OP_MUL_MAT: return check_mul_mat(e, n);
        case SY_OP_MUL_MAT_ID: return check_mul_mat_id(e, n, read_indices);
        case SY_OP_GET_ROWS: return check_get_rows(e, n, read_indices);
        case SY_OP_ROPE: return check_rope(e, n);
        case SY_OP_SOFTMAX: return check_softmax(e, n);
        case SY_OP_ARGSORT: return check_argsort(e, n);
        case SY_OP_TOP_K: return check_top_k(e, n);
        case SY_OP_DROP_IDS: return check_drop_ids(e, n);
        case SY_OP_SUM_ROWS: return check_sum_rows(e, n);
        case SY_OP_CONCAT: return check_concat(e, n);
        case SY_OP_CONT: return check_cont(e, n);
        case SY_OP_NAMED: return check_named(e, n, read_indices);
        default:
            return sdk::error(SY_ERR_UNSUPPORTED, "%s: not implemented by the %s plugin",
                              e.label().c_str(), backend);
    }
}

std::string types_string(const sy_node& n) {
    std::string s = std::string("dst ") + type_name(n.dst->type);
    for (int i = 0; i < SY_MAX_SRC; ++i)
        if (n.src[i]) s += ", src" + std::to_string(i) + " " + type_name(n.src[i]->type);
    return s;
}

bool slot_matches(int32_t want, const sy_tensor* src) {
    if (want == SY_TYPE_NONE) return src == nullptr;
    if (src == nullptr) return false;
    return want == SY_TYPE_ANY || want == src->type;
}

}  // namespace

int64_t tensor_extent(const sy_tensor& t) {
    const sy_dtype_traits traits = sy_dtype_info(t.type);
    if (traits.block_size <= 0) return -1;
    for (int d = 0; d < SY_MAX_DIMS; ++d)
        if (t.ne[d] < 0 || t.nb[d] < 0) return -1;
    if (t.ne[0] % traits.block_size != 0) return -1;
    if (t.ne[0] == 0 || t.ne[1] == 0 || t.ne[2] == 0 || t.ne[3] == 0) return 0;
    // Last element (block) of the row, then the last row.
    int64_t extent = traits.type_size;
    int64_t step = 0;
    if (!checked_mul(t.ne[0] / traits.block_size - 1, t.nb[0], &step) ||
        !checked_add(extent, step, &extent))
        return -1;
    for (int d = 1; d < SY_MAX_DIMS; ++d)
        if (!checked_mul(t.ne[d] - 1, t.nb[d], &step) || !checked_add(extent, step, &extent))
            return -1;
    return extent;
}

// Whether any capability row names this node's named op and schema version (whatever types).
static bool provides_named(const sy_node& node, const Backend& backend) {
    if (node.named_op == nullptr) return false;
    for (size_t r = 0; r < backend.row_count; ++r) {
        const sy_capability& row = backend.rows[r];
        if (row.op == SY_OP_NAMED && row.named_op != nullptr &&
            std::strcmp(row.named_op, node.named_op) == 0 &&
            row.named_op_version == node.named_op_version)
            return true;
    }
    return false;
}

const sy_capability* find_capability(const sy_node& node, const sy_capability* rows,
                                     size_t row_count) {
    if (node.dst == nullptr) return nullptr;
    for (int i = 4; i < SY_MAX_SRC; ++i)
        if (node.src[i] != nullptr) return nullptr;  // no row describes more than four sources
    for (size_t r = 0; r < row_count; ++r) {
        const sy_capability& row = rows[r];
        if (row.op != node.op || row.dst_type != node.dst->type) continue;
        if (row.op == SY_OP_NAMED && (row.named_op == nullptr || node.named_op == nullptr ||
                                      std::strcmp(row.named_op, node.named_op) != 0 ||
                                      row.named_op_version != node.named_op_version))
            continue;
        bool match = true;
        for (int i = 0; i < 4 && match; ++i) match = slot_matches(row.src_type[i], node.src[i]);
        if (match) return &row;
    }
    return nullptr;
}

sy_status validate_tensor(const sy_tensor* t, const char* role, const char* context,
                          DataChecks checks, bool host_memory) {
    if (t->struct_size < SY_TENSOR_SIZE_1_0)
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: %s has struct_size %u, expected at least %zu", context,
                          role_name(role, *t).c_str(), t->struct_size, size_t(SY_TENSOR_SIZE_1_0));
    if (sy_dtype_info(t->type).name == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: %s has unknown type id %d", context,
                          role_name(role, *t).c_str(), t->type);
    const int64_t extent = tensor_extent(*t);
    if (extent < 0)
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: %s %s has negative sizes or strides, a partial block, or a byte "
                          "span that overflows",
                          context, role_name(role, *t).c_str(), shape_string(*t).c_str());
    if (checks == DataChecks::kDescriptorsOnly || extent == 0) return sdk::ok();
    if (t->data == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: %s has no data", context,
                          role_name(role, *t).c_str());
    if (const sy_buffer* buf = t->buffer) {
        if (host_memory && !buf->host_visible)
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "%s: %s lives in a buffer the host cannot read", context,
                              role_name(role, *t).c_str());
        const auto base = reinterpret_cast<uintptr_t>(buf->base);
        const auto begin = reinterpret_cast<uintptr_t>(t->data);
        if (begin < base || begin - base > buf->size ||
            uint64_t(extent) > buf->size - (begin - base))
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "%s: %s spans bytes [%llu, %llu) of its buffer, which has %llu bytes",
                              context, role_name(role, *t).c_str(),
                              (unsigned long long)(begin - base),
                              (unsigned long long)(begin - base + uint64_t(extent)),
                              (unsigned long long)buf->size);
    }
    return sdk::ok();
}

sy_status validate_node(const sy_node* node, DataChecks checks, const Backend& backend) {
    if (node == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "node is NULL");
    if (node->struct_size < sizeof(sy_node))
        return sdk::error(SY_ERR_ABI,
                          "node struct_size %u is smaller than sy_node of ABI 1.0 (%zu)",
                          node->struct_size, sizeof(sy_node));
    const NodeErrors errors(*node);
    if (node->op == SY_OP_NAMED && !provides_named(*node, backend))
        return sdk::error(
            SY_ERR_UNSUPPORTED, "named op '%s' (schema %u) is not provided by the %s plugin",
            node->named_op ? node->named_op : "(null)", node->named_op_version, backend.name);
    if (node->op != SY_OP_NAMED && (node->op <= SY_OP_NONE || node->op >= SY_OP_BUILTIN_COUNT))
        return sdk::error(SY_ERR_UNSUPPORTED, "op id %d is not an op the %s plugin knows", node->op,
                          backend.name);
    if (node->dst == nullptr) return errors.fail("dst is NULL");
    // This runs for every node of every compute call: the label and role strings are formatted
    // only for a tensor that fails, by checking it a second time with them.
    const auto check_tensor = [&](const sy_tensor* t, const char* role) {
        sy_status s = validate_tensor(t, role, "", checks, backend.host_memory);
        if (s.code)
            s = validate_tensor(t, role, errors.label().c_str(), checks, backend.host_memory);
        return s;
    };
    static constexpr const char* kSrcRoles[] = {"src0", "src1", "src2", "src3",
                                                "src4", "src5", "src6", "src7"};
    static_assert(std::size(kSrcRoles) >= SY_MAX_SRC);
    if (sy_status s = check_tensor(node->dst, "dst"); s.code) return s;
    for (int i = 0; i < SY_MAX_SRC; ++i) {
        if (!node->src[i]) continue;
        if (sy_status s = check_tensor(node->src[i], kSrcRoles[i]); s.code) return s;
    }
    if (find_capability(*node, backend.rows, backend.row_count) == nullptr)
        return errors.fail("no kernel for %s (the capability table lists what is accepted)",
                           types_string(*node).c_str());
    const bool read_indices = checks == DataChecks::kFull && backend.host_memory;
    return check_op_rules(errors, *node, read_indices, backend.name);
}

}  // namespace sy::validation
