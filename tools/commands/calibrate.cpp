// `switchyard calibrate`: measures the real time of every node shape of a model on every loaded
// backend (llm/calibration.hpp) and writes the cost table (core/cost_table.hpp) that run, bench,
// sweep, perplexity and plan then take with --cost-table or [offload] cost_table.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

#include "commands/model_session.hpp"
#include "commands/progress.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/calibration.hpp"
#include "switchyard/version.hpp"

namespace sy::tools {
namespace {

struct CalibrateOptions {
    ModelOptions model;
    std::string output;
    std::vector<int64_t> batches{1, 16, 64, 256, 512};
    int repetitions = 3;
};

// Writes next to the target and renames, so that a failed run leaves no half-written table.
void write_file(const std::string& path, const std::string& text) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw Error("-o " + path + ": is a directory");
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw Error("-o " + path + ": cannot write " + tmp);
        out << text;
        out.close();
        if (!out) throw Error("-o " + path + ": writing " + tmp + " failed");
    }
    fs::rename(tmp, path, ec);
    if (ec) {
        fs::remove(tmp, ec);
        throw Error("-o " + path + ": cannot replace the file: " + ec.message());
    }
}

std::string utc_now() {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

int run_calibrate(CalibrateOptions& o) {
    if (o.batches.empty()) throw Error("--batches: give at least one batch size");
    {  // before the work, not after it
        namespace fs = std::filesystem;
        std::error_code ec;
        if (fs::is_directory(o.output, ec)) throw Error("-o " + o.output + ": is a directory");
        const fs::path parent = fs::path(o.output).parent_path();
        if (!parent.empty() && !fs::is_directory(parent, ec))
            throw Error("-o " + o.output + ": cannot write there (" + parent.string() +
                        " is not a directory)");
    }
    const int64_t largest = *std::max_element(o.batches.begin(), o.batches.end());
    if (o.model.ctx == 0) o.model.ctx = std::max<int64_t>(largest, 1);
    LoadedModel loaded = load_model(o.model);
    llm::SessionBackends backends;
    if (loaded.several) {
        backends = *loaded.several;
    } else {
        backends.backends = {{loaded.plugin, 0}};
    }
    std::vector<std::string> names;
    for (const Scheduler::Backend& b : backends.backends)
        names.push_back(backend_name(*b.plugin, b.device));

    ProgressLine progress("calibrate");
    const uint64_t steps = backends.backends.size() * o.batches.size();
    uint64_t done = 0;
    llm::CalibrationOptions co;
    co.batches = o.batches;
    co.repetitions = o.repetitions;
    co.progress = [&](const std::string& what) { progress.update(done++, steps, what); };
    const llm::Calibration c = llm::calibrate(*loaded.model, backends, co);
    progress.finish();

    const std::vector<std::pair<std::string, std::string>> about = {
        {"switchyard", std::string(SWITCHYARD_VERSION) + " (" + SWITCHYARD_GIT_COMMIT + ")"},
        {"date", utc_now()},
        {"model", o.model.model},
        {"backends", fmt::format("{}", fmt::join(names, ", "))},
        {"batches", fmt::format("{}", fmt::join(o.batches, ", "))},
        {"repetitions", std::to_string(o.repetitions)},
        {"threads", o.model.plugins.threads > 0 ? std::to_string(o.model.plugins.threads)
                                                : "the plugins' default"},
    };
    write_file(o.output, c.table.to_toml(about));

    // What each backend measured, per batch: its nodes' medians summed, products apart.
    std::printf("| batch | backend | products | ms | other nodes | ms |\n");
    std::printf("| ---: | --- | ---: | ---: | ---: | ---: |\n");
    for (const llm::CalibrationTotal& t : c.totals)
        std::printf("| %lld | %s | %lld | %.3f | %lld | %.3f |\n", static_cast<long long>(t.batch),
                    t.backend.c_str(), static_cast<long long>(t.product_nodes), t.product_ns / 1e6,
                    static_cast<long long>(t.other_nodes), t.other_ns / 1e6);
    std::printf("\nwrote %zu measured node shapes to %s; use it with --cost-table %s\n",
                c.table.size(), o.output.c_str(), o.output.c_str());
    return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
    auto o = std::make_shared<CalibrateOptions>();
    CLI::App* cmd = app.add_subcommand(
        "calibrate",
        "Measure every node shape of a model on every loaded backend and write a cost table that "
        "placement prefers over the plugins' hints (--cost-table)");
    o->model.add_to(*cmd, "Context length (default: the largest batch)");
    cmd->add_option("-o,--output", o->output, "The cost table to write (TOML)")->required();
    cmd->add_option("--batches", o->batches,
                    "Tokens per measured graph, comma-separated (1: a generation step; each at "
                    "most -ub)")
        ->delimiter(',')
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
    cmd->add_option("-r,--repetitions", o->repetitions,
                    "Timed runs per batch after one warm-up run (the median is kept)")
        ->check(CLI::Range(1, 1000));
    return [o] { return run_calibrate(*o); };
}

}  // namespace sy::tools
