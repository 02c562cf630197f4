// Drawing tokens under a grammar (grammar.hpp): the sampler's own draw, kept when the grammar
// allows the token, else a draw again from the allowed tokens only. That is the distribution of
// masking first (a rejected draw repeated over what is left), and most steps of free text never
// need the vocabulary walked. A token's text is its bytes with control tokens spelled out; the
// end of generation is allowed only where the grammar's sentence is whole.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "switchyard/llm/grammar.hpp"
#include "switchyard/llm/sampler.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::llm {

// The vocabulary as a trie of its tokens' texts (control tokens spelled out).
TokenTrie vocabulary_trie(const Tokenizer& tokenizer);

class GrammarSampler {
  public:
    // Throws sy::Error for a grammar that cannot start (grammar.hpp).
    GrammarSampler(std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer,
                   bool ignore_eos);

    // The next token. `trie` gives vocabulary_trie(tokenizer) when the first draw is refused
    // (made once by the caller, shared by its samplers). Throws sy::Error when the grammar
    // allows no token of the vocabulary.
    int32_t sample(Sampler& sampler, std::span<const float> logits,
                   const std::function<const TokenTrie&()>& trie);
    // Moves past a token sample() gave.
    void accept(int32_t token);
    // Nothing more can follow: the text is a whole sentence of the grammar.
    bool done() const { return !matcher_.can_continue(); }

  private:
    bool allows(int32_t token) const;

    GrammarMatcher matcher_;
    const Tokenizer& tokenizer_;
    bool ignore_eos_;
    std::vector<uint8_t> allowed_;              // the last walk's tokens
    std::optional<GrammarMatcher> allowed_at_;  // where it was made: reused there

    std::vector<float> masked_;
};

}  // namespace sy::llm
