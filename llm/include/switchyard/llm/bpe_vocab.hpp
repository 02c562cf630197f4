// A byte-level BPE vocabulary (GPT-2 style) built without any download, for synthetic models:
// 256 byte tokens in GPT-2's byte-to-unicode spelling, merges learned from a small built-in
// English text (then extended deterministically when a large vocabulary is asked for), and the
// DeepSeek special tokens last (<｜User｜>, <｜Assistant｜>, BOS, EOS).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sy::llm {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, byte = 6 };

struct BpeVocab {
    std::vector<std::string> tokens;   // tokenizer.ggml.tokens
    std::vector<int32_t> token_types;  // tokenizer.ggml.token_type
    std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right"
    uint32_t bos_id = 0;               // <｜begin▁of▁sentence｜>
    uint32_t eos_id = 0;               // <｜end▁of▁sentence｜>
};

// GPT-2's printable spelling of byte b (e.g. ' ' -> "Ġ", '\n' -> "Ċ"), as UTF-8.
std::string gpt2_byte_token(uint8_t b);

// A vocabulary of exactly `vocab_size` tokens (at least 260): deterministic, no randomness.
BpeVocab build_bpe_vocab(uint32_t vocab_size);

}  // namespace sy::llm
