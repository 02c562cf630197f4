// The exported entry points: the probe, and the function table over CpuBackend
// (sdk::publish_plugin).
//
// Start-up order matters for the avx2/avx512 builds: the kernels were compiled with instructions
// this CPU may lack, and the linker may have merged some inline functions (std:: templates) from
// those objects. So sy_plugin_probe and the first step of sy_plugin_init touch nothing but cpuid
// (variant.cpp, built with baseline flags) and static strings before refusing.
#include "cpu_backend.hpp"
#include "switchyard/plugin.hpp"
#include "variant.hpp"

extern "C" SY_EXPORT int32_t sy_plugin_probe(sy_probe_info* info) {
    const sy::cpu::VariantInfo& variant = sy::cpu::this_variant();
    const int32_t score = sy::cpu::cpu_can_run_this_variant() ? variant.score : 0;
    if (SY_HAS_FIELD(info, name)) info->name = "cpu";
    if (SY_HAS_FIELD(info, variant)) info->variant = variant.name;
    if (SY_HAS_FIELD(info, score)) info->score = score;
    return score;
}

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    if (!sy::cpu::cpu_can_run_this_variant())
        return sy_status{SY_ERR_REFUSED,
                         "cpu: this CPU lacks the instruction-set extensions of this build "
                         "variant; load a lower variant (probe scores it 0)"};
    return sy::sdk::publish_plugin<sy::cpu::CpuBackend>(host, api, {"cpu", "0.1.0"},
                                                        sy::cpu::this_variant());
}
