// Matrix products: mul_mat, mul_mat_id, and the named op moe.fused_up_gate v1 built on them.
#include <cmath>

#include "contract.hpp"
#include "switchyard/sdk.hpp"

namespace sy::reference::detail {

namespace {

std::vector<double> mul_mat(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& a = source(node, 0, "src0 (A)");
    const sy_tensor& b = source(node, 1, "src1 (B)");
    const int64_t K = a.ne[0];
    const int64_t r2 = b.ne[2] / a.ne[2], r3 = b.ne[3] / a.ne[3];
    const SourceReader A(a);
    Result out(dst);
    for_each_index(dst.ne, [&](int64_t n, int64_t m, int64_t b2, int64_t b3) {
        double sum = 0;
        for (int64_t k = 0; k < K; ++k) sum += A(k, n, b2 / r2, b3 / r3) * at(b, k, m, b2, b3);
        out.at(n, m, b2, b3) = sum;
    });
    return out.values;
}

// sum_k W[k, n, ids[u, t]] * X[k, u % U1, t]; 0 for a dropped slot (SY_ID_NONE)
double expert_dot(const sy_node& node, const sy_tensor& w, const SourceReader& W,
                  const sy_tensor& x, const sy_tensor& ids, int64_t n, int64_t u, int64_t t) {
    const int64_t e = read_index(node, ids, "ids", w.ne[2], u, t);
    double sum = 0;
    if (e == SY_ID_NONE) return sum;
    for (int64_t k = 0; k < w.ne[0]; ++k) sum += W(k, n, e, 0) * at(x, k, u % x.ne[1], t, 0);
    return sum;
}

std::vector<double> mul_mat_id(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& w = source(node, 0, "src0 (W)");
    const sy_tensor& x = source(node, 1, "src1 (X)");
    const sy_tensor& ids = source(node, 2, "src2 (ids)");
    const SourceReader W(w);
    Result out(dst);
    for_each_index(dst.ne, [&](int64_t n, int64_t u, int64_t t, int64_t) {
        out.at(n, u, t, 0) = expert_dot(node, w, W, x, ids, n, u, t);
    });
    return out.values;
}

}  // namespace

std::vector<double> matmul(const sy_node& node) {
    return node.op == SY_OP_MUL_MAT ? mul_mat(node) : mul_mat_id(node);
}

std::vector<double> moe_fused_up_gate(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& up = source(node, 0, "src0 (up)");
    const sy_tensor& gate = source(node, 1, "src1 (gate)");
    const sy_tensor& x = source(node, 2, "src2 (X)");
    const sy_tensor& ids = source(node, 3, "src3 (ids)");
    const int32_t act = node.iparams[0];
    const SourceReader Up(up), Gate(gate);
    Result out(dst);
    for_each_index(dst.ne, [&](int64_t n, int64_t u, int64_t t, int64_t) {
        const double g = expert_dot(node, gate, Gate, x, ids, n, u, t);
        const double v = expert_dot(node, up, Up, x, ids, n, u, t);
        out.at(n, u, t, 0) = (act == 0 ? silu(g) : gelu(g)) * v;
    });
    return out.values;
}

}  // namespace sy::reference::detail
