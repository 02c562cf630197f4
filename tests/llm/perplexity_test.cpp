// Perplexity (llm/perplexity.hpp): the negative log-likelihood of known logits, the error
// estimate, and llama.cpp's chunking (BOS first, second half scored) on a scripted model.
#include "switchyard/llm/perplexity.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

TEST(NllAccumulator, IsMinusLogSoftmaxOfTheTarget) {
    NllAccumulator acc;
    const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
    acc.add(logits, 2);
    const double p2 = std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
    EXPECT_NEAR(acc.mean_nll(), -std::log(p2), 1e-12);
    EXPECT_NEAR(acc.perplexity(), 1.0 / p2, 1e-9);
    EXPECT_EQ(acc.perplexity_error(), 0.0);  // one token: no spread
    // Large logits do not overflow.
    NllAccumulator big;
    big.add(std::vector<float>{1000.0f, 1000.0f}, 0);
    EXPECT_NEAR(big.perplexity(), 2.0, 1e-12);
    EXPECT_THROW(big.add(std::vector<float>{0.0f, 0.0f}, 2), Error);
}

TEST(NllAccumulator, ErrorIsTheStandardErrorOfTheMeanScaledByThePerplexity) {
    NllAccumulator acc;
    // Uniform over 2 and over 4 choices: nll ln 2 and ln 4.
    acc.add(std::vector<float>{0, 0}, 0);
    acc.add(std::vector<float>{0, 0, 0, 0}, 3);
    const double a = std::log(2.0), b = std::log(4.0), mean = (a + b) / 2;
    const double var = (a * a + b * b) / 2 - mean * mean;
    EXPECT_NEAR(acc.perplexity(), std::exp(mean), 1e-12);
    EXPECT_NEAR(acc.perplexity_error(), std::exp(mean) * std::sqrt(var / 1), 1e-12);
}

// A model whose logits at each position put all mass (+20) on one "predicted" token; records
// what it was asked to evaluate.
struct ScriptedModel {
    int64_t n_vocab = 8;
    std::vector<std::vector<int32_t>> prefixes, scored;
    int resets = 0;
    PerplexityModel interface() {
        PerplexityModel m;
        m.n_vocab = n_vocab;
        m.reset = [this] { ++resets; };
        m.eval_prefix = [this](std::span<const int32_t> t) {
            prefixes.emplace_back(t.begin(), t.end());
        };
        m.eval_all = [this](std::span<const int32_t> t) {
            scored.emplace_back(t.begin(), t.end());
            std::vector<float> logits(t.size() * size_t(n_vocab), 0.0f);
            for (size_t i = 0; i < t.size(); ++i)  // predicts "same token + 1"
                logits[i * size_t(n_vocab) + size_t((t[i] + 1) % n_vocab)] = 20.0f;
            return logits;
        };
        return m;
    }
};

TEST(Perplexity, ChunksStartWithBosAndScoreTheSecondHalf) {
    std::vector<int32_t> text(37);
    for (size_t i = 0; i < text.size(); ++i) text[i] = int32_t(i % 8);  // 0 1 2 ... 7 0 1 ...
    ScriptedModel sm;
    std::vector<PerplexityChunk> seen;
    const auto r = perplexity(sm.interface(), text, 8, 0, 7,
                              [&](const PerplexityChunk& c) { seen.push_back(c); });
    EXPECT_EQ(r.chunks, 4);  // 37 / 8, the partial chunk is left out
    EXPECT_EQ(sm.resets, 4);
    ASSERT_EQ(sm.prefixes.size(), 4u);
    EXPECT_EQ(sm.prefixes[0], (std::vector<int32_t>{7, 1, 2, 3}));  // BOS replaces token 0
    EXPECT_EQ(sm.prefixes[1], (std::vector<int32_t>{7, 1, 2, 3}));
    EXPECT_EQ(sm.scored[0], (std::vector<int32_t>{4, 5, 6, 7}));
    EXPECT_EQ(r.scored_tokens, 4 * 3);  // positions 4, 5, 6 predict 5, 6, 7
    // Every scored prediction was right with probability 1 / (1 + 7 e^-20).
    EXPECT_NEAR(r.ppl, 1.0 + 7.0 * std::exp(-20.0), 1e-12);
    ASSERT_EQ(seen.size(), 4u);
    EXPECT_EQ(seen[3].index, 4);

    ScriptedModel limited;
    EXPECT_EQ(perplexity(limited.interface(), text, 8, 2, -1).chunks, 2);
    EXPECT_EQ(limited.prefixes[0][0], 0);  // no BOS: the text's own first token
}

TEST(Perplexity, TooShortATextOrContextIsAnError) {
    ScriptedModel sm;
    const std::vector<int32_t> text(15, 1);
    try {
        perplexity(sm.interface(), text, 8, 0, -1);
        FAIL() << "accepted 15 tokens for a context of 8";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("at least 16"), std::string::npos) << e.what();
    }
    EXPECT_THROW(perplexity(sm.interface(), std::vector<int32_t>(100, 1), 2, 0, -1), Error);
    EXPECT_EQ(sm.resets, 0);
}

}  // namespace
}  // namespace sy::llm
