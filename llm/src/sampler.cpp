#include "switchyard/llm/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

[[noreturn]] void bad_param(const char* flag, const std::string& value, const char* rule) {
    throw Error(std::string("sampler: ") + flag + " " + value + " is out of range (" + rule + ")");
}

// Higher logit first, then the lower id: one order for every sort, so results never depend on
// the standard library's sort.
struct ByLogitThenId {
    template <typename C>
    bool operator()(const C& a, const C& b) const {
        return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
    }
};

}  // namespace

void validate(const SamplerParams& p) {
    if (!(p.temperature >= 0.0f) || std::isinf(p.temperature))
        bad_param("--temp", std::to_string(p.temperature), "a finite value >= 0; 0 is greedy");
    if (p.top_k < 0) bad_param("--top-k", std::to_string(p.top_k), ">= 0; 0 turns it off");
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        bad_param("--top-p", std::to_string(p.top_p), "in (0, 1]; 1 turns it off");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
        bad_param("--min-p", std::to_string(p.min_p), "in [0, 1]; 0 turns it off");
    if (!(p.repeat_penalty > 0.0f) || std::isinf(p.repeat_penalty))
        bad_param("--repeat-penalty", std::to_string(p.repeat_penalty),
                  "a finite value > 0; 1 turns it off");
    if (p.repeat_last_n < -1)
        bad_param("--repeat-last-n", std::to_string(p.repeat_last_n),
                  ">= -1; 0 turns it off, -1 covers every token");
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {
    validate(params_);
}

void Sampler::accept(int32_t token) {
    if (token < 0) throw Error("sampler: token id " + std::to_string(token) + " is negative");
    history_.push_back(token);
}

double Sampler::uniform() {
    return double(rng_() >> 11) * 0x1.0p-53;
}

// c holds every token, c[i].id == i.
void Sampler::apply_penalty(std::vector<Candidate>& c) const {
    if (params_.repeat_penalty == 1.0f || params_.repeat_last_n == 0 || history_.empty()) return;
    const size_t n = params_.repeat_last_n < 0
                         ? history_.size()
                         : std::min(history_.size(), size_t(params_.repeat_last_n));
    std::vector<int32_t> window(history_.end() - std::ptrdiff_t(n), history_.end());
    std::sort(window.begin(), window.end());
    window.erase(std::unique(window.begin(), window.end()), window.end());
    for (const int32_t id : window) {
        if (size_t(id) >= c.size())
            throw Error("sampler: token " + std::to_string(id) + " in the history is outside the " +
                        std::to_string(c.size()) + " logits");
        float& l = c[size_t(id)].logit;
        l = l > 0.0f ? l / params_.repeat_penalty : l * params_.repeat_penalty;
    }
}

int32_t Sampler::sample(std::span<const float> logits) {
    if (logits.empty()) throw Error("sampler: the logits row is empty");
    if (logits.size() > size_t(std::numeric_limits<int32_t>::max()))
        throw Error("sampler: " + std::to_string(logits.size()) +
                    " logits exceed the token id range");
    std::vector<Candidate>& c = candidates_;
    c.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        const float l = logits[i];
        if (std::isnan(l) || l == std::numeric_limits<float>::infinity())
            throw Error("sampler: logit " + std::to_string(i) + " is " + std::to_string(l));
        c[i] = {int32_t(i), l};
    }
    apply_penalty(c);

    constexpr float kExcluded = -std::numeric_limits<float>::infinity();
    std::erase_if(c, [](const Candidate& x) { return x.logit == kExcluded; });
    if (c.empty()) throw Error("sampler: every logit is -inf, no token can be chosen");

    if (params_.temperature == 0.0f)
        return std::min_element(c.begin(), c.end(), ByLogitThenId{})->id;

    if (params_.top_k > 0 && size_t(params_.top_k) < c.size()) {
        std::nth_element(c.begin(), c.begin() + params_.top_k, c.end(), ByLogitThenId{});
        c.resize(size_t(params_.top_k));
    }
    std::sort(c.begin(), c.end(), ByLogitThenId{});

    // Probabilities at temperature 1 for top-p; the smallest prefix reaching top_p is kept.
    if (params_.top_p < 1.0f) {
        double total = 0.0;
        for (const Candidate& x : c) total += std::exp(double(x.logit) - double(c[0].logit));
        double cumulative = 0.0;
        size_t keep = c.size();
        for (size_t i = 0; i < c.size(); ++i) {
            cumulative += std::exp(double(c[i].logit) - double(c[0].logit)) / total;
            if (cumulative >= double(params_.top_p)) {
                keep = i + 1;
                break;
            }
        }
        c.resize(keep);
    }
    // min-p: p_i >= min_p * p_max, i.e. logit_i >= logit_max + log(min_p).
    if (params_.min_p > 0.0f) {
        const double floor = double(c[0].logit) + std::log(double(params_.min_p));
        size_t keep = 1;
        while (keep < c.size() && double(c[keep].logit) >= floor) ++keep;
        c.resize(keep);
    }

    std::vector<double> weights(c.size());
    double total = 0.0;
    for (size_t i = 0; i < c.size(); ++i) {
        weights[i] = std::exp((double(c[i].logit) - double(c[0].logit)) / params_.temperature);
        total += weights[i];
    }
    const double target = uniform() * total;
    double cumulative = 0.0;
    for (size_t i = 0; i < c.size(); ++i) {
        cumulative += weights[i];
        if (target < cumulative) return c[i].id;
    }
    return c.back().id;  // rounding: target within the last ulps of total
}

}  // namespace sy::llm
