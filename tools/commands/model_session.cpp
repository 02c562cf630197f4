#include "commands/model_session.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "commands/host_policy.hpp"
#include "switchyard/core/config.hpp"
#include "switchyard/core/cost_table.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/memory_planner.hpp"
#include "switchyard/core/plugin_setup.hpp"
#include "switchyard/core/text_file.hpp"
#include "switchyard/llm/host_memory.hpp"
#include "switchyard/llm/placement_flags.hpp"
#include "switchyard/llm/tensor_types.hpp"

namespace sy::tools {
namespace {

int32_t cache_type(const std::string& flag, const std::string& name) {
    const auto t = llm::parse_type_name(name);
    if (!t)
        throw Error(flag + " '" + name + "': unknown type (f32, f16, bf16, q8_0; q8_KV for -ctk)");
    return *t;
}

}  // namespace

double mib(uint64_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

std::string plugin_extra_memory(const PluginHost& host) {
    std::string out;
    for (const auto& p : host.plugins()) {
        if (p->device_count() == 0) continue;
        for (const sy_cost_param& c : p->cost_params(0))
            if (c.key && std::string_view(c.key) == "extra_memory" && c.value > 0)
                out += fmt::format("{}{} {:.2f} MiB", out.empty() ? "" : ", ", p->name(),
                                   c.value / 1048576.0);
    }
    return out;
}

std::string read_text_file(const std::string& flag, const std::string& path) {
    return sy::read_text_file(flag, path, {kMaxTextFileBytes, true});
}

void ModelOptions::add_to(CLI::App& app, const std::string& ctx_help) {
    plugins.add_to(app);
    app.add_option("-m,--model", model, "GGUF model file (first shard of a split model)")
        ->required();
    app.add_option("--backend", backend,
                   "Backend that runs the model, in any case and llama.cpp's device names too "
                   "(CPU, CUDA0, CUDA1 = cpu, cuda, cuda:1; default: cpu; cuda with -ngl > 0)");
    app.add_option("--n-gpu-layers", ngl,
                   "Layers on the GPU: 0 none, at least n_layer + 1 (e.g. 99) the whole model "
                   "(weights, KV cache and compute) on the device backend; -1 as if not given")
        ->check(CLI::Range(-1, 1 << 20));
    app.add_option("-c,--ctx-size", ctx, ctx_help + "; 0: the model's trained context length")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 32))
        ->each([this](const std::string&) { ctx_given = true; });
    app.add_option("--ubatch-size", ubatch, "Tokens per graph (physical batch)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
    app.add_option("--mla", mla,
                   "Attention: 0 standard, 1/2 latent, 3 latent + "
                   "decompressed prompt")
        ->check(CLI::Range(0, 3));
    app.add_option("--fused-moe", fused_moe,
                   "1: require the fused MoE op, 0: never (default: when a backend has it)")
        ->check(CLI::Range(0, 1));
    app.add_option("--flash-attn", flash_attn,
                   "on: require attn.flash/attn.mla, off: never, auto: when the backend has them")
        ->check(CLI::IsMember({"on", "off", "auto", "1", "0"}));
    app.add_flag_callback(
        "--no-flash-attn", [this] { flash_attn = "off"; }, "Never flash attention (-fa off)");
    app.add_flag_callback(
        "--no-fused-moe", [this] { fused_moe = 0; }, "Never the fused MoE op (-fmoe 0)");
    app.add_option("--cache-type-k", cache_type_k,
                   "K cache type: f32, f16, bf16, q8_0, q8_KV (--mla 1-3)");
    app.add_option("--cache-type-v", cache_type_v,
                   "V cache type: f32, f16, bf16, q8_0 (q8_0: --mla 0 with flash attention)");
    app.add_option("--attention-max-batch", attn_max_mib,
                   "MiB of compute buffer one attention step may use; more heads are split into "
                   "steps (0: no limit)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
    app.add_option("--smart-expert-reduction", ser,
                   "K,t: the K best experts per token, and of the others those scoring above t "
                   "times the best (t >= 1: exactly K)");
    app.add_flag("--no-group-routing", no_group_routing,
                 "Ignore expert_group_count (plain top-k, ik_llama.cpp's default)");
    app.add_flag("--grouped-expert-routing", group_routing,
                 "Route within the best expert_group_used_count of expert_group_count groups "
                 "(ik_llama.cpp's -ger; switchyard's default when the file has the keys)");
    app.add_flag("--no-mmap", no_mmap,
                 "Read the weights into memory (huge pages) instead of mapping the file");
    app.add_flag("--mlock", mlock,
                 "Lock the weights in memory (never paged out; a warning when the limit of "
                 "locked memory, ulimit -l, is too low)");
    app.add_option("--numa", numa,
                   "distribute: threads and memory over every NUMA node; isolate: on the node "
                   "the command started on; numactl: on the CPUs numactl gave (a note on a "
                   "machine with one node)")
        ->check(CLI::IsMember({"distribute", "isolate", "numactl"}));
    app.add_flag_callback(
        "--run-time-repack", [this] { repack = 1; },
        "The cpu plugin reads every Q4_0, IQ4_NL and Q8_0 weight from row-interleaved copies "
        "made at first use (as much host memory again as those weights; by default "
        "(repack = \"auto\") up to half of the available memory)");
    app.add_option("--override-tensor", override_tensor,
                   "REGEX=BACKEND[,REGEX=BACKEND...]: weights whose name matches live on BACKEND "
                   "(CPU, CUDA0 and the like too; repeatable, first match wins; before the "
                   "config's [[placement.rules]])");
    app.add_option("--expert-parallel", expert_parallel,
                   "N: every MoE layer's routed experts in N contiguous parts, part r on MPI "
                   "rank r (rank 0 keeps part 0, attention, router, shared experts; under "
                   "mpirun, docs/mpi.md)")
        ->check(CLI::Range(1, 1 << 16));
    app.add_flag("--expert-parallel-exact", expert_parallel_exact,
                 "With --expert-parallel: each rank returns its experts' weighted outputs, not "
                 "their sum, and rank 0 sums them as one process does (the same logits, about "
                 "k/N times the bytes back)");
    app.add_flag("--cpu-moe", cpu_moe, "All routed experts' weights on the cpu backend");
    app.add_option("--n-cpu-moe", n_cpu_moe,
                   "The routed experts' weights of the first N layers on the cpu backend")
        ->check(CLI::Range(0, 1 << 20));
    app.add_flag("--fit", fit,
                 "Weights that no rule places fill the devices (fastest first, routed experts "
                 "last), leaving --fit-margin free; the rest stays on the cpu");
    app.add_option("--fit-margin", fit_margin_mib,
                   "MiB that --fit leaves free on each device besides the KV cache and compute "
                   "buffer (default 1024)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
    app.add_option("--offload-policy", offload_policy,
                   "op=0|1,...: whether nodes of an op that read host-resident weights may run on "
                   "a device (e.g. mul_mat_id=0,moe.fused_up_gate=1)");
    app.add_option("--tensor-split", tensor_split,
                   "P0,P1,...: the layers on devices divided among them in these proportions "
                   "(device backends in load order: cuda, cuda:1, ...)");
    app.add_option("--cost-table", cost_table,
                   "Measured op times from switchyard calibrate, taken before the plugins' cost "
                   "hints (the config's [offload] cost_table)");
    app.add_option("--offload-mode", offload_mode,
                   "cost|never|always: how nodes that read host-resident weights are placed (the "
                   "config's [offload] mode; default cost)")
        ->check(CLI::IsMember({"cost", "never", "always"}));
    app.add_option("--offload-min-batch", offload_min_batch,
                   "Ubatches of fewer tokens keep such nodes on the host (the config's [offload] "
                   "min_batch; 0: no minimum)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
    app.add_option("--staging-mib", staging_mib,
                   "The most MiB of host-resident weights a device keeps copies of for the ops "
                   "offloaded to it (the config's [offload] staging_mib; default: half its free "
                   "memory)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
    app.add_option("--overlap", overlap,
                   "on|off: nodes of the next split that do not depend on the running one run "
                   "beside it when one of the two backends is a device (the config's [offload] "
                   "overlap; default on)")
        ->check(CLI::IsMember({"on", "off"}));
}

llm::ContextOptions ModelOptions::context_options() const {
    llm::ContextOptions mo;
    mo.mla = mla;
    mo.fused_moe = fused_moe;
    mo.flash_attn = flash_attn == "auto" ? -1 : (flash_attn == "on" || flash_attn == "1") ? 1 : 0;
    mo.cache_type_k = cache_type("-ctk", cache_type_k);
    mo.cache_type_v = cache_type("-ctv", cache_type_v);
    mo.n_ctx = ctx;
    mo.n_ubatch = ubatch;
    mo.attn_max_bytes = attn_max_mib * 1024 * 1024;
    if (group_routing && no_group_routing)
        throw Error("-ger (--grouped-expert-routing) and --no-group-routing contradict each other");
    mo.group_routing = !no_group_routing;
    mo.expert_parallel = std::max(1, expert_parallel);
    if (expert_parallel_exact && mo.expert_parallel < 2)
        throw Error("--expert-parallel-exact without --expert-parallel N (N >= 2) does nothing");
    mo.expert_parallel_exact = expert_parallel_exact;
    if (!ser.empty()) {
        const auto comma = ser.find(',');
        const std::string k = ser.substr(0, comma);
        const std::string t = comma == std::string::npos ? "1" : ser.substr(comma + 1);
        try {
            size_t k_used = 0, t_used = 0;
            mo.ser_min_experts = std::stoi(k, &k_used);
            mo.ser_threshold = std::stof(t, &t_used);
            if (k_used != k.size() || t_used != t.size()) throw std::invalid_argument(ser);
        } catch (const std::exception&) {
            throw Error("-ser '" + ser + "': expected K,t (e.g. 6,1 or 4,0.3)");
        }
        if (mo.ser_min_experts < 1)
            throw Error("-ser '" + ser +
                        "': K must be at least 1 (leave -ser out for all experts)");
    }
    return mo;
}

LoadedModel::~LoadedModel() {
    if (host && model) host->release_constants(model->constant_id());
}

LoadedModel load_model(const ModelOptions& o) {
    const llm::ContextOptions mo = o.context_options();
    LoadedModel out;
    out.quiet = o.quiet;
    out.host = std::make_unique<PluginHost>();
    llm::PlacementSetup setup = llm::placement_setup(
        o.placement_flags(),
        o.plugins.config_file.empty() ? Config{} : load_config(o.plugins.config_file));
    for (const std::string& w : setup.warnings) out.warn(w);
    // The same command line on every rank of an MPI job (mpirun -np 3 switchyard run ... -ot
    // ...=rank1): where the placement names ranks, a rank other than 0 is one of them, a worker
    // with this model file, and its process ends when rank 0's does.
    if (mpi_rank_from_environment() > 0)
        for (const PlacementRule& rule : setup.config.placement.rules)
            if (parse_backend_name(rule.backend).plugin == "mpi") {
                serve_as_worker(o.model, o.plugins);
                std::exit(0);
            }
    Config& config = setup.config;
    const std::string& backend = setup.backend;
    const BackendRef& backend_ref = setup.backend_ref;
    if (!o.numa.empty()) out.note(apply_numa(o.numa));  // before the backends start threads
    for (const std::string& w :
         setup_plugins(*out.host, config, o.plugins.plugins, o.plugins.threads))
        out.warn(w);
    // A plugin asked for (--plugin, the config's load list) that did not load: say which and why,
    // and go on with the others.
    const bool backend_loaded = out.host->find(backend_ref.plugin) != nullptr;
    for (const PluginFailure& f : out.host->failures())
        if (f.requested && backend_loaded)
            out.warn("plugin " + f.file + " did not load, continuing without it: " + f.reason);
    out.plugin = out.host->find(backend_ref.plugin);
    if (out.plugin == nullptr) {
        std::string why;
        for (const PluginFailure& f : out.host->failures())
            why += "\n  " + f.file + ": " + f.reason;
        throw Error("backend '" + backend + "' is not loaded" + why);
    }
    // A backend a placement rule names (-ot exps=rank1: mpi) that did not load: the rule cannot
    // be followed, so its reason is the error.
    for (const PlacementRule& rule : config.placement.rules) {
        const BackendRef ref = parse_backend_name(rule.backend);
        const std::string& plugin = ref.plugin;
        if (const Plugin* p = out.host->find(plugin)) {
            if (ref.device >= p->device_count() && o.expert_parallel > 1 &&
                rule.where.starts_with("--expert-parallel"))
                throw Error(
                    p->device_count() == 0
                        ? fmt::format("--expert-parallel {}: part {} of the experts goes to rank "
                                      "{}, but the mpi backend has no ranks: {}",
                                      o.expert_parallel, ref.device + 1, ref.device + 1,
                                      p->build_info())
                        : fmt::format("--expert-parallel {}: part {} of the experts goes to rank "
                                      "{}, but the job has {} ranks: start {} (mpirun -np {} "
                                      "switchyard ...)",
                                      o.expert_parallel, ref.device + 1, ref.device + 1,
                                      p->device_count() + 1, o.expert_parallel, o.expert_parallel));
            if (ref.device >= p->device_count())
                throw Error("placement rule '" + rule.match + "=" + rule.backend + "' (" +
                            rule.where + "): backend '" + plugin + "' has " +
                            std::to_string(p->device_count()) + " device(s) (" + p->build_info() +
                            ")");
            continue;
        }
        for (const PluginFailure& f : out.host->failures())
            if (std::filesystem::path(f.file).filename().string().find("switchyard-" + plugin) !=
                    std::string::npos ||
                f.file == plugin)
                throw Error("placement rule '" + rule.match + "=" + rule.backend + "' (" +
                            rule.where + "): backend '" + plugin + "' did not load: " + f.reason);
    }

    // Several backends computing on host memory (a config that loads cpu and blas, or --plugin
    // blas): the scheduler places each op, even without a placement or offload setting. A device
    // with its own memory (cuda) still takes -ngl or a placement setting, as before.
    size_t host_backends = 0;
    for (const auto& p : out.host->plugins())
        host_backends += p->device_count() > 0 && p->device_props(0).host_memory != 0;
    const auto several_backends = [&] { return llm::session_backends(*out.host, setup); };
    if (setup.several || host_backends > 1 || backend_ref.device > 0)
        out.several = several_backends();

    gguf::Reader file =
        gguf::Reader::open(o.model, o.no_mmap ? gguf::Residence::read : gguf::Residence::mapped);
    // -c 0: the context the model was trained for, as llama.cpp.
    const bool trained_ctx = o.ctx_given && o.ctx == 0;
    llm::ContextOptions model_options = mo;
    if (trained_ctx) model_options.n_ctx = llm::trained_context(file);
    out.model = llm::load_model(std::move(file), model_options);
    for (const std::string& n : out.model->notes()) out.note(n);
    if (trained_ctx)
        out.note(fmt::format("-c 0: the trained context of {} tokens ({}.context_length)",
                             model_options.n_ctx, out.model->architecture()));
    if (o.mlock) {
        const WeightLock lock = lock_weights(out.model->file());
        if (lock.warning.empty())
            out.note(
                fmt::format("--mlock: {:.1f} MiB of weights locked in memory", mib(lock.bytes)));
        else
            out.warn(lock.warning);
    }

    const llm::Model& model = *out.model;
    const llm::ContextOptions& opt = model.options();
    if (out.plugin->device_count() <= backend_ref.device)
        throw Error("backend '" + backend + "' has no device on this machine" +
                    (o.ngl > 0 ? " (-ngl " + std::to_string(o.ngl) + " asks for a GPU)" : "") +
                    (backend_ref.device > 0
                         ? fmt::format(" ({} has {} device(s))", backend_ref.plugin,
                                       out.plugin->device_count())
                         : ""));
    const bool on_host = out.plugin->device_props(0).host_memory != 0;
    if (o.ngl > 0 && on_host)
        throw Error("-ngl " + std::to_string(o.ngl) + ": backend '" + backend +
                    "' computes on host memory (no GPU); leave --backend out for cuda");
    if (o.ngl == 0 && !on_host)
        throw Error("-ngl 0 keeps the model off the GPU, but --backend " + backend +
                    " computes on its own device: leave one of them out");
    // -ngl N below n_layer + 1 (llama.cpp counts the output layer as one more): the last N
    // repeating layers, their weights and KV cache, on the device; the first layers, the token
    // embeddings and the output on the cpu, which becomes the default backend. Rules (-ot, the
    // config's) come first, as in llama.cpp.
    if (o.ngl > 0 && o.ngl < int(model.n_layer()) + 1) {
        Plugin* cpu = out.host->find("cpu");
        if (cpu == nullptr)
            throw Error(
                fmt::format("-ngl {} puts only part of the model on {}: the rest needs "
                            "the cpu plugin, which is not loaded",
                            o.ngl, backend));
        if (!out.several) out.several = several_backends();
        const uint32_t first =
            llm::offload_last_layers(*out.several, o.ngl, model.n_layer(), backend);
        out.plugin = cpu;
        if (!o.quiet)
            std::fprintf(stderr,
                         "-ngl %d: layers %u-%u (weights and KV cache) on %s, the rest on cpu\n",
                         o.ngl, first, model.n_layer() - 1, backend.c_str());
    }
    if (!out.several && !config.offload.cost_table.empty())
        out.warn("the cost table " + config.offload.cost_table + " (" +
                 config.offload.cost_table_where +
                 ") changes nothing: only one backend runs the model");
    const uint64_t per_token = model.cache_bytes_per_token();
    const uint64_t kv_bytes = per_token * uint64_t(opt.n_ctx);
    if (!o.quiet)
        std::fprintf(
            stderr,
            "model: %s, %s, KV cache %s/%s: %llu B (%.1f KiB) per token, %.2f MiB for "
            "%lld tokens\n",
            o.model.c_str(), model.summary().c_str(), llm::type_name(opt.cache_type_k).c_str(),
            llm::type_name(opt.cache_type_v).c_str(), static_cast<unsigned long long>(per_token),
            double(per_token) / 1024.0, mib(kv_bytes), static_cast<long long>(opt.n_ctx));
    const uint64_t avail = on_host ? llm::available_memory() : 0;  // device: checked later
    if (avail > 0 && kv_bytes > avail)
        throw Error(fmt::format(
            "the KV cache ({:.0f} MiB) does not fit in the {:.0f} MiB of "
            "available memory: lower -c (now {}{}) or use -ctk q8_0 (and -ctv q8_0 with --mla 0)",
            mib(kv_bytes), mib(avail), opt.n_ctx,
            trained_ctx ? ", from -c 0: the trained context" : ""));
    return out;
}

void LoadedModel::note(const std::string& message) const {
    if (!quiet) std::fprintf(stderr, "%s\n", message.c_str());
}

void LoadedModel::set_threads(int threads) {
    for (const auto& p : host->plugins()) p->set_option("threads", std::to_string(threads));
}

void LoadedModel::warn(const std::string& message) {
    warnings.push_back(message);
    if (!quiet) std::fprintf(stderr, "warning: %s\n", message.c_str());
}

std::unique_ptr<llm::Session> LoadedModel::make_session() {
    if (!several) return std::make_unique<llm::Session>(*model, *plugin);
    auto session = std::make_unique<llm::Session>(*model, *several);
    const WeightPlan& plan = session->weight_plan();
    const auto infos = session->backend_infos();
    std::string line;
    for (size_t b = 0; b < infos.size(); ++b) {
        size_t count = 0;
        for (const WeightPlan::Home& h : plan.homes) count += h.backend == int32_t(b);
        line += fmt::format("{}{} {:.2f} MiB ({} tensors)", line.empty() ? "" : ", ", infos[b].name,
                            mib(plan.bytes_per_backend[b]), count);
    }
    if (!quiet) std::fprintf(stderr, "weights: %s\n", line.c_str());
    for (const std::string& w : plan.warnings) warn(w);
    return session;
}

void check_session_memory(const LoadedModel& loaded, llm::Session& session) {
    const llm::ContextOptions& opt = loaded.model->options();
    // The largest compute buffer: a full ubatch at the end of the context.
    const int64_t t = std::min(opt.n_ubatch, opt.n_ctx);
    auto worst = session.build(t, opt.n_ctx - t, false);
    const MemoryPlan plan = plan_memory(worst.graph);
    const std::string amb =
        opt.attn_max_bytes > 0 ? fmt::format(", -amb {}", opt.attn_max_bytes >> 20) : "";
    if (!loaded.quiet)
        std::fprintf(stderr, "compute buffer: %.2f MiB (ubatch %lld at context %lld%s)%s%s\n",
                     mib(plan.peak_bytes), static_cast<long long>(t),
                     static_cast<long long>(opt.n_ctx), amb.c_str(),
                     session.uses_fused_moe() ? ", fused MoE" : "",
                     session.uses_flash_attention() ? ", flash attention" : "");
    // With several backends, the default one's share (the others' were checked when the
    // session placed the weights).
    const size_t primary = session.primary();
    const uint64_t kv =
        session.multi_backend() ? session.cache_bytes_on(primary) : session.cache().bytes();
    // -amb bounds the K.Q scores (no flash attention) and mla 3's decompressed prompts.
    const bool amb_helps = !session.uses_flash_attention() || opt.mla == 3;
    const std::string lower = fmt::format(
        "lower -c (now {}) or -ub (now {}){}{}", opt.n_ctx, opt.n_ubatch,
        amb_helps ? fmt::format(", or -amb (now {} MiB)", opt.attn_max_bytes >> 20) : "",
        session.uses_flash_attention() ? "" : ", or turn on --flash-attn");
    if (session.on_device()) {
        const sy_device_props props = loaded.plugin->device_props(0);
        const uint64_t weights = session.multi_backend()
                                     ? session.weight_plan().bytes_per_backend[primary]
                                     : session.device_weight_bytes();
        const uint64_t reserve = llm::Session::device_reserve(session.largest_weight_elements());
        if (!loaded.quiet)
            std::fprintf(stderr,
                         "on %s: weights %.2f MiB, KV cache %.2f MiB, compute buffer %.2f MiB, "
                         "reserve %.2f MiB; %.0f MiB free\n",
                         props.name, mib(weights), mib(kv), mib(plan.peak_bytes), mib(reserve),
                         mib(props.memory_free));
        if (props.memory_free > 0 && weights + reserve > props.memory_free)
            throw Error(fmt::format(
                "the weights ({:.0f} MiB) and the backend's reserve ({:.0f} MiB) do not fit in "
                "the {:.0f} MiB free on {}: use a smaller quantization (or leave -ngl out)",
                mib(weights), mib(reserve), mib(props.memory_free), props.name));
        if (props.memory_free > 0 && weights + reserve + kv + plan.peak_bytes > props.memory_free)
            throw Error(fmt::format(
                "the weights ({:.0f} MiB), the backend's reserve ({:.0f} MiB), the KV cache "
                "({:.0f} MiB) and the compute buffer ({:.0f} MiB) do not fit in the {:.0f} MiB "
                "free on {}: {}",
                mib(weights), mib(reserve), mib(kv), mib(plan.peak_bytes), mib(props.memory_free),
                props.name, lower));
    } else {
        const uint64_t avail = llm::available_memory();
        if (avail > 0 && kv + plan.peak_bytes > avail)
            throw Error(fmt::format(
                "the KV cache ({:.0f} MiB) and the compute buffer ({:.0f} MiB) do not fit in the "
                "{:.0f} MiB of available memory: {}",
                mib(kv), mib(plan.peak_bytes), mib(avail), lower));
    }
    session.allocate();
}

}  // namespace sy::tools
