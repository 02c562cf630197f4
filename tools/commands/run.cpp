// `switchyard run`: text in, text out, on a deepseek2 GGUF (llm/deepseek2 does the work).
// The generated text streams to stdout; everything else (sizes, timings) goes to stderr.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "commands/commands.hpp"
#include "switchyard/core/config.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/memory_planner.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/plugin_setup.hpp"
#include "switchyard/llm/deepseek2.hpp"
#include "switchyard/llm/sampler.hpp"
#include "switchyard/llm/tensor_types.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

using Clock = std::chrono::steady_clock;

struct RunOptions {
    PluginOptions plugins;
    std::string model;
    std::string prompt;
    std::string prompt_file;
    int n_predict = 64;
    std::string backend = "cpu";
    int mla = 3;
    int fused_moe = -1;
    std::string cache_type_k = "f16";
    std::string cache_type_v = "f16";
    int64_t ctx = 0;
    int64_t ubatch = 512;
    std::string ser;
    bool no_group_routing = false;
    llm::SamplerParams sampling;
    bool ignore_eos = false;
    bool print_tokens = false;
    bool no_special = false;
    std::string logits_out;
};

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

int32_t cache_type(const std::string& flag, const std::string& name) {
    const auto t = llm::parse_type_name(name);
    if (!t) throw Error(flag + " '" + name + "': unknown type (f32, f16, bf16)");
    return *t;
}

double mib(uint64_t bytes) {
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// MemAvailable from /proc/meminfo, or 0 when unknown.
uint64_t available_memory() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

// Logits of every evaluated position as a float32 .npy array {positions, n_vocab}.
class NpyWriter {
  public:
    NpyWriter(const std::string& path, int64_t n_vocab) : path_(path), n_vocab_(n_vocab) {}
    void add(const std::vector<float>& logits) {
        data_.insert(data_.end(), logits.begin(), logits.end());
    }
    void write() const {
        const int64_t rows = static_cast<int64_t>(data_.size()) / n_vocab_;
        std::string header = fmt::format(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, n_vocab_);
        const size_t total = 10 + header.size() + 1;
        header.append((64 - total % 64) % 64, ' ');
        header.push_back('\n');
        const std::string tmp = path_ + ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            if (!out) throw Error("--logits-out " + path_ + ": cannot create the file");
            const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
            out.write(magic, 8);
            const auto len = static_cast<uint16_t>(header.size());
            const char len_bytes[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
            out.write(len_bytes, 2);
            out.write(header.data(), static_cast<std::streamsize>(header.size()));
            out.write(reinterpret_cast<const char*>(data_.data()),
                      static_cast<std::streamsize>(data_.size() * sizeof(float)));
            if (!out) throw Error("--logits-out " + path_ + ": write failed");
        }
        std::filesystem::rename(tmp, path_);
    }

  private:
    std::string path_;
    int64_t n_vocab_;
    std::vector<float> data_;
};

int run_run(const RunOptions& o) {
    if (o.prompt.empty() == o.prompt_file.empty())
        throw Error("run: give the prompt with exactly one of -p TEXT or -f FILE");
    std::string prompt = o.prompt;
    if (!o.prompt_file.empty()) {
        std::ifstream in(o.prompt_file, std::ios::binary);
        if (!in) throw Error("-f " + o.prompt_file + ": cannot open the file");
        std::stringstream ss;
        ss << in.rdbuf();
        prompt = ss.str();
    }
    llm::validate(o.sampling);
    if (o.n_predict < 0) throw Error("-n " + std::to_string(o.n_predict) + ": must be >= 0");

    llm::Deepseek2Options mo;
    mo.mla = o.mla;
    mo.fused_moe = o.fused_moe;
    mo.cache_type_k = cache_type("-ctk", o.cache_type_k);
    mo.cache_type_v = cache_type("-ctv", o.cache_type_v);
    mo.n_ctx = o.ctx;
    mo.n_ubatch = o.ubatch;
    mo.group_routing = !o.no_group_routing;
    if (!o.ser.empty()) {
        const auto comma = o.ser.find(',');
        try {
            mo.ser_min_experts = std::stoi(o.ser.substr(0, comma));
            mo.ser_threshold =
                comma == std::string::npos ? 1.0f : std::stof(o.ser.substr(comma + 1));
        } catch (const std::exception&) {
            throw Error("-ser '" + o.ser + "': expected K,t (e.g. 6,1)");
        }
        if (mo.ser_threshold < 1.0f)
            throw Error("-ser '" + o.ser +
                        "': only a fixed expert count (t >= 1) is implemented so far");
    }

    const auto t_load = Clock::now();
    PluginHost host;
    Config config = o.plugins.config_file.empty() ? Config{} : load_config(o.plugins.config_file);
    // Without a plugin list in the configuration, load just the backend that runs the model.
    if (config.plugins.load.empty()) config.plugins.load.push_back(o.backend);
    for (const std::string& w : setup_plugins(host, config, o.plugins.plugins, o.plugins.threads))
        std::fprintf(stderr, "warning: %s\n", w.c_str());
    Plugin* plugin = host.find(o.backend);
    if (plugin == nullptr) {
        std::string why;
        for (const PluginFailure& f : host.failures()) why += "\n  " + f.file + ": " + f.reason;
        throw Error("run: backend '" + o.backend + "' is not loaded" + why);
    }
    llm::Deepseek2Model model(gguf::Reader::open(o.model), mo);
    const llm::Tokenizer tok = llm::Tokenizer::from_gguf(model.file());
    const llm::Deepseek2HParams& hp = model.hparams();
    const llm::Deepseek2Options& opt = model.options();

    // Sizes before anything big is allocated.
    const uint64_t kv_bytes = llm::Deepseek2Cache::bytes_per_token(hp, opt) * uint64_t(opt.n_ctx);
    std::fprintf(stderr,
                 "model: %s, %u layers, %u experts (%u used), mla %d, KV cache %s/%s: %llu B "
                 "(%.1f KiB) per token, %.2f MiB for %lld tokens\n",
                 o.model.c_str(), hp.n_layer, hp.n_expert, hp.n_expert_used, opt.mla,
                 llm::type_name(opt.cache_type_k).c_str(), llm::type_name(opt.cache_type_v).c_str(),
                 static_cast<unsigned long long>(llm::Deepseek2Cache::bytes_per_token(hp, opt)),
                 double(llm::Deepseek2Cache::bytes_per_token(hp, opt)) / 1024.0, mib(kv_bytes),
                 static_cast<long long>(opt.n_ctx));
    const uint64_t avail = available_memory();
    if (avail > 0 && kv_bytes > avail)
        throw Error(
            fmt::format("the KV cache ({:.0f} MiB) does not fit in the {:.0f} MiB of "
                        "available memory: lower -c (now {}) or use -ctk/-ctv bf16",
                        mib(kv_bytes), mib(avail), opt.n_ctx));

    llm::Deepseek2Session session(model, *plugin);
    {
        // The largest compute buffer: a full ubatch at the end of the context.
        const int64_t t = std::min(opt.n_ubatch, opt.n_ctx);
        auto worst = session.build(t, opt.n_ctx - t, false);
        const MemoryPlan plan = plan_memory(worst.graph);
        std::fprintf(stderr, "compute buffer: %.2f MiB (ubatch %lld at context %lld)%s\n",
                     mib(plan.peak_bytes), static_cast<long long>(t),
                     static_cast<long long>(opt.n_ctx),
                     session.uses_fused_moe() ? ", fused MoE" : "");
        if (avail > 0 && kv_bytes + plan.peak_bytes > avail)
            throw Error(
                fmt::format("KV cache + compute buffer ({:.0f} MiB) exceed the {:.0f} "
                            "MiB available: lower -c or -ub",
                            mib(kv_bytes + plan.peak_bytes), mib(avail)));
    }
    const double load_s = seconds_since(t_load);

    std::vector<int32_t> tokens = tok.encode(prompt, tok.add_bos(), !o.no_special);
    if (tokens.empty()) throw Error("run: the prompt encodes to no tokens");
    if (static_cast<int64_t>(tokens.size()) > opt.n_ctx)
        throw Error(fmt::format("the prompt has {} tokens, more than the context of {}: raise -c",
                                tokens.size(), opt.n_ctx));
    if (o.print_tokens) {
        std::string ids;
        for (int32_t t : tokens) ids += (ids.empty() ? "" : " ") + std::to_string(t);
        std::fprintf(stderr, "prompt tokens: %s\n", ids.c_str());
    }

    std::unique_ptr<NpyWriter> npy;
    if (!o.logits_out.empty()) npy = std::make_unique<NpyWriter>(o.logits_out, hp.n_vocab);
    llm::Sampler sampler(o.sampling);
    for (int32_t t : tokens) sampler.accept(t);

    const auto t_prompt = Clock::now();
    std::vector<float> logits = session.eval(tokens, npy != nullptr);
    const double prompt_s = seconds_since(t_prompt);
    if (npy) {
        npy->add(logits);
        logits.erase(logits.begin(), logits.end() - hp.n_vocab);
    }

    std::vector<int32_t> generated;
    std::string stop_reason = "-n reached";
    const auto t_gen = Clock::now();
    double gen_eval_s = 0;
    for (int i = 0; i < o.n_predict; ++i) {
        const int32_t next = sampler.sample(logits);
        sampler.accept(next);
        generated.push_back(next);
        if (o.print_tokens) std::fprintf(stdout, "[%d]", next);
        const std::string piece = tok.token_bytes(next);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        if (!o.ignore_eos && tok.is_end_of_generation(next)) {
            stop_reason = "end of generation token";
            break;
        }
        if (i + 1 == o.n_predict) break;
        if (session.n_past() >= session.n_ctx()) {
            stop_reason =
                fmt::format("the context of {} tokens is full (raise -c)", session.n_ctx());
            break;
        }
        const auto t0 = Clock::now();
        logits = session.eval(std::span<const int32_t>(&next, 1));
        gen_eval_s += seconds_since(t0);
        if (npy) npy->add(logits);
    }
    const double gen_s = seconds_since(t_gen);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (npy) npy->write();

    const llm::EvalStats& st = session.stats();
    const size_t evaluated = generated.empty() ? 0 : generated.size() - 1;
    std::fprintf(stderr, "\nstopped: %s\n", stop_reason.c_str());
    std::fprintf(stderr, "load:       %8.3f s\n", load_s);
    std::fprintf(stderr, "prompt:     %6zu tokens in %8.3f s = %9.2f t/s\n", tokens.size(),
                 prompt_s, double(tokens.size()) / prompt_s);
    std::fprintf(stderr,
                 "generation: %6zu tokens in %8.3f s = %9.2f t/s (%zu evaluated, %.2f t/s)\n",
                 generated.size(), gen_s, gen_s > 0 ? double(generated.size()) / gen_s : 0.0,
                 evaluated, gen_eval_s > 0 ? double(evaluated) / gen_eval_s : 0.0);
    const double tg = gen_eval_s > 0 ? double(evaluated) / gen_eval_s : 0.0;
    std::fprintf(stderr, "weights read per generated token: %.1f MiB (%.2f GB/s at %.2f t/s)\n",
                 mib(model.weight_bytes_per_token()),
                 double(model.weight_bytes_per_token()) * tg / 1e9, tg);
    std::fprintf(stderr, "host graph building: %.1f%% of evaluation time (%lld graphs)\n",
                 100.0 * st.graph_build_seconds / (st.graph_build_seconds + st.compute_seconds),
                 static_cast<long long>(st.graphs));
    std::fprintf(stderr, "KV cache: %.2f MiB, compute buffer: %.2f MiB\n",
                 mib(session.cache().bytes()), mib(st.compute_buffer_bytes));
    return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App* cmd = app.add_subcommand("run", "Generate text with a deepseek2 GGUF model");
    o->plugins.add_to(*cmd);
    cmd->add_option("-m,--model", o->model, "GGUF model file (first shard of a split model)")
        ->required();
    cmd->add_option("-p,--prompt", o->prompt, "Prompt text");
    cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from this file");
    cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate");
    cmd->add_option("--backend", o->backend, "Backend plugin that runs the model");
    cmd->add_option("-c,--ctx-size", o->ctx, "Context length (default: min(4096, trained))")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
    cmd->add_option("--ubatch-size", o->ubatch, "Tokens per graph (physical batch)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
    cmd->add_option("--mla", o->mla,
                    "Attention: 0 standard, 1/2 latent, 3 latent + "
                    "decompressed prompt")
        ->check(CLI::Range(0, 3));
    cmd->add_option("--fused-moe", o->fused_moe,
                    "1: require the fused MoE op, 0: never (default: when a backend has it)")
        ->check(CLI::Range(0, 1));
    cmd->add_option("--cache-type-k", o->cache_type_k, "K cache type: f32, f16, bf16");
    cmd->add_option("--cache-type-v", o->cache_type_v, "V cache type: f32, f16, bf16");
    cmd->add_option("--smart-expert-reduction", o->ser, "K,t: use K experts per token");
    cmd->add_flag("--no-group-routing", o->no_group_routing,
                  "Ignore expert_group_count (plain top-k, as ik_llama.cpp)");
    cmd->add_option("--temp", o->sampling.temperature, "Temperature (0: greedy)");
    cmd->add_option("--top-k", o->sampling.top_k, "Top-k (0: off)");
    cmd->add_option("--top-p", o->sampling.top_p, "Top-p (1: off)");
    cmd->add_option("--min-p", o->sampling.min_p, "Min-p (0: off)");
    cmd->add_option("--repeat-penalty", o->sampling.repeat_penalty, "Repetition penalty (1: off)");
    cmd->add_option("--repeat-last-n", o->sampling.repeat_last_n, "Tokens the penalty looks at");
    cmd->add_option("-s,--seed", o->sampling.seed, "Sampling seed");
    cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep generating after an end-of-text token");
    cmd->add_flag("--tokens", o->print_tokens, "Print token ids (prompt on stderr, output inline)");
    cmd->add_flag("--no-special", o->no_special, "Do not parse special tokens in the prompt");
    cmd->add_option("--logits-out", o->logits_out,
                    "Write the logits of every evaluated position (float32 .npy)");
    return [o] { return run_run(*o); };
}

}  // namespace sy::tools
