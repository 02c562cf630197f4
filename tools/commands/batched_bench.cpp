// `switchyard batched-bench`: llama-batched-bench. For each batch count B (-npl), B sequences
// process a prompt of PP tokens (-npp) each, together, then generate TG tokens (-ntg) each,
// together: a decode step is one graph of B tokens, one per sequence, so the weights are read
// once for all of them. Random tokens; sampling is not timed. Prints llama-batched-bench's
// table: N_KV = B (PP + TG), S_PP = B PP / T_PP, S_TG = B TG / T_TG, S = N_KV / T.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "commands/commands.hpp"
#include "commands/model_session.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/benchmark.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

struct BatchedOptions {
    ModelOptions model;
    std::vector<int64_t> npp{128, 256, 512};
    std::vector<int64_t> ntg{128, 256};
    std::vector<int64_t> npl{1, 2, 4, 8, 16, 32};
    bool no_warmup = false;
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

int run_batched_bench(BatchedOptions o) {
    int64_t need = 0;
    for (int64_t pp : o.npp)
        for (int64_t tg : o.ntg)
            for (int64_t b : o.npl) need = std::max(need, b * (pp + tg));
    if (!o.model.ctx_given) {
        o.model.ctx = need;
    } else if (o.model.ctx > 0 && o.model.ctx < need) {
        throw Error(
            fmt::format("-c {}: the largest test needs {} cells (B (PP + TG)); raise -c "
                        "or leave it out",
                        o.model.ctx, need));
    }
    LoadedModel loaded = load_model(o.model);
    loaded.set_threads(o.model.plugins.threads);
    const std::unique_ptr<llm::Session> session = loaded.make_session();
    check_session_memory(loaded, *session);
    const llm::Model& model = *loaded.model;
    const llm::Tokenizer tok = llm::Tokenizer::for_model(model.file(), model.n_vocab());
    llm::BenchTokens tokens(model.n_vocab(), tok.add_bos() ? tok.bos() : -1);
    const int64_t n_ctx = session->n_ctx();
    if (n_ctx < need)
        throw Error(
            fmt::format("-c 0: the trained context ({}) is below the {} cells the "
                        "largest test needs",
                        n_ctx, need));

    std::printf(
        "\nmain: n_kv_max = %lld, n_ubatch = %lld, flash_attn = %d, is_pp_shared = 0, "
        "n_gpu_layers = %d, n_threads = %d\n\n",
        static_cast<long long>(n_ctx), static_cast<long long>(model.options().n_ubatch),
        session->uses_flash_attention() ? 1 : 0, o.model.ngl, o.model.plugins.threads);
    std::printf("|%6s | %6s | %4s | %6s | %8s | %8s | %8s | %8s | %8s | %8s |\n", "PP", "TG", "B",
                "N_KV", "T_PP s", "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s");
    std::printf("|%6s-|-%6s-|-%4s-|-%6s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|-%8s-|\n", "------",
                "------", "----", "------", "--------", "--------", "--------", "--------",
                "--------", "--------");
    std::fflush(stdout);

    if (!o.no_warmup) {  // first-touch costs (weights paged in, plugin caches) out of the timings
        session->reset();
        session->set_sequences(1);
        const std::vector<int32_t> t = tokens.next(std::min<int64_t>(16, n_ctx), true);
        session->eval(t);
    }
    std::vector<std::vector<int32_t>> text;
    std::vector<llm::Session::SequenceTokens> batch;
    for (int64_t pp : o.npp)
        for (int64_t tg : o.ntg)
            for (int64_t b : o.npl) {
                session->reset();
                session->set_sequences(b);  // n_ctx / b cells each, at least pp + tg
                text.assign(size_t(b), {});
                batch.clear();
                for (int64_t s = 0; s < b; ++s) {
                    text[size_t(s)] = tokens.next(pp, true);
                    batch.push_back({s, text[size_t(s)]});
                }
                const auto t0 = Clock::now();
                session->decode(batch);
                const double t_pp = seconds_since(t0);
                const auto t1 = Clock::now();
                for (int64_t i = 0; i < tg; ++i) {
                    batch.clear();
                    for (int64_t s = 0; s < b; ++s) {
                        text[size_t(s)] = tokens.next(1, false);
                        batch.push_back({s, text[size_t(s)]});
                    }
                    session->decode(batch);
                }
                const double t_tg = seconds_since(t1), t = t_pp + t_tg;
                const int64_t n_kv = b * (pp + tg);
                std::printf(
                    "|%6lld | %6lld | %4lld | %6lld | %8.3f | %8.2f | %8.3f | %8.2f | "
                    "%8.3f | %8.2f |\n",
                    static_cast<long long>(pp), static_cast<long long>(tg),
                    static_cast<long long>(b), static_cast<long long>(n_kv), t_pp,
                    double(b * pp) / t_pp, t_tg, tg > 0 ? double(b * tg) / t_tg : 0.0, t,
                    double(n_kv) / t);
                std::fflush(stdout);
            }
    return 0;
}

}  // namespace

Command add_batched_bench_command(CLI::App& app) {
    auto o = std::make_shared<BatchedOptions>();
    CLI::App* cmd = app.add_subcommand(
        "batched-bench",
        "llama-batched-bench: B sequences' prompts and decode steps run together (-npl B)");
    o->model.add_to(*cmd, "Context length (default: the largest B (PP + TG) of the tests)");
    const auto positive = CLI::Range(int64_t{1}, int64_t{1} << 20);
    cmd->add_option("--n-prompt", o->npp,
                    "Prompt tokens per sequence, a list (default 128,256,512)")
        ->delimiter(',')
        ->check(positive);
    cmd->add_option("--n-gen", o->ntg, "Generated tokens per sequence, a list (default 128,256)")
        ->delimiter(',')
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
    cmd->add_option("--n-parallel", o->npl,
                    "Sequences decoded together, a list (default 1,2,4,8,16,32)")
        ->delimiter(',')
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
    cmd->add_flag("--no-warmup", o->no_warmup, "Time from a cold start (no warm-up eval first)");
    return [o] { return run_batched_bench(*o); };
}

}  // namespace sy::tools
