// Which build of the CPU backend this is. variant.cpp is compiled once per plugin variant with
// baseline flags (and SY_CPU_VARIANT_<name> defined), so everything here may run on any x86-64
// CPU, including one the variant's kernels cannot run on.
#pragma once

#include <cstdint>

namespace sy::cpu {

struct VariantInfo {
    const char* name;       // "generic", "avx2", "avx512"
    int32_t score;          // sy_probe_info.score when this CPU can run the variant
    int32_t f32_lanes;      // floats per SIMD register of the kernels (for the peak-rate estimate)
    const char* isa_flags;  // the -m flags the kernels were built with, for build_info
};

const VariantInfo& this_variant();

// Whether this CPU has every instruction-set extension the variant's kernels use. Touches
// nothing but cpuid, so it is safe to call before anything else in the plugin runs.
bool cpu_can_run_this_variant();

}  // namespace sy::cpu
