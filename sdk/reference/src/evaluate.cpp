// evaluate(): the op contract (op_contract.hpp) and the descriptors the reference can read,
// dispatch to the op families, rounding to dst.
#include <cstddef>
#include <cstring>

#include "contract.hpp"
#include "switchyard/op_contract.hpp"
#include "switchyard/quants.hpp"

namespace sy::reference {

bool implements(int32_t op, const char* named_op, uint32_t named_op_version) {
    if (op == SY_OP_NAMED) {
        const auto is = [&](const char* name, uint32_t version) {
            return named_op && std::strcmp(named_op, name) == 0 && named_op_version == version;
        };
        return is(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION) ||
               is(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION) ||
               is(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION);
    }
    return op > SY_OP_NONE && op < SY_OP_BUILTIN_COUNT;
}

std::vector<double> evaluate(const sy_node& node) {
    using namespace detail;
    if (node.struct_size < offsetof(sy_node, fparams) + sizeof(node.fparams))
        fail(node,
             "node struct_size " + std::to_string(node.struct_size) + " is smaller than sy_node");
    if (node.n_src < 0 || node.n_src > SY_MAX_SRC)
        fail(node, "n_src " + std::to_string(node.n_src) + " is out of range [0, 8]");
    const sy_tensor& dst = destination(node);
    static constexpr const char* kRoles[SY_MAX_SRC] = {"src0", "src1", "src2", "src3",
                                                       "src4", "src5", "src6", "src7"};
    for (int i = 0; i < node.n_src; ++i) optional_source(node, i, kRoles[i]);
    if (implements(node.op, node.named_op, node.named_op_version))
        if (const std::string why = sdk::check_op(node); !why.empty()) fail(node, why);

    std::vector<double> values;
    switch (node.op) {
        case SY_OP_ADD:
        case SY_OP_MUL:
        case SY_OP_DIV:
        case SY_OP_SCALE:
        case SY_OP_SILU:
        case SY_OP_GELU:
        case SY_OP_SIGMOID: values = elementwise(node); break;
        case SY_OP_GET_ROWS:
        case SY_OP_CONCAT:
        case SY_OP_CPY:
        case SY_OP_CONT: values = copy_like(node); break;
        case SY_OP_RMS_NORM:
        case SY_OP_SOFTMAX:
        case SY_OP_SUM_ROWS:
        case SY_OP_ARGSORT:
        case SY_OP_TOP_K:
        case SY_OP_DROP_IDS: values = row_ops(node); break;
        case SY_OP_MUL_MAT:
        case SY_OP_MUL_MAT_ID: values = matmul(node); break;
        case SY_OP_ROPE: values = rope(node); break;
        case SY_OP_NAMED:
            if (!implements(node.op, node.named_op, node.named_op_version))
                fail(node, "the reference does not implement this named op");
            values = std::strcmp(node.named_op, SY_NAMED_MOE_FUSED_UP_GATE) == 0
                         ? moe_fused_up_gate(node)
                         : attention(node);
            break;
        default: fail(node, "unknown op id");
    }
    if (is_block_type(dst.type)) {
        // A block-quantized dst holds each row as the type's reference quantizer stores it.
        const int64_t ne0 = dst.ne[0];
        std::vector<float> row(static_cast<size_t>(ne0));
        std::vector<char> blocks(static_cast<size_t>(quants::row_size(dst.type, ne0)));
        for (size_t r = 0; r + size_t(ne0) <= values.size() && ne0 > 0; r += size_t(ne0)) {
            for (int64_t i = 0; i < ne0; ++i) row[size_t(i)] = float(values[r + size_t(i)]);
            quants::quantize_row(dst.type, row.data(), blocks.data(), ne0);
            quants::dequantize_row(dst.type, blocks.data(), row.data(), ne0);
            for (int64_t i = 0; i < ne0; ++i) values[r + size_t(i)] = row[size_t(i)];
        }
        return values;
    }
    for (double& v : values) v = round_to_type(dst.type, v);
    return values;
}

}  // namespace sy::reference
