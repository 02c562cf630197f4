// cases_for(): expands a capability row's wildcards into the type combinations ops.h allows and
// asks the op's generator for its cases. Shared generator helpers live here too.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>

#include "case_table.hpp"
#include "switchyard/quants.hpp"
#include "switchyard/reference.hpp"
#include "switchyard/sdk.hpp"

namespace sy::conformance::detail {

TensorSpec tensor(int32_t type, std::initializer_list<int64_t> ne) {
    TensorSpec t;
    t.type = type;
    int d = 0;
    for (int64_t n : ne) t.ne[d++] = n;
    return t;
}

TensorSpec with_order(TensorSpec t, int o0, int o1, int o2, int o3) {
    t.order[0] = o0;
    t.order[1] = o1;
    t.order[2] = o2;
    t.order[3] = o3;
    return t;
}

TensorSpec transposed(TensorSpec t) {
    return with_order(t, 1, 0, 2, 3);
}

TensorSpec padded(TensorSpec t, int64_t row_padding, int64_t offset) {
    t.row_padding = row_padding;
    t.offset = offset;
    return t;
}

SourceSpec source(TensorSpec t, Fill fill, double lo, double hi) {
    SourceSpec s;
    s.tensor = t;
    s.fill = fill;
    s.lo = lo;
    s.hi = hi;
    return s;
}

SourceSpec data(TensorSpec t, double range) {
    // Integers stay clear of -1 (all 0xff bytes, the poison pattern) and fit in i8.
    if (reference::is_integer_type(t.type)) return source(t, Fill::Indices, 1, 100);
    return source(t, Fill::Uniform, -range, range);
}

std::string shape(const TensorSpec& t) {
    std::string s = "{";
    for (int d = 0; d < 4; ++d) {
        if (d) s += ", ";
        s += std::to_string(t.ne[d]);
    }
    return s += "}";
}

namespace {

const char* type_name(int32_t type) {
    const char* n = sy_dtype_info(type).name;
    return n ? n : "?";
}

}  // namespace

Case make_case(int32_t op, const std::string& variant, std::vector<SourceSpec> src,
               TensorSpec dst) {
    Case c;
    c.op = op;
    c.op_label = op == SY_OP_NAMED ? SY_NAMED_MOE_FUSED_UP_GATE : sdk::op_name(op);
    if (op == SY_OP_NAMED) {
        c.named_op = SY_NAMED_MOE_FUSED_UP_GATE;
        c.named_op_version = SY_NAMED_MOE_FUSED_UP_GATE_VERSION;
    }
    std::string types;
    for (size_t i = 0; i < src.size(); ++i) {
        if (i) types += ',';
        types += type_name(src[i].tensor.type);
    }
    c.name = c.op_label + " " + types + "->" + type_name(dst.type) + " " + variant;
    c.src = std::move(src);
    c.dst = dst;
    return c;
}

}  // namespace sy::conformance::detail

namespace sy::conformance {

namespace {

using detail::Types;

constexpr int32_t kFloat[] = {SY_TYPE_F32, SY_TYPE_F16, SY_TYPE_BF16};

bool is_float(int32_t t) {
    return sdk::is_float_type(t);
}

// Block-quantized types the reference dequantizes (with switchyard_quants). Wildcards never
// expand to them; a capability row names them explicitly.
bool is_block(int32_t t) {
    return sy_dtype_info(t).block_size > 1 && quants::can_dequantize(t);
}

// Types ops.h allows in a slot (-1 = dst, 0..3 = sources), used to expand SY_TYPE_ANY.
std::vector<int32_t> slot_types(int32_t op, int slot) {
    const std::vector<int32_t> floats(std::begin(kFloat), std::end(kFloat));
    const std::vector<int32_t> f32{SY_TYPE_F32}, i32{SY_TYPE_I32}, none{SY_TYPE_NONE};
    switch (op) {
        case SY_OP_ADD:
        case SY_OP_MUL:
        case SY_OP_DIV: return slot <= 1 ? floats : none;
        case SY_OP_SCALE:
        case SY_OP_RMS_NORM:
        case SY_OP_SILU:
        case SY_OP_GELU:
        case SY_OP_SIGMOID:
        case SY_OP_SUM_ROWS:
        case SY_OP_CPY:
        case SY_OP_CONT: return slot <= 0 ? floats : none;
        case SY_OP_MUL_MAT: return slot == 0 ? floats : slot <= 1 ? f32 : none;
        case SY_OP_MUL_MAT_ID: return slot == 0 ? floats : slot == 2 ? i32 : slot <= 1 ? f32 : none;
        case SY_OP_GET_ROWS:
            if (slot == -1 || slot == 0)
                return {SY_TYPE_F32, SY_TYPE_F16, SY_TYPE_BF16, SY_TYPE_I32};
            return slot == 1 ? i32 : none;
        case SY_OP_ROPE: return slot <= 0 ? floats : slot == 1 ? i32 : none;
        case SY_OP_SOFTMAX:
            if (slot == 1) return {SY_TYPE_NONE, SY_TYPE_F32, SY_TYPE_F16};
            return slot <= 0 ? floats : none;
        case SY_OP_ARGSORT:
        case SY_OP_TOP_K: return slot == -1 ? i32 : slot == 0 ? f32 : none;
        case SY_OP_DROP_IDS: return slot <= 0 ? i32 : slot == 1 ? f32 : none;
        case SY_OP_CONCAT:
            if (slot <= 1) return {SY_TYPE_F32, SY_TYPE_F16, SY_TYPE_BF16, SY_TYPE_I32};
            return none;
        case SY_OP_NAMED:  // moe.fused_up_gate
            return slot <= 1 && slot >= 0    ? floats
                   : slot == 2 || slot == -1 ? f32
                   : slot == 3               ? i32
                                             : none;
        default: return none;
    }
}

bool is_moe(const sy_capability& row) {
    return row.op == SY_OP_NAMED && row.named_op != nullptr &&
           std::strcmp(row.named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0;
}

// Cross-slot rules a wildcard expansion must keep (explicit rows are taken as declared).
bool consistent(const sy_capability& row, const Types& t) {
    switch (row.op) {
        case SY_OP_CONT: return t.dst == t.src[0];
        case SY_OP_CONCAT: return t.src[0] == t.src[1] && t.dst == t.src[0];
        case SY_OP_GET_ROWS:
            return t.dst == t.src[0] ||
                   (t.dst == SY_TYPE_F32 && (is_float(t.src[0]) || is_block(t.src[0])));
        case SY_OP_NAMED: return !is_moe(row) || t.src[0] == t.src[1];
        default: return true;
    }
}

std::vector<Types> expand(const sy_capability& row) {
    std::vector<std::vector<int32_t>> choices(5);
    for (int slot = -1; slot < 4; ++slot) {
        const int32_t declared = slot < 0 ? row.dst_type : row.src_type[slot];
        choices[size_t(slot + 1)] =
            declared == SY_TYPE_ANY ? slot_types(row.op, slot) : std::vector<int32_t>{declared};
    }
    std::vector<Types> out;
    for (int32_t d : choices[0])
        for (int32_t s0 : choices[1])
            for (int32_t s1 : choices[2])
                for (int32_t s2 : choices[3])
                    for (int32_t s3 : choices[4]) {
                        Types t;
                        t.dst = d;
                        t.src[0] = s0;
                        t.src[1] = s1;
                        t.src[2] = s2;
                        t.src[3] = s3;
                        if (consistent(row, t)) out.push_back(t);
                    }
    return out;
}

bool reference_has_type(int32_t type) {
    return type == SY_TYPE_NONE || is_float(type) || type == SY_TYPE_F64 ||
           reference::is_integer_type(type) || is_block(type);
}

std::string type_label(int32_t t) {
    if (t == SY_TYPE_ANY) return "any";
    if (t == SY_TYPE_NONE) return "none";
    const char* n = sy_dtype_info(t).name;
    std::string label = n ? n : "type ";
    if (!n) label += std::to_string(t);
    return label;
}

std::string op_label(const sy_capability& row) {
    if (row.op == SY_OP_NAMED) return row.named_op ? row.named_op : "named";
    const char* n = sdk::op_name(row.op);
    std::string label = n ? n : "op ";
    if (!n) label += std::to_string(row.op);
    return label;
}

// "add f32,f32,none,none->f32": a row as declared, wildcards included.
std::string row_label(const sy_capability& row) {
    std::string s = op_label(row);
    for (int i = 0; i < 4; ++i) {
        s += i ? ',' : ' ';
        s += type_label(row.src_type[i]);
    }
    s += "->";
    s += type_label(row.dst_type);
    return s;
}

// SWITCHYARD_CONFORMANCE_BLOCK_SHARE=K/N (0 <= K < N): only the combinations whose block-quantized
// type (of src0, or of dst) has an id with id % N == K, the others reported as skipped. The
// sanitizer build gives each cpu variant and blas engine its own share (tests/cpu, tests/blas),
// so that together they cover every type; unset, every combination runs.
struct BlockShare {
    int k = 0, n = 1;
};
BlockShare block_share() {
    BlockShare s;
    const char* v = std::getenv("SWITCHYARD_CONFORMANCE_BLOCK_SHARE");
    if (v == nullptr || *v == 0) return s;
    int k = 0, n = 0;
    if (std::sscanf(v, "%d/%d", &k, &n) != 2 || n < 1 || k < 0 || k >= n)
        throw std::invalid_argument(std::string("SWITCHYARD_CONFORMANCE_BLOCK_SHARE='") + v +
                                    "': expected K/N with 0 <= K < N");
    s.k = k;
    s.n = n;
    return s;
}
bool outside_share(const Types& t, const BlockShare& share) {
    if (share.n == 1) return false;
    for (int32_t type : {t.src[0], t.dst})
        if (sy_dtype_info(type).block_size > 1) return type % share.n != share.k;
    return false;
}

Case skipped(const sy_capability& row, const std::string& why) {
    Case c;
    c.op = row.op;
    c.op_label = op_label(row);
    c.name = row_label(row);
    c.skip_reason = why;
    return c;
}

}  // namespace

std::vector<Case> cases_for(const sy_capability& row) {
    if (!reference::implements(row.op, row.named_op, row.named_op_version))
        return {skipped(row, row.op == SY_OP_NAMED
                                 ? "the reference does not implement this named op/version"
                                 : "unknown op id")};
    std::vector<Case> out;
    std::set<std::string> names;
    const BlockShare share = block_share();
    for (const Types& t : expand(row)) {
        if (outside_share(t, share)) {
            out.push_back(skipped(row, "block type outside SWITCHYARD_CONFORMANCE_BLOCK_SHARE=" +
                                           std::to_string(share.k) + "/" +
                                           std::to_string(share.n)));
            continue;
        }
        bool known = reference_has_type(t.dst);
        for (int32_t s : t.src) known = known && reference_has_type(s);
        if (!known) {
            out.push_back(
                skipped(row, "the reference has no (de)quantizer for a type of this row"));
            continue;
        }
        std::vector<Case> cases;
        switch (row.op) {
            case SY_OP_ADD:
            case SY_OP_MUL:
            case SY_OP_DIV:
            case SY_OP_SCALE:
            case SY_OP_SILU:
            case SY_OP_GELU:
            case SY_OP_SIGMOID: cases = detail::elementwise_cases(row.op, t); break;
            case SY_OP_RMS_NORM:
            case SY_OP_SOFTMAX:
            case SY_OP_SUM_ROWS:
            case SY_OP_ARGSORT:
            case SY_OP_TOP_K:
            case SY_OP_DROP_IDS: cases = detail::row_cases(row.op, t); break;
            case SY_OP_MUL_MAT:
            case SY_OP_MUL_MAT_ID: cases = detail::matmul_cases(row.op, t); break;
            case SY_OP_NAMED:
                cases = is_moe(row) ? detail::matmul_cases(row.op, t)
                                    : detail::attention_cases(row.named_op, t);
                break;
            case SY_OP_ROPE: cases = detail::rope_cases(t); break;
            default: cases = detail::copy_cases(row.op, t); break;
        }
        if (!cases.empty()) cases.front().base = true;
        for (Case& c : cases)
            if (names.insert(c.name).second) out.push_back(std::move(c));
    }
    if (out.empty())
        out.push_back(skipped(row, "no type combination of this row is defined by ops.h"));
    return out;
}

// ---- tolerances ---------------------------------------------------------------------------------
//
// Relative L2 error bounds, ||out - ref|| / ||ref||, by the least precise float type a case
// touches (dst and every float source). The reference is rounded to dst's type first, so the
// bound covers the backend's intermediate roundings only.
//
//   type    bound   why
//   f32     1e-5    float32 arithmetic with a float32 accumulator
//   f16     1e-3    a backend may round float32 operands to f16 (2^-11 relative)
//   bf16    1e-2    likewise to bf16 (2^-8 relative)
//
// Stated exceptions:
//   * reductions over more than 1024 elements (mul_mat/mul_mat_id/moe K; rms_norm, softmax,
//     sum_rows rows): f32 bound 5e-5, as float32 accumulation error grows with the length;
//   * rope, f32: 1e-4, as most backends form the angle p * theta in float32 (positions < 512
//     here, so ~1e-5 rad);
//   * exact (0): argsort, top_k, drop_ids, get_rows, concat, cpy, cont: data movement and a single
//     rounding to dst's type, which ops.h defines (round to nearest even). Same-type get_rows
//     of a block type must copy the blocks' bytes exactly; block -> f32 get_rows must equal
//     switchyard_quants' dequantization exactly.
//
// Block-quantized src0 (mul_mat, mul_mat_id, moe.fused_up_gate): the inputs are random floats
// quantized with switchyard_quants, and the reference multiplies the dequantized weights in
// double, so the weights' own quantization error is not counted. What remains is the
// backend's float accumulation and its quantization of the activations (ggml-style kernels
// quantize B/X to Q8_0 or Q8_1 for the 32-blocks and to Q8_K for the K-quants, IQ4_XS and the
// codebook i-quants):
// the relative RMS error of those round trips on random data is 0.0055 (q8_0/q8_1) and 0.0077
// (q8_K) (tests/quants), and a dot product of random vectors carries it through at about the
// same relative size, so the bounds are about twice that:
//
//   q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl    1e-2   (Q8_0 / Q8_1 activations)
//   q6_0                               1e-2   (Q8_0 activations)
//   q2_K q3_K q4_K q5_K q6_K iq4_xs    2e-2   (Q8_K activations)
//   iq1_s iq1_m iq2_xxs iq2_xs iq2_s
//   iq3_xxs iq3_s                      2e-2   (Q8_K activations)
//   iq2_k iq3_k iq4_k iq5_k iq6_k      2e-2   (Q8_K activations)
//   iq2_ks iq3_ks iq4_ks iq4_kss
//   iq5_ks iq2_kl                      2e-2   (Q8_K activations)
//   iq1_kt iq2_kt iq3_kt iq4_kt        2e-2   (Q8_K activations)
//
// attn.flash / attn.mla with a block-quantized K or V (a Q8_0 KV cache) take the same bound:
// the reference reads the decoded cache exactly, and a backend may quantize Q to Q8_0 for the
// K.Q products as ggml's kernels do.
namespace {

struct ToleranceRow {
    int32_t type;
    double bound;
};
constexpr ToleranceRow kTolerances[] = {
    {SY_TYPE_F32, 1e-5},    {SY_TYPE_F16, 1e-3},     {SY_TYPE_BF16, 1e-2},
    {SY_TYPE_Q4_0, 1e-2},   {SY_TYPE_Q4_1, 1e-2},    {SY_TYPE_Q5_0, 1e-2},
    {SY_TYPE_Q5_1, 1e-2},   {SY_TYPE_Q8_0, 1e-2},    {SY_TYPE_IQ4_NL, 1e-2},
    {SY_TYPE_Q2_K, 2e-2},   {SY_TYPE_Q3_K, 2e-2},    {SY_TYPE_Q4_K, 2e-2},
    {SY_TYPE_Q5_K, 2e-2},   {SY_TYPE_Q6_K, 2e-2},    {SY_TYPE_IQ4_XS, 2e-2},
    {SY_TYPE_IQ1_S, 2e-2},  {SY_TYPE_IQ1_M, 2e-2},   {SY_TYPE_IQ2_XXS, 2e-2},
    {SY_TYPE_IQ2_XS, 2e-2}, {SY_TYPE_IQ2_S, 2e-2},   {SY_TYPE_IQ3_XXS, 2e-2},
    {SY_TYPE_IQ3_S, 2e-2},  {SY_TYPE_Q6_0, 1e-2},    {SY_TYPE_IQ2_K, 2e-2},
    {SY_TYPE_IQ3_K, 2e-2},  {SY_TYPE_IQ4_K, 2e-2},   {SY_TYPE_IQ5_K, 2e-2},
    {SY_TYPE_IQ6_K, 2e-2},  {SY_TYPE_IQ2_KS, 2e-2},  {SY_TYPE_IQ3_KS, 2e-2},
    {SY_TYPE_IQ4_KS, 2e-2}, {SY_TYPE_IQ4_KSS, 2e-2}, {SY_TYPE_IQ5_KS, 2e-2},
    {SY_TYPE_IQ2_KL, 2e-2}, {SY_TYPE_IQ1_KT, 2e-2},  {SY_TYPE_IQ2_KT, 2e-2},
    {SY_TYPE_IQ3_KT, 2e-2}, {SY_TYPE_IQ4_KT, 2e-2},  {SY_TYPE_IQ1_M_R4_ROWS, 2e-2},
    {SY_TYPE_Q8_KV, 1e-2},
};
constexpr double kLongReductionF32 = 5e-5;
constexpr int64_t kLongReduction = 1024;
constexpr double kRopeF32 = 1e-4;

double bound_of(int32_t type) {
    for (const ToleranceRow& r : kTolerances)
        if (r.type == type) return r.bound;
    return 0;
}

}  // namespace

double tolerance_for(const Case& c) {
    switch (c.op) {
        case SY_OP_ARGSORT:
        case SY_OP_TOP_K:
        case SY_OP_DROP_IDS:
        case SY_OP_GET_ROWS:
        case SY_OP_CONCAT:
        case SY_OP_CPY:
        case SY_OP_CONT: return 0;
        default: break;
    }
    double bound = bound_of(c.dst.type);
    for (const SourceSpec& s : c.src) bound = std::max(bound, bound_of(s.tensor.type));
    const bool reduction = c.op == SY_OP_MUL_MAT || c.op == SY_OP_MUL_MAT_ID ||
                           c.op == SY_OP_NAMED || c.op == SY_OP_RMS_NORM || c.op == SY_OP_SOFTMAX ||
                           c.op == SY_OP_SUM_ROWS;
    if (reduction && !c.src.empty() && c.src[0].tensor.ne[0] > kLongReduction)
        bound = std::max(bound, kLongReductionF32);
    if (c.op == SY_OP_ROPE) bound = std::max(bound, kRopeF32);
    return bound;
}

}  // namespace sy::conformance
