#include "switchyard/llm/benchmark.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

template <typename T>
double mean(const std::vector<T>& v) {
    if (v.empty()) return 0;
    return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

template <typename T>
double stddev(const std::vector<T>& v) {
    if (v.size() < 2) return 0;
    const double m = mean(v);
    double sq = 0;
    for (T x : v) sq += (double(x) - m) * (double(x) - m);
    return std::sqrt(sq / double(v.size() - 1));
}

}  // namespace

std::string BenchTest::label() const {
    std::string s;
    if (gen_after_prompt)
        s = "tg" + std::to_string(n_gen) + "@pp" + std::to_string(n_prompt);
    else if (n_prompt > 0 && n_gen > 0)
        s = "pp" + std::to_string(n_prompt) + "+tg" + std::to_string(n_gen);
    else if (n_prompt > 0)
        s = "pp" + std::to_string(n_prompt);
    else
        s = "tg" + std::to_string(n_gen);
    if (n_depth > 0) s += " @ d" + std::to_string(n_depth);
    return s;
}

int64_t BenchTest::timed_tokens() const {
    return gen_after_prompt ? n_gen : n_prompt + n_gen;
}

int64_t BenchTest::context_needed() const {
    return n_depth + n_prompt + n_gen;
}

double BenchSamples::avg_ns() const {
    return mean(ns);
}
double BenchSamples::stddev_ns() const {
    return stddev(ns);
}
double BenchSamples::avg_ts() const {
    return mean(ts);
}
double BenchSamples::stddev_ts() const {
    return stddev(ts);
}

BenchTokens::BenchTokens(uint32_t n_vocab, int32_t bos, uint32_t seed)
    : rng_(seed), dist_(0, int32_t(n_vocab) - 1), bos_(bos) {}

std::vector<int32_t> BenchTokens::next(int64_t n, bool bos_first) {
    std::vector<int32_t> out(size_t(std::max<int64_t>(n, 0)));
    for (int32_t& t : out) t = dist_(rng_);
    if (bos_first && bos_ >= 0 && !out.empty()) out.front() = bos_;
    return out;
}

double eval_prompt(Session& session, BenchTokens& tokens, int64_t n, int64_t n_batch,
                   bool bos_first) {
    const std::vector<int32_t> ids = tokens.next(n, bos_first);
    const auto t0 = Clock::now();
    for (int64_t start = 0; start < n; start += n_batch) {
        const int64_t len = std::min(n_batch, n - start);
        session.eval(std::span<const int32_t>(ids.data() + start, size_t(len)));
    }
    return seconds_since(t0);
}

double eval_generation(Session& session, BenchTokens& tokens, int64_t n) {
    const std::vector<int32_t> ids = tokens.next(n, false);
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < n; ++i) session.eval(std::span<const int32_t>(&ids[size_t(i)], 1));
    return seconds_since(t0);
}

BenchSamples run_bench_test(Session& session, BenchTokens& tokens, const BenchTest& test, int reps,
                            int64_t n_batch, bool warmup,
                            const std::function<void(int rep)>& on_rep, Profile* profile) {
    if (test.context_needed() > session.n_ctx())
        throw Error("bench: " + test.label() + " needs a context of " +
                    std::to_string(test.context_needed()) + " tokens, the session has " +
                    std::to_string(session.n_ctx()));
    session.reset();
    if (warmup) {
        // A prompt batch of the test's size (llama-bench's is 32 tokens: a backend's one-time
        // work for the large shapes, such as oneDNN's kernels or the blas plugin's converted
        // weights, then fell into the first timed repetition), then one generation step.
        const int64_t warm = std::min(
            {n_batch, std::max<int64_t>(test.n_prompt, std::min<int64_t>(test.n_depth, 32)),
             session.n_ctx()});
        if (warm > 0) {
            eval_prompt(session, tokens, warm, n_batch, true);
            session.reset();
        }
        if (test.n_gen > 0) eval_generation(session, tokens, 1);
        session.reset();
    }
    // What every repetition finds in the cache: the depth, and gp's untimed prompt.
    const int64_t prefix = test.n_depth + (test.gen_after_prompt ? test.n_prompt : 0);
    if (prefix > 0) eval_prompt(session, tokens, prefix, n_batch, true);
    BenchSamples out;
    if (profile) session.set_profile(profile);
    const EvalStats before = session.stats();
    for (int rep = 0; rep < reps; ++rep) {
        session.rewind(prefix);
        double s = 0;
        if (test.n_prompt > 0 && !test.gen_after_prompt)
            s += eval_prompt(session, tokens, test.n_prompt, n_batch, prefix == 0);
        if (test.n_gen > 0) s += eval_generation(session, tokens, test.n_gen);
        out.ns.push_back(int64_t(std::llround(s * 1e9)));
        out.ts.push_back(double(test.timed_tokens()) / s);
        if (on_rep) on_rep(rep);
    }
    if (profile) session.set_profile(nullptr);
    // A profile synchronizes every node: its shares would not be those of a normal run.
    if (!profile) out.shares = eval_time_shares(before, session.stats());
    return out;
}

int64_t sweep_row_count(int64_t n_ctx, int64_t ubatch, int64_t tg) {
    const int64_t need = std::max(ubatch, tg);
    if (ubatch < 1 || n_ctx < need) return 0;
    return (n_ctx - need) / ubatch + 1;
}

std::vector<SweepRow> run_sweep(Session& session, BenchTokens& tokens, int64_t ubatch, int64_t tg,
                                bool warmup, const std::function<void(const SweepRow&)>& on_row) {
    const int64_t rows = sweep_row_count(session.n_ctx(), ubatch, tg);
    if (rows == 0)
        throw Error("sweep: a context of " + std::to_string(session.n_ctx()) +
                    " tokens holds no ubatch of " + std::to_string(ubatch) + " (and " +
                    std::to_string(tg) + " generated tokens): raise -c or lower -ub / -n");
    session.reset();
    if (warmup) {  // each from an empty cache: together they may not fit
        if (tg > 0) eval_generation(session, tokens, 1);
        session.reset();
        eval_prompt(session, tokens, ubatch, ubatch, true);
        session.reset();
    }
    std::vector<SweepRow> out;
    for (int64_t r = 0; r < rows; ++r) {
        SweepRow row;
        row.n_kv = r * ubatch;
        row.pp = ubatch;
        row.tg = tg;
        if (tg > 0) {
            row.t_tg = eval_generation(session, tokens, tg);
            session.rewind(row.n_kv);
        }
        row.t_pp = eval_prompt(session, tokens, ubatch, ubatch, row.n_kv == 0);
        out.push_back(row);
        if (on_row) on_row(row);
    }
    return out;
}

}  // namespace sy::llm
