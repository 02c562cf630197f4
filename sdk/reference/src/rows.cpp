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
    const double eps = node.fparams[0];
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
    const bool descending = node.op == SY_OP_TOP_K || node.iparams[0] == 1;
    const int64_t k = dst.ne[0];
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
    const int64_t m = node.iparams[0];
    const double t = node.fparams[0];
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
