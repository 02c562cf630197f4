// A vocabulary's added tokens (GGUF token types USER_DEFINED, CONTROL and UNKNOWN) and how they
// cut a text before the tokenizer model sees it, as llama.cpp's tokenizer does: user-defined
// tokens always, control and unknown ones only when special tokens are parsed.
//
// The tokens are taken longest first (equal lengths: lower id first); each one takes its leftmost
// non-overlapping occurrences in what the longer ones left of the text. So in "xabc" with the
// added tokens "abc" and "xa", "abc" wins although "xa" starts first, and "x" stays plain text.
// The plain text between added tokens is pre-tokenized and merged fragment by fragment.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sy::llm {

class AddedTokens {
  public:
    // `always`: matched even when special tokens are not parsed (user-defined tokens). Texts
    // are matched byte for byte; an empty text is never matched.
    void add(int32_t id, std::string_view text, bool always);
    bool empty() const { return entries_.empty(); }

    // A stretch of the text: an added token (id >= 0) or plain text (id -1).
    struct Fragment {
        size_t at = 0, len = 0;
        int32_t id = -1;
        bool operator==(const Fragment&) const = default;
    };
    // The text cut at its added tokens, in text order; plain fragments are never empty.
    std::vector<Fragment> split(std::string_view text, bool parse_special) const;

  private:
    // One distinct text: the lowest user-defined id and the lowest control/unknown id that
    // spell it (-1: none).
    struct Entry {
        uint32_t len = 0;
        int32_t always_id = -1, special_id = -1;
        int32_t id(bool parse_special) const;
    };
    // A trie over the texts' bytes: edges_ maps (node << 8 | byte) to the child node, entry_of_
    // gives the entry that ends at a node (-1: none). Node 0 is the root.
    std::unordered_map<uint64_t, uint32_t> edges_;
    std::vector<int32_t> entry_of_ = {-1};
    std::vector<Entry> entries_;
};

}  // namespace sy::llm
