// Timed prompt processing and generation on a deepseek2 session, as llama-bench and
// llama-sweep-bench measure them: random tokens (BOS first where the vocabulary adds one), the
// prompt in n_batch chunks, generation one token per eval; what a test needs in the cache
// beforehand (depth, or gp's prompt) is evaluated once, untimed, and every repetition starts
// from there again.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "switchyard/llm/session.hpp"

namespace sy::llm {

// One test of llama-bench's: ppN (n_prompt), tgN (n_gen), ppP+tgN (both, timed together), or
// ik_llama.cpp's tgN@ppP (gen_after_prompt: the prompt untimed, N generated tokens timed);
// n_depth tokens are in the cache first ("... @ dD").
struct BenchTest {
    int64_t n_prompt = 0;
    int64_t n_gen = 0;
    int64_t n_depth = 0;
    bool gen_after_prompt = false;

    std::string label() const;       // "pp512", "tg128", "pp512+tg128", "tg128@pp512", " @ d4096"
    int64_t timed_tokens() const;    // what t/s counts
    int64_t context_needed() const;  // n_depth + n_prompt + n_gen
};

struct BenchSamples {
    std::vector<int64_t> ns;  // per repetition
    std::vector<double> ts;   // timed tokens per second, per repetition
    // Where the timed repetitions' evaluation time went (a hybrid run's overhead share); none
    // under a profile.
    std::optional<EvalTimeShares> shares;
    double avg_ns() const;
    double stddev_ns() const;  // sample standard deviation (n - 1); 0 for one sample
    double avg_ts() const;
    double stddev_ts() const;
};

// Random token ids for benchmarks (a fixed seed: every run evaluates the same tokens); `bos`
// -1 when the vocabulary adds none.
class BenchTokens {
  public:
    BenchTokens(uint32_t n_vocab, int32_t bos, uint32_t seed = 1);
    std::vector<int32_t> next(int64_t n, bool bos_first);

  private:
    std::mt19937 rng_;
    std::uniform_int_distribution<int32_t> dist_;
    int32_t bos_;
};

// Evaluates `n` tokens in chunks of n_batch; returns the seconds taken.
double eval_prompt(Session& session, BenchTokens& tokens, int64_t n, int64_t n_batch,
                   bool bos_first);
// Generates `n` tokens one eval at a time (random tokens: sampling is not timed, as in
// llama-bench); returns the seconds taken.
double eval_generation(Session& session, BenchTokens& tokens, int64_t n);

// Runs `test` on `session` (which must have room for test.context_needed()): a warm-up (a
// prompt batch of the test's size and one generation step) unless `warmup` is false, the
// untimed prefix once, then `reps` timed repetitions, each from the prefix. `on_rep` is called
// after each one. With a `profile`, the timed repetitions (only they) are recorded into it.
BenchSamples run_bench_test(Session& session, BenchTokens& tokens, const BenchTest& test, int reps,
                            int64_t n_batch, bool warmup,
                            const std::function<void(int rep)>& on_rep = {},
                            Profile* profile = nullptr);

// One row of a sweep (llama-sweep-bench): at n_kv cached tokens, `tg` tokens generated one by
// one (then dropped from the cache again), and a ubatch of `pp` tokens evaluated (kept: the
// next row starts after it).
struct SweepRow {
    int64_t pp = 0, tg = 0, n_kv = 0;
    double t_pp = 0, t_tg = 0;  // seconds
    double speed_pp() const { return t_pp > 0 ? double(pp) / t_pp : 0; }
    double speed_tg() const { return t_tg > 0 ? double(tg) / t_tg : 0; }
};

// Fills the context one ubatch at a time from empty: a row for n_kv = 0, ub, 2 ub, ... while a
// whole ubatch still fits (and `tg` tokens after it); `on_row` is called after each row.
// `warmup` first evaluates one ubatch and one generation step (then the cache is empty again).
std::vector<SweepRow> run_sweep(Session& session, BenchTokens& tokens, int64_t ubatch, int64_t tg,
                                bool warmup, const std::function<void(const SweepRow&)>& on_row);
// The rows run_sweep makes for a context of n_ctx.
int64_t sweep_row_count(int64_t n_ctx, int64_t ubatch, int64_t tg);

}  // namespace sy::llm
