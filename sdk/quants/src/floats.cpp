// The scalar float types: F32 (a copy), F16 and BF16 (round to nearest even).
#include "internal.hpp"

namespace sy::quants::detail {

void quantize_f32(const float* x, void* y, int64_t n) {
    std::memcpy(y, x, size_t(n) * sizeof(float));
}
void dequantize_f32(const void* x, float* y, int64_t n) {
    std::memcpy(y, x, size_t(n) * sizeof(float));
}

void quantize_f16(const float* x, void* y, int64_t n) {
    auto* out = static_cast<uint16_t*>(y);
    for (int64_t i = 0; i < n; ++i) out[i] = sy::sdk::f32_to_fp16(x[i]);
}
void dequantize_f16(const void* x, float* y, int64_t n) {
    const auto* in = static_cast<const uint16_t*>(x);
    for (int64_t i = 0; i < n; ++i) y[i] = sy::sdk::fp16_to_f32(in[i]);
}

void quantize_bf16(const float* x, void* y, int64_t n) {
    auto* out = static_cast<uint16_t*>(y);
    for (int64_t i = 0; i < n; ++i) out[i] = sy::sdk::f32_to_bf16(x[i]);
}
void dequantize_bf16(const void* x, float* y, int64_t n) {
    const auto* in = static_cast<const uint16_t*>(x);
    for (int64_t i = 0; i < n; ++i) y[i] = sy::sdk::bf16_to_f32(in[i]);
}

}  // namespace sy::quants::detail
