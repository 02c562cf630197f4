// What bench and sweep share: a session made from one instance of the parameter grid (quietly:
// problems become warnings kept with the results) and the facts their reports print about it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "commands/bench_grid.hpp"
#include "commands/bench_report.hpp"

namespace sy::tools {

struct BenchSession {
    LoadedModel loaded;
    std::unique_ptr<llm::Session> session;
    // Loading's warnings, then the modes that fell back (fused MoE, flash attention when asked
    // for "auto") and the ops placed somewhere slow.
    std::vector<std::string> warnings;
    // The record's fields that describe the session (everything but the test and samples).
    BenchRecord describe(const BenchInstance& in) const;
};

// Loads the instance's model for a context of `n_ctx` tokens and allocates the session.
BenchSession open_bench_session(const BenchInstance& in, int64_t n_ctx);

std::string cpu_model_name();
// Peak resident memory of this process (MiB) since the last reset_peak_rss() (or its start,
// where the kernel cannot reset it).
double peak_rss_mib();
void reset_peak_rss();
// The current UTC time as RFC 3339 ("2026-11-23T19:18:04Z").
std::string utc_now();

}  // namespace sy::tools
