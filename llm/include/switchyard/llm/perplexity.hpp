// Perplexity the way llama.cpp's perplexity tool computes it, so the figures compare: the text
// is cut into chunks of n_ctx tokens, each evaluated from an empty cache with its first token
// replaced by BOS (when the vocabulary adds one), and only the second half of each chunk is
// scored (each of those tokens then has at least n_ctx / 2 tokens of context). The estimate is
// exp(mean negative log-likelihood); its error is exp(mean) times the standard error of the
// mean of the per-token negative log-likelihoods.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace sy::llm {

// Sums of -log p(target) over scored tokens.
class NllAccumulator {
  public:
    // One scored position: the logits over the vocabulary and the token that followed.
    void add(std::span<const float> logits, int32_t target);
    int64_t count() const { return count_; }
    double mean_nll() const { return count_ > 0 ? nll_ / double(count_) : 0.0; }
    double perplexity() const;
    // exp(mean) * sqrt(var / (count - 1)); 0 with fewer than two tokens.
    double perplexity_error() const;

  private:
    double nll_ = 0, nll2_ = 0;
    int64_t count_ = 0;
};

struct PerplexityChunk {
    int index = 0;           // 1-based
    double running_ppl = 0;  // over all chunks so far
    double seconds = 0;      // evaluating this chunk
};

struct PerplexityResult {
    int chunks = 0;
    int64_t scored_tokens = 0;
    double ppl = 0;
    double error = 0;
};

// The model as perplexity needs it: forget the cache, and evaluate tokens appended to it
// returning the logits of every one (n_vocab floats each).
struct PerplexityModel {
    int64_t n_vocab = 0;
    std::function<void()> reset;
    std::function<std::vector<float>(std::span<const int32_t> tokens)> eval_all;
    // Evaluates tokens whose logits are not needed (the unscored first half of a chunk).
    std::function<void(std::span<const int32_t> tokens)> eval_prefix;
};

// The adapter for a session with reset() and eval(tokens, all_logits) (Deepseek2Session).
template <typename Session>
PerplexityModel perplexity_model(Session& session, int64_t n_vocab) {
    PerplexityModel m;
    m.n_vocab = n_vocab;
    m.reset = [&session] { session.reset(); };
    m.eval_all = [&session](std::span<const int32_t> t) { return session.eval(t, true); };
    m.eval_prefix = [&session](std::span<const int32_t> t) { session.eval(t, false); };
    return m;
}

// Scores `tokens` (the whole text, already tokenized) in chunks of n_ctx. bos < 0: keep each
// chunk's first token. max_chunks <= 0: every whole chunk. Throws sy::Error when the text has
// fewer than 2 * n_ctx tokens (as llama.cpp) or n_ctx < 4.
PerplexityResult perplexity(const PerplexityModel& model, std::span<const int32_t> tokens,
                            int64_t n_ctx, int max_chunks, int32_t bos,
                            const std::function<void(const PerplexityChunk&)>& on_chunk = {});

}  // namespace sy::llm
