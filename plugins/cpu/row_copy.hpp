// Copying (and converting) rows and whole tensors through their strides: the one mechanism behind
// CPY, CONT, GET_ROWS, CONCAT and copy_tensors.
#pragma once

#include <cstdint>

#include "switchyard/plugin.h"

namespace sy::cpu {

class ThreadPool;

// Copies n elements from src (elements src_stride bytes apart) to dst (dst_stride apart).
// The same type on both sides copies bytes (any non-block type); otherwise both are float types
// and each value is converted, F32 -> F16/BF16 rounding to nearest even.
void copy_row(int32_t src_type, const char* src, int64_t src_stride, int32_t dst_type, char* dst,
              int64_t dst_stride, int64_t n);

// dst[i] = convert(src[i]) for two tensors of the same shape, any strides, over the pool.
// Block-quantized types of the same type are copied row by row as bytes (same nb0); F32 to a
// block type quantizes each row with the SDK's reference quantizer, the reverse decodes.
void copy_tensor(ThreadPool& pool, const sy_tensor& src, const sy_tensor& dst);

}  // namespace sy::cpu
