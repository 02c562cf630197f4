// Ops that move values: cpy, cont, concat, get_rows.
#include "contract.hpp"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace sy::reference::detail {

namespace {

std::vector<double> copy_or_cont(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& src = source(node, 0, "src0");
    // f32 -> a block type: evaluate() rounds the dst row by row through the type's quantizer.
    if (node.op == SY_OP_CPY && is_block_type(dst.type) && !quants::can_quantize(dst.type))
        fail(node, "no reference quantizer for this block type");
    const SourceReader S(src);
    Result out(dst);
    for_each_index(dst.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        out.at(i0, i1, i2, i3) = S(i0, i1, i2, i3);
    });
    return out.values;
}

std::vector<double> concat(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& a = source(node, 0, "src0");
    const sy_tensor& b = source(node, 1, "src1");
    const int32_t dim = node.iparams[0];
    Result out(dst);
    for_each_index(dst.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        int64_t i[4] = {i0, i1, i2, i3};
        const bool from_a = i[dim] < a.ne[dim];
        if (!from_a) i[dim] -= a.ne[dim];
        out.at(i0, i1, i2, i3) = at(from_a ? a : b, i[0], i[1], i[2], i[3]);
    });
    return out.values;
}

std::vector<double> get_rows(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& src = source(node, 0, "src0");
    const sy_tensor& ids = source(node, 1, "src1 (row ids)");
    const SourceReader S(src);
    Result out(dst);
    for_each_index(dst.ne, [&](int64_t k, int64_t i, int64_t b2, int64_t b3) {
        const int64_t row = read_index(node, ids, "src1 (row ids)", src.ne[1], i, b2, b3);
        out.at(k, i, b2, b3) = row == SY_ID_NONE ? 0.0 : S(k, row, b2, b3);
    });
    return out.values;
}

}  // namespace

std::vector<double> copy_like(const sy_node& node) {
    switch (node.op) {
        case SY_OP_CONCAT: return concat(node);
        case SY_OP_GET_ROWS: return get_rows(node);
        default: return copy_or_cont(node);
    }
}

}  // namespace sy::reference::detail
