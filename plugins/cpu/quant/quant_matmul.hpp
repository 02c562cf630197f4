// The quantized side of MUL_MAT and MUL_MAT_ID: activation rows quantized once per op, and the
// block loop over weight rows x columns that calls the per-type dot products. The float paths
// (ops/matmul_tile.hpp) share the callers' task split; see ops/mul_mat.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "interleaved_weights.hpp"
#include "ops/activation_rows.hpp"
#include "quant/quant_kernels.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

// Every row of an F32 tensor, quantized to the kernel's activation format; rows in the flat
// order (i1 fastest), each kernel.act_row_bytes(K) bytes. With the kernel's tile path, also as
// ActU8K where a product may take as many columns as the path needs (max_columns: the most
// columns one product of the op can have).
class QuantizedActivations {
  public:
    QuantizedActivations(ThreadPool& pool, const sy_tensor& t, const QuantKernel& kernel,
                         int64_t max_columns)
        : t_(t), row_bytes_(kernel.act_row_bytes(t.ne[0])) {
        const ActivationRows rows(pool, t);
        data_.resize(size_t(sdk::nrows(t) * row_bytes_));
        const int64_t ne0 = t.ne[0];
        const bool tile = kernel.tile_decode != nullptr && max_columns >= kernel.tile_min_columns;
        const int64_t tile_offset = tile ? kernel.tile_act_offset(ne0) : 0;
        pool.parallel_ranges(
            sdk::nrows(t), 8192 / (ne0 > 0 ? ne0 : 1) + 1, [&](int64_t r0, int64_t r1) {
                for (int64_t r = r0; r < r1; ++r) {
                    const RowIndex i = row_index(t, r);
                    const float* x = rows.row(i.i1, i.i2, i.i3);
                    char* y = data_.data() + r * row_bytes_;
                    kernel.quantize(x, y, ne0);
                    if (tile) quantize_act_u8_K(x, reinterpret_cast<ActU8K*>(y + tile_offset), ne0);
                }
            });
    }

    const void* row(int64_t i1, int64_t i2, int64_t i3) const {
        return data_.data() + ((i3 * t_.ne[2] + i2) * t_.ne[1] + i1) * row_bytes_;
    }

  private:
    const sy_tensor& t_;
    const int64_t row_bytes_;
    std::vector<char> data_;  // operator new's alignment suffices for the f32 scales
};

// The weights a product reads and its kernel: w's interleaved copy where the plugin keeps them
// (`interleaved` non-null: the option repack) and the variant has a product for them, else w.
struct ProductWeights {
    sy_tensor tensor;  // w (as sdk::copy_tensor reads it), or with its data at the interleaved copy
    QuantKernel kernel;
};
inline ProductWeights product_weights(ThreadPool& pool, const sy_tensor& w,
                                      InterleavedWeights* interleaved) {
    ProductWeights out{sdk::copy_tensor(w), quant_kernel(w.type, w.ne[0])};
    if (interleaved != nullptr) {
        const QuantKernel k = interleaved_kernel(w.type);
        if (k.interleaved != nullptr)
            if (const void* copy = interleaved->find_or_make(pool, w)) {
                out.tensor.data = const_cast<void*>(copy);
                out.kernel = k;
            }
    }
    return out;
}

// Weight rows [n0, n1) at `a` (rows a_row_stride bytes apart, K values each) against `count`
// quantized activation rows act[c]; the result of row n, column c goes to
// out[c] + n * out_row_stride bytes. Each weight row is read once (it stays in L1 while the
// columns pass by in groups of kMaxDotCols). A single column (GEMV) goes kMaxDotRows rows at a
// time through the kernel's several-rows form where it has one: the activation loads and the
// per-call setup then serve 4 rows (docs/design-measurements.md#gemv-several-rows).
inline void quant_matmul_block(const QuantKernel& kernel, const char* a, int64_t a_row_stride,
                               int64_t n0, int64_t n1, int64_t K, const void* const* act,
                               float* const* out, int64_t count, int64_t out_row_stride) {
#if defined(SY_CPU_TILE_GEMM)
    if (kernel.tile_decode != nullptr && count >= kernel.tile_min_columns)
        return tile_matmul_block(kernel, a, a_row_stride, n0, n1, K, act, out, count,
                                 out_row_stride);
#endif
    const int64_t blocks = K / kernel.weight_block;
    if (kernel.interleaved != nullptr) {  // n0 and n1 are multiples of 16 (rows_per_task)
        for (int64_t n = n0; n < n1; n += kInterleavedRows) {
            for (int64_t c = 0; c < count; c += kMaxDotCols) {
                const int cols = int(count - c < kMaxDotCols ? count - c : kMaxDotCols);
                float r[kMaxDotCols * kInterleavedRows];
                kernel.interleaved(blocks, a + n * a_row_stride, act + c, cols, r);
                for (int j = 0; j < cols; ++j)
                    for (int64_t i = 0; i < kInterleavedRows; ++i)
                        std::memcpy(reinterpret_cast<char*>(out[c + j]) + (n + i) * out_row_stride,
                                    &r[j * kInterleavedRows + i], sizeof(float));
            }
        }
        return;
    }
    if (count == 1 && kernel.dot_rows != nullptr) {
        for (int64_t n = n0; n < n1; n += kMaxDotRows) {
            const int rows = int(n1 - n < kMaxDotRows ? n1 - n : kMaxDotRows);
            float r[kMaxDotRows];
            kernel.dot_rows(blocks, a + n * a_row_stride, a_row_stride, act[0], rows, r);
            for (int j = 0; j < rows; ++j)
                std::memcpy(reinterpret_cast<char*>(out[0]) + (n + j) * out_row_stride, &r[j],
                            sizeof(float));
        }
        return;
    }
    for (int64_t n = n0; n < n1; ++n) {
        const char* row = a + n * a_row_stride;
        for (int64_t c = 0; c < count; c += kMaxDotCols) {
            const int cols = int(count - c < kMaxDotCols ? count - c : kMaxDotCols);
            float r[kMaxDotCols];
            kernel.dot(blocks, row, act + c, cols, r);
            for (int j = 0; j < cols; ++j)
                std::memcpy(reinterpret_cast<char*>(out[c + j]) + n * out_row_stride, &r[j],
                            sizeof(float));
        }
    }
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
