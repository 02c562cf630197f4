// Ops that work row by row (over ne0): rms_norm, softmax, sum_rows, argsort, top_k.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "contract.hpp"

namespace sy::reference::detail {

namespace {

std::vector<double> row_of(const sy_tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    std::vector<double> row(size_t(t.ne[0]));
    for (int64_t j = 0; j < t.ne[0]; ++j) row[size_t(j)] = at(t, j, i1, i2, i3);
    return row;
}

// Calls f(i1, i2, i3) for each row of shape ne.
template <typename F>
void for_each_row(const int64_t* ne, F&& f) {
    const int64_t rows_ne[4] = {ne[1], ne[2], ne[3], 1};
    for_each_index(rows_ne, [&](int64_t i1, int64_t i2, int64_t i3, int64_t) { f(i1, i2, i3); });
}

std::vector<double> rms_norm(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& x = source(node, 0, "src0");
    require_float(node, x, "src0");
    require_float(node, dst, "dst");
    require_same_shape(node, x, "src0", dst, "dst");
    const double eps = node.fparams[0];
    if (!(eps > 0)) fail(node, "eps fparams[0] = " + std::to_string(eps) + " must be > 0");
    Result out(dst);
    for_each_row(dst.ne, [&](int64_t i1, int64_t i2, int64_t i3) {
        const std::vector<double> row = row_of(x, i1, i2, i3);
        double sum_sq = 0;
        for (double v : row) sum_sq += v * v;
        const double inv = 1.0 / std::sqrt(sum_sq / double(row.size()) + eps);
        for (size_t j = 0; j < row.size(); ++j) out.at(int64_t(j), i1, i2, i3) = row[j] * inv;
    });
    return out.values;
}

std::vector<double> softmax(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& x = source(node, 0, "src0");
    const sy_tensor* mask = optional_source(node, 1, "src1 (mask)");
    require_float(node, x, "src0");
    require_float(node, dst, "dst");
    require_same_shape(node, x, "src0", dst, "dst");
    if (mask) {
        if (mask->type != SY_TYPE_F32 && mask->type != SY_TYPE_F16)
            fail(node, "src1 (mask) must be f32 or f16");
        if (mask->ne[0] != x.ne[0])
            fail(node, "src1 (mask) " + shape_string(*mask) +
                           " must have ne0 = " + std::to_string(x.ne[0]) + " like src0");
        for (int d = 1; d < SY_MAX_DIMS; ++d)
            if (mask->ne[d] < 1) fail(node, "src1 (mask) has an empty dimension");
    }
    const double scale = node.fparams[0];
    const bool causal = node.iparams[0] != 0;
    const int64_t causal_offset = node.iparams[1];
    const double minus_inf = -std::numeric_limits<double>::infinity();

    Result out(dst);
    for_each_row(dst.ne, [&](int64_t i1, int64_t i2, int64_t i3) {
        std::vector<double> y = row_of(x, i1, i2, i3);
        for (int64_t j = 0; j < x.ne[0]; ++j) {
            double& v = y[size_t(j)];
            v *= scale;
            if (mask) v += at(*mask, j, i1 % mask->ne[1], i2 % mask->ne[2], i3 % mask->ne[3]);
            if (causal && j > i1 + causal_offset) v = minus_inf;
        }
        const double max = *std::max_element(y.begin(), y.end());
        if (max == minus_inf) return;  // the whole row is masked: zeros
        double sum = 0;
        for (double& v : y) sum += (v = std::exp(v - max));
        for (int64_t j = 0; j < x.ne[0]; ++j) out.at(j, i1, i2, i3) = y[size_t(j)] / sum;
    });
    return out.values;
}

std::vector<double> sum_rows(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& x = source(node, 0, "src0");
    require_float(node, x, "src0");
    require_float(node, dst, "dst");
    require_shape(node, dst, "dst", 1, x.ne[1], x.ne[2], x.ne[3]);
    Result out(dst);
    for_each_row(dst.ne, [&](int64_t i1, int64_t i2, int64_t i3) {
        const std::vector<double> row = row_of(x, i1, i2, i3);
        out.at(0, i1, i2, i3) = std::accumulate(row.begin(), row.end(), 0.0);
    });
    return out.values;
}

// argsort and top_k: a stable sort of each row's indices; top_k keeps the first k of the
// descending order (equal values: lower index first).
std::vector<double> sort_indices(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& x = source(node, 0, "src0");
    require_type(node, x, SY_TYPE_F32, "src0");
    require_type(node, dst, SY_TYPE_I32, "dst");
    bool descending = true;
    int64_t k = x.ne[0];
    if (node.op == SY_OP_ARGSORT) {
        if (node.iparams[0] != 0 && node.iparams[0] != 1)
            fail(node, "order iparams[0] = " + std::to_string(node.iparams[0]) +
                           " must be 0 (ascending) or 1 (descending)");
        descending = node.iparams[0] == 1;
        require_same_shape(node, x, "src0", dst, "dst");
    } else {
        k = dst.ne[0];
        if (k < 1 || k > x.ne[0])
            fail(node, "k = dst.ne0 = " + std::to_string(k) +
                           " must be in [1, src0.ne0 = " + std::to_string(x.ne[0]) + "]");
        require_shape(node, dst, "dst", k, x.ne[1], x.ne[2], x.ne[3]);
    }
    Result out(dst);
    for_each_row(dst.ne, [&](int64_t i1, int64_t i2, int64_t i3) {
        const std::vector<double> row = row_of(x, i1, i2, i3);
        std::vector<int64_t> order(row.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return descending ? row[size_t(a)] > row[size_t(b)] : row[size_t(a)] < row[size_t(b)];
        });
        for (int64_t j = 0; j < k; ++j) out.at(j, i1, i2, i3) = double(order[size_t(j)]);
    });
    return out.values;
}

// drop_ids: id j of a row stays when j < m or its value beats t times the row's first value.
std::vector<double> drop_ids(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& ids = source(node, 0, "src0 (ids)");
    const sy_tensor& values = source(node, 1, "src1 (values)");
    require_type(node, ids, SY_TYPE_I32, "src0 (ids)");
    require_type(node, values, SY_TYPE_F32, "src1 (values)");
    require_type(node, dst, SY_TYPE_I32, "dst");
    require_same_shape(node, values, "src1 (values)", ids, "src0 (ids)");
    require_same_shape(node, dst, "dst", ids, "src0 (ids)");
    const int64_t m = node.iparams[0];
    const double t = node.fparams[0];
    if (m < 1) fail(node, "kept iparams[0] = " + std::to_string(m) + " must be >= 1");
    if (!(t >= 0) || !std::isfinite(t))
        fail(node, "threshold fparams[0] = " + std::to_string(t) + " must be finite and >= 0");
    Result out(dst);
    for_each_row(dst.ne, [&](int64_t i1, int64_t i2, int64_t i3) {
        const std::vector<double> v = row_of(values, i1, i2, i3);
        for (int64_t j = 0; j < ids.ne[0]; ++j) {
            const bool keep = j < m || v[size_t(j)] > double(float(t * v[0]));  // ops.h: f32
            out.at(j, i1, i2, i3) = keep ? at(ids, j, i1, i2, i3) : double(SY_ID_NONE);
        }
    });
    return out.values;
}

}  // namespace

std::vector<double> row_ops(const sy_node& node) {
    switch (node.op) {
        case SY_OP_RMS_NORM: return rms_norm(node);
        case SY_OP_SOFTMAX: return softmax(node);
        case SY_OP_SUM_ROWS: return sum_rows(node);
        case SY_OP_DROP_IDS: return drop_ids(node);
        default: return sort_indices(node);
    }
}

}  // namespace sy::reference::detail
