// `switchyard sweep`: llama-sweep-bench. The context is filled one ubatch at a time; at every
// depth N_KV it times -n generated tokens (dropped again) and then the ubatch itself, so prompt
// and generation speed can be read against the tokens in the cache. Several values of the grid's
// lists run one after the other; `--plot` draws them (or earlier jsonl results, `--from`) in one
// chart.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands/bench_session.hpp"
#include "commands/progress.hpp"
#include "commands/sweep_plot.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

struct SweepOptions {
    BenchGrid grid;
    int64_t ctx = 0;
    int64_t tg = -1;  // -1: ubatch / 4, as sweep-bench
    std::string format = "md";
    std::string plot;
    std::string title;
    std::vector<std::string> from;
    bool no_warmup = false;
};

// Memory in use on each device of the session (memory_total - memory_free, as its plugin
// reports it: on a GPU the whole device's use, other processes' and the driver's included), by
// backend name; empty when every backend computes on host memory.
std::vector<std::pair<std::string, double>> device_used_mib(const BenchSession& bs) {
    std::vector<std::pair<std::string, double>> out;
    const auto add = [&](Plugin& plugin, int32_t device, const std::string& name) {
        const sy_device_props p = plugin.device_props(device);
        if (p.host_memory || p.memory_total == 0) return;
        const uint64_t used = p.memory_total > p.memory_free ? p.memory_total - p.memory_free : 0;
        out.emplace_back(name, double(used) / 1048576.0);
    };
    const llm::Session& s = *bs.session;
    if (s.multi_backend()) {
        const auto infos = s.backend_infos();
        const auto& backends = s.session_backends().backends;
        for (size_t b = 0; b < backends.size(); ++b)
            add(*backends[b].plugin, backends[b].device, infos[b].name);
    } else {
        add(*bs.loaded.plugin, 0, bs.loaded.plugin->name());
    }
    return out;
}

// What tells the runs apart in a legend: the values of the lists that have more than one.
std::vector<std::string> run_labels(const std::vector<BenchInstance>& runs) {
    std::vector<std::vector<std::pair<std::string, std::string>>> facts;
    for (const BenchInstance& in : runs) {
        const ModelOptions& m = in.model;
        facts.push_back({{"", std::filesystem::path(m.model).stem().string()},
                         {"config ", m.plugins.config_file},
                         {"costs ", m.cost_table},
                         {"-ot ", in.override_text},
                         {"ngl ", std::to_string(m.ngl)},
                         {"ncmoe ", std::to_string(m.n_cpu_moe)},
                         {"t ", std::to_string(m.plugins.threads)},
                         {"ub ", std::to_string(m.ubatch)},
                         {"ctk ", m.cache_type_k},
                         {"ctv ", m.cache_type_v},
                         {"fa ", m.flash_attn},
                         {"mla ", std::to_string(m.mla)},
                         {"amb ", std::to_string(m.attn_max_mib)},
                         {"fmoe ", m.fused_moe < 0 ? "auto" : std::to_string(m.fused_moe)}});
    }
    std::vector<std::string> labels(runs.size());
    for (size_t f = 0; f < facts.front().size(); ++f) {
        bool differs = false;
        for (const auto& run : facts) differs = differs || run[f].second != facts[0][f].second;
        if (!differs && !(f == 0 && runs.size() == 1)) continue;
        for (size_t r = 0; r < runs.size(); ++r)
            labels[r] += (labels[r].empty() ? "" : ", ") + facts[r][f].first + facts[r][f].second;
    }
    return labels;
}

int run_sweep_command(const SweepOptions& o) {
    if (o.format != "md" && o.format != "jsonl")
        throw Error("-o '" + o.format + "': sweep prints md or jsonl");
    if (o.grid.models.empty() && o.from.empty())
        throw Error("sweep: give a model (-m) to run, or result files (--from) to plot");
    if (!o.from.empty() && o.plot.empty())
        throw Error("--from: the results are read to be plotted; give --plot FILE.svg|.png");
    if (!o.plot.empty()) check_plot_path(o.plot);  // before a long sweep, not after
    std::vector<SweepSeries> series;
    for (const std::string& f : o.from)
        for (SweepSeries& s : read_sweep_jsonl(f)) series.push_back(std::move(s));

    std::vector<BenchInstance> runs;
    if (!o.grid.models.empty()) {
        if (o.ctx < 1) throw Error("sweep: give the context to fill with -c");
        runs = o.grid.instances();
    }
    const std::vector<std::string> labels =
        runs.empty() ? std::vector<std::string>{} : run_labels(runs);
    uint64_t total = 0;
    for (const BenchInstance& in : runs) {
        const int64_t tg = o.tg >= 0 ? o.tg : in.model.ubatch / 4;
        total += uint64_t(llm::sweep_row_count(o.ctx, in.model.ubatch, tg));
    }
    ProgressLine progress("sweep");
    uint64_t done = 0;
    std::string title;
    for (size_t i = 0; i < runs.size(); ++i) {
        const BenchInstance& in = runs[i];
        const int64_t tg = o.tg >= 0 ? o.tg : in.model.ubatch / 4;
        if (llm::sweep_row_count(o.ctx, in.model.ubatch, tg) == 0)
            throw Error(fmt::format("-c {}: no room for a ubatch of {} (and -n {}): raise -c",
                                    o.ctx, in.model.ubatch, tg));
        progress.update(done, total, fmt::format("{}/{} loading", i + 1, runs.size()));
        reset_peak_rss();  // each run's own peak
        BenchSession bs = open_bench_session(in, o.ctx);
        const BenchRecord facts = bs.describe(in);
        if (title.empty()) title = facts.model_type;
        const llm::Tokenizer tok =
            llm::Tokenizer::for_model(bs.loaded.model->file(), bs.loaded.model->n_vocab());
        llm::BenchTokens tokens(bs.loaded.model->n_vocab(), tok.add_bos() ? tok.bos() : -1);
        const int64_t ub = facts.n_ubatch;
        nlohmann::ordered_json head = {{"n_kv_max", o.ctx},
                                       {"n_batch", ub},
                                       {"n_ubatch", ub},
                                       {"flash_attn", facts.flash_attn ? 1 : 0},
                                       {"n_gpu_layers", facts.n_gpu_layers},
                                       {"n_threads", facts.n_threads},
                                       {"n_threads_batch", facts.n_threads}};
        progress.clear();
        if (o.format == "md") {
            std::printf(
                "\nmain: n_kv_max = %lld, n_batch = %lld, n_ubatch = %lld, flash_attn = %d, "
                "n_gpu_layers = %d, n_threads = %d, n_threads_batch = %d\n",
                static_cast<long long>(o.ctx), static_cast<long long>(ub),
                static_cast<long long>(ub), facts.flash_attn ? 1 : 0, facts.n_gpu_layers,
                facts.n_threads, facts.n_threads);
            std::printf(
                "switchyard: %s, %s, mla = %d, fused_moe = %d, type_k = %s, backends = %s%s%s\n\n",
                in.model.model.c_str(), facts.model_type.c_str(), facts.mla_attn,
                facts.fused_moe ? 1 : 0, facts.type_k.c_str(), facts.placement.c_str(),
                facts.offload_policy.empty() ? "" : ", offload ", facts.offload_policy.c_str());
            std::string devices_head, devices_rule;
            for (const auto& [name, used] : device_used_mib(bs)) {
                devices_head += fmt::format(" {:>11} |", name + " MiB");
                devices_rule += "-------------|";
            }
            std::printf(
                "|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s | RSS HWM "
                "MiB |%s\n",
                devices_head.c_str());
            std::printf(
                "|-------|--------|--------|----------|----------|----------|----------|-----------"
                "--|%s\n",
                devices_rule.c_str());
            std::fflush(stdout);
        }
        SweepSeries s{labels[i], {}};
        llm::run_sweep(*bs.session, tokens, ub, tg, !o.no_warmup, [&](const llm::SweepRow& r) {
            const double rss = peak_rss_mib();
            // Device buffers only grow during a run (weights, KV cache, compute and staging
            // buffers), so the use after the row is the run's peak so far.
            const auto devices = device_used_mib(bs);
            progress.clear();
            if (o.format == "md") {
                std::string cells;
                for (const auto& [name, used] : devices) cells += fmt::format(" {:11.1f} |", used);
                std::printf(
                    "| %5lld | %6lld | %6lld | %8.3f | %8.2f | %8.3f | %8.2f | %11.1f |%s\n",
                    static_cast<long long>(r.pp), static_cast<long long>(r.tg),
                    static_cast<long long>(r.n_kv), r.t_pp, r.speed_pp(), r.t_tg, r.speed_tg(), rss,
                    cells.c_str());
            } else {
                nlohmann::ordered_json j = head;
                j["pp"] = r.pp;
                j["tg"] = r.tg;
                j["n_kv"] = r.n_kv;
                j["t_pp"] = r.t_pp;
                j["speed_pp"] = r.speed_pp();
                j["t_tg"] = r.t_tg;
                j["speed_tg"] = r.speed_tg();
                j["rss_hwm_mib"] = rss;
                if (!devices.empty()) {
                    nlohmann::ordered_json used = nlohmann::ordered_json::object();
                    for (const auto& [name, mib] : devices) used[name] = mib;
                    j["device_used_mib"] = used;
                }
                j["label"] = labels[i];
                j["model"] = in.model.model;
                j["mla"] = facts.mla_attn;
                j["fused_moe"] = facts.fused_moe;
                j["backends"] = facts.backends;
                j["placement"] = facts.placement;
                j["warnings"] = bs.warnings;
                std::printf("%s\n",
                            j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                                .c_str());
            }
            std::fflush(stdout);
            s.points.push_back({double(r.n_kv), r.speed_pp(), r.speed_tg()});
            progress.update(++done, total,
                            fmt::format("{}/{} N_KV {}", i + 1, runs.size(), r.n_kv));
        });
        if (o.format == "md" && !bs.warnings.empty()) {
            std::printf("\nwarnings:\n");
            for (const std::string& w : bs.warnings) std::printf("- %s\n", w.c_str());
        }
        series.push_back(std::move(s));
    }
    if (!runs.empty()) progress.finish();
    if (!o.plot.empty()) {
        plot_sweep(o.plot, series,
                   !o.title.empty()
                       ? o.title
                       : (title.empty() ? "switchyard sweep" : "switchyard sweep: " + title));
        std::fprintf(stderr, "sweep: chart written to %s\n", o.plot.c_str());
    }
    return 0;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
    auto o = std::make_shared<SweepOptions>();
    CLI::App* cmd = app.add_subcommand(
        "sweep",
        "Prompt and generation speed against the tokens in the cache, as llama-sweep-bench");
    o->grid.add_to(*cmd, false);
    cmd->add_option("-c,--ctx-size", o->ctx, "The context to fill, one ubatch at a time")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
    cmd->add_option("-n,--n-gen", o->tg, "Tokens generated at every depth (default ubatch/4)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
    cmd->add_option("-o,--output-format", o->format, "md (a table per run) or jsonl");
    cmd->add_option("--plot", o->plot,
                    "Draw PP and TG t/s against N_KV, every run (and --from file) overlaid: "
                    "FILE.svg or FILE.png");
    cmd->add_option(
        "--from", o->from,
        "Sweep jsonl results to plot with the runs (repeatable; without -m, plot only)");
    cmd->add_option("--title", o->title, "The chart's title");
    cmd->add_flag("--no-warmup", o->no_warmup, "No warm-up ubatch before the first row");
    return [o] { return run_sweep_command(*o); };
}

}  // namespace sy::tools
