// Launchers around the block decoding of blocks.cuh, for the matrix products.
#pragma once

#include <cstdint>

#include "ops/op_context.hpp"
#include "ops/tensor_desc.hpp"

namespace sy::cuda {

struct ActRows;

// Rows of the F32 tensor x (flat over dims 1..3, i1 fastest; ne0 a multiple of 32) quantized
// into scratch memory, in the layout ActRows describes (blocks.cuh).
ActRows quantize_activations(const OpContext& ctx, const TensorDesc& x);

// `rows` rows of a block-quantized matrix (row r at base + r * row_stride bytes, k values each)
// dequantized to packed F16 (out[r * k + i]).
void dequantize_rows_f16(const OpContext& ctx, int32_t type, const char* base, int64_t row_stride,
                         int64_t rows, int64_t k, void* out);

}  // namespace sy::cuda
