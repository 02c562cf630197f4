// The reference implementation of every built-in op of ops.h (and of the named ops of
// named_ops.h): deliberately simple, double precision, reading every tensor through its byte
// strides. It is the oracle of the conformance kit, not a backend: it computes on host memory
// (tensor.data must be dereferenceable) and favours readability over speed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/named_ops.h"
#include "switchyard/ops.h"
#include "switchyard/plugin.h"

namespace sy::reference {

// The values dst would hold after running `node`, in logical order (i0 fastest, then i1, i2,
// i3), each rounded to dst's type as a store would round it (F16/BF16 round to nearest even,
// integer types are exact). Sources are read through their strides, so any layout works.
//
// Throws std::invalid_argument, naming the op and the tensor, for a node that breaks ops.h's
// contract: missing sources, wrong types or shapes, bad parameters, ids or row indices out of
// range. Block-quantized types (those switchyard_quants dequantizes) are accepted as src0 of
// MUL_MAT, MUL_MAT_ID, moe.fused_up_gate and GET_ROWS: dequantized row by row through the
// strides (nb0 = bytes per block, ne0 a multiple of the block size); same-type GET_ROWS of a block
// type returns the dequantized values of the selected rows. Elsewhere they throw.
std::vector<double> evaluate(const sy_node& node);

// Whether evaluate() knows this op: built-in ids and the named ops/versions it implements.
bool implements(int32_t op, const char* named_op = nullptr, uint32_t named_op_version = 0);

// Element (i0, i1, i2, i3) of a float (F32, F16, BF16, F64) or integer (I8 .. I64) tensor in
// host memory, read through its strides; of a block-quantized tensor, decoded from its block
// (nb0 a block's bytes). Throws std::invalid_argument for other types.
double read_element(const sy_tensor& t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0);

// Stores `value` into element (i0, i1, i2, i3), converted to t's type (rounding as
// round_to_type). Throws std::invalid_argument for types read_element does not handle.
void write_element(const sy_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
                   double value);

// `value` as a tensor of `type` holds it: F32/F16/BF16 round to nearest even through float,
// F64 is unchanged, integer types truncate toward zero (values are expected to be integral).
double round_to_type(int32_t type, double value);

// True for I8, I16, I32, I64: results of these types are compared exactly.
bool is_integer_type(int32_t type);

// "{67, 5, 2, 1}": a shape for messages and case names.
std::string shape_string(const sy_tensor& t);

}  // namespace sy::reference
