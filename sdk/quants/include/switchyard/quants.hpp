// Reference quantization of the GGUF block formats: quantize (bit-identical to the public ggml
// reference quantizers, quantize_row_*_ref), dequantize, and the activation formats the CPU dot
// products use (Q8_0, Q8_1, Q8_K). Part of the SDK (static library switchyard_quants) so that
// plugins, the reference implementation and llm/ share one definition. Block layouts are in
// quant_blocks.h.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace sy::quants {

// True for the types this library can quantize and dequantize (F32, F16, BF16 and the block
// types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, and the
// i-quants IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S). quantize_row is bit-identical
// to ggml's reference quantizers for the former; the i-quants search their codebooks their own
// way (iquant_codebook.hpp), their dequantization is ggml's bit for bit.
bool can_quantize(int32_t type);
bool can_dequantize(int32_t type);  // the above plus Q8_1 and Q8_K

// True for the activation formats a dot product quantizes its right-hand side to (Q8_0, Q8_1,
// Q8_K); quantize_row accepts them too.
bool can_quantize_activation(int32_t type);

// Bytes of a row of `n` values of `type` (n a multiple of the block size).
int64_t row_size(int32_t type, int64_t n);

// `n` values of x into `n / block_size` blocks of `type` at y; n must be a multiple of the block
// size. Bit-identical to ggml's reference quantizer for that type (no importance matrix).
// Throws std::invalid_argument for a type it cannot produce or a bad n.
void quantize_row(int32_t type, const float* x, void* y, int64_t n);

// `n` values from blocks of `type` at x into y.
// For the row-scaled types (sy_dtype_traits.row_meta_size > 0: ik_llama.cpp's IQ2_KS, IQ3_KS,
// IQ4_KS, IQ4_KSS, IQ5_KS, IQ2_KL) a row starts with its scale, so quantize_row and
// dequantize_row take exactly one row: x/y is the row's start, n its length.
void dequantize_row(int32_t type, const void* x, float* y, int64_t n);

// Multi-threaded convenience for whole tensors: `rows` rows of `n_per_row` values, rows packed
// (row r at y + r * row_size(type, n_per_row)); threads <= 1 runs on the calling thread.
// `importance`, where given, holds n_per_row non-negative weights (an importance matrix's
// column: the mean squared activation each input column meets); the quantizer then minimises
// the importance-weighted squared error of every row, by the method of ggml's quantizers with
// quant_weights (every block type but Q8_0, which ignores it as ggml does; F32, F16 and BF16
// are not fitted). Those results are not bit-identical to ggml's; in the legacy, K- and IQ4
// types a group of columns whose importance is all zero is fitted as if it were uniform (ggml
// would zero it). Without it every row is quantize_row's, and the types that need one
// (requires_importance) lose much quality: the quantize command refuses them without an
// imatrix, as llama-quantize does. Throws NonFiniteValue for a NaN or infinity in x when the
// type is a block type (which cannot encode one), std::invalid_argument for an importance that
// is negative or not finite.
struct NonFiniteValue : std::invalid_argument {
    NonFiniteValue(int64_t row_, int64_t column_, float value_, const std::string& message)
        : std::invalid_argument(message), row(row_), column(column_), value(value_) {}
    int64_t row, column;  // of the call's rows
    float value;
};
void quantize_rows(int32_t type, const float* x, void* y, int64_t rows, int64_t n_per_row,
                   int threads, const float* importance = nullptr);

// quantize_rows with one scale per row, for the types whose interleaved form ik_llama.cpp stores
// so (IQ1_S, for IQ1_S_R4): every block of a row gets the same scale. Throws
// std::invalid_argument for another type.
void quantize_rows_one_scale(int32_t type, const float* x, void* y, int64_t rows, int64_t n_per_row,
                             int threads, const float* importance = nullptr);

// True for the types whose quantizer needs an importance matrix (llama-quantize refuses them
// without one): IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S.
bool requires_importance(int32_t type);

// The error a round trip of this type is expected to stay within, as relative RMS error
// ||dequant(quant(x)) - x|| / ||x|| on Gaussian data (stated per type; tests assert it).
double expected_roundtrip_error(int32_t type);

}  // namespace sy::quants
