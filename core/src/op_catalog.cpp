#include "switchyard/core/op_catalog.hpp"

#include <array>
#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/sdk.hpp"

namespace sy {

namespace {

constexpr std::array<BuiltinOp, SY_OP_BUILTIN_COUNT - 1> kBuiltinOps{{
    {SY_OP_ADD, 2, 2, "a + b, b broadcast over a"},
    {SY_OP_MUL, 2, 2, "a * b elementwise, b broadcast over a"},
    {SY_OP_SCALE, 1, 1, "a * s + b"},
    {SY_OP_RMS_NORM, 1, 1, "x / sqrt(mean(x^2) + eps) per row"},
    {SY_OP_MUL_MAT, 2, 2, "matrix product: rows of A times rows of B"},
    {SY_OP_MUL_MAT_ID, 3, 3, "matrix product with the expert picked per row by ids"},
    {SY_OP_GET_ROWS, 2, 2, "gather rows by index"},
    {SY_OP_ROPE, 2, 2, "rotary position embedding (normal or NeoX, optional YaRN)"},
    {SY_OP_SOFTMAX, 1, 2, "softmax over rows of x * scale + mask, optionally causal"},
    {SY_OP_SILU, 1, 1, "x / (1 + e^-x)"},
    {SY_OP_GELU, 1, 1, "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"},
    {SY_OP_SIGMOID, 1, 1, "1 / (1 + e^-x)"},
    {SY_OP_ARGSORT, 1, 1, "indices that sort each row (stable)"},
    {SY_OP_TOP_K, 1, 1, "indices of the k largest values of each row"},
    {SY_OP_SUM_ROWS, 1, 1, "sum of each row"},
    {SY_OP_CONCAT, 2, 2, "concatenation along one dimension"},
    {SY_OP_CPY, 1, 1, "copy with type conversion"},
    {SY_OP_CONT, 1, 1, "packed copy of a strided view"},
    {SY_OP_DIV, 2, 2, "a / b elementwise, b broadcast over a"},
    {SY_OP_DROP_IDS, 2, 2, "ranked ids whose value is under a fraction of the first -> none"},
}};

}  // namespace

const char* BuiltinOp::name() const {
    return sdk::op_name(op);
}

std::span<const BuiltinOp> builtin_ops() {
    return kBuiltinOps;
}

const BuiltinOp& builtin_op(sy_op op) {
    // The table is in id order starting at SY_OP_ADD = 1.
    if (op < SY_OP_ADD || op >= SY_OP_BUILTIN_COUNT) {
        throw Error("op id " + std::to_string(static_cast<int>(op)) + " is not a built-in op");
    }
    return kBuiltinOps[static_cast<size_t>(op - SY_OP_ADD)];
}

std::optional<sy_op> builtin_op_by_name(std::string_view name) {
    for (const BuiltinOp& op : kBuiltinOps) {
        if (name == op.name()) return op.op;
    }
    return std::nullopt;
}

}  // namespace sy
