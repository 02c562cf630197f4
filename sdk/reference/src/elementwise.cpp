// add, mul, div, scale and the unary activations.
#include <cmath>
#include <numbers>

#include "contract.hpp"

namespace sy::reference::detail {

double silu(double x) {
    return x / (1.0 + std::exp(-x));
}

double gelu(double x) {
    const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

namespace {

double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}

}  // namespace

std::vector<double> elementwise(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& a = source(node, 0, "src0");

    Result out(dst);
    if (node.op == SY_OP_ADD || node.op == SY_OP_MUL || node.op == SY_OP_DIV) {
        const sy_tensor& b = source(node, 1, "src1");
        for_each_index(dst.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
            const double x = at(a, i0, i1, i2, i3);
            const double y = at(b, i0 % b.ne[0], i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
            out.at(i0, i1, i2, i3) = node.op == SY_OP_ADD   ? x + y
                                     : node.op == SY_OP_MUL ? x * y
                                                            : x / y;
        });
        return out.values;
    }
    const double scale = node.fparams[0], bias = node.fparams[1];
    for_each_index(dst.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const double x = at(a, i0, i1, i2, i3);
        double y = 0;
        switch (node.op) {
            case SY_OP_SCALE: y = x * scale + bias; break;
            case SY_OP_SILU: y = silu(x); break;
            case SY_OP_GELU: y = gelu(x); break;
            case SY_OP_SIGMOID: y = sigmoid(x); break;
        }
        out.at(i0, i1, i2, i3) = y;
    });
    return out.values;
}

}  // namespace sy::reference::detail
