// Ops that move values: cpy, cont, concat, get_rows.
#include "contract.hpp"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace sy::reference::detail {

namespace {

std::vector<double> copy_or_cont(const sy_node& node) {
    const sy_tensor& dst = destination(node);
    const sy_tensor& src = source(node, 0, "src0");
    require_same_shape(node, src, "src0", dst, "dst");
    if (node.op == SY_OP_CPY && (is_block_type(src.type) || is_block_type(dst.type))) {
        // f32 <-> a block type; evaluate() rounds a block dst row by row.
        require_type(node, is_block_type(src.type) ? dst : src, SY_TYPE_F32,
                     is_block_type(src.type) ? "dst" : "src0");
        if (is_block_type(dst.type) && !quants::can_quantize(dst.type))
            fail(node, "no reference quantizer for this block type");
    } else if (node.op == SY_OP_CPY) {
        require_float(node, src, "src0");
        require_float(node, dst, "dst");
    } else {
        require_type(node, dst, src.type, "dst");
        if (!sdk::is_contiguous(dst)) fail(node, "dst must be packed (contiguous)");
    }
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
    require_type(node, b, a.type, "src1");
    require_type(node, dst, a.type, "dst");
    const int32_t dim = node.iparams[0];
    if (dim < 0 || dim >= SY_MAX_DIMS)
        fail(node, "dimension iparams[0] = " + std::to_string(dim) + " is out of range [0, 3]");
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        const int64_t want = d == dim ? a.ne[d] + b.ne[d] : a.ne[d];
        if ((d != dim && b.ne[d] != a.ne[d]) || dst.ne[d] != want)
            fail(node, "src0 " + shape_string(a) + ", src1 " + shape_string(b) + " and dst " +
                           shape_string(dst) + " do not concatenate along dimension " +
                           std::to_string(dim));
    }
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
    require_type(node, ids, SY_TYPE_I32, "src1 (row ids)");
    if (dst.type != src.type) {  // a conversion: float and block types to f32 only
        require_type(node, dst, SY_TYPE_F32, "dst");
    }
    if (is_block_type(src.type)) {
        require_float_or_block(node, src, "src0");
        if (dst.type == src.type) require_float_or_block(node, dst, "dst");
    } else if (dst.type != src.type) {
        require_float(node, src, "src0");
    }
    const int64_t n = ids.ne[0];
    require_shape(node, ids, "src1 (row ids)", n, src.ne[2], src.ne[3], 1);
    require_shape(node, dst, "dst", src.ne[0], n, src.ne[2], src.ne[3]);
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
