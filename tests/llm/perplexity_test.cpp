// Perplexity (llm/perplexity.hpp): the negative log-likelihood of known logits, the error
// estimate, and llama.cpp's chunking (BOS first, second half scored, several chunks per pass)
// on a scripted model; llama-perplexity's KL-divergence file byte for byte, its reader's
// refusals, and the statistics of a model against a base.
#include "switchyard/llm/perplexity.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "llm_test_util.hpp"
#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

using test::file_bytes;
using test::ScratchDir;

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
// what it was asked to evaluate, pass by pass.
struct ScriptedModel {
    int64_t n_vocab = 8;
    std::vector<std::vector<int32_t>> prefixes, scored;
    std::vector<int> prefix_seqs, scored_seqs;
    int resets = 0;
    PerplexityModel interface() {
        PerplexityModel m;
        m.n_vocab = n_vocab;
        m.reset = [this] { ++resets; };
        m.eval_prefix = [this](std::span<const int32_t> t, int n_seqs) {
            prefixes.emplace_back(t.begin(), t.end());
            prefix_seqs.push_back(n_seqs);
        };
        m.eval_all = [this](std::span<const int32_t> t, int n_seqs) {
            scored.emplace_back(t.begin(), t.end());
            scored_seqs.push_back(n_seqs);
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

// Several chunks per pass: each pass hands the model its chunks as sequences one after the
// other (the last pass the chunks left), and the figures are those of one chunk per pass.
TEST(Perplexity, SeveralChunksPerPassGiveTheSameFigures) {
    std::vector<int32_t> text(60);
    std::mt19937 rng(3);
    for (int32_t& t : text) t = int32_t(rng() % 8);
    ScriptedModel one, three;
    const auto r1 = perplexity(one.interface(), text, 8, 0, 7, {}, 1);
    std::vector<int> indices;
    const auto r3 = perplexity(
        three.interface(), text, 8, 0, 7,
        [&](const PerplexityChunk& c) { indices.push_back(c.index); }, 3);
    EXPECT_EQ(r3.chunks, 7);
    EXPECT_EQ(three.resets, 3);  // passes of 3, 3 and 1 chunks
    EXPECT_EQ(three.prefix_seqs, (std::vector<int>{3, 3, 1}));
    EXPECT_EQ(three.scored_seqs, (std::vector<int>{3, 3, 1}));
    // The second pass: chunks 3, 4, 5 (tokens 24 .. 47), each prefix with BOS first.
    std::vector<int32_t> prefix, scored;
    for (int c = 3; c < 6; ++c) {
        prefix.push_back(7);
        prefix.insert(prefix.end(), text.begin() + c * 8 + 1, text.begin() + c * 8 + 4);
        scored.insert(scored.end(), text.begin() + c * 8 + 4, text.begin() + c * 8 + 8);
    }
    EXPECT_EQ(three.prefixes[1], prefix);
    EXPECT_EQ(three.scored[1], scored);
    EXPECT_EQ(indices, (std::vector<int>{1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(r3.scored_tokens, r1.scored_tokens);
    EXPECT_DOUBLE_EQ(r3.ppl, r1.ppl);
    EXPECT_DOUBLE_EQ(r3.error, r1.error);
    EXPECT_GT(r1.ppl, 100.0);  // random text: most predictions wrong
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

// --- the KL-divergence file ------------------------------------------------------------------

std::vector<float> random_logits(std::mt19937& rng, size_t n, float spread) {
    std::normal_distribution<float> d(0.0f, spread);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

std::vector<double> log_softmax(std::span<const float> logits) {
    double max = logits[0], sum = 0;
    for (float v : logits) max = std::max(max, double(v));
    for (float v : logits) sum += std::exp(double(v) - max);
    std::vector<double> out;
    for (float v : logits) out.push_back(double(v) - max - std::log(sum));
    return out;
}

template <typename T>
T read_at(const std::vector<char>& bytes, size_t at) {
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    return v;
}

// The record of one position: every log-probability within the range comes back within half a
// step; those below it are q = 0; the padding of an odd vocabulary is 0.
TEST(KlDivergenceFile, RecordsDecodeToTheLogProbabilities) {
    std::mt19937 rng(7);
    for (int64_t n : {int64_t{5}, int64_t{6}, int64_t{1001}}) {
        const std::vector<float> logits = random_logits(rng, size_t(n), 8.0f);
        std::vector<uint16_t> record(size_t(log_prob_record_size(n)), 0xffff);
        ASSERT_EQ(record.size(), size_t(2 * ((n + 1) / 2) + 4));
        encode_log_probs(logits, record);
        float scale, min_log_prob;
        std::memcpy(&scale, record.data(), 4);
        std::memcpy(&min_log_prob, record.data() + 2, 4);
        const std::vector<double> lp = log_softmax(logits);
        const double top = *std::max_element(lp.begin(), lp.end());
        int below = 0;
        for (int64_t i = 0; i < n; ++i) {
            if (lp[size_t(i)] < top - kLogProbRange) {
                EXPECT_EQ(record[size_t(4 + i)], 0) << i;
                ++below;
                continue;
            }
            EXPECT_NEAR(decoded_log_prob(record, i), lp[size_t(i)], 0.5 * scale + 1e-5)
                << "n " << n << " i " << i;
        }
        if (n == 1001) {
            EXPECT_GT(below, 0);  // spread 8 over 1001 values reaches past 24
        }
        EXPECT_NEAR(scale, (top - std::max(*std::min_element(lp.begin(), lp.end()),
                                           top - double(kLogProbRange))) /
                               65535.0,
                    1e-6);
        if (n % 2 == 1) {
            EXPECT_EQ(record.back(), 0);
        }
    }
    // Equal logits: scale 0, every q 0, log p = min_log_prob = -ln n.
    std::vector<uint16_t> flat(size_t(log_prob_record_size(4)), 7);
    encode_log_probs(std::vector<float>(4, 1.5f), flat);
    EXPECT_NEAR(decoded_log_prob(flat, 2), -std::log(4.0), 1e-6);
    for (size_t i = 4; i < flat.size(); ++i) EXPECT_EQ(flat[i], 0);
}

// The file byte for byte: magic, n_ctx, n_vocab, n_chunk, the tokens, then per chunk the records
// of positions n_ctx/2 .. n_ctx-2, quantized as llama.cpp does (q = round-half-even of
// (logit - min) / scale computed as (1 / scale) * (logit - min)).
TEST(KlDivergenceFile, LayoutIsLlamaPerplexitys) {
    ScratchDir dir;
    const auto path = (dir / "base.kld").string();
    const int32_t n_ctx = 10, n_vocab = 7, n_chunk = 2;
    std::mt19937 rng(11);
    std::vector<int32_t> tokens(size_t(n_ctx * n_chunk));
    for (int32_t& t : tokens) t = int32_t(rng() % n_vocab);
    const int64_t rows = scored_positions(n_ctx);
    ASSERT_EQ(rows, 4);  // positions 5, 6, 7, 8
    std::vector<std::vector<float>> chunk_logits;
    KldBaseWriter w(path, n_ctx, n_vocab, n_chunk, tokens);
    for (int c = 0; c < n_chunk; ++c) {
        chunk_logits.push_back(random_logits(rng, size_t(rows * n_vocab), 3.0f));
        w.add_chunk(chunk_logits.back());
    }
    w.close();

    const std::vector<char> bytes = file_bytes(path);
    const size_t nv = 2 * ((n_vocab + 1) / 2) + 4;  // 12
    ASSERT_EQ(bytes.size(), 8 + 12 + tokens.size() * 4 + size_t(n_chunk * rows) * nv * 2);
    EXPECT_EQ(std::string(bytes.data(), 8), "_logits_");
    EXPECT_EQ(read_at<int32_t>(bytes, 8), n_ctx);
    EXPECT_EQ(read_at<int32_t>(bytes, 12), n_vocab);
    EXPECT_EQ(read_at<int32_t>(bytes, 16), n_chunk);
    for (size_t i = 0; i < tokens.size(); ++i)
        ASSERT_EQ(read_at<int32_t>(bytes, 20 + 4 * i), tokens[i]) << i;
    size_t at = 20 + tokens.size() * 4;
    for (int c = 0; c < n_chunk; ++c)
        for (int64_t j = 0; j < rows; ++j, at += nv * 2) {
            const float* l = chunk_logits[size_t(c)].data() + j * n_vocab;
            const float max = *std::max_element(l, l + n_vocab);
            const float min = std::max(*std::min_element(l, l + n_vocab), max - 24.0f);
            double sum = 0;
            for (int i = 0; i < n_vocab; ++i) sum += std::exp(l[i] - max);
            const float scale = (max - min) / 65535.0f;
            const float min_log_prob = min - max - float(std::log(sum));
            EXPECT_EQ(read_at<float>(bytes, at), scale);
            EXPECT_EQ(read_at<float>(bytes, at + 4), min_log_prob);
            const float inv = 1.0f / scale;
            for (int i = 0; i < n_vocab; ++i) {
                const long q = l[i] > min ? std::lrint(inv * (l[i] - min)) : 0;
                EXPECT_EQ(read_at<uint16_t>(bytes, at + 8 + 2 * size_t(i)), q)
                    << "chunk " << c << " position " << j << " token " << i;
            }
            EXPECT_EQ(read_at<uint16_t>(bytes, at + 8 + 2 * size_t(n_vocab)), 0);  // padding
        }

    // Read back: the same header, tokens and records.
    KldBaseFile f(path);
    EXPECT_EQ(f.n_ctx(), n_ctx);
    EXPECT_EQ(f.n_vocab(), n_vocab);
    EXPECT_EQ(f.n_chunk(), n_chunk);
    EXPECT_EQ(f.tokens(), tokens);
    std::vector<uint16_t> records;
    f.read_chunk(1, records);
    ASSERT_EQ(records.size(), size_t(rows) * nv);
    EXPECT_EQ(std::memcmp(records.data(), bytes.data() + 20 + tokens.size() * 4 + rows * nv * 2,
                          records.size() * 2),
              0);
    EXPECT_THROW(f.read_chunk(2, records), Error);
}

TEST(KlDivergenceFile, WriterRefusesWhatDoesNotFit) {
    ScratchDir dir;
    const auto path = (dir / "w.kld").string();
    const std::vector<int32_t> tokens(16, 1);
    EXPECT_THROW(KldBaseWriter(path, 8, 5, 3, tokens), Error);  // 16 tokens for 3 chunks
    KldBaseWriter w(path, 8, 5, 2, tokens);
    EXPECT_THROW(w.add_chunk(std::vector<float>(7)), Error);  // 3 x 5 logits expected
    w.add_chunk(std::vector<float>(15, 0.0f));
    EXPECT_THROW(w.close(), Error);  // one of two chunks
    EXPECT_THROW(KldBaseWriter((dir / "no/such/dir/x.kld").string(), 8, 5, 2, tokens), Error);
}

// Every refusal names the file and what is wrong; nothing is allocated from a header the
// file's size does not back.
TEST(KlDivergenceFile, ReaderRefusesBadFiles) {
    ScratchDir dir;
    const auto good = (dir / "good.kld").string();
    {
        KldBaseWriter w(good, 8, 5, 2, std::vector<int32_t>(16, 3));
        w.add_chunk(std::vector<float>(15, 0.5f));
        w.add_chunk(std::vector<float>(15, 0.25f));
        w.close();
    }
    const std::vector<char> bytes = file_bytes(good);
    const auto write = [&](const std::string& name, std::vector<char> b) {
        const auto p = (dir / name).string();
        std::ofstream(p, std::ios::binary).write(b.data(), std::streamsize(b.size()));
        return p;
    };
    const auto expect_error = [](const std::string& path, const std::string& part) {
        try {
            KldBaseFile f(path);
            ADD_FAILURE() << path << " accepted";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(path), std::string::npos) << what;
            EXPECT_NE(what.find(part), std::string::npos) << what;
        }
    };
    expect_error((dir / "missing.kld").string(), "cannot read");
    std::vector<char> b = bytes;
    b[0] = 'X';
    expect_error(write("magic.kld", b), "does not look like");
    expect_error(write("short.kld", {bytes.begin(), bytes.begin() + 5}), "does not look like");
    expect_error(write("header.kld", {bytes.begin(), bytes.begin() + 14}), "truncated header");
    expect_error(write("cut.kld", {bytes.begin(), bytes.end() - 1}), "truncated");
    b = bytes;
    b.push_back(0);
    expect_error(write("long.kld", b), "implies");
    // A header claiming 2^31 - 1 chunks of a huge vocabulary: refused by size, no allocation.
    b = bytes;
    const int32_t huge = INT32_MAX;
    std::memcpy(b.data() + 12, &huge, 4);
    std::memcpy(b.data() + 16, &huge, 4);
    expect_error(write("huge.kld", b), "implies");
    b = bytes;
    const int32_t zero = 0;
    std::memcpy(b.data() + 16, &zero, 4);
    expect_error(write("zero.kld", b), "out of range");
    b = bytes;
    const int32_t bad_token = 5;
    std::memcpy(b.data() + 20 + 4 * 9, &bad_token, 4);
    expect_error(write("token.kld", b), "token 5 at index 9");

    KldBaseFile f(good);
    const auto expect_mismatch = [&](const std::function<void()>& check, const std::string& a,
                                     const std::string& b2) {
        try {
            check();
            ADD_FAILURE() << "mismatch accepted";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(good), std::string::npos) << what;
            EXPECT_NE(what.find(a), std::string::npos) << what;
            EXPECT_NE(what.find(b2), std::string::npos) << what;
        }
    };
    expect_mismatch([&] { f.expect_context(16); }, "context of 8", "-c 16");
    expect_mismatch([&] { f.expect_vocabulary(6); }, "over 5 tokens", "has 6");
    f.expect_context(8);
    f.expect_vocabulary(5);
}

// --- statistics against the base -------------------------------------------------------------

// A model against its own stored log-probabilities: KLD 0 within the quantization (the
// stored values are within half a step of the exact ones), the same top token everywhere,
// PPL(Q) = PPL(base) within the same bound. A different model: KLD > 0, equal to the exact
// KL divergence within the quantization; its Δp is p_Q - p_base.
TEST(KldAccumulator, AgainstItselfIsZeroAgainstAnotherIsTheDivergence) {
    std::mt19937 rng(5);
    const int64_t n_vocab = 300, positions = 150;
    KldAccumulator same, other;
    double exact_kld = 0, exact_dp = 0;
    std::vector<uint16_t> record(size_t(log_prob_record_size(n_vocab)));
    for (int64_t j = 0; j < positions; ++j) {
        const std::vector<float> base = random_logits(rng, size_t(n_vocab), 2.0f);
        std::vector<float> q = base;
        for (float& v : q) v += std::normal_distribution<float>(0.0f, 0.5f)(rng);
        const auto target = int32_t(rng() % n_vocab);
        encode_log_probs(base, record);
        same.add(base, record, target);
        other.add(q, record, target);
        const std::vector<double> lb = log_softmax(base), lq = log_softmax(q);
        for (int64_t i = 0; i < n_vocab; ++i)
            exact_kld += std::exp(lb[size_t(i)]) * (lb[size_t(i)] - lq[size_t(i)]);
        exact_dp += std::exp(lq[size_t(target)]) - std::exp(lb[size_t(target)]);
    }
    const KldStatistics s = same.statistics(true);
    EXPECT_EQ(s.count, positions);
    // Each stored log-probability is within half a step (at most 24 / 65535 / 2) of the exact.
    const double half_step = 0.5 * double(kLogProbRange) / 65535.0;
    EXPECT_NEAR(s.kld.value, 0.0, 1e-5);
    EXPECT_NEAR(s.kld_values.back(), 0.0, half_step);
    EXPECT_NEAR(s.kld_values.front(), 0.0, half_step);
    EXPECT_DOUBLE_EQ(s.same_top.value, 1.0);
    EXPECT_NEAR(s.ppl.value / s.ppl_base.value, 1.0, 1e-4);
    EXPECT_NEAR(s.ln_ppl_ratio.value, 0.0, 1e-4);
    EXPECT_NEAR(s.rms_delta_p.value, 0.0, 1e-4);
    EXPECT_GT(s.ln_ppl_correlation, 0.999);

    const KldStatistics o = other.statistics(true);
    EXPECT_GT(o.kld.value, 0.01);
    EXPECT_NEAR(o.kld.value, exact_kld / positions, 1e-3 * o.kld.value + 1e-5);
    EXPECT_GT(o.kld.error, 0.0);
    EXPECT_NEAR(o.delta_p.value, exact_dp / positions, 1e-4);
    EXPECT_LT(o.same_top.value, 1.0);
    EXPECT_GT(o.rms_delta_p.value, 0.0);
    // Percentiles come from the sorted values: the ends are the minimum and maximum, the median
    // lies between them, and they grow with the fraction.
    ASSERT_EQ(o.kld_values.size(), size_t(positions));
    EXPECT_TRUE(std::is_sorted(o.kld_values.begin(), o.kld_values.end()));
    EXPECT_EQ(o.kld_percentile(1.0), o.kld_values.back());
    EXPECT_EQ(o.kld_percentile(0.0), o.kld_values.front());
    EXPECT_LE(o.kld_percentile(0.9), o.kld_percentile(0.99));
    EXPECT_NEAR(o.kld_median(), 0.5 * (o.kld_values[74] + o.kld_values[75]), 1e-7);
    EXPECT_THROW(other.add(std::vector<float>(4), record, 0), Error);  // record of 300
}

// llama.cpp's interpolated percentile: fraction * (n - 1) between neighbours.
TEST(KldAccumulator, PercentilesInterpolateBetweenNeighbours) {
    KldStatistics s;
    s.kld_values = {0.0f, 1.0f, 2.0f, 3.0f, 10.0f};
    EXPECT_NEAR(s.kld_percentile(0.5), 2.0, 1e-6);
    EXPECT_NEAR(s.kld_percentile(0.9), 3.0 + 0.6 * 7.0, 1e-5);  // 0.9 * 4 = 3.6
    EXPECT_NEAR(s.kld_median(), 2.0, 1e-7);
    s.delta_p_values = {-0.5f, 0.0f, 0.25f, 1.0f};
    EXPECT_NEAR(s.delta_p_median(), 0.125, 1e-7);
    EXPECT_NEAR(s.delta_p_percentile(0.25), -0.5 + 0.75 * 0.5, 1e-6);  // 0.75 of the way
}

}  // namespace
}  // namespace sy::llm
