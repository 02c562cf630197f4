#include "switchyard/llm/perplexity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "switchyard/core/error.hpp"

namespace sy::llm {

void NllAccumulator::add(std::span<const float> logits, int32_t target) {
    if (target < 0 || size_t(target) >= logits.size())
        throw Error("perplexity: token " + std::to_string(target) + " is outside the vocabulary");
    double max = logits[0];
    for (float v : logits) max = std::max(max, double(v));
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v) - max);
    const double nll = -(double(logits[size_t(target)]) - max - std::log(sum));
    nll_ += nll;
    nll2_ += nll * nll;
    ++count_;
}

double NllAccumulator::perplexity() const {
    return std::exp(mean_nll());
}

double NllAccumulator::perplexity_error() const {
    if (count_ < 2) return 0.0;
    const double mean = mean_nll();
    const double var = nll2_ / double(count_) - mean * mean;
    return var > 0 ? perplexity() * std::sqrt(var / double(count_ - 1)) : 0.0;
}

int count_chunks(size_t n_tokens, int64_t n_ctx, int max_chunks) {
    if (n_ctx < 4) throw Error("perplexity: the context must be at least 4 tokens (-c)");
    const auto n = static_cast<int64_t>(n_tokens);
    if (n < 2 * n_ctx)
        throw Error("perplexity: the text has " + std::to_string(n) + " tokens; a context of " +
                    std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx) +
                    " (lower -c or give a longer text)");
    const auto chunks = static_cast<int>(std::min<int64_t>(n / n_ctx, INT32_MAX));
    return max_chunks > 0 ? std::min(chunks, max_chunks) : chunks;
}

void evaluate_chunks(const PerplexityModel& model, std::span<const int32_t> tokens, int64_t n_ctx,
                     int chunks, int n_seqs, int32_t bos,
                     const std::function<void(const ScoredChunk&)>& on_chunk) {
    if (n_seqs < 1) throw Error("perplexity: at least one sequence per pass");
    if (int64_t(tokens.size()) < int64_t(chunks) * n_ctx)
        throw Error("perplexity: " + std::to_string(chunks) + " chunks of " +
                    std::to_string(n_ctx) + " tokens need more than the " +
                    std::to_string(tokens.size()) + " given");
    // Per chunk: positions 0 .. first - 1 without logits, first .. n_ctx - 1 with; the logits
    // of positions first .. n_ctx - 2 are scored.
    const int64_t first = n_ctx / 2, rest = n_ctx - first, V = model.n_vocab;
    std::vector<int32_t> prefix, scored;
    for (int c0 = 0; c0 < chunks; c0 += n_seqs) {
        const int k = std::min(n_seqs, chunks - c0);
        const auto t0 = std::chrono::steady_clock::now();
        prefix.clear();
        scored.clear();
        for (int s = 0; s < k; ++s) {
            const int32_t* chunk = tokens.data() + int64_t(c0 + s) * n_ctx;
            prefix.insert(prefix.end(), chunk, chunk + first);
            if (bos >= 0) prefix[size_t(int64_t(s) * first)] = bos;
            scored.insert(scored.end(), chunk + first, chunk + n_ctx);
        }
        model.reset();
        model.eval_prefix(prefix, k);
        const std::vector<float> logits = model.eval_all(scored, k);
        if (int64_t(logits.size()) != int64_t(k) * rest * V)
            throw Error("perplexity: the model returned " + std::to_string(logits.size()) +
                        " logits for " + std::to_string(k) + " x " + std::to_string(rest) +
                        " positions");
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        for (int s = 0; s < k; ++s) {
            ScoredChunk sc;
            sc.index = c0 + s;
            sc.tokens = tokens.subspan(size_t(int64_t(sc.index) * n_ctx), size_t(n_ctx));
            sc.logits = std::span<const float>(logits).subspan(size_t(s * rest * V),
                                                               size_t(scored_positions(n_ctx) * V));
            sc.pass_seconds = seconds;
            sc.pass_chunks = k;
            on_chunk(sc);
        }
    }
}

PerplexityResult perplexity(const PerplexityModel& model, std::span<const int32_t> tokens,
                            int64_t n_ctx, int max_chunks, int32_t bos,
                            const std::function<void(const PerplexityChunk&)>& on_chunk,
                            int n_seqs) {
    const int chunks = count_chunks(tokens.size(), n_ctx, max_chunks);
    const int64_t first = n_ctx / 2, V = model.n_vocab;
    NllAccumulator acc;
    evaluate_chunks(model, tokens, n_ctx, chunks, n_seqs, bos, [&](const ScoredChunk& c) {
        for (int64_t j = 0; j < scored_positions(n_ctx); ++j)
            acc.add(c.logits.subspan(size_t(j * V), size_t(V)), c.tokens[size_t(first + j + 1)]);
        if (on_chunk) on_chunk({c.index + 1, acc.perplexity(), c.pass_seconds});
    });
    PerplexityResult r;
    r.chunks = chunks;
    r.scored_tokens = acc.count();
    r.ppl = acc.perplexity();
    r.error = acc.perplexity_error();
    return r;
}

// --- the KL-divergence file ------------------------------------------------------------------

namespace {

constexpr char kMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr uint64_t kHeaderBytes = 8 + 3 * sizeof(int32_t);

// The record's two floats live in its first four uint16 (as llama.cpp writes them).
void put_floats(std::span<uint16_t> record, float scale, float min_log_prob) {
    std::memcpy(record.data(), &scale, sizeof scale);
    std::memcpy(record.data() + 2, &min_log_prob, sizeof min_log_prob);
}
std::pair<float, float> get_floats(std::span<const uint16_t> record) {
    float scale, min_log_prob;
    std::memcpy(&scale, record.data(), sizeof scale);
    std::memcpy(&min_log_prob, record.data() + 2, sizeof min_log_prob);
    return {scale, min_log_prob};
}

// log(sum_i exp(x_i - max)) with llama.cpp's precisions: float terms, a double sum.
float log_sum_exp(std::span<const float> logits, float max) {
    double sum = 0;
    for (float v : logits) sum += std::exp(v - max);
    return float(std::log(sum));
}

}  // namespace

void encode_log_probs(std::span<const float> logits, std::span<uint16_t> record) {
    const auto n = int64_t(logits.size());
    if (n == 0 || int64_t(record.size()) != log_prob_record_size(n))
        throw Error("encode_log_probs: a record of " + std::to_string(log_prob_record_size(n)) +
                    " values for " + std::to_string(n) + " logits, given " +
                    std::to_string(record.size()));
    const auto [lo, hi] = std::minmax_element(logits.begin(), logits.end());
    const float max = *hi, min = std::max(*lo, max - kLogProbRange);
    const float min_log_prob = min - max - log_sum_exp(logits, max);
    const float scale = (max - min) / 65535.0f;
    put_floats(record, scale, min_log_prob);
    std::span<uint16_t> q = record.subspan(4);
    std::fill(q.begin(), q.end(), uint16_t{0});  // and the padding of an odd vocabulary
    if (scale == 0.0f) return;                   // every logit equal
    const float inv_scale = 1.0f / scale;
    for (int64_t i = 0; i < n; ++i)
        if (logits[size_t(i)] > min)  // rounded half to even, as llama.cpp's nearest_int
            q[size_t(i)] =
                uint16_t(std::min(65535.0f, std::nearbyint(inv_scale * (logits[size_t(i)] - min))));
}

float decoded_log_prob(std::span<const uint16_t> record, int64_t i) {
    const auto [scale, min_log_prob] = get_floats(record);
    return scale * float(record[size_t(4 + i)]) + min_log_prob;
}

KldBaseWriter::KldBaseWriter(std::string path, int32_t n_ctx, int32_t n_vocab, int32_t n_chunk,
                             std::span<const int32_t> tokens)
    : path_(std::move(path)), n_ctx_(n_ctx), n_vocab_(n_vocab), n_chunk_(n_chunk) {
    if (n_ctx < 4 || n_vocab < 1 || n_chunk < 1 ||
        int64_t(tokens.size()) != int64_t(n_chunk) * n_ctx)
        throw Error(fmt::format("--kl-divergence-base {}: {} tokens for {} chunks of {}", path_,
                                tokens.size(), n_chunk, n_ctx));
    out_.open(path_, std::ios::binary | std::ios::trunc);
    if (!out_)
        throw Error("--kl-divergence-base " + path_ +
                    ": cannot create it: " + std::strerror(errno));
    out_.write(kMagic, sizeof kMagic);
    for (int32_t v : {n_ctx, n_vocab, n_chunk})
        out_.write(reinterpret_cast<const char*>(&v), sizeof v);
    out_.write(reinterpret_cast<const char*>(tokens.data()), std::streamsize(tokens.size_bytes()));
    if (!out_) throw Error("--kl-divergence-base " + path_ + ": writing failed");
}

void KldBaseWriter::add_chunk(std::span<const float> logits) {
    const int64_t rows = scored_positions(n_ctx_), nv = log_prob_record_size(n_vocab_);
    if (int64_t(logits.size()) != rows * n_vocab_)
        throw Error(fmt::format("--kl-divergence-base {}: a chunk has {} x {} logits, given {}",
                                path_, rows, n_vocab_, logits.size()));
    if (written_ == n_chunk_)
        throw Error(fmt::format("--kl-divergence-base {}: more than the {} chunks announced", path_,
                                n_chunk_));
    records_.resize(size_t(rows * nv));
    const std::span<uint16_t> all(records_);
    for (int64_t j = 0; j < rows; ++j)
        encode_log_probs(logits.subspan(size_t(j * n_vocab_), size_t(n_vocab_)),
                         all.subspan(size_t(j * nv), size_t(nv)));
    out_.write(reinterpret_cast<const char*>(records_.data()), std::streamsize(all.size_bytes()));
    if (!out_) throw Error("--kl-divergence-base " + path_ + ": writing failed");
    ++written_;
}

void KldBaseWriter::close() {
    if (written_ != n_chunk_)
        throw Error(fmt::format("--kl-divergence-base {}: {} of {} chunks written", path_, written_,
                                n_chunk_));
    out_.close();
    if (!out_) throw Error("--kl-divergence-base " + path_ + ": writing failed");
}

KldBaseFile::KldBaseFile(std::string path) : path_(std::move(path)) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path_, ec);
    if (ec) throw Error("--kl-divergence-base " + path_ + ": cannot read it: " + ec.message());
    in_.open(path_, std::ios::binary);
    if (!in_)
        throw Error("--kl-divergence-base " + path_ + ": cannot open it: " + std::strerror(errno));
    char magic[sizeof kMagic] = {};
    in_.read(magic, sizeof magic);
    if (!in_ || std::memcmp(magic, kMagic, sizeof kMagic) != 0)
        throw Error("--kl-divergence-base " + path_ +
                    " does not look like a file of log-probabilities (it does not start with "
                    "\"_logits_\"; write one with perplexity --kl-divergence-base)");
    int32_t header[3];
    in_.read(reinterpret_cast<char*>(header), sizeof header);
    if (!in_)
        throw Error(fmt::format("--kl-divergence-base {}: truncated header ({} bytes, {} needed)",
                                path_, size, kHeaderBytes));
    n_ctx_ = header[0];
    n_vocab_ = header[1];
    n_chunk_ = header[2];
    if (n_ctx_ < 4 || n_vocab_ < 1 || n_chunk_ < 1)
        throw Error(fmt::format(
            "--kl-divergence-base {}: header out of range: n_ctx {}, n_vocab {}, n_chunk {}", path_,
            n_ctx_, n_vocab_, n_chunk_));
    // The sizes the header implies, checked against the file before allocating anything (each
    // product fits in 64 bits; their sum is compared by division).
    const uint64_t token_bytes = uint64_t(n_chunk_) * uint64_t(n_ctx_) * sizeof(int32_t);
    const uint64_t chunk_bytes = uint64_t(scored_positions(n_ctx_)) *
                                 uint64_t(log_prob_record_size(n_vocab_)) * sizeof(uint16_t);
    const long double expected =
        (long double)(kHeaderBytes + token_bytes) + (long double)n_chunk_ * chunk_bytes;
    const uint64_t body = size - kHeaderBytes;
    if (body < token_bytes || (body - token_bytes) / uint64_t(n_chunk_) < chunk_bytes ||
        body - token_bytes != uint64_t(n_chunk_) * chunk_bytes)
        throw Error(fmt::format(
            "--kl-divergence-base {}: {} bytes, but its header (n_ctx {}, n_vocab {}, {} chunks) "
            "implies {:.0f}{}",
            path_, size, n_ctx_, n_vocab_, n_chunk_, double(expected),
            (long double)size < expected ? " (truncated?)" : ""));
    tokens_.resize(size_t(n_chunk_) * size_t(n_ctx_));
    in_.read(reinterpret_cast<char*>(tokens_.data()), std::streamsize(token_bytes));
    if (!in_) throw Error("--kl-divergence-base " + path_ + ": reading the tokens failed");
    for (size_t i = 0; i < tokens_.size(); ++i)
        if (tokens_[i] < 0 || tokens_[i] >= n_vocab_)
            throw Error(fmt::format(
                "--kl-divergence-base {}: token {} at index {} is outside its vocabulary of {}",
                path_, tokens_[i], i, n_vocab_));
}

void KldBaseFile::expect_context(int64_t n_ctx) const {
    if (n_ctx != n_ctx_)
        throw Error(fmt::format(
            "--kl-divergence-base {} was computed with a context of {} tokens, not -c {} (give "
            "-c {} or leave -c out)",
            path_, n_ctx_, n_ctx, n_ctx_));
}

void KldBaseFile::expect_vocabulary(int64_t n_vocab) const {
    if (n_vocab != n_vocab_)
        throw Error(fmt::format(
            "--kl-divergence-base {} holds log-probabilities over {} tokens; this model's "
            "vocabulary has {}",
            path_, n_vocab_, n_vocab));
}

void KldBaseFile::read_chunk(int c, std::vector<uint16_t>& records) {
    if (c < 0 || c >= n_chunk_)
        throw Error(fmt::format("--kl-divergence-base {}: no chunk {} (it has {})", path_, c + 1,
                                n_chunk_));
    const uint64_t values = uint64_t(scored_positions(n_ctx_)) * log_prob_record_size(n_vocab_);
    const uint64_t at =
        kHeaderBytes + tokens_.size() * sizeof(int32_t) + uint64_t(c) * values * sizeof(uint16_t);
    records.resize(values);
    in_.clear();
    in_.seekg(std::streamoff(at));
    in_.read(reinterpret_cast<char*>(records.data()), std::streamsize(values * sizeof(uint16_t)));
    if (!in_)
        throw Error(fmt::format("--kl-divergence-base {}: reading chunk {} failed", path_, c + 1));
}

// --- comparing against the base ----------------------------------------------------------------

void KldAccumulator::add(std::span<const float> logits, std::span<const uint16_t> base,
                         int32_t target) {
    const auto n = int64_t(logits.size());
    if (n == 0 || int64_t(base.size()) != log_prob_record_size(n))
        throw Error(
            fmt::format("kl-divergence: a base record of {} values for {} logits", base.size(), n));
    if (target < 0 || target >= n)
        throw Error("kl-divergence: token " + std::to_string(target) +
                    " is outside the vocabulary");
    // As llama.cpp's per-position arithmetic: floats, summed in double.
    const auto top = std::max_element(logits.begin(), logits.end());  // the first maximum
    const float max = *top;
    const float lse = log_sum_exp(logits, max);
    const auto [scale, min_log_prob] = get_floats(base);
    const std::span<const uint16_t> q = base.subspan(4);

    const float nll = max + lse - logits[size_t(target)];
    const float nll_base = -(scale * float(q[size_t(target)]) + min_log_prob);
    sum_nll_ += nll;
    sum_nll2_ += nll * nll;
    sum_nll_base_ += nll_base;
    sum_nll_base2_ += nll_base * nll_base;
    sum_nll_nll_base_ += nll * nll_base;

    // KL(base || Q) = sum_i p_base(i) (log p_base(i) - log p_Q(i)), over the base's tokens
    // above e^-16.
    const float log_norm = max + lse;
    double kld = 0;
    int64_t top_base = 0;
    float top_base_log_prob = 0;
    for (int64_t i = 0; i < n; ++i) {
        const float log_p_base = scale * float(q[size_t(i)]) + min_log_prob;
        if (i == 0 || log_p_base > top_base_log_prob) {
            top_base_log_prob = log_p_base;
            top_base = i;
        }
        if (log_p_base > -16.0f)
            kld += std::exp(log_p_base) * (log_p_base - logits[size_t(i)] + log_norm);
    }
    sum_kld_ += kld;
    sum_kld2_ += kld * kld;
    if (top - logits.begin() == top_base) ++same_top_;

    const float p_diff = std::exp(-nll) - std::exp(-nll_base);
    const double p_diff2 = p_diff * p_diff;
    sum_p_diff_ += p_diff;
    sum_p_diff2_ += p_diff2;
    sum_p_diff4_ += p_diff2 * p_diff2;
    kld_values_.push_back(float(kld));
    p_diff_values_.push_back(p_diff);
    ++count_;
}

namespace {

// llama.cpp's mean and its standard error (0 for ten values or fewer).
Estimate mean_and_error(double sum, double sum2, int64_t count) {
    if (count < 1) return {};
    const double mean = sum / double(count);
    const double var = sum2 / double(count) - mean * mean;
    return {mean, var > 0 && count > 10 ? std::sqrt(var / double(count - 1)) : 0.0};
}

// The covariance of two means (0 below ten values).
double covariance(double sum_a, double sum_b, double sum_ab, int64_t count) {
    if (count < 10) return 0.0;
    const double n = double(count);
    return (sum_ab / n - (sum_a / n) * (sum_b / n)) / (n - 1);
}

double root(double x) {
    return x > 0 ? std::sqrt(x) : 0.0;
}

// The value at `fraction` of sorted values, linearly interpolated (in float, as llama.cpp).
double percentile(const std::vector<float>& v, float fraction) {
    if (v.empty()) return 0.0;
    if (fraction <= 0) return v.front();
    if (fraction >= 1) return v.back();
    float p = fraction * float(v.size() - 1);
    const auto i = size_t(p);
    p -= float(i);
    return (1 - p) * v[i] + p * v[std::min(i + 1, v.size() - 1)];
}

double median(const std::vector<float>& v) {
    if (v.empty()) return 0.0;
    const size_t n = v.size();
    return n % 2 == 0 ? 0.5f * (v[n / 2] + v[n / 2 - 1]) : v[n / 2];
}

}  // namespace

KldStatistics KldAccumulator::statistics(bool with_values) const {
    KldStatistics s;
    s.count = count_;
    if (count_ == 0) return s;
    const Estimate ln_ppl = mean_and_error(sum_nll_, sum_nll2_, count_);
    const Estimate ln_base = mean_and_error(sum_nll_base_, sum_nll_base2_, count_);
    const double cov = covariance(sum_nll_, sum_nll_base_, sum_nll_nll_base_, count_);
    s.ppl = {std::exp(ln_ppl.value), std::exp(ln_ppl.value) * ln_ppl.error};
    s.ppl_base = {std::exp(ln_base.value), std::exp(ln_base.value) * ln_base.error};
    const double spread = ln_ppl.error * ln_base.error;
    s.ln_ppl_correlation = spread > 0 ? cov / spread : 0.0;
    s.ln_ppl_ratio = {ln_ppl.value - ln_base.value,
                      root(ln_ppl.error * ln_ppl.error + ln_base.error * ln_base.error - 2 * cov)};
    s.ppl_ratio = {std::exp(s.ln_ppl_ratio.value),
                   std::exp(s.ln_ppl_ratio.value) * s.ln_ppl_ratio.error};
    s.ppl_difference = {s.ppl.value - s.ppl_base.value,
                        root(s.ppl.error * s.ppl.error + s.ppl_base.error * s.ppl_base.error -
                             2 * s.ppl.value * s.ppl_base.value * cov)};
    s.kld = mean_and_error(sum_kld_, sum_kld2_, count_);
    s.delta_p = mean_and_error(sum_p_diff_, sum_p_diff2_, count_);
    const Estimate mse = mean_and_error(sum_p_diff2_, sum_p_diff4_, count_);
    const double rms = std::sqrt(mse.value);
    s.rms_delta_p = {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
    const double top = double(same_top_) / double(count_);
    s.same_top = {top, count_ > 1 ? root(top * (1 - top) / double(count_ - 1)) : 0.0};
    if (with_values) {
        s.kld_values = kld_values_;
        s.delta_p_values = p_diff_values_;
        std::sort(s.kld_values.begin(), s.kld_values.end());
        std::sort(s.delta_p_values.begin(), s.delta_p_values.end());
    }
    return s;
}

double KldStatistics::kld_percentile(double fraction) const {
    return percentile(kld_values, float(fraction));
}
double KldStatistics::delta_p_percentile(double fraction) const {
    return percentile(delta_p_values, float(fraction));
}
double KldStatistics::kld_median() const {
    return median(kld_values);
}
double KldStatistics::delta_p_median() const {
    return median(delta_p_values);
}

}  // namespace sy::llm
