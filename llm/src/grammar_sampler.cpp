#include "switchyard/llm/grammar_sampler.hpp"

#include <cmath>

#include "switchyard/core/error.hpp"

namespace sy::llm {

TokenTrie vocabulary_trie(const Tokenizer& tokenizer) {
    std::vector<std::string> texts(size_t(tokenizer.n_vocab()));
    for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
        texts[size_t(id)] = tokenizer.token_bytes(id, true);
    return TokenTrie(texts);
}

GrammarSampler::GrammarSampler(std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer,
                               bool ignore_eos)
    : matcher_(std::move(grammar)), tokenizer_(tokenizer), ignore_eos_(ignore_eos) {}

bool GrammarSampler::allows(int32_t token) const {
    if (tokenizer_.is_end_of_generation(token)) return !ignore_eos_ && matcher_.complete();
    const std::string text = tokenizer_.token_bytes(token, true);
    return !text.empty() && matcher_.accepts(text);
}

int32_t GrammarSampler::sample(Sampler& sampler, std::span<const float> logits,
                               const std::function<const TokenTrie&()>& trie) {
    const int32_t first = sampler.sample(logits);
    if (allows(first)) return first;
    if (!allowed_at_ || !(*allowed_at_ == matcher_)) {
        matcher_.allowed_tokens(trie(), allowed_);
        allowed_at_ = matcher_;
    }
    const bool may_end = !ignore_eos_ && matcher_.complete();
    masked_.assign(logits.begin(), logits.end());
    bool any = false;
    for (size_t id = 0; id < masked_.size(); ++id) {
        const bool ok = tokenizer_.is_end_of_generation(int32_t(id))
                            ? may_end
                            : id < allowed_.size() && allowed_[id] != 0;
        if (ok)
            any = true;
        else
            masked_[id] = -INFINITY;
    }
    if (!any) throw Error("the grammar allows no token of the vocabulary here");
    return sampler.sample(masked_);
}

void GrammarSampler::accept(int32_t token) {
    if (!tokenizer_.is_end_of_generation(token)) matcher_.feed(tokenizer_.token_bytes(token, true));
}

}  // namespace sy::llm
