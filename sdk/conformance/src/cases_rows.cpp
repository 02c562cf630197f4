// Cases of the row ops: rms_norm, softmax (mask, causal), sum_rows, argsort and top_k (ties).
#include "case_table.hpp"

namespace sy::conformance::detail {

namespace {

const std::vector<std::vector<int64_t>> kRowShapes = {
    {1, 1, 1, 1}, {7, 3, 1, 1}, {33, 5, 2, 1}, {67, 3, 2, 2}, {130, 9, 1, 1}, {4096, 3, 1, 1}};

TensorSpec of(int32_t type, const std::vector<int64_t>& ne) {
    return tensor(type, {ne[0], ne[1], ne[2], ne[3]});
}

std::vector<Case> rms_norm_or_sum_cases(int32_t op, const Types& t) {
    const int32_t a = t.src[0], d = t.dst;
    const bool sum = op == SY_OP_SUM_ROWS;
    auto dst_of = [&](TensorSpec s) {
        TensorSpec r = s;
        r.type = d;
        r.order[0] = 0;
        r.order[1] = 1;
        r.order[2] = 2;
        r.order[3] = 3;
        r.row_padding = 0;
        r.offset = 0;
        if (sum) r.ne[0] = 1;
        return r;
    };
    std::vector<Case> out;
    auto add = [&](const std::string& variant, TensorSpec sa, TensorSpec sd, float eps = 1e-6f) {
        Case c = make_case(op, variant, {data(sa)}, sd);
        if (!sum) c.fparams[0] = eps;
        out.push_back(std::move(c));
    };
    add("{32, 4, 1, 1}", tensor(a, {32, 4}), dst_of(tensor(a, {32, 4})));
    for (const auto& ne : kRowShapes) add(shape(of(a, ne)), of(a, ne), dst_of(of(a, ne)));
    const TensorSpec m = tensor(a, {33, 7, 2});
    add("{33, 7, 2, 1} transposed src0", transposed(m), dst_of(m));
    if (sum) {
        // Many short rows side by side, as when a MoE layer sums its k expert outputs: kernels
        // that sum a vector of rows at once meet whole vectors and a tail.
        const TensorSpec many = tensor(a, {6, 37, 2});
        add("{6, 37, 2, 1} transposed src0", transposed(many), dst_of(many));
    }
    add("{67, 5, 3, 1} padded src0 dst", padded(tensor(a, {67, 5, 3})),
        padded(dst_of(tensor(a, {67, 5, 3})), 2, 1));
    if (!sum) add("{64, 4, 1, 1} eps 1e-2", tensor(a, {64, 4}), dst_of(tensor(a, {64, 4})), 1e-2f);
    return out;
}

std::vector<Case> softmax_cases(const Types& t) {
    const int32_t a = t.src[0], m = t.src[1], d = t.dst;
    std::vector<Case> out;
    auto add = [&](const std::string& variant, TensorSpec sx, const TensorSpec* mask, float scale,
                   int causal = 0, int offset = 0, Fill mask_fill = Fill::Uniform) {
        std::vector<SourceSpec> src{data(sx, 5)};
        if (mask) src.push_back(source(*mask, mask_fill, -2, 0));
        TensorSpec sd = sx;
        sd.type = d;
        sd.order[0] = 0;
        sd.order[1] = 1;
        sd.order[2] = 2;
        sd.order[3] = 3;
        sd.row_padding = sd.offset = 0;
        Case c = make_case(SY_OP_SOFTMAX, variant, std::move(src), sd);
        c.fparams[0] = scale;
        c.iparams[0] = causal;
        c.iparams[1] = offset;
        out.push_back(std::move(c));
    };
    if (m == SY_TYPE_NONE) {
        add("{32, 4, 1, 1}", tensor(a, {32, 4}), nullptr, 1.0f);
        for (const auto& ne : kRowShapes)
            add(shape(of(a, ne)) + " scale 0.5", of(a, ne), nullptr, 0.5f);
        add("{33, 7, 2, 1} transposed src0", transposed(tensor(a, {33, 7, 2})), nullptr, 1.0f);
        add("{67, 5, 3, 1} padded src0", padded(tensor(a, {67, 5, 3})), nullptr, 1.0f);
        add("{16, 16, 2, 1} causal", tensor(a, {16, 16, 2}), nullptr, 0.125f, 1, 0);
        add("{37, 5, 3, 1} causal offset 32", tensor(a, {37, 5, 3}), nullptr, 0.125f, 1, 32);
        add("{8, 4, 1, 1} causal offset -1 (row 0 fully masked)", tensor(a, {8, 4}), nullptr, 1.0f,
            1, -1);
        return out;
    }
    const TensorSpec m32 = tensor(m, {32, 4});
    add("{32, 4, 1, 1} mask {32, 4, 1, 1}", tensor(a, {32, 4}), &m32, 1.0f);
    const TensorSpec heads = tensor(m, {67, 5, 1, 1});
    add("{67, 5, 4, 1} mask {67, 5, 1, 1} scale 0.125", tensor(a, {67, 5, 4}), &heads, 0.125f);
    const TensorSpec one_row = tensor(m, {33, 1, 1, 1});
    add("{33, 3, 2, 1} mask {33, 1, 1, 1}", tensor(a, {33, 3, 2}), &one_row, 0.5f);
    const TensorSpec per_head = tensor(m, {7, 3, 2, 1});
    add("{7, 3, 2, 2} mask {7, 3, 2, 1}", tensor(a, {7, 3, 2, 2}), &per_head, 1.0f);
    const TensorSpec inf_mask = tensor(m, {40, 6, 1, 1});
    add("{40, 6, 2, 1} mask with -inf", tensor(a, {40, 6, 2}), &inf_mask, 0.125f, 0, 0, Fill::Mask);
    const TensorSpec causal_mask = tensor(m, {24, 6, 1, 1});
    add("{24, 6, 2, 1} mask causal offset 18", tensor(a, {24, 6, 2}), &causal_mask, 0.125f, 1, 18);
    const TensorSpec padded_mask = padded(tensor(m, {33, 7, 1, 1}));
    add("{33, 7, 2, 1} transposed src0 padded mask", transposed(tensor(a, {33, 7, 2})),
        &padded_mask, 1.0f);
    const TensorSpec long_mask = tensor(m, {4096, 2, 1, 1});
    add("{4096, 2, 1, 1} mask {4096, 2, 1, 1}", tensor(a, {4096, 2}), &long_mask, 0.125f);
    return out;
}

std::vector<Case> sort_cases(int32_t op, const Types& t) {
    const int32_t a = t.src[0], d = t.dst;
    std::vector<Case> out;
    const bool top_k = op == SY_OP_TOP_K;
    auto add = [&](const std::string& variant, TensorSpec sx, int64_t k, int order, Fill fill) {
        TensorSpec sd = tensor(d, {top_k ? k : sx.ne[0], sx.ne[1], sx.ne[2], sx.ne[3]});
        SourceSpec s =
            fill == Fill::Ties ? source(sx, Fill::Ties, 0, 3) : source(sx, Fill::Distinct);
        Case c = make_case(op, variant, {s}, sd);
        c.iparams[0] = order;
        out.push_back(std::move(c));
    };
    if (top_k) {
        add("{32, 4, 1, 1} k 4", tensor(a, {32, 4}), 4, 0, Fill::Distinct);
        add("{7, 3, 1, 1} k 7", tensor(a, {7, 3}), 7, 0, Fill::Distinct);
        add("{1, 2, 1, 1} k 1", tensor(a, {1, 2}), 1, 0, Fill::Distinct);
        add("{67, 3, 2, 1} k 5", tensor(a, {67, 3, 2}), 5, 0, Fill::Distinct);
        add("{130, 4, 1, 1} k 1", tensor(a, {130, 4}), 1, 0, Fill::Distinct);
        add("{256, 5, 1, 1} k 8", tensor(a, {256, 5}), 8, 0, Fill::Distinct);
        add("{33, 6, 1, 1} k 9 ties", tensor(a, {33, 6}), 9, 0, Fill::Ties);
        add("{33, 7, 1, 1} k 6 transposed src0", transposed(tensor(a, {33, 7})), 6, 0,
            Fill::Distinct);
        add("{40, 3, 2, 1} k 3 padded src0", padded(tensor(a, {40, 3, 2})), 3, 0, Fill::Distinct);
        return out;
    }
    add("{16, 4, 1, 1} ascending", tensor(a, {16, 4}), 0, 0, Fill::Distinct);
    for (int order = 0; order < 2; ++order) {
        const std::string dir = order ? " descending" : " ascending";
        add("{1, 1, 1, 1}" + dir, tensor(a, {1, 1}), 0, order, Fill::Distinct);
        add("{7, 3, 1, 1}" + dir, tensor(a, {7, 3}), 0, order, Fill::Distinct);
        add("{33, 5, 2, 1}" + dir, tensor(a, {33, 5, 2}), 0, order, Fill::Distinct);
        add("{130, 4, 1, 1}" + dir, tensor(a, {130, 4}), 0, order, Fill::Distinct);
        add("{1000, 2, 1, 1}" + dir, tensor(a, {1000, 2}), 0, order, Fill::Distinct);
        add("{33, 5, 1, 1} ties" + dir, tensor(a, {33, 5}), 0, order, Fill::Ties);
        add("{33, 7, 1, 1} transposed src0" + dir, transposed(tensor(a, {33, 7})), 0, order,
            Fill::Distinct);
    }
    return out;
}

// ids {k, R, ...} and their values -> ids with the weak ones SY_ID_NONE (kept m, threshold t).
std::vector<Case> drop_ids_cases(const Types& t) {
    std::vector<Case> out;
    auto add = [&](const std::string& variant, TensorSpec sid, int m, float thr, Fill values) {
        TensorSpec sv = sid;
        sv.type = t.src[1];
        SourceSpec v =
            values == Fill::Ties ? source(sv, Fill::Ties, 0, 3) : source(sv, Fill::Distinct, 0, 1);
        TensorSpec sd = tensor(t.dst, {sid.ne[0], sid.ne[1], sid.ne[2], sid.ne[3]});
        Case c = make_case(
            SY_OP_DROP_IDS,
            variant + " kept " + std::to_string(m) + " t " + std::to_string(thr).substr(0, 4),
            {source(sid, Fill::Indices, 0, 256), v}, sd);
        c.iparams[0] = m;
        c.fparams[0] = thr;
        out.push_back(std::move(c));
    };
    const int32_t id = t.src[0];
    add("{8, 5, 1, 1}", tensor(id, {8, 5}), 1, 0.5f, Fill::Distinct);
    add("{8, 5, 1, 1}", tensor(id, {8, 5}), 2, 0.9f, Fill::Distinct);
    add("{6, 3, 2, 1}", tensor(id, {6, 3, 2}), 1, 0.0f, Fill::Distinct);
    add("{1, 4, 1, 1}", tensor(id, {1, 4}), 1, 0.5f, Fill::Distinct);
    add("{8, 6, 1, 1}", tensor(id, {8, 6}), 10, 0.5f, Fill::Distinct);
    add("{8, 7, 1, 1} ties", tensor(id, {8, 7}), 1, 1.0f, Fill::Ties);
    add("{9, 6, 1, 1} transposed ids", transposed(tensor(id, {9, 6})), 1, 0.3f, Fill::Distinct);
    add("{6, 4, 1, 1} padded ids", padded(tensor(id, {6, 4}), 1, 2), 2, 0.6f, Fill::Distinct);
    return out;
}

}  // namespace

std::vector<Case> row_cases(int32_t op, const Types& t) {
    switch (op) {
        case SY_OP_SOFTMAX: return softmax_cases(t);
        case SY_OP_DROP_IDS: return drop_ids_cases(t);
        case SY_OP_ARGSORT:
        case SY_OP_TOP_K: return sort_cases(op, t);
        default: return rms_norm_or_sum_cases(op, t);
    }
}

}  // namespace sy::conformance::detail
