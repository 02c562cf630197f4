// Scalar dequantization of the GGUF block types the CPU plugin computes on (GET_ROWS with an F32
// dst): straight from the formulas of quant_blocks.h, instruction-set neutral.
#pragma once

#include <cstdint>

namespace sy::cpu {

// True for the types dequantize_row handles.
bool can_dequantize(int32_t type);

// n values (a multiple of the block size) from the blocks at x into y.
void dequantize_row(int32_t type, const void* x, float* y, int64_t n);

}  // namespace sy::cpu
