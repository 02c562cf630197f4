#include "commands/bench_session.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "commands/plan.hpp"
#include "switchyard/core/policy.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/file_type.hpp"
#include "switchyard/llm/tensor_types.hpp"

namespace sy::tools {

std::string cpu_model_name() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.starts_with("model name")) {
            const size_t start = line.find_first_not_of(" \t", line.find(':') + 1);
            if (line.find(':') != std::string::npos && start != std::string::npos)
                return line.substr(start);
        }
    return "unknown";
}

void reset_peak_rss() {
    std::ofstream("/proc/self/clear_refs") << "5";  // Linux: VmHWM := the current RSS
}

double peak_rss_mib() {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.starts_with("VmHWM:")) return double(std::stoll(line.substr(6))) / 1024.0;  // kB
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

std::string utc_now() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return text;
}

BenchSession open_bench_session(const BenchInstance& in, int64_t n_ctx) {
    ModelOptions options = in.model;
    options.ctx = n_ctx;
    BenchSession out{load_model(options), nullptr, {}};
    out.session = out.loaded.make_session();
    check_session_memory(out.loaded, *out.session);
    out.warnings = out.loaded.warnings;
    const std::string backend = out.loaded.plugin->name();
    if (options.fused_moe < 0 && !out.session->uses_fused_moe())
        out.warnings.push_back("fused MoE: backend '" + backend +
                               "' does not provide moe.fused_up_gate; the decomposed ops run");
    if (options.flash_attn == "auto" && !out.session->uses_flash_attention())
        out.warnings.push_back("flash attention: backend '" + backend +
                               "' does not provide it for this mode; K*Q is materialized");
    for (std::string& w : placement_warnings(*out.session, out.loaded.model->options().n_ubatch))
        out.warnings.push_back(std::move(w));
    return out;
}

BenchRecord BenchSession::describe(const BenchInstance& in) const {
    const llm::Model& model = *loaded.model;
    const llm::ContextOptions& opt = model.options();
    BenchRecord r;
    r.model_filename = in.model.model;
    std::map<int32_t, uint64_t> bytes_per_type;
    for (const gguf::TensorInfo& t : model.file().tensors()) {
        r.model_size += t.nbytes;
        uint64_t n = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) n *= uint64_t(t.ne[d]);
        r.model_n_params += n;
        bytes_per_type[t.type] += t.nbytes;
    }
    // The file type as llama-bench names it ("Q4_K - Medium") from general.file_type; without
    // that key, guessed from the type that holds most of the bytes, as llama.cpp guesses.
    std::string type;
    if (const gguf::Value* ft = model.file().find("general.file_type"); ft && ft->is_integer()) {
        type = llm::file_type_name(static_cast<uint32_t>(ft->as_u64()));
    } else {
        const int32_t bulk =
            std::max_element(bytes_per_type.begin(), bytes_per_type.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; })
                ->first;
        const uint32_t guess = llm::file_type_of(bulk);
        if (guess != 0 || bulk == SY_TYPE_F32) {
            type = llm::file_type_name(guess | llm::kFileTypeGuessed);
        } else {
            type = llm::type_name(bulk);
            for (char& c : type) c = char(std::toupper(static_cast<unsigned char>(c)));
            type += " (guessed)";
        }
    }
    // llama.cpp names the size class ("16B"); a synthetic model has none, so its parameter count.
    const double n = double(r.model_n_params);
    r.model_type = n >= 1e9 ? fmt::format("deepseek2 {:.1f}B {}", n / 1e9, type)
                            : fmt::format("deepseek2 {:.1f}M {}", n / 1e6, type);
    static const std::string cpu = cpu_model_name();  // read once, not per combination
    r.cpu_info = cpu;
    for (const auto& p : loaded.host->plugins())
        for (int32_t d = 0; d < p->device_count(); ++d)
            if (p->device_props(d).host_memory == 0)
                r.gpu_info +=
                    (r.gpu_info.empty() ? "" : ", ") + std::string(p->device_props(d).name);
    const auto infos = session->backend_infos();
    const WeightPlan& wp = session->weight_plan();
    for (size_t b = 0; b < infos.size(); ++b) {
        r.backends += (r.backends.empty() ? "" : ",") + infos[b].name;
        if (b < wp.bytes_per_backend.size())
            r.placement += fmt::format("{}{} {:.0f} MiB", r.placement.empty() ? "" : ", ",
                                       infos[b].name, mib(wp.bytes_per_backend[b]));
    }
    if (session->multi_backend()) {
        const OffloadPolicy& policy = session->session_backends().offload;
        r.offload_policy = offload_mode_name(policy.mode);
        if (policy.min_batch > 0)
            r.offload_policy += fmt::format(" min_batch={}", policy.min_batch);
        for (const OffloadSwitch& s : policy.ops)
            r.offload_policy += fmt::format(" {}={}", s.op, s.allowed ? 1 : 0);
        if (!policy.pins.empty()) r.offload_policy += fmt::format(" pins={}", policy.pins.size());
        if (!policy.cost_table.empty()) r.offload_policy += " cost_table=" + policy.cost_table;
    }
    r.n_batch = in.n_batch;
    r.n_ubatch = opt.n_ubatch;
    const unsigned hw = std::thread::hardware_concurrency();
    r.n_threads = in.model.plugins.threads > 0 ? in.model.plugins.threads : int(hw > 0 ? hw : 1);
    r.type_k = llm::type_name(opt.cache_type_k);
    r.type_v = llm::type_name(opt.cache_type_v);
    r.n_gpu_layers = in.model.ngl;
    r.n_cpu_moe = in.model.n_cpu_moe;
    r.flash_attn = session->uses_flash_attention();
    r.fused_moe = session->uses_fused_moe();
    r.use_mmap = !in.model.no_mmap;
    r.grouped_er = !in.model.no_group_routing;
    r.repack = in.model.repack < 0 ? "auto" : in.model.repack > 0 ? "on" : "off";
    r.mla_attn = opt.mla;
    r.attn_max_batch = in.model.attn_max_mib;
    r.ser = in.model.ser;
    r.override_tensor = in.override_text;
    r.tensor_split = "0.00";
    if (!in.model.tensor_split.empty()) {
        r.tensor_split.clear();
        for (double p : parse_tensor_split(in.model.tensor_split, "-ts"))
            r.tensor_split += fmt::format("{}{:.2f}", r.tensor_split.empty() ? "" : "/", p);
    }
    r.config = in.model.plugins.config_file;
    r.warnings = warnings;
    return r;
}

}  // namespace sy::tools
