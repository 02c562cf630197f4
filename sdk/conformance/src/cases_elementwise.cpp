// Cases of the elementwise ops: add, mul, div (with broadcasting src1), scale, silu, gelu,
// sigmoid.
#include "case_table.hpp"

namespace sy::conformance::detail {

namespace {

// Shapes whose sizes are not multiples of a vector width.
const std::vector<std::vector<int64_t>> kShapes = {
    {1, 1, 1, 1}, {7, 3, 1, 1}, {33, 5, 2, 1}, {67, 3, 2, 3}, {130, 9, 1, 1}};

TensorSpec of(int32_t type, const std::vector<int64_t>& ne) {
    return tensor(type, {ne[0], ne[1], ne[2], ne[3]});
}

std::vector<Case> binary_cases(int32_t op, const Types& t) {
    const int32_t a = t.src[0], b = t.src[1], d = t.dst;
    std::vector<Case> out;
    // A divisor stays in [0.5, 2) (either sign for the second half of the cases would only test
    // how close to zero the draw came).
    auto rhs = [&](TensorSpec sb) {
        return op == SY_OP_DIV ? source(sb, Fill::Uniform, 0.5, 2.0) : data(sb);
    };
    auto add = [&](const std::string& variant, TensorSpec sa, TensorSpec sb, TensorSpec sd) {
        out.push_back(make_case(op, variant, {data(sa), rhs(sb)}, sd));
    };
    add("{32, 4, 1, 1}", tensor(a, {32, 4}), tensor(b, {32, 4}), tensor(d, {32, 4}));
    for (const auto& ne : kShapes) add(shape(of(a, ne)), of(a, ne), of(b, ne), of(d, ne));

    // src1 broadcasts: each of its dimensions divides dst's.
    const TensorSpec big = tensor(a, {67, 5, 4, 3});
    for (const auto& ne : std::vector<std::vector<int64_t>>{{67, 1, 1, 1},
                                                            {1, 5, 1, 1},
                                                            {67, 5, 2, 1},
                                                            {1, 1, 1, 1},
                                                            {67, 5, 4, 1},
                                                            {67, 1, 2, 3}})
        add(shape(big) + " src1 " + shape(of(b, ne)) + " broadcast", big, of(b, ne),
            tensor(d, {67, 5, 4, 3}));

    const TensorSpec m = tensor(a, {33, 7, 2, 1});
    add("{33, 7, 2, 1} transposed src0", transposed(m), tensor(b, {33, 7, 2}),
        tensor(d, {33, 7, 2}));
    add("{33, 7, 2, 1} permuted src1", m, with_order(tensor(b, {33, 7, 2}), 2, 0, 1, 3),
        tensor(d, {33, 7, 2}));
    add("{33, 7, 2, 1} transposed src1 broadcast {33, 7, 1, 1}", m, transposed(tensor(b, {33, 7})),
        tensor(d, {33, 7, 2}));
    add("{67, 5, 3, 1} padded src0 src1 dst", padded(tensor(a, {67, 5, 3})),
        padded(tensor(b, {67, 5, 3}), 1, 2), padded(tensor(d, {67, 5, 3}), 7, 3));
    return out;
}

std::vector<Case> unary_cases(int32_t op, const Types& t) {
    const int32_t a = t.src[0], d = t.dst;
    // Activations are interesting over [-4, 4); scale uses two parameter sets.
    const double range = op == SY_OP_SCALE ? 1.0 : 4.0;
    std::vector<Case> out;
    auto add = [&](const std::string& variant, TensorSpec sa, TensorSpec sd) {
        Case c = make_case(op, variant, {data(sa, range)}, sd);
        if (op == SY_OP_SCALE) {
            c.fparams[0] = 0.75f;
            c.fparams[1] = 0.25f;
        }
        out.push_back(std::move(c));
    };
    add("{32, 4, 1, 1}", tensor(a, {32, 4}), tensor(d, {32, 4}));
    for (const auto& ne : kShapes) add(shape(of(a, ne)), of(a, ne), of(d, ne));
    add("{33, 7, 2, 1} transposed src0", transposed(tensor(a, {33, 7, 2})), tensor(d, {33, 7, 2}));
    add("{16, 5, 3, 2} permuted src0", with_order(tensor(a, {16, 5, 3, 2}), 2, 1, 3, 0),
        tensor(d, {16, 5, 3, 2}));
    add("{67, 5, 3, 1} padded src0 dst", padded(tensor(a, {67, 5, 3})),
        padded(tensor(d, {67, 5, 3}), 2, 1));
    if (op == SY_OP_SCALE) {
        Case c = make_case(op, "{130, 3, 1, 1} scale -2 bias 0", {data(tensor(a, {130, 3}))},
                           tensor(d, {130, 3}));
        c.fparams[0] = -2.0f;
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace

std::vector<Case> elementwise_cases(int32_t op, const Types& t) {
    return op == SY_OP_ADD || op == SY_OP_MUL || op == SY_OP_DIV ? binary_cases(op, t)
                                                                 : unary_cases(op, t);
}

}  // namespace sy::conformance::detail
