// Choosing the next token from a row of logits, with llama.cpp's samplers in its default order:
//   repetition penalty over the last `repeat_last_n` tokens (a positive logit divided by the
//   penalty, a negative one multiplied), then top-k, top-p, min-p (the truncations judge
//   probabilities at temperature 1), then temperature, then a draw from the softmax of what is
//   left. Temperature 0 is greedy: the argmax after the penalty (the lowest id on a tie).
// Deterministic for a given seed on every platform: the generator is std::mt19937_64 (fully
// specified by the standard) and a uniform in [0, 1) is built from its top 53 bits.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace sy::llm {

struct SamplerParams {
    float temperature = 0.8f;     // --temp; 0: greedy
    int32_t top_k = 40;           // --top-k; 0: off
    float top_p = 0.95f;          // --top-p; 1: off
    float min_p = 0.05f;          // --min-p; 0: off
    float repeat_penalty = 1.0f;  // --repeat-penalty; 1: off
    int32_t repeat_last_n = 64;   // --repeat-last-n; 0: off, -1: every token seen
    uint64_t seed = 0;            // --seed
};

// Throws sy::Error naming the parameter by its command-line flag when a value is out of range.
void validate(const SamplerParams& params);

class Sampler {
  public:
    explicit Sampler(const SamplerParams& params);  // validates

    // The next token for `logits` (one per vocabulary entry; -inf excludes a token). Throws
    // sy::Error when the row is empty, holds a NaN or +inf, excludes every token, or when a
    // token in the history lies outside it.
    int32_t sample(std::span<const float> logits);

    // Adds a token to the history that the repetition penalty looks at: the prompt's tokens
    // and each sampled one.
    void accept(int32_t token);

    const SamplerParams& params() const { return params_; }

  private:
    struct Candidate {
        int32_t id;
        float logit;
    };

    void apply_penalty(std::vector<Candidate>& c) const;
    double uniform();  // in [0, 1)

    SamplerParams params_;
    std::mt19937_64 rng_;
    std::vector<int32_t> history_;
    std::vector<Candidate> candidates_;  // reused between calls
};

}  // namespace sy::llm
