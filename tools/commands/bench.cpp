// `switchyard bench`: llama-bench's tests (ppN, tgN, ppP+tgN, ik_llama.cpp's tgN@ppP, each at
// -d depths) for every combination of the comma-separated parameter lists, -r timed
// repetitions after a warm-up, reported in llama-bench's formats. Results go to stdout,
// progress to stderr; what loading warned about is kept with the results.
#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "commands/bench_session.hpp"
#include "commands/progress.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/profile.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

struct BenchOptions {
    BenchGrid grid;
    std::string format = "md";
    bool no_warmup = false;
    bool profile = false;
    bool interleave = false;
};

int run_bench(const BenchOptions& o) {
    const BenchFormat format = parse_bench_format(o.format);
    const std::vector<BenchInstance> instances = o.grid.instances();
    if (instances.front().tests.empty())
        throw Error("bench: nothing to run (-p 0 and -n 0, and no -pg or -gp)");

    BenchPrinter printer(format, stdout);
    ProgressLine progress("bench");
    const uint64_t total =
        instances.size() * instances.front().tests.size() * uint64_t(o.grid.repetitions);
    uint64_t done = 0;
    // Without --interleave a combination's repetitions run back to back; with it, in rounds of
    // one repetition of every combination (each round loads the combination again and warms
    // up), so that every combination samples the whole run's machine states.
    const int rounds = o.interleave ? o.grid.repetitions : 1;
    const int reps = o.interleave ? 1 : o.grid.repetitions;
    std::vector<std::vector<BenchRecord>> records(instances.size());
    try {
        for (int round = 0; round < rounds; ++round) {
            for (size_t i = 0; i < instances.size(); ++i) {
                const BenchInstance& in = instances[i];
                int64_t n_ctx = 1;
                for (const llm::BenchTest& t : in.tests)
                    n_ctx = std::max(n_ctx, t.context_needed());
                const std::string where = fmt::format("{}/{}", i + 1, instances.size());
                progress.update(done, total, where + " loading");
                BenchSession bs = open_bench_session(in, n_ctx);
                const BenchRecord base = bs.describe(in);
                const llm::Tokenizer tok =
                    llm::Tokenizer::for_model(bs.loaded.model->file(), bs.loaded.model->n_vocab());
                Profile profile;
                for (size_t k = 0; k < in.tests.size(); ++k) {
                    const llm::BenchTest& test = in.tests[k];
                    if (records[i].size() <= k) {
                        records[i].push_back(base);
                        records[i][k].test = test;
                        records[i][k].test_time = utc_now();
                    }
                    BenchRecord& r = records[i][k];
                    llm::BenchTokens tokens(bs.loaded.model->n_vocab(),
                                            tok.add_bos() ? tok.bos() : -1);
                    progress.update(done, total, where + " " + test.label());
                    const llm::BenchSamples samples = llm::run_bench_test(
                        *bs.session, tokens, test, reps, in.n_batch, !o.no_warmup,
                        [&](int rep) {
                            progress.update(++done, total,
                                            fmt::format("{} {} rep {}/{}", where, test.label(),
                                                        round + rep + 1, o.grid.repetitions));
                        },
                        o.profile ? &profile : nullptr);
                    r.samples.ns.insert(r.samples.ns.end(), samples.ns.begin(), samples.ns.end());
                    r.samples.ts.insert(r.samples.ts.end(), samples.ts.begin(), samples.ts.end());
                    if (samples.shares && r.samples.shares)
                        r.samples.shares->add(*samples.shares);
                    else if (samples.shares)
                        r.samples.shares = samples.shares;
                    if (round + 1 == rounds) {
                        progress.clear();
                        printer.add(r);
                    }
                }
                if (o.profile && !profile.empty()) {
                    progress.clear();
                    std::fprintf(stderr,
                                 "\nprofile of combination %s (%s, its timed repetitions%s):\n%s",
                                 where.c_str(), base.model_type.c_str(),
                                 o.interleave ? fmt::format(" of round {}", round + 1).c_str() : "",
                                 profile.format().c_str());
                }
            }
        }
    } catch (...) {
        // What was measured before the failure is still printed (with --interleave: the
        // repetitions of the rounds that ran); a record with all its repetitions was printed.
        progress.clear();
        for (const std::vector<BenchRecord>& tests : records)
            for (const BenchRecord& r : tests)
                if (!r.samples.ns.empty() && r.samples.ns.size() < size_t(o.grid.repetitions))
                    printer.add(r);
        printer.finish();
        throw;
    }
    progress.finish();
    printer.finish();
    return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
    auto o = std::make_shared<BenchOptions>();
    CLI::App* cmd = app.add_subcommand("bench",
                                       "Prompt and generation speed as llama-bench measures it, "
                                       "for every combination of the given lists");
    o->grid.add_to(*cmd, true);
    cmd->add_option("-o,--output", o->format, "md, csv, json, jsonl or sql (default md)");
    cmd->add_flag("--no-warmup", o->no_warmup, "Time from a cold start (no warm-up eval first)");
    cmd->add_flag("--interleave", o->interleave,
                  "Run the repetitions in rounds: one of every combination per round (loaded "
                  "and warmed up again), so that each samples the whole run's machine states");
    cmd->add_flag(
        "--profile", o->profile,
        "Time every op of the timed repetitions (run one at a time, so slower) and print, "
        "per combination on stderr, ops and matrix products by weight, copies and the "
        "host's share");
    return [o] { return run_bench(*o); };
}

}  // namespace sy::tools
