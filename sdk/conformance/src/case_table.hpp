// Internal: the per-op case generators behind cases_for().
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "switchyard/conformance.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/ops.h"

namespace sy::conformance::detail {

// One concrete type combination of a capability row (no wildcards): dst and src0..src3
// (SY_TYPE_NONE for an absent source).
struct Types {
    int32_t dst = SY_TYPE_NONE;
    int32_t src[4] = {SY_TYPE_NONE, SY_TYPE_NONE, SY_TYPE_NONE, SY_TYPE_NONE};
};

// The cases of one op for one type combination; the first one is the row's base case.
std::vector<Case> elementwise_cases(int32_t op, const Types& t);  // add, mul, div, scale, unary
std::vector<Case> row_cases(int32_t op, const Types& t);     // rms_norm, softmax, sum_rows, sorts
std::vector<Case> matmul_cases(int32_t op, const Types& t);  // mul_mat, mul_mat_id, moe
std::vector<Case> rope_cases(const Types& t);
std::vector<Case> copy_cases(int32_t op, const Types& t);  // cpy, cont, concat, get_rows
std::vector<Case> attention_cases(const char* named_op, const Types& t);  // attn.flash, attn.mla

// Helpers shared by the generators.
TensorSpec tensor(int32_t type, std::initializer_list<int64_t> ne);
TensorSpec with_order(TensorSpec t, int o0, int o1, int o2, int o3);
TensorSpec transposed(TensorSpec t);  // dims 0 and 1 swapped in storage
TensorSpec padded(TensorSpec t, int64_t row_padding = 3, int64_t offset = 5);
SourceSpec source(TensorSpec t, Fill fill = Fill::Uniform, double lo = -1, double hi = 1);
std::string shape(const TensorSpec& t);  // "{67, 5, 2, 3}"
// A case named "<op> <types> <variant>"; marks nothing as base.
Case make_case(int32_t op, const std::string& variant, std::vector<SourceSpec> src, TensorSpec dst);
// The Fill for data of `type`: uniform in [-range, range), integers in [1, 100) for integer types.
SourceSpec data(TensorSpec t, double range = 1);

}  // namespace sy::conformance::detail
