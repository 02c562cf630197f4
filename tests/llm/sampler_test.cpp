// The sampler: greedy and its ties, each truncation (top-k, top-p, min-p) keeping exactly the
// tokens it should, temperature shaping the draw like softmax(logits / T), the repetition
// penalty's two directions, determinism for a seed, and the errors for bad parameters and rows.
#include "switchyard/llm/sampler.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

SamplerParams plain(float temperature, uint64_t seed = 7) {
    SamplerParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.seed = seed;
    return p;
}

// Logits whose softmax is `probs` exactly (up to float rounding).
std::vector<float> logits_of(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(p > 0 ? float(std::log(p)) : -INFINITY);
    return l;
}

std::map<int32_t, int> draw(Sampler& s, const std::vector<float>& logits, int n) {
    std::map<int32_t, int> counts;
    for (int i = 0; i < n; ++i) ++counts[s.sample(logits)];
    return counts;
}

std::string error_of(const SamplerParams& p) {
    try {
        validate(p);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

TEST(Sampler, GreedyTakesTheArgmaxAndTheLowestIdOnATie) {
    Sampler s(plain(0.0f));
    EXPECT_EQ(s.sample(std::vector<float>{0.1f, 2.5f, -1.0f, 2.4f}), 1);
    EXPECT_EQ(s.sample(std::vector<float>{1.0f, 3.0f, 3.0f, -INFINITY}), 1);
    EXPECT_EQ(s.sample(std::vector<float>{-INFINITY, -5.0f, -INFINITY}), 1);
}

TEST(Sampler, TopKOneIsGreedyAtAnyTemperature) {
    SamplerParams p = plain(5.0f);
    p.top_k = 1;
    Sampler s(p);
    const std::vector<float> logits = {0.3f, 0.2f, 0.31f, 0.1f};
    for (int i = 0; i < 200; ++i) ASSERT_EQ(s.sample(logits), 2);
}

TEST(Sampler, TopKKeepsTheKLargest) {
    SamplerParams p = plain(1.0f);
    p.top_k = 2;
    Sampler s(p);
    const auto counts = draw(s, logits_of({0.1, 0.4, 0.2, 0.3}), 4000);
    EXPECT_EQ(counts.size(), 2u);
    EXPECT_GT(counts.count(1), 0u);
    EXPECT_GT(counts.count(3), 0u);
    // 0.4 : 0.3 renormalized -> 4/7 of the draws for token 1.
    EXPECT_NEAR(counts.at(1) / 4000.0, 4.0 / 7.0, 0.03);
}

TEST(Sampler, TopPKeepsTheSmallestPrefixReachingP) {
    SamplerParams p = plain(1.0f);
    p.top_p = 0.7f;  // 0.5 + 0.3 reaches it; 0.2 is cut
    Sampler s(p);
    const auto counts = draw(s, logits_of({0.2, 0.5, 0.3}), 4000);
    EXPECT_EQ(counts.count(0), 0u);
    EXPECT_NEAR(counts.at(1) / 4000.0, 0.5 / 0.8, 0.03);
    EXPECT_NEAR(counts.at(2) / 4000.0, 0.3 / 0.8, 0.03);
}

TEST(Sampler, MinPDropsTokensBelowItsShareOfTheBest) {
    SamplerParams p = plain(1.0f);
    p.min_p = 0.5f;  // keeps p >= 0.25: tokens 0 (0.5) and 2 (0.3), not 1 (0.2)
    Sampler s(p);
    const auto counts = draw(s, logits_of({0.5, 0.2, 0.3}), 4000);
    EXPECT_EQ(counts.count(1), 0u);
    EXPECT_NEAR(counts.at(0) / 4000.0, 0.5 / 0.8, 0.03);
}

TEST(Sampler, DrawsFollowSoftmaxOfLogitsOverTemperature) {
    const std::vector<float> logits = {1.0f, 0.0f, -1.0f};
    for (const float t : {0.5f, 1.0f, 2.0f}) {
        Sampler s(plain(t, 11));
        const int n = 20000;
        const auto counts = draw(s, logits, n);
        double z = 0;
        for (float l : logits) z += std::exp(l / t);
        for (int i = 0; i < 3; ++i) {
            const double expected = std::exp(logits[size_t(i)] / t) / z;
            const double got = counts.count(i) ? counts.at(i) / double(n) : 0.0;
            // Five standard deviations of a binomial share.
            EXPECT_NEAR(got, expected, 5 * std::sqrt(expected * (1 - expected) / n))
                << "temperature " << t << ", token " << i;
        }
    }
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
    SamplerParams p = plain(0.0f);
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 2;
    Sampler s(p);
    // Token 0 (3.0 -> 1.5) falls below token 1 (2.0) once seen.
    const std::vector<float> pos = {3.0f, 2.0f};
    EXPECT_EQ(s.sample(pos), 0);
    s.accept(0);
    EXPECT_EQ(s.sample(pos), 1);
    // Negative: token 1 (-1.0 -> -2.0) falls below token 0 (-1.5).
    Sampler t(p);
    const std::vector<float> neg = {-1.5f, -1.0f};
    EXPECT_EQ(t.sample(neg), 1);
    t.accept(1);
    EXPECT_EQ(t.sample(neg), 0);
    // Only the last repeat_last_n tokens count: after 1, 1, token 0 is no longer penalized.
    s.accept(1);
    s.accept(1);
    EXPECT_EQ(s.sample(pos), 0);
}

TEST(Sampler, OneSeedGivesOneSequenceAndAnotherSeedAnother) {
    std::vector<float> logits(1000);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(std::sin(double(i)));
    SamplerParams p;  // the defaults: top-k 40, top-p 0.95, min-p 0.05, temperature 0.8
    p.seed = 1234;
    auto run = [&](uint64_t seed) {
        SamplerParams q = p;
        q.seed = seed;
        Sampler s(q);
        std::vector<int32_t> out;
        for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits));
        return out;
    };
    EXPECT_EQ(run(1234), run(1234));
    EXPECT_NE(run(1234), run(1235));
}

TEST(Sampler, OutOfRangeParametersAreRejectedByTheirFlag) {
    SamplerParams p;
    p.temperature = -0.1f;
    EXPECT_NE(error_of(p).find("--temp"), std::string::npos);
    p = {};
    p.top_p = 0.0f;
    EXPECT_NE(error_of(p).find("--top-p"), std::string::npos);
    p = {};
    p.top_p = 1.5f;
    EXPECT_NE(error_of(p).find("--top-p"), std::string::npos);
    p = {};
    p.min_p = -0.5f;
    EXPECT_NE(error_of(p).find("--min-p"), std::string::npos);
    p = {};
    p.top_k = -1;
    EXPECT_NE(error_of(p).find("--top-k"), std::string::npos);
    p = {};
    p.repeat_penalty = 0.0f;
    EXPECT_NE(error_of(p).find("--repeat-penalty"), std::string::npos);
    p = {};
    p.repeat_last_n = -2;
    EXPECT_NE(error_of(p).find("--repeat-last-n"), std::string::npos);
    p = {};
    p.temperature = std::numeric_limits<float>::quiet_NaN();
    EXPECT_NE(error_of(p).find("--temp"), std::string::npos);
    EXPECT_EQ(error_of(SamplerParams{}), "");
}

TEST(Sampler, BadLogitRowsAreErrorsNotTokens) {
    Sampler s(SamplerParams{});
    EXPECT_THROW(s.sample(std::vector<float>{}), Error);
    EXPECT_THROW(s.sample(std::vector<float>{0.0f, std::nanf("")}), Error);
    EXPECT_THROW(s.sample(std::vector<float>{0.0f, INFINITY}), Error);
    EXPECT_THROW(s.sample(std::vector<float>{-INFINITY, -INFINITY}), Error);
    SamplerParams p;
    p.repeat_penalty = 1.1f;
    Sampler t(p);
    t.accept(5);  // outside a 3-token row
    EXPECT_THROW(t.sample(std::vector<float>{0.0f, 1.0f, 2.0f}), Error);
    EXPECT_THROW(t.accept(-1), Error);
}

}  // namespace
}  // namespace sy::llm
