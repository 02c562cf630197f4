#include "switchyard/llm/bpe_vocab.hpp"

#include <cctype>
#include <map>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

namespace sy::llm {
namespace {

// The text the merges are learned from: plain English prose, so frequent English pieces
// ("Ġthe", "ing", "tion") become tokens as they would in a real vocabulary.
constexpr std::string_view kCorpus =
    "The quick brown fox jumps over the lazy dog. A language model reads a sequence of tokens "
    "and predicts the next one. Each token is a piece of text: a whole word, part of a word, or "
    "a single byte. The model was trained on a large amount of text, and the tokenizer was "
    "learned from the same text by merging the most frequent pairs of pieces again and again.\n"
    "In the morning the market opened early. People were walking along the river, talking "
    "about the weather, the news and the price of bread. Children played in the park while "
    "their parents were reading newspapers on the benches. It was a quiet and pleasant day, "
    "and nobody expected that anything would change before the evening.\n"
    "Mixture of experts models route every token to a small number of experts. The router "
    "computes a score for each expert, selects the best ones and combines their outputs with "
    "the normalized weights. Attention compresses the keys and values into a latent vector, "
    "which makes the cache much smaller than in a standard transformer. These ideas are "
    "simple, but the details matter when the model is running on real hardware.\n"
    "She opened the window and looked at the mountains. The snow was melting, the rivers were "
    "rising, and the first flowers were coming out in the fields. He said that he would "
    "return in the spring, when the roads were open again. They waited for him every day, "
    "watching the path that led down to the village from the north.\n"
    "Writing good software is about making things clear: names that say what a thing is, "
    "functions that do one thing, and tests that check the behaviour that matters. When a "
    "program fails, the error message should tell the user which file, which key or which "
    "tensor was wrong, and what to do about it. Nothing should fail silently.\n";

// Letters used to extend the vocabulary once the corpus has no pair left worth merging.
constexpr std::string_view kExtensionLetters = "etaoinsrhldcumfpgwybvk";

using Word = std::vector<std::string>;

// GPT-2 pre-tokenization, simplified: a word is a run of letters/digits with the space
// before it; punctuation and newlines are words of their own.
std::vector<Word> split_words(std::string_view text) {
    std::vector<Word> words;
    Word current;
    auto flush = [&] {
        if (!current.empty()) words.push_back(std::move(current));
        current.clear();
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<uint8_t>(text[i]);
        const bool alnum = std::isalnum(c) != 0;
        if (c == ' ') {
            flush();
            current.push_back(gpt2_byte_token(c));
        } else if (alnum) {
            if (!current.empty() && !std::isalnum(static_cast<uint8_t>(text[i - 1])) &&
                text[i - 1] != ' ') {
                flush();
            }
            current.push_back(gpt2_byte_token(c));
        } else {
            flush();
            current.push_back(gpt2_byte_token(c));
            flush();
        }
    }
    flush();
    return words;
}

}  // namespace

std::string gpt2_byte_token(uint8_t b) {
    // Printable bytes keep their code point; the others map to 256 + their rank among them.
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    uint32_t cp = b;
    if (!printable) {
        uint32_t rank = 0;
        for (uint32_t x = 0; x < b; ++x) {
            const bool p = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174;
            if (!p) ++rank;
        }
        cp = 256 + rank;
    }
    std::string out;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return out;
}

BpeVocab build_bpe_vocab(uint32_t vocab_size) {
    if (vocab_size < 260) {
        throw std::invalid_argument(
            "a byte-level BPE vocabulary needs at least 260 tokens, asked " +
            std::to_string(vocab_size));
    }
    BpeVocab v;
    const uint32_t n_normal = vocab_size - 4;
    std::unordered_set<std::string> known;
    for (int b = 0; b < 256; ++b) {
        v.tokens.push_back(gpt2_byte_token(static_cast<uint8_t>(b)));
        known.insert(v.tokens.back());
    }
    auto add_merge = [&](const std::string& a, const std::string& b) {
        v.merges.push_back(a + " " + b);
        v.tokens.push_back(a + b);
        known.insert(v.tokens.back());
    };

    // Learn merges: the most frequent adjacent pair (ties: the smallest pair) until no pair
    // occurs twice.
    std::vector<Word> words = split_words(kCorpus);
    while (v.tokens.size() < n_normal) {
        std::map<std::pair<std::string, std::string>, int> counts;
        for (const Word& w : words) {
            for (size_t i = 0; i + 1 < w.size(); ++i) ++counts[{w[i], w[i + 1]}];
        }
        const std::pair<std::string, std::string>* best = nullptr;
        int best_count = 1;
        for (const auto& [pair, count] : counts) {
            if (count > best_count && !known.count(pair.first + pair.second)) {
                best = &pair;
                best_count = count;
            }
        }
        if (!best) break;
        const auto [a, b] = *best;
        add_merge(a, b);
        for (Word& w : words) {
            Word merged;
            for (size_t i = 0; i < w.size(); ++i) {
                if (i + 1 < w.size() && w[i] == a && w[i + 1] == b) {
                    merged.push_back(a + b);
                    ++i;
                } else {
                    merged.push_back(w[i]);
                }
            }
            w = std::move(merged);
        }
    }

    // Extend: append common letters to existing multi-byte tokens, oldest first, so every
    // merge joins two tokens that already exist.
    for (size_t base = 256; v.tokens.size() < n_normal; ++base) {
        const std::string stem = v.tokens[base];
        for (char c : kExtensionLetters) {
            if (v.tokens.size() >= n_normal) break;
            const std::string letter(1, c);
            if (!known.count(stem + letter)) add_merge(stem, letter);
        }
    }

    v.token_types.assign(v.tokens.size(), static_cast<int32_t>(TokenType::normal));
    // The chat markers of DeepSeek-V3 (user-defined tokens), then BOS and EOS last.
    v.tokens.push_back("<｜User｜>");
    v.tokens.push_back("<｜Assistant｜>");
    v.token_types.push_back(static_cast<int32_t>(TokenType::user_defined));
    v.token_types.push_back(static_cast<int32_t>(TokenType::user_defined));
    v.bos_id = static_cast<uint32_t>(v.tokens.size());
    v.tokens.push_back("<｜begin▁of▁sentence｜>");
    v.eos_id = static_cast<uint32_t>(v.tokens.size());
    v.tokens.push_back("<｜end▁of▁sentence｜>");
    v.token_types.push_back(static_cast<int32_t>(TokenType::control));
    v.token_types.push_back(static_cast<int32_t>(TokenType::control));
    return v;
}

}  // namespace sy::llm
