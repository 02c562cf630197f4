// The parameter grid of `switchyard bench` and `switchyard sweep`: comma-separated lists for
// the model and backend options (as llama-bench takes them), every combination an instance.
#pragma once

#include <string>
#include <vector>

#include "commands/model_session.hpp"
#include "switchyard/llm/benchmark.hpp"

namespace sy::tools {

// One combination: the options a session is made with, and what it runs.
struct BenchInstance {
    ModelOptions model;
    int64_t n_batch = 2048;
    std::string override_text;  // the -ot values as given, joined by ',' ("" none)
    std::vector<llm::BenchTest> tests;
};

struct BenchGrid {
    static constexpr size_t kMaxInstances = 10000;
    // Lists as given (each occurrence may hold a comma-separated list).
    std::vector<std::string> models, threads, batches, ubatches, mla, fused_moe, repack, amb,
        cache_k, cache_v, flash_attn, ngl, n_cpu_moe, configs, cost_tables, tensor_splits, mmap,
        grouped_er;
    // -ot values: as ik_llama.cpp's llama-bench, one placement for every combination, its rules
    // separated by ',' (or ';', mainline's separator) and added up over repeated -ot.
    std::vector<std::string> overrides;
    bool no_flash_attn = false, no_fused_moe = false;  // -no-fa, -no-fmoe: -fa 0, -fmoe 0
    std::vector<std::string> prompts{"512"}, gens{"128"}, depths{"0"}, pg, gp;
    int repetitions = 5;
    bool with_tests = true;  // bench; sweep has no tests and no -b (its batch is the ubatch)
    // Options with one value for every instance.
    ModelOptions base;

    // `tests`: bench's -p -n -d -pg -gp -b -r; sweep has none of them.
    void add_to(CLI::App& app, bool tests);
    // Every combination, models outermost, each checked before anything runs; throws sy::Error
    // naming the flag and the value that does not parse, is out of range or empty, and for more
    // than kMaxInstances combinations.
    std::vector<BenchInstance> instances() const;
    // The tests every instance runs, in llama-bench's order: pp, tg, pg, gp, each at every depth.
    std::vector<llm::BenchTest> tests() const;
};

}  // namespace sy::tools
