// Cases of the ops that move values: cpy (every float pair), cont (transpose-copy), concat
// (along each dimension), get_rows.
#include "case_table.hpp"
#include "switchyard/dtype.h"

namespace sy::conformance::detail {

namespace {

std::vector<Case> cpy_or_cont_cases(int32_t op, const Types& t) {
    const int32_t a = t.src[0], d = t.dst;
    std::vector<Case> out;
    auto add = [&](const std::string& variant, TensorSpec sa, TensorSpec sd) {
        out.push_back(make_case(op, variant, {data(sa, 4)}, sd));
    };
    auto like = [&](const TensorSpec& s) {
        return tensor(d, {s.ne[0], s.ne[1], s.ne[2], s.ne[3]});
    };
    if (sy_dtype_info(a).block_size > 1 || sy_dtype_info(d).block_size > 1) {
        // f32 <-> blocks: rows of whole blocks (a KV cache's rows), the f32 side strided too.
        for (const TensorSpec& s :
             {tensor(a, {32, 4}), tensor(a, {64, 3, 2}), tensor(a, {96, 5, 2, 2})})
            add(shape(s), s, like(s));
        const TensorSpec r = tensor(a, {64, 5, 2});
        add("{64, 5, 2, 1} padded src0", padded(r), like(r));
        add("{64, 5, 2, 1} padded dst", r, padded(like(r), 2, 1));
        const TensorSpec p = tensor(a, {32, 5, 3, 2});
        if (sy_dtype_info(a).block_size == 1) {
            add("{64, 5, 2, 1} transposed src0", transposed(r), like(r));
            add("{32, 5, 3, 2} permuted src0", with_order(p, 3, 1, 0, 2), like(p));
        } else {
            add("{64, 5, 2, 1} transposed dst", r, transposed(like(r)));
        }
        return out;
    }
    add("{32, 4, 1, 1}", tensor(a, {32, 4}), tensor(d, {32, 4}));
    for (const TensorSpec& s :
         {tensor(a, {1, 1}), tensor(a, {7, 3, 2}), tensor(a, {67, 5, 3, 2}), tensor(a, {130, 9})})
        add(shape(s), s, like(s));
    const TensorSpec m = tensor(a, {33, 7, 2});
    add("{33, 7, 2, 1} transposed src0", transposed(m), like(m));
    const TensorSpec p = tensor(a, {16, 5, 3, 2});
    add("{16, 5, 3, 2} permuted src0", with_order(p, 3, 1, 0, 2), like(p));
    add("{67, 5, 2, 1} padded src0", padded(tensor(a, {67, 5, 2})), like(tensor(a, {67, 5, 2})));
    if (op == SY_OP_CPY) {
        add("{33, 7, 2, 1} transposed src0 padded dst", transposed(m), padded(like(m), 2, 1));
        add("{33, 7, 2, 1} transposed dst", m, transposed(like(m)));
    }
    return out;
}

std::vector<Case> concat_cases(const Types& t) {
    const int32_t a = t.src[0], b = t.src[1], d = t.dst;
    std::vector<Case> out;
    auto add = [&](const std::string& variant, TensorSpec sa, TensorSpec sb, int dim,
                   TensorSpec sd) {
        Case c = make_case(SY_OP_CONCAT, variant, {data(sa), data(sb)}, sd);
        c.iparams[0] = dim;
        out.push_back(std::move(c));
    };
    add("{32, 4, 1, 1} + {16, 4, 1, 1} dim 0", tensor(a, {32, 4}), tensor(b, {16, 4}), 0,
        tensor(d, {48, 4}));
    for (int dim = 0; dim < 4; ++dim) {
        TensorSpec sa = tensor(a, {7, 3, 2, 2});
        TensorSpec sb = tensor(b, {7, 3, 2, 2});
        sb.ne[dim] = 5;
        TensorSpec sd = tensor(d, {7, 3, 2, 2});
        sd.ne[dim] = sa.ne[dim] + sb.ne[dim];
        const std::string name = shape(sa) + " + " + shape(sb) + " dim " + std::to_string(dim);
        add(name, sa, sb, dim, sd);
        add(name + " transposed src0", transposed(sa), sb, dim, sd);
        add(name + " padded src1 dst", sa, padded(sb), dim, padded(sd, 2, 1));
    }
    add("{1, 1, 1, 1} + {1, 1, 1, 1} dim 1", tensor(a, {1}), tensor(b, {1}), 1, tensor(d, {1, 2}));
    add("{67, 5, 1, 1} + {63, 5, 1, 1} dim 0", tensor(a, {67, 5}), tensor(b, {63, 5}), 0,
        tensor(d, {130, 5}));
    return out;
}

std::vector<Case> get_rows_cases(const Types& t) {
    const int32_t a = t.src[0], id = t.src[1], d = t.dst;
    std::vector<Case> out;
    // src0 {K, R, B2, B3}, ids {n, B2, B3} -> dst {K, n, B2, B3}
    auto add = [&](const std::string& variant, TensorSpec sa, TensorSpec sid, bool pad_dst = false,
                   Fill ids = Fill::Indices) {
        TensorSpec sd = tensor(d, {sa.ne[0], sid.ne[0], sa.ne[2], sa.ne[3]});
        if (pad_dst) sd = padded(sd, 2, 3);
        out.push_back(make_case(SY_OP_GET_ROWS, variant,
                                {data(sa), source(sid, ids, 0, double(sa.ne[1]))}, sd));
    };
    const int64_t bs = sy_dtype_info(a).block_size;
    if (bs > 1) {  // a block type: rows of whole blocks, dim 0 innermost
        add("{" + std::to_string(bs) + ", 10, 1, 1} ids {4}", tensor(a, {bs, 10}), tensor(id, {4}));
        add("{" + std::to_string(4 * bs) + ", 33, 1, 1} ids {67}", tensor(a, {4 * bs, 33}),
            tensor(id, {67}));
        add("{" + std::to_string(2 * bs) + ", 5, 2, 3} ids {3, 2, 3}", tensor(a, {2 * bs, 5, 2, 3}),
            tensor(id, {3, 2, 3}));
        add("{" + std::to_string(bs) + ", 20, 1, 1} ids {9} padded src0",
            padded(tensor(a, {bs, 20}), 1, 2), tensor(id, {9}));
        add("{" + std::to_string(bs) + ", 12, 2, 1} ids {5, 2} permuted src0 (dims 1, 2)",
            with_order(tensor(a, {bs, 12, 2}), 0, 2, 1, 3), tensor(id, {5, 2}), true);
        add("{" + std::to_string(2 * bs) + ", 6, 1, 1} ids {8} dropped ids", tensor(a, {2 * bs, 6}),
            tensor(id, {8}), false, Fill::Dropped);
        return out;
    }
    add("{32, 10, 1, 1} ids {4}", tensor(a, {32, 10}), tensor(id, {4}));
    add("{7, 33, 1, 1} ids {67}", tensor(a, {7, 33}), tensor(id, {67}));
    add("{1, 5, 1, 1} ids {3}", tensor(a, {1, 5}), tensor(id, {3}));
    add("{130, 5, 2, 3} ids {3, 2, 3}", tensor(a, {130, 5, 2, 3}), tensor(id, {3, 2, 3}));
    add("{67, 20, 1, 1} ids {9} padded src0", padded(tensor(a, {67, 20}), 3, 7), tensor(id, {9}));
    add("{33, 12, 2, 1} ids {5, 2} transposed src0", transposed(tensor(a, {33, 12, 2})),
        tensor(id, {5, 2}));
    add("{16, 8, 1, 1} ids {6} padded ids, dst", tensor(a, {16, 8}), padded(tensor(id, {6}), 1, 2),
        true);
    add("{1, 8, 3, 1} ids {6, 3} dropped ids", tensor(a, {1, 8, 3}), tensor(id, {6, 3}), false,
        Fill::Dropped);
    add("{24, 8, 1, 1} ids {7} dropped ids, padded dst", tensor(a, {24, 8}), tensor(id, {7}), true,
        Fill::Dropped);
    return out;
}

}  // namespace

std::vector<Case> copy_cases(int32_t op, const Types& t) {
    switch (op) {
        case SY_OP_CONCAT: return concat_cases(t);
        case SY_OP_GET_ROWS: return get_rows_cases(t);
        default: return cpy_or_cont_cases(op, t);
    }
}

}  // namespace sy::conformance::detail
