#include "variant.hpp"

namespace sy::cpu {

#if defined(SY_CPU_VARIANT_avx512)
const VariantInfo& this_variant() {
    static constexpr VariantInfo info{
        "avx512", 30, 16,
        "-mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512vbmi -mfma -mf16c"};
    return info;
}
bool cpu_can_run_this_variant() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vbmi") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
}
#elif defined(SY_CPU_VARIANT_avx2)
const VariantInfo& this_variant() {
    static constexpr VariantInfo info{"avx2", 20, 8, "-mavx2 -mfma -mf16c"};
    return info;
}
bool cpu_can_run_this_variant() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
}
#elif defined(SY_CPU_VARIANT_generic)
// The generic kernels use the 8-float scalar lanes of simd.hpp, which the compiler maps onto
// SSE2 (4 floats); that is the width the peak-rate estimate should assume.
const VariantInfo& this_variant() {
    static constexpr VariantInfo info{"generic", 10, 4, "(x86-64 baseline)"};
    return info;
}
bool cpu_can_run_this_variant() {
    return true;
}
#else
#error "define SY_CPU_VARIANT_generic, SY_CPU_VARIANT_avx2 or SY_CPU_VARIANT_avx512"
#endif

}  // namespace sy::cpu
