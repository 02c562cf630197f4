// Shared pieces of the reference: failures that throw std::invalid_argument with the op and
// tensor named, the descriptors the reference can read, element access by logical index, and
// the dst value array. The op's shape and type rules are op_contract.hpp's (evaluate.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/ops.h"
#include "switchyard/plugin.h"
#include "switchyard/reference.hpp"

namespace sy::reference::detail {

// Throws std::invalid_argument("<op>: <what>").
[[noreturn]] void fail(const sy_node& node, const std::string& what);

std::string op_label(const sy_node& node);

// Source i, which the op requires (present, valid descriptor).
const sy_tensor& source(const sy_node& node, int i, const char* role);
// Source i if the node has it, else nullptr.
const sy_tensor* optional_source(const sy_node& node, int i, const char* role);
const sy_tensor& destination(const sy_node& node);

// The block types switchyard_quants dequantizes (Q4_0 .. IQ4_XS, Q8_1, Q8_K).
bool is_block_type(int32_t type);

// Reads a source by logical index: block-typed tensors are dequantized once, row by row
// through their strides (switchyard_quants); every other type goes through read_element.
class SourceReader {
  public:
    explicit SourceReader(const sy_tensor& t);
    double operator()(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const;

  private:
    const sy_tensor& t_;
    std::vector<float> dense_;  // logical order; empty for non-block types
};

// An index read from an I32 tensor, checked to lie in [0, limit) or be SY_ID_NONE.
int64_t read_index(const sy_node& node, const sy_tensor& t, const char* role, int64_t limit,
                   int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0);

// dst's values in logical order; at() addresses them by index.
struct Result {
    explicit Result(const sy_tensor& dst);
    double& at(int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        return values[size_t(i0 + ne[0] * (i1 + ne[1] * (i2 + ne[2] * i3)))];
    }
    int64_t ne[4];
    std::vector<double> values;
};

// Calls f(i0, i1, i2, i3) for every index of shape ne, i0 fastest.
template <typename F>
void for_each_index(const int64_t* ne, F&& f) {
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < ne[0]; ++i0) f(i0, i1, i2, i3);
}

inline double at(const sy_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return read_element(t, i0, i1, i2, i3);
}

// Per-op evaluators (one file per family). Each validates its node and returns the unrounded
// result; evaluate() rounds to dst's type.
std::vector<double> elementwise(const sy_node& node);  // add, mul, div, scale, silu, gelu, sigmoid
std::vector<double> copy_like(const sy_node& node);    // cpy, cont, concat, get_rows
std::vector<double> row_ops(
    const sy_node& node);  // rms_norm, softmax, sum_rows, argsort, top_k, drop_ids
std::vector<double> matmul(const sy_node& node);  // mul_mat, mul_mat_id
std::vector<double> rope(const sy_node& node);
std::vector<double> moe_fused_up_gate(const sy_node& node);
std::vector<double> attention(const sy_node& node);  // attn.flash, attn.mla

// Activations shared by the unary ops and the fused MoE op.
double silu(double x);
double gelu(double x);

}  // namespace sy::reference::detail
