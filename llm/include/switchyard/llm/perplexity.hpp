// Perplexity the way llama.cpp's perplexity tool computes it, so the figures compare: the text
// is cut into chunks of n_ctx tokens, each evaluated from an empty cache with its first token
// replaced by BOS (when the vocabulary adds one), and only the second half of each chunk is
// scored (each of those tokens then has at least n_ctx / 2 tokens of context). The estimate is
// exp(mean negative log-likelihood); its error is exp(mean) times the standard error of the
// mean of the per-token negative log-likelihoods. Several chunks may be evaluated in one pass,
// each as its own sequence (llama.cpp: n_batch / n_ctx of them); the results do not change.
//
// The KL divergence of a model against a base model, as llama-perplexity's
// --kl-divergence-base / --kl-divergence measure it: the base run saves every scored
// position's log-probabilities, quantized to 16 bits, in llama.cpp's file
// (docs/perplexity.md):
//   char[8] "_logits_", int32 n_ctx, int32 n_vocab, int32 n_chunk,
//   int32 tokens[n_chunk * n_ctx]                  (the text's, before BOS replacement)
//   per chunk, per scored position j = n_ctx/2 .. n_ctx-2 (predicting token j + 1), a record
//   of 2 * ((n_vocab + 1) / 2) + 4 uint16: float32 scale, float32 min_log_prob, then q[n_vocab]
//   (and one zero when n_vocab is odd), log p(i) = min_log_prob + scale * q[i]; the range is
//   the kLogProbRange below the most likely token's, q = 0 under it.
// The other run reads it and compares its own distributions with the base's.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <span>
#include <string>
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
    double seconds = 0;      // evaluating the pass this chunk was in
};

struct PerplexityResult {
    int chunks = 0;
    int64_t scored_tokens = 0;
    double ppl = 0;
    double error = 0;
};

// The model as perplexity needs it: forget the cache, and evaluate n_seqs independent
// sequences appended to it (`tokens` holds n_seqs equally long runs, one per sequence).
struct PerplexityModel {
    int64_t n_vocab = 0;
    std::function<void()> reset;
    // The logits of every token (n_vocab floats each), sequence by sequence.
    std::function<std::vector<float>(std::span<const int32_t> tokens, int n_seqs)> eval_all;
    // Evaluates tokens whose logits are not needed (the unscored first half of a chunk).
    std::function<void(std::span<const int32_t> tokens, int n_seqs)> eval_prefix;
};

// The adapter for a session with reset() and eval_sequences(tokens, n_seqs, all_logits)
// (Session).
template <typename Session>
PerplexityModel perplexity_model(Session& session, int64_t n_vocab) {
    PerplexityModel m;
    m.n_vocab = n_vocab;
    m.reset = [&session] { session.reset(); };
    m.eval_all = [&session](std::span<const int32_t> t, int n_seqs) {
        return session.eval_sequences(t, n_seqs, true);
    };
    m.eval_prefix = [&session](std::span<const int32_t> t, int n_seqs) {
        session.eval_sequences(t, n_seqs, false);
    };
    return m;
}

// One evaluated chunk: logits row j (n_vocab floats) is position n_ctx / 2 + j and predicts
// tokens[n_ctx / 2 + j + 1], for j < scored_positions(n_ctx).
struct ScoredChunk {
    int index = 0;                    // 0-based
    std::span<const int32_t> tokens;  // the chunk's n_ctx tokens as in the text
    std::span<const float> logits;
    double pass_seconds = 0;  // evaluating the pass this chunk was in
    int pass_chunks = 0;      // chunks in that pass
};

inline int64_t scored_positions(int64_t n_ctx) {
    return n_ctx - 1 - n_ctx / 2;
}

// How many whole chunks of n_ctx the text gives (at most max_chunks when > 0). Throws
// sy::Error when the text has fewer than 2 * n_ctx tokens (as llama.cpp) or n_ctx < 4.
int count_chunks(size_t n_tokens, int64_t n_ctx, int max_chunks);

// Evaluates the first `chunks` chunks of `tokens`, up to n_seqs of them per pass, and hands
// each to on_chunk in order. bos < 0: keep each chunk's first token.
void evaluate_chunks(const PerplexityModel& model, std::span<const int32_t> tokens, int64_t n_ctx,
                     int chunks, int n_seqs, int32_t bos,
                     const std::function<void(const ScoredChunk&)>& on_chunk);

// Scores `tokens` (the whole text, already tokenized) in chunks of n_ctx, n_seqs chunks per
// pass. bos < 0: keep each chunk's first token. max_chunks <= 0: every whole chunk. Throws as
// count_chunks.
PerplexityResult perplexity(const PerplexityModel& model, std::span<const int32_t> tokens,
                            int64_t n_ctx, int max_chunks, int32_t bos,
                            const std::function<void(const PerplexityChunk&)>& on_chunk = {},
                            int n_seqs = 1);

// --- the KL-divergence file ------------------------------------------------------------------

// Log-probabilities more than this below the most likely token's are stored as q = 0
// (ik_llama.cpp's range; llama.cpp's is 16: the files read the same).
inline constexpr float kLogProbRange = 24.0f;

// uint16 values of one scored position's record.
inline int64_t log_prob_record_size(int64_t n_vocab) {
    return 2 * ((n_vocab + 1) / 2) + 4;
}

// Quantizes one position's logits (n_vocab) into its record (log_prob_record_size values).
void encode_log_probs(std::span<const float> logits, std::span<uint16_t> record);
// log p(i) of a record: min_log_prob + scale * q[i].
float decoded_log_prob(std::span<const uint16_t> record, int64_t i);

// Writes the file as chunks come: the header and tokens first, then each chunk's records.
class KldBaseWriter {
  public:
    // `tokens`: n_chunk * n_ctx of them. Throws sy::Error naming the path when it cannot be
    // created or written.
    KldBaseWriter(std::string path, int32_t n_ctx, int32_t n_vocab, int32_t n_chunk,
                  std::span<const int32_t> tokens);
    // The next chunk's scored logits: scored_positions(n_ctx) rows of n_vocab.
    void add_chunk(std::span<const float> logits);
    // Throws when fewer chunks than announced were added or the data did not reach the disk.
    void close();

  private:
    std::string path_;
    std::ofstream out_;
    int32_t n_ctx_, n_vocab_, n_chunk_;
    int32_t written_ = 0;
    std::vector<uint16_t> records_;
};

// A KL-divergence file opened for reading: header and tokens checked against the file's size
// before anything is allocated; each chunk's records read when asked for.
class KldBaseFile {
  public:
    // Throws sy::Error naming the path for a missing or unreadable file, another magic, header
    // values out of range, a size other than the header implies, or a token outside n_vocab.
    explicit KldBaseFile(std::string path);
    const std::string& path() const { return path_; }
    int32_t n_ctx() const { return n_ctx_; }
    int32_t n_vocab() const { return n_vocab_; }
    int32_t n_chunk() const { return n_chunk_; }
    const std::vector<int32_t>& tokens() const { return tokens_; }
    // Throw sy::Error naming the file and both values when the asked context (-c) or the
    // model's vocabulary differs from the file's.
    void expect_context(int64_t n_ctx) const;
    void expect_vocabulary(int64_t n_vocab) const;
    // Chunk c's records: scored_positions(n_ctx) * log_prob_record_size(n_vocab) values.
    void read_chunk(int c, std::vector<uint16_t>& records);

  private:
    std::string path_;
    std::ifstream in_;
    int32_t n_ctx_ = 0, n_vocab_ = 0, n_chunk_ = 0;
    std::vector<int32_t> tokens_;
};

// A value and its uncertainty.
struct Estimate {
    double value = 0, error = 0;
};

// What llama-perplexity --kl-divergence prints, over the positions added so far.
struct KldStatistics {
    int64_t count = 0;
    Estimate ppl, ppl_base;  // exp(mean nll) of the model (Q) and of the base's stored log-probs
    double ln_ppl_correlation = 0;  // of the two mean nll's
    Estimate ln_ppl_ratio, ppl_ratio, ppl_difference;
    Estimate kld;          // mean KL(base || Q) per position
    Estimate delta_p;      // mean of p_Q(token) - p_base(token)
    Estimate rms_delta_p;  // sqrt(mean delta_p^2)
    Estimate same_top;     // fraction of positions whose most likely token is the base's
    // With percentiles (statistics(true)): sorted per-position values and their quantiles,
    // as llama.cpp interpolates them; median: the middle value, or the mean of the middle two.
    std::vector<float> kld_values, delta_p_values;
    double kld_percentile(double fraction) const;
    double delta_p_percentile(double fraction) const;
    double kld_median() const;
    double delta_p_median() const;
};

// Compares a model's logits with the base's records, position by position, with llama.cpp's
// arithmetic (float per position, double sums), so the printed figures match its own.
class KldAccumulator {
  public:
    // One scored position: the model's logits (n_vocab), the base's record, the next token.
    void add(std::span<const float> logits, std::span<const uint16_t> base, int32_t target);
    int64_t count() const { return count_; }
    // The running figures; with_values also the sorted per-position values for percentiles.
    KldStatistics statistics(bool with_values) const;

  private:
    double sum_nll_ = 0, sum_nll2_ = 0, sum_nll_base_ = 0, sum_nll_base2_ = 0,
           sum_nll_nll_base_ = 0, sum_kld_ = 0, sum_kld2_ = 0, sum_p_diff_ = 0, sum_p_diff2_ = 0,
           sum_p_diff4_ = 0;
    int64_t same_top_ = 0, count_ = 0;
    std::vector<float> kld_values_, p_diff_values_;
};

}  // namespace sy::llm
