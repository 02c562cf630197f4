// Dispatch by type id, the threaded whole-tensor quantizer and the stated round-trip bounds.
#include "switchyard/quants.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "internal.hpp"
#include "switchyard/dtype.h"

namespace sy::quants {
namespace {

using QuantizeFn = void (*)(const float*, void*, int64_t);
using DequantizeFn = void (*)(const void*, float*, int64_t);
using QuantizeWeightedFn = void (*)(const float*, void*, int64_t, const float*);

struct TypeFns {
    QuantizeFn quantize;
    DequantizeFn dequantize;
    bool weight_format;                     // false for the activation-only formats Q8_1 and Q8_K
    QuantizeWeightedFn weighted = nullptr;  // the quantizer that uses an importance matrix
};

TypeFns fns(int32_t type) {
    using namespace detail;
    switch (type) {
        case SY_TYPE_F32: return {quantize_f32, dequantize_f32, true};
        case SY_TYPE_F16: return {quantize_f16, dequantize_f16, true};
        case SY_TYPE_BF16: return {quantize_bf16, dequantize_bf16, true};
        case SY_TYPE_Q4_0: return {quantize_q4_0, dequantize_q4_0, true, quantize_q4_0_weighted};
        case SY_TYPE_Q4_1: return {quantize_q4_1, dequantize_q4_1, true, quantize_q4_1_weighted};
        case SY_TYPE_Q5_0: return {quantize_q5_0, dequantize_q5_0, true, quantize_q5_0_weighted};
        case SY_TYPE_Q5_1: return {quantize_q5_1, dequantize_q5_1, true, quantize_q5_1_weighted};
        case SY_TYPE_Q8_0: return {quantize_q8_0, dequantize_q8_0, true};
        case SY_TYPE_Q8_1: return {quantize_q8_1, dequantize_q8_1, false};
        case SY_TYPE_Q2_K: return {quantize_q2_K, dequantize_q2_K, true, quantize_q2_K_weighted};
        case SY_TYPE_Q3_K: return {quantize_q3_K, dequantize_q3_K, true, quantize_q3_K_weighted};
        case SY_TYPE_Q4_K: return {quantize_q4_K, dequantize_q4_K, true, quantize_q4_K_weighted};
        case SY_TYPE_Q5_K: return {quantize_q5_K, dequantize_q5_K, true, quantize_q5_K_weighted};
        case SY_TYPE_Q6_K: return {quantize_q6_K, dequantize_q6_K, true, quantize_q6_K_weighted};
        case SY_TYPE_Q8_K: return {quantize_q8_K, dequantize_q8_K, false};
        case SY_TYPE_IQ4_NL:
            return {quantize_iq4_nl, dequantize_iq4_nl, true, quantize_iq4_nl_weighted};
        case SY_TYPE_IQ4_XS:
            return {quantize_iq4_xs, dequantize_iq4_xs, true, quantize_iq4_xs_weighted};
        case SY_TYPE_IQ2_XXS:
            return {quantize_iq2_xxs, dequantize_iq2_xxs, true, quantize_iq2_xxs_weighted};
        case SY_TYPE_IQ2_XS:
            return {quantize_iq2_xs, dequantize_iq2_xs, true, quantize_iq2_xs_weighted};
        case SY_TYPE_IQ2_S:
            return {quantize_iq2_s, dequantize_iq2_s, true, quantize_iq2_s_weighted};
        case SY_TYPE_IQ3_XXS:
            return {quantize_iq3_xxs, dequantize_iq3_xxs, true, quantize_iq3_xxs_weighted};
        case SY_TYPE_IQ3_S:
            return {quantize_iq3_s, dequantize_iq3_s, true, quantize_iq3_s_weighted};
        case SY_TYPE_Q6_0: return {quantize_q6_0, dequantize_q6_0, true, quantize_q6_0_weighted};
        case SY_TYPE_IQ2_K:
            return {quantize_iq2_k, dequantize_iq2_k, true, quantize_iq2_k_weighted};
        case SY_TYPE_IQ3_K:
            return {quantize_iq3_k, dequantize_iq3_k, true, quantize_iq3_k_weighted};
        case SY_TYPE_IQ4_K:
            return {quantize_iq4_k, dequantize_iq4_k, true, quantize_iq4_k_weighted};
        case SY_TYPE_IQ5_K:
            return {quantize_iq5_k, dequantize_iq5_k, true, quantize_iq5_k_weighted};
        case SY_TYPE_IQ6_K:
            return {quantize_iq6_k, dequantize_iq6_k, true, quantize_iq6_k_weighted};
        case SY_TYPE_IQ2_KS:
            return {quantize_iq2_ks, dequantize_iq2_ks, true, quantize_iq2_ks_weighted};
        case SY_TYPE_IQ3_KS:
            return {quantize_iq3_ks, dequantize_iq3_ks, true, quantize_iq3_ks_weighted};
        case SY_TYPE_IQ4_KS:
            return {quantize_iq4_ks, dequantize_iq4_ks, true, quantize_iq4_ks_weighted};
        case SY_TYPE_IQ4_KSS:
            return {quantize_iq4_kss, dequantize_iq4_kss, true, quantize_iq4_kss_weighted};
        case SY_TYPE_IQ5_KS:
            return {quantize_iq5_ks, dequantize_iq5_ks, true, quantize_iq5_ks_weighted};
        case SY_TYPE_IQ2_KL:
            return {quantize_iq2_kl, dequantize_iq2_kl, true, quantize_iq2_kl_weighted};
        case SY_TYPE_IQ1_KT:
            return {quantize_iq1_kt, dequantize_iq1_kt, true, quantize_iq1_kt_weighted};
        case SY_TYPE_IQ2_KT:
            return {quantize_iq2_kt, dequantize_iq2_kt, true, quantize_iq2_kt_weighted};
        case SY_TYPE_IQ3_KT:
            return {quantize_iq3_kt, dequantize_iq3_kt, true, quantize_iq3_kt_weighted};
        case SY_TYPE_IQ4_KT:
            return {quantize_iq4_kt, dequantize_iq4_kt, true, quantize_iq4_kt_weighted};
        case SY_TYPE_IQ1_S:
            return {quantize_iq1_s, dequantize_iq1_s, true, quantize_iq1_s_weighted};
        case SY_TYPE_IQ1_M:
            return {quantize_iq1_m, dequantize_iq1_m, true, quantize_iq1_m_weighted};
        case SY_TYPE_Q8_KV: return {quantize_q8_kv, dequantize_q8_kv, true};
        case SY_TYPE_IQ1_M_R4_ROWS:
            return {quantize_iq1_m_r4_rows, dequantize_iq1_m_r4_rows, true,
                    quantize_iq1_m_r4_rows_weighted};
        default: return {nullptr, nullptr, false};
    }
}

std::string type_name(int32_t type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "type " + std::to_string(type);
}

void check_length(int32_t type, int64_t n, const char* what) {
    const int64_t block = sy_dtype_info(type).block_size;
    if (n < 0 || n % block != 0) {
        throw std::invalid_argument(std::string("switchyard quants: ") + what + " of " +
                                    type_name(type) + ": " + std::to_string(n) +
                                    " values, not a multiple of the block size " +
                                    std::to_string(block));
    }
}

}  // namespace

bool can_quantize(int32_t type) {
    return fns(type).weight_format;
}

bool can_dequantize(int32_t type) {
    return fns(type).dequantize != nullptr;
}

bool can_quantize_activation(int32_t type) {
    return type == SY_TYPE_Q8_0 || type == SY_TYPE_Q8_1 || type == SY_TYPE_Q8_K;
}

int64_t row_size(int32_t type, int64_t n) {
    const sy_dtype_traits t = sy_dtype_info(type);
    if (t.block_size == 0) throw std::invalid_argument("switchyard quants: unknown type id");
    return t.row_meta_size + n / t.block_size * t.type_size;
}

void quantize_row(int32_t type, const float* x, void* y, int64_t n) {
    const TypeFns f = fns(type);
    if (!f.quantize) {
        throw std::invalid_argument("switchyard quants: cannot quantize to " + type_name(type));
    }
    check_length(type, n, "quantize_row");
    f.quantize(x, y, n);
}

void dequantize_row(int32_t type, const void* x, float* y, int64_t n) {
    const TypeFns f = fns(type);
    if (!f.dequantize) {
        throw std::invalid_argument("switchyard quants: cannot dequantize " + type_name(type));
    }
    check_length(type, n, "dequantize_row");
    f.dequantize(x, y, n);
}

bool requires_importance(int32_t type) {
    // IQ1_M_R4's rows: ik_llama.cpp refuses IQ1_M_R4 without one too.
    return type == SY_TYPE_IQ1_S || type == SY_TYPE_IQ1_M || type == SY_TYPE_IQ1_M_R4_ROWS ||
           type == SY_TYPE_IQ2_XXS || type == SY_TYPE_IQ2_XS || type == SY_TYPE_IQ2_S;
}

namespace {
void quantize_rows_with(const TypeFns& f, int32_t type, const float* x, void* y, int64_t rows,
                        int64_t n_per_row, int threads, const float* importance);
}  // namespace

void quantize_rows(int32_t type, const float* x, void* y, int64_t rows, int64_t n_per_row,
                   int threads, const float* importance) {
    quantize_rows_with(fns(type), type, x, y, rows, n_per_row, threads, importance);
}

void quantize_rows_one_scale(int32_t type, const float* x, void* y, int64_t rows, int64_t n_per_row,
                             int threads, const float* importance) {
    if (type != SY_TYPE_IQ1_S)
        throw std::invalid_argument("switchyard quants: no one-scale-per-row quantizer for " +
                                    type_name(type));
    const TypeFns f{detail::quantize_iq1_s_one_scale, detail::dequantize_iq1_s, true,
                    detail::quantize_iq1_s_one_scale_weighted};
    quantize_rows_with(f, type, x, y, rows, n_per_row, threads, importance);
}

namespace {
void quantize_rows_with(const TypeFns& f, int32_t type, const float* x, void* y, int64_t rows,
                        int64_t n_per_row, int threads, const float* importance) {
    if (!f.quantize) {
        throw std::invalid_argument("switchyard quants: cannot quantize to " + type_name(type));
    }
    check_length(type, n_per_row, "quantize_rows");
    // Weights come from files: a NaN or infinity has no block encoding (the scale searches and
    // the int8 roundings are undefined for it), and a weight must be finite and >= 0.
    const bool block_type = sy_dtype_info(type).block_size > 1;
    if (importance != nullptr && f.weighted) {
        for (int64_t c = 0; c < n_per_row; ++c)
            if (!std::isfinite(importance[c]) || importance[c] < 0)
                throw std::invalid_argument(
                    "switchyard quants: importance of column " + std::to_string(c) + " is " +
                    std::to_string(importance[c]) + ", not a finite value >= 0");
    }
    const int64_t bytes_per_row = row_size(type, n_per_row);
    std::atomic<int64_t> bad_row{-1}, bad_col{-1};
    auto run = [&](int64_t first, int64_t last) {
        for (int64_t r = first; r < last; ++r) {
            const float* row = x + r * n_per_row;
            if (block_type) {
                const float* bad = std::find_if_not(row, row + n_per_row,
                                                    [](float v) { return std::isfinite(v); });
                if (bad != row + n_per_row) {
                    int64_t none = -1;
                    if (bad_row.compare_exchange_strong(none, r)) bad_col = bad - row;
                    return;
                }
            }
            char* out = static_cast<char*>(y) + r * bytes_per_row;
            if (importance && f.weighted) {
                f.weighted(x + r * n_per_row, out, n_per_row, importance);
            } else {
                f.quantize(x + r * n_per_row, out, n_per_row);
            }
        }
    };
    const int64_t workers = std::clamp<int64_t>(threads, 1, std::max<int64_t>(rows, 1));
    if (workers == 1) {
        run(0, rows);
    } else {
        std::vector<std::thread> pool;
        pool.reserve(size_t(workers));
        for (int64_t t = 0; t < workers; ++t) {
            pool.emplace_back(run, rows * t / workers, rows * (t + 1) / workers);
        }
        for (auto& thread : pool) thread.join();
    }
    if (bad_row >= 0) {
        const float v = x[bad_row * n_per_row + bad_col];
        throw NonFiniteValue(bad_row, bad_col, v,
                             "switchyard quants: row " + std::to_string(bad_row) + ", column " +
                                 std::to_string(bad_col) + " holds " +
                                 (std::isnan(v) ? "NaN" : "an infinity") + ", which " +
                                 type_name(type) + " cannot encode");
    }
}
}  // namespace

// The worst relative RMS error measured on N(0, 1) rows of 256 and 4096 values (tests/quants,
// seeds 1..4), plus about 20%: q8_0 0.0055, q6_K 0.018, q5_K 0.037, q5_0 0.045, q4_K 0.074,
// iq4_nl 0.079, iq4_xs 0.080, q4_0 0.088, q3_K 0.155, q2_K 0.313, bf16 0.0017, f16 0.00021;
// without an importance matrix: iq3_s 0.136, iq3_xxs 0.183, iq2_s 0.252, iq2_xs 0.293,
// iq2_xxs 0.341, iq1_m 0.442, iq1_s 0.461; ik_llama.cpp's types (switchyard's quantizers):
// q6_0 0.021, iq6_k 0.0144, iq5_k 0.032, iq4_k 0.062, iq3_k 0.136, iq2_k 0.282; the row-scaled
// iq5_ks 0.036, iq4_ks 0.074, iq4_kss 0.097, iq3_ks 0.152, iq2_kl 0.241, iq2_ks 0.324; the trellis
// iq4_kt 0.111, iq3_kt 0.155, iq2_kt 0.311, iq1_kt 0.400; q8_kv (one scale per row) 0.0095.
double expected_roundtrip_error(int32_t type) {
    switch (type) {
        case SY_TYPE_F32: return 0.0;
        case SY_TYPE_F16: return 2.5e-4;
        case SY_TYPE_BF16: return 2.0e-3;
        case SY_TYPE_Q8_0: return 6.5e-3;
        case SY_TYPE_Q8_1: return 6.5e-3;
        case SY_TYPE_Q8_KV: return 1.15e-2;
        case SY_TYPE_Q8_K: return 9.2e-3;
        case SY_TYPE_Q6_K: return 2.2e-2;
        case SY_TYPE_Q5_0: return 5.4e-2;
        case SY_TYPE_Q5_1: return 4.9e-2;
        case SY_TYPE_Q5_K: return 4.4e-2;
        case SY_TYPE_Q4_0: return 1.05e-1;
        case SY_TYPE_Q4_1: return 9.8e-2;
        case SY_TYPE_Q4_K: return 8.9e-2;
        case SY_TYPE_IQ4_NL: return 9.5e-2;
        case SY_TYPE_IQ4_XS: return 9.6e-2;
        case SY_TYPE_Q3_K: return 1.87e-1;
        case SY_TYPE_Q2_K: return 3.75e-1;
        case SY_TYPE_IQ3_S: return 1.63e-1;
        case SY_TYPE_IQ3_XXS: return 2.2e-1;
        case SY_TYPE_IQ2_S: return 2.9e-1;
        case SY_TYPE_IQ2_XS: return 3.5e-1;
        case SY_TYPE_IQ2_XXS: return 4.0e-1;
        case SY_TYPE_IQ1_M: return 5.3e-1;
        case SY_TYPE_IQ1_S: return 5.5e-1;
        case SY_TYPE_IQ1_M_R4_ROWS: return 5.3e-1;
        case SY_TYPE_Q6_0: return 2.5e-2;
        case SY_TYPE_IQ2_K: return 3.4e-1;
        case SY_TYPE_IQ3_K: return 1.64e-1;
        case SY_TYPE_IQ4_K: return 7.5e-2;
        case SY_TYPE_IQ5_K: return 3.9e-2;
        case SY_TYPE_IQ6_K: return 1.75e-2;
        case SY_TYPE_IQ2_KS: return 3.9e-1;
        case SY_TYPE_IQ3_KS: return 1.83e-1;
        case SY_TYPE_IQ4_KS: return 9.0e-2;
        case SY_TYPE_IQ4_KSS: return 1.17e-1;
        case SY_TYPE_IQ5_KS: return 4.3e-2;
        case SY_TYPE_IQ2_KL: return 2.9e-1;
        case SY_TYPE_IQ1_KT: return 4.8e-1;
        case SY_TYPE_IQ2_KT: return 3.7e-1;
        case SY_TYPE_IQ3_KT: return 1.85e-1;
        case SY_TYPE_IQ4_KT: return 1.34e-1;
        default:
            throw std::invalid_argument("switchyard quants: no round-trip bound for " +
                                        type_name(type));
    }
}

}  // namespace sy::quants
