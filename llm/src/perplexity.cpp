#include "switchyard/llm/perplexity.hpp"

#include <chrono>
#include <cmath>
#include <string>

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

PerplexityResult perplexity(const PerplexityModel& model, std::span<const int32_t> tokens,
                            int64_t n_ctx, int max_chunks, int32_t bos,
                            const std::function<void(const PerplexityChunk&)>& on_chunk) {
    if (n_ctx < 4) throw Error("perplexity: the context must be at least 4 tokens (-c)");
    const auto n = static_cast<int64_t>(tokens.size());
    if (n < 2 * n_ctx)
        throw Error("perplexity: the text has " + std::to_string(n) + " tokens; a context of " +
                    std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx) +
                    " (lower -c or give a longer text)");
    int chunks = static_cast<int>(n / n_ctx);
    if (max_chunks > 0) chunks = std::min(chunks, max_chunks);

    const int64_t first = n_ctx / 2;  // logits of positions first .. n_ctx - 2 are scored
    NllAccumulator acc;
    std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
    for (int c = 0; c < chunks; ++c) {
        const auto t0 = std::chrono::steady_clock::now();
        const int32_t* src = tokens.data() + int64_t(c) * n_ctx;
        chunk.assign(src, src + n_ctx);
        if (bos >= 0) chunk[0] = bos;
        model.reset();
        model.eval_prefix(std::span<const int32_t>(chunk.data(), size_t(first)));
        const std::vector<float> logits =
            model.eval_all(std::span<const int32_t>(chunk.data() + first, size_t(n_ctx - first)));
        if (int64_t(logits.size()) != (n_ctx - first) * model.n_vocab)
            throw Error("perplexity: the model returned " + std::to_string(logits.size()) +
                        " logits for " + std::to_string(n_ctx - first) + " positions");
        for (int64_t j = 0; j + 1 < n_ctx - first; ++j)
            acc.add(
                std::span<const float>(logits.data() + j * model.n_vocab, size_t(model.n_vocab)),
                chunk[size_t(first + j + 1)]);
        if (on_chunk) {
            PerplexityChunk info;
            info.index = c + 1;
            info.running_ppl = acc.perplexity();
            info.seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            on_chunk(info);
        }
    }
    PerplexityResult r;
    r.chunks = chunks;
    r.scored_tokens = acc.count();
    r.ppl = acc.perplexity();
    r.error = acc.perplexity_error();
    return r;
}

}  // namespace sy::llm
