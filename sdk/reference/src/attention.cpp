// attn.flash v1 and attn.mla v1 (named_ops.h), written from their definitions: per query row
// the scaled dot products with every visible key, a softmax, the weighted sum of the values.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "contract.hpp"

namespace sy::reference::detail {

std::vector<double> attention(const sy_node& node) {
    const bool mla = std::strcmp(node.named_op, SY_NAMED_ATTN_MLA) == 0;
    const sy_tensor& dst = destination(node);
    const sy_tensor& q = source(node, 0, "src0 (Q)");
    const sy_tensor& k = source(node, 1, mla ? "src1 (cache)" : "src1 (K)");
    const sy_tensor& v = mla ? k : source(node, 2, "src2 (V)");
    const int64_t D = q.ne[0], T = q.ne[1], H = q.ne[2], N = k.ne[1];
    const int64_t Hk = mla ? 1 : k.ne[2];
    const int64_t R = mla ? node.iparams[2] : 0;
    const int64_t Dv = mla ? D - R : v.ne[0];
    const bool causal = node.iparams[0] != 0;
    const int64_t offset = node.iparams[1];
    const double scale = node.fparams[0];

    const SourceReader Q(q), K(k), V(v);
    Result out(dst);
    std::vector<double> s(static_cast<size_t>(N));
    for (int64_t h = 0; h < H; ++h) {
        const int64_t hk = h / (H / Hk);
        for (int64_t t = 0; t < T; ++t) {
            const int64_t visible = causal ? std::min(N, offset + t + 1) : N;
            double max = -std::numeric_limits<double>::infinity();
            for (int64_t j = 0; j < visible; ++j) {
                double dot = 0;
                for (int64_t d = 0; d < D; ++d) dot += Q(d, t, h, 0) * K(d, j, hk, 0);
                s[size_t(j)] = scale * dot;
                max = std::max(max, s[size_t(j)]);
            }
            double sum = 0;
            for (int64_t j = 0; j < visible; ++j)
                sum += s[size_t(j)] = std::exp(s[size_t(j)] - max);
            for (int64_t d = 0; d < Dv; ++d) {
                double acc = 0;
                for (int64_t j = 0; j < visible; ++j) acc += s[size_t(j)] * V(R + d, j, hk, 0);
                out.at(d, t, h, 0) = visible > 0 ? acc / sum : 0.0;
            }
        }
    }
    return out.values;
}

}  // namespace sy::reference::detail
