// Text <-> tokens from a GGUF vocabulary (tokenizer.ggml.*): byte-level BPE (`gpt2` model, the
// DeepSeek families' tokenizer).
//
// Encoding: the vocabulary's added tokens cut the text first (added_tokens.hpp: user-defined
// entries always, control and unknown ones when special tokens are parsed); each stretch of text
// between them is pre-tokenized, each piece spelled in GPT-2's byte-to-unicode alphabet and
// merged pair by pair in merge-rank order. Pre-tokenization follows the
// `tokenizer.ggml.pre` family: digits in runs of at most 3 (deepseek-v3, llama3, qwen2) or whole
// runs (deepseek-llm, deepseek-coder), CJK runs apart, letters with one leading space,
// punctuation with one leading space and trailing newlines, whitespace that leaves its last
// space to the next word. Characters are classified by their Unicode general category (ICU):
// letters (and marks, for the DeepSeek families), numbers, white space, punctuation and
// symbols, with the CJK ideograph, kana and hangul ranges apart.
// Decoding, as llama.cpp's token_to_piece: normal tokens map back to their bytes, user-defined
// tokens are their text as is (so decode(encode(text)) == text), control and unknown tokens are
// nothing unless asked, other token types nothing.
//
// SentencePiece-style vocabularies (`llama` model: tokenizer.ggml.scores, byte tokens <0xXX>)
// are encoded the way SentencePiece's BPE does it: spaces become U+2581 "▁" (and one is put in
// front of the text and after each special token when tokenizer.ggml.add_space_prefix, true by
// default, says so), the text starts as single characters, and the adjacent pair whose join is
// a token of highest score (leftmost on ties) is merged until none is; characters that are no
// token fall back to their byte tokens (or the unknown token). No pre-tokenizer splits the text.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "switchyard/llm/added_tokens.hpp"
#include "switchyard/llm/gguf.hpp"

namespace sy::llm {

class Tokenizer {
  public:
    // Throws gguf::FormatError naming the key for a missing or malformed vocabulary, and for
    // tokenizer models other than gpt2 and llama.
    static Tokenizer from_gguf(const gguf::Reader& file);
    // from_gguf for a model whose output has `output_rows` logits: a vocabulary with fewer
    // tokens is refused (ids past its end would be sampled and print as nothing).
    static Tokenizer for_model(const gguf::Reader& file, uint32_t output_rows);

    std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const;
    // The bytes a token stands for; control and unknown tokens give "" unless `special`.
    std::string token_bytes(int32_t id, bool special = false) const;
    std::string decode(std::span<const int32_t> ids, bool special = false) const;

    int32_t n_vocab() const { return static_cast<int32_t>(tokens_.size()); }
    int32_t bos() const { return bos_; }
    int32_t eos() const { return eos_; }
    bool add_bos() const { return add_bos_; }
    // End of generation: eos, or an end-of-turn token the metadata names.
    bool is_end_of_generation(int32_t id) const { return id == eos_ || id == eot_; }
    const std::string& pre() const { return pre_; }
    bool sentencepiece() const { return spm_; }
    // The token whose text is exactly `text`, or -1.
    int32_t find(std::string_view text) const;

    // The pieces BPE merges within (byte-level BPE only; SentencePiece does not split).
    std::vector<std::string> pre_tokenize(std::string_view text) const;

  private:
    // A span of text: its start and length in bytes.
    struct Span {
        size_t at, len;
    };
    // The lookup of a string_view in a map keyed by std::string, without a copy.
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    // A merge `left right`: its rank (lower merges first) and the id of what it makes.
    struct Merge {
        int32_t rank, result;
    };

    // The buffers one encode() reuses for every piece (tokenizer.cpp).
    struct Scratch;

    // The pieces of `text` into scratch.pieces.
    void pre_tokenize(std::string_view text, Scratch& scratch) const;
    void bpe(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const;
    // Appends what token_bytes(id, special) returns.
    void append_bytes(int32_t id, bool special, std::string& out) const;
    void spm(std::string_view text, bool space_prefix, std::vector<int32_t>& out) const;
    void read_spm(const gguf::Reader& file);

    std::vector<std::string> tokens_;
    std::vector<int32_t> types_;
    std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;
    // Byte-level BPE's merges keyed by (left id << 32 | right id). The ids are token ids, or,
    // for strings the merges name that are no token, ids from n_vocab() up (never emitted:
    // such a symbol falls back to its bytes). byte_symbol_[b] is the id of byte b's spelling,
    // -1 when no token or merge names it.
    std::unordered_map<uint64_t, Merge> merges_;
    std::array<int32_t, 256> byte_symbol_{};
    AddedTokens added_;
    std::string pre_;
    bool digits_whole_ = false;
    bool marks_are_letters_ = false;  // \p{M} joins words (the DeepSeek families)
    bool spm_ = false;
    bool add_space_prefix_ = true;
    std::vector<float> scores_;        // spm: merge priority per token
    std::vector<int32_t> byte_token_;  // spm: the <0xXX> token of each byte, -1 if none
    int32_t unk_ = -1;
    int32_t bos_ = -1, eos_ = -1, eot_ = -1;
    bool add_bos_ = false;
};

}  // namespace sy::llm
