#include "switchyard/llm/tokenizer.hpp"

#include <unicode/uchar.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <optional>

#include "switchyard/llm/bpe_vocab.hpp"

namespace sy::llm {
namespace {

[[noreturn]] void vocab_error(const gguf::Reader& file, const std::string& key,
                              const std::string& what) {
    const std::string name =
        file.files().empty() ? std::string("model") : file.files().front().string();
    throw gguf::FormatError(name + ": metadata key '" + key + "' " + what);
}

const gguf::Array& array_of(const gguf::Reader& file, const std::string& key, gguf::ValueType type,
                            bool required) {
    static const gguf::Array empty;
    const gguf::Value* v = file.find(key);
    if (v == nullptr) {
        if (required) vocab_error(file, key, "is missing (the tokenizer needs it)");
        return empty;
    }
    if (v->type() != gguf::ValueType::ARRAY || v->as_array().element_type != type)
        vocab_error(file, key, std::string("must be an array of ") + gguf::value_type_name(type));
    return v->as_array();
}

int32_t token_id_key(const gguf::Reader& file, const std::string& key, int32_t n_vocab) {
    const gguf::Value* v = file.find(key);
    if (v == nullptr) return -1;
    if (!v->is_integer()) vocab_error(file, key, "must be an integer");
    const int64_t id = v->as_i64();
    if (id < 0 || id >= n_vocab)
        vocab_error(
            file, key,
            "is " + std::to_string(id) + ", outside the vocabulary of " + std::to_string(n_vocab));
    return static_cast<int32_t>(id);
}

// One UTF-8 code point at s[i]: its value and byte length (invalid bytes: the byte, length 1).
std::pair<uint32_t, size_t> code_point(std::string_view s, size_t i) {
    const auto b = static_cast<uint8_t>(s[i]);
    size_t len = b < 0x80           ? 1
                 : (b >> 5) == 0x6  ? 2
                 : (b >> 4) == 0xE  ? 3
                 : (b >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return {b, 1};
    uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (size_t k = 1; k < len; ++k) {
        const auto c = static_cast<uint8_t>(s[i + k]);
        if ((c >> 6) != 0x2) return {b, 1};
        cp = (cp << 6) | (c & 0x3F);
    }
    return {cp, len};
}

// SentencePiece's spelling of a space: U+2581.
constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

enum class Cls { newline, space, digit, cjk, punct, letter };

// The pre-tokenizer's classes from Unicode general categories (ICU): letters (\p{L}, with
// the marks \p{M} in the DeepSeek families' regexes, not in llama3/qwen2's), numbers (\p{N}), white
// space, the CJK ranges the DeepSeek regexes single out, and everything else (punctuation, symbols,
// controls) as punctuation.
Cls classify(uint32_t cp, bool marks_are_letters) {
    if (cp == '\n' || cp == '\r') return Cls::newline;
    if (cp > 0x10FFFF) return Cls::punct;
    const auto c = static_cast<UChar32>(cp);
    if (u_isUWhiteSpace(c)) return Cls::space;
    if ((cp >= 0x3040 && cp <= 0x30FF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
        (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3))
        return Cls::cjk;
    switch (u_charType(c)) {
        case U_DECIMAL_DIGIT_NUMBER:
        case U_LETTER_NUMBER:
        case U_OTHER_NUMBER: return Cls::digit;
        case U_UPPERCASE_LETTER:
        case U_LOWERCASE_LETTER:
        case U_TITLECASE_LETTER:
        case U_MODIFIER_LETTER:
        case U_OTHER_LETTER: return Cls::letter;
        case U_NON_SPACING_MARK:
        case U_ENCLOSING_MARK:
        case U_COMBINING_SPACING_MARK: return marks_are_letters ? Cls::letter : Cls::punct;
        default: return Cls::punct;
    }
}

// GPT-2's byte-to-unicode spelling and its inverse. The alphabet's code points are all below
// U+0144 (bytes that are no printable character map to U+0100 and up).
struct ByteAlphabet {
    static constexpr uint32_t kEnd = 0x144;
    std::string spelling[256];
    int16_t byte_of[kEnd];  // code point -> byte, -1 where none
    ByteAlphabet() {
        std::fill(std::begin(byte_of), std::end(byte_of), int16_t(-1));
        for (int b = 0; b < 256; ++b) {
            spelling[b] = gpt2_byte_token(static_cast<uint8_t>(b));
            const uint32_t cp = code_point(spelling[b], 0).first;
            if (cp < kEnd) byte_of[cp] = static_cast<int16_t>(b);
        }
    }
};

const ByteAlphabet& alphabet() {
    static const ByteAlphabet a;
    return a;
}

// The bytes a byte-level BPE token's spelling stands for; characters outside GPT-2's alphabet
// (and byte sequences that only decode to one of its code points, such as overlong forms) are
// kept as they are.
void append_gpt2_bytes(std::string_view spelling, std::string& bytes) {
    const ByteAlphabet& a = alphabet();
    for (size_t k = 0; k < spelling.size();) {
        const auto [cp, len] = code_point(spelling, k);
        const int b = cp < ByteAlphabet::kEnd ? a.byte_of[cp] : -1;
        if (b >= 0 && spelling.substr(k, len) == a.spelling[b])
            bytes.push_back(static_cast<char>(b));
        else
            bytes.append(spelling, k, len);
        k += len;
    }
}

// A SentencePiece piece's text: U+2581 back to spaces.
void append_spm_text(std::string_view piece, std::string& text) {
    for (size_t k = 0; k < piece.size();) {
        if (piece.compare(k, kSpmSpace.size(), kSpmSpace) == 0) {
            text += ' ';
            k += kSpmSpace.size();
        } else {
            text += piece[k++];
        }
    }
}

// A SentencePiece byte token "<0xXX>": its byte (nothing if it is not spelled that way).
void append_spm_byte(std::string_view piece, std::string& out) {
    unsigned byte = 0;
    if (piece.size() == 6 && piece.starts_with("<0x") && piece[5] == '>' &&
        std::from_chars(piece.data() + 3, piece.data() + 5, byte, 16).ptr == piece.data() + 5)
        out.push_back(static_cast<char>(byte));
}

}  // namespace

Tokenizer Tokenizer::for_model(const gguf::Reader& file, uint32_t output_rows) {
    Tokenizer t = from_gguf(file);
    if (uint64_t(t.tokens_.size()) < output_rows)
        vocab_error(file, "tokenizer.ggml.tokens",
                    "has " + std::to_string(t.tokens_.size()) + " tokens, fewer than the model's " +
                        std::to_string(output_rows) + " output rows (token_embd / output)");
    return t;
}

Tokenizer Tokenizer::from_gguf(const gguf::Reader& file) {
    Tokenizer t;
    const gguf::Value* model = file.find("tokenizer.ggml.model");
    if (model == nullptr || model->type() != gguf::ValueType::STRING)
        vocab_error(file, "tokenizer.ggml.model", "is missing or not a string");
    if (model->as_string() != "gpt2" && model->as_string() != "llama")
        vocab_error(file, "tokenizer.ggml.model",
                    "is '" + model->as_string() +
                        "'; supported: 'gpt2' (byte-level BPE, the DeepSeek tokenizers) and "
                        "'llama' (SentencePiece)");
    t.spm_ = model->as_string() == "llama";
    if (const gguf::Value* pre = file.find("tokenizer.ggml.pre");
        pre != nullptr && pre->type() == gguf::ValueType::STRING)
        t.pre_ = pre->as_string();
    t.digits_whole_ = t.pre_ == "deepseek-llm" || t.pre_ == "deepseek-coder";
    t.marks_are_letters_ = t.pre_.starts_with("deepseek");

    const auto& tokens = array_of(file, "tokenizer.ggml.tokens", gguf::ValueType::STRING, true);
    if (tokens.empty() || tokens.size() > size_t(INT32_MAX))
        vocab_error(file, "tokenizer.ggml.tokens", "must hold between 1 and 2^31 - 1 tokens");
    t.tokens_.reserve(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
        t.tokens_.push_back(tokens.string_at(i));
        t.ids_.emplace(t.tokens_.back(), static_cast<int32_t>(i));
    }
    const auto& types = array_of(file, "tokenizer.ggml.token_type", gguf::ValueType::I32, false);
    if (!types.empty() && types.size() != tokens.size())
        vocab_error(file, "tokenizer.ggml.token_type",
                    "has " + std::to_string(types.size()) + " entries for " +
                        std::to_string(tokens.size()) + " tokens");
    t.types_.assign(tokens.size(), static_cast<int32_t>(TokenType::normal));
    for (size_t i = 0; i < types.size(); ++i) t.types_[i] = static_cast<int32_t>(types[i].as_i64());
    for (size_t i = 0; i < t.tokens_.size(); ++i) {
        const auto type = static_cast<TokenType>(t.types_[i]);
        if (type == TokenType::user_defined || type == TokenType::control ||
            type == TokenType::unknown)
            t.added_.add(static_cast<int32_t>(i), t.tokens_[i], type == TokenType::user_defined);
    }

    const auto& merges = array_of(file, "tokenizer.ggml.merges", gguf::ValueType::STRING, !t.spm_);
    // Strings the merges name that are no token get ids from n_vocab() up (see merges_).
    std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> extra;
    const auto intern = [&](std::string_view s) {
        if (const auto it = t.ids_.find(s); it != t.ids_.end()) return it->second;
        auto it = extra.find(s);
        if (it == extra.end()) {
            if (t.tokens_.size() + extra.size() >= size_t(INT32_MAX))
                vocab_error(file, "tokenizer.ggml.merges", "names more than 2^31 - 1 strings");
            it = extra.emplace(std::string(s), int32_t(t.tokens_.size() + extra.size())).first;
        }
        return it->second;
    };
    if (!t.spm_) t.merges_.reserve(merges.size());
    std::string joined;
    for (size_t i = 0; i < merges.size(); ++i) {
        const std::string& m = merges.string_at(i);
        const size_t space = m.find(' ', 1);
        if (space == std::string::npos)
            vocab_error(file, "tokenizer.ggml.merges",
                        "entry " + std::to_string(i) + " ('" + m + "') is not 'left right'");
        const std::string_view left = std::string_view(m).substr(0, space);
        const std::string_view right = std::string_view(m).substr(space + 1);
        // Symbols are spelled in GPT-2's alphabet, which has no space: a side with one never
        // matches. SentencePiece vocabularies merge by score and do not use the list.
        if (t.spm_ || left.find(' ') != left.npos || right.find(' ') != right.npos) continue;
        joined.assign(left).append(right);
        const uint64_t key = uint64_t(uint32_t(intern(left))) << 32 | uint32_t(intern(right));
        t.merges_.try_emplace(key, Merge{static_cast<int32_t>(i), intern(joined)});
    }
    for (int b = 0; b < 256; ++b) {
        const std::string& spelling = alphabet().spelling[b];
        const auto tok = t.ids_.find(spelling);
        const auto ext = extra.find(spelling);
        t.byte_symbol_[size_t(b)] = tok != t.ids_.end()  ? tok->second
                                    : ext != extra.end() ? ext->second
                                                         : -1;
    }
    const auto n = static_cast<int32_t>(t.tokens_.size());
    t.bos_ = token_id_key(file, "tokenizer.ggml.bos_token_id", n);
    t.eos_ = token_id_key(file, "tokenizer.ggml.eos_token_id", n);
    t.eot_ = token_id_key(file, "tokenizer.ggml.eot_token_id", n);
    t.add_bos_ = t.bos_ >= 0;
    if (const gguf::Value* v = file.find("tokenizer.ggml.add_bos_token")) {
        if (v->type() != gguf::ValueType::BOOL)
            vocab_error(file, "tokenizer.ggml.add_bos_token", "must be a bool");
        t.add_bos_ = v->as_bool() && t.bos_ >= 0;
    }
    if (t.spm_) t.read_spm(file);
    return t;
}

void Tokenizer::read_spm(const gguf::Reader& file) {
    const auto& scores = array_of(file, "tokenizer.ggml.scores", gguf::ValueType::F32, true);
    if (scores.size() != tokens_.size())
        vocab_error(file, "tokenizer.ggml.scores",
                    "has " + std::to_string(scores.size()) + " entries for " +
                        std::to_string(tokens_.size()) + " tokens");
    scores_.reserve(scores.size());
    for (const gguf::Value& v : scores) scores_.push_back(static_cast<float>(v.as_f64()));
    byte_token_.assign(256, -1);
    char name[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        byte_token_[size_t(b)] = find(name);
    }
    unk_ = token_id_key(file, "tokenizer.ggml.unknown_token_id", n_vocab());
    if (const gguf::Value* v = file.find("tokenizer.ggml.add_space_prefix")) {
        if (v->type() != gguf::ValueType::BOOL)
            vocab_error(file, "tokenizer.ggml.add_space_prefix", "must be a bool");
        add_space_prefix_ = v->as_bool();
    }
}

int32_t Tokenizer::find(std::string_view text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
}

namespace {

// A symbol of the merging: a span of the text and the id of its string (a token id, a BPE
// merge's own id for strings that are no token, or -1), linked to its neighbours.
struct Symbol {
    int prev, next;
    size_t at, len;
    int32_t id;
};

// What joining two adjacent symbols gives: the join's priority (higher merges first) and id.
struct Join {
    double priority;
    int32_t id;
};

// A join waiting in the queue.
struct Candidate {
    double priority;
    int left, right;
    size_t len;  // both sides' length when queued
    int32_t id;
    bool operator<(const Candidate& o) const {
        return priority != o.priority ? priority < o.priority : left > o.left;
    }
};

// The merging both tokenizers share. `sym` holds one symbol per character or byte to begin
// with (at, len, id; the links are set here). Candidate joins of adjacent symbols wait in a
// queue, best first and leftmost on ties (the reference tokenizers' order); `join(l, r)` gives
// a candidate's Join, or nullopt where the pair does not merge. A candidate whose sides changed
// since it was queued is stale and skipped. Each merge queues at most two candidates, so n
// symbols cost O(n log n). The symbols left are those reached from sym[0] by `next`.
template <typename JoinOf>
void merge_symbols(std::vector<Symbol>& sym, std::vector<Candidate>& queue, JoinOf join) {
    if (sym.empty()) return;
    for (size_t k = 0; k < sym.size(); ++k) {
        sym[k].prev = static_cast<int>(k) - 1;
        sym[k].next = static_cast<int>(k) + 1;
    }
    sym.back().next = -1;
    queue.clear();  // a max-heap: std::push_heap / pop_heap with Candidate::operator<
    const auto consider = [&](int l, int r) {
        if (l < 0 || r < 0) return;
        const Symbol& sl = sym[size_t(l)];
        const Symbol& sr = sym[size_t(r)];
        if (const std::optional<Join> j = join(sl, sr)) {
            queue.push_back({j->priority, l, r, sl.len + sr.len, j->id});
            std::push_heap(queue.begin(), queue.end());
        }
    };
    for (int k = 1; k < static_cast<int>(sym.size()); ++k) consider(k - 1, k);
    while (!queue.empty()) {
        std::pop_heap(queue.begin(), queue.end());
        const Candidate c = queue.back();
        queue.pop_back();
        Symbol& l = sym[size_t(c.left)];
        Symbol& r = sym[size_t(c.right)];
        if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
        l.len += r.len;
        l.id = c.id;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) sym[size_t(r.next)].prev = c.left;
        consider(l.prev, c.left);
        consider(c.left, l.next);
    }
}

}  // namespace

struct Tokenizer::Scratch {
    struct Cp {
        size_t at, len;
        Cls cls;
    };
    std::vector<Cp> cps;       // pre_tokenize: the text's code points
    std::vector<Span> pieces;  // pre_tokenize's result
    std::string text;          // bpe: a piece spelled in the byte alphabet
    std::vector<Symbol> sym;   // bpe: its symbols
    std::vector<Candidate> queue;
};

std::vector<std::string> Tokenizer::pre_tokenize(std::string_view text) const {
    Scratch scratch;
    pre_tokenize(text, scratch);
    std::vector<std::string> pieces;
    pieces.reserve(scratch.pieces.size());
    for (const Span& p : scratch.pieces) pieces.emplace_back(text.substr(p.at, p.len));
    return pieces;
}

void Tokenizer::pre_tokenize(std::string_view text, Scratch& scratch) const {
    std::vector<Scratch::Cp>& cps = scratch.cps;
    std::vector<Span>& pieces = scratch.pieces;
    cps.clear();
    for (size_t i = 0; i < text.size();) {
        const auto [cp, len] = code_point(text, i);
        cps.push_back({i, len, classify(cp, marks_are_letters_)});
        i += len;
    }
    pieces.clear();
    const size_t n = cps.size();
    auto emit = [&](size_t from, size_t to) {  // code points [from, to)
        const size_t end = to < n ? cps[to].at : text.size();
        pieces.push_back({cps[from].at, end - cps[from].at});
    };
    auto run = [&](size_t from, Cls cls, size_t max = SIZE_MAX) {
        size_t j = from;
        while (j < n && cps[j].cls == cls && j - from < max) ++j;
        return j;
    };
    size_t i = 0;
    while (i < n) {
        const Cls c = cps[i].cls;
        const bool next_letter = i + 1 < n && cps[i + 1].cls == Cls::letter;
        const bool next_punct = i + 1 < n && cps[i + 1].cls == Cls::punct;
        const bool is_blank = c == Cls::space && cps[i].len == 1 && text[cps[i].at] == ' ';
        if (c == Cls::digit) {
            const size_t j = run(i, Cls::digit, digits_whole_ ? SIZE_MAX : 3);
            emit(i, j);
            i = j;
        } else if (c == Cls::cjk) {
            const size_t j = run(i, Cls::cjk);
            emit(i, j);
            i = j;
        } else if (c == Cls::letter || (c == Cls::space && next_letter)) {
            const size_t j = run(c == Cls::letter ? i : i + 1, Cls::letter);
            emit(i, j);
            i = j;
        } else if (c == Cls::punct || (is_blank && next_punct)) {
            size_t j = run(c == Cls::punct ? i : i + 1, Cls::punct);
            j = run(j, Cls::newline);
            emit(i, j);
            i = j;
        } else {  // whitespace and newlines
            size_t j = i;
            size_t last_newline = SIZE_MAX;
            while (j < n && (cps[j].cls == Cls::space || cps[j].cls == Cls::newline)) {
                if (cps[j].cls == Cls::newline) last_newline = j;
                ++j;
            }
            if (last_newline != SIZE_MAX) {
                j = last_newline + 1;  // \s*[\r\n]+
            } else if (j < n && j - i > 1) {
                --j;  // \s+(?!\S): the last space goes with the next word
            }
            emit(i, j);
            i = j;
        }
    }
}

void Tokenizer::bpe(std::string_view piece, Scratch& scratch, std::vector<int32_t>& out) const {
    // The piece spelled in the byte alphabet, one symbol per byte; merges by rank, lowest first.
    const ByteAlphabet& a = alphabet();
    std::string& text = scratch.text;
    std::vector<Symbol>& sym = scratch.sym;
    text.clear();
    sym.clear();
    for (char ch : piece) {
        const auto b = static_cast<uint8_t>(ch);
        sym.push_back({0, 0, text.size(), a.spelling[b].size(), byte_symbol_[b]});
        text += a.spelling[b];
    }
    merge_symbols(sym, scratch.queue, [&](const Symbol& l, const Symbol& r) -> std::optional<Join> {
        if (l.id < 0 || r.id < 0) return std::nullopt;
        const auto it = merges_.find(uint64_t(uint32_t(l.id)) << 32 | uint32_t(r.id));
        if (it == merges_.end()) return std::nullopt;
        return Join{-double(it->second.rank), it->second.result};
    });
    for (int i = 0; !sym.empty() && i >= 0; i = sym[size_t(i)].next) {
        const Symbol& s = sym[size_t(i)];
        if (s.id >= 0 && s.id < n_vocab()) {
            out.push_back(s.id);
            continue;
        }
        // Not in the vocabulary: its characters one by one (every byte-level vocabulary has
        // them).
        const std::string_view chars = std::string_view(text).substr(s.at, s.len);
        for (size_t k = 0; k < chars.size();) {
            const size_t len = code_point(chars, k).second;
            if (const auto bt = ids_.find(chars.substr(k, len)); bt != ids_.end())
                out.push_back(bt->second);
            k += len;
        }
    }
}

void Tokenizer::spm(std::string_view part, bool space_prefix, std::vector<int32_t>& out) const {
    std::string text(space_prefix ? kSpmSpace : "");
    for (char c : part) {
        if (c == ' ')
            text += kSpmSpace;
        else
            text += c;
    }
    // One symbol per character; merges by the merged token's score, highest first.
    const std::string_view view(text);
    std::vector<Symbol> sym;
    for (size_t i = 0; i < text.size();) {
        const size_t len = code_point(text, i).second;
        sym.push_back({0, 0, i, len, find(view.substr(i, len))});
        i += len;
    }
    std::string key;
    std::vector<Candidate> queue;
    merge_symbols(sym, queue, [&](const Symbol& l, const Symbol& r) -> std::optional<Join> {
        key.assign(view.substr(l.at, l.len)).append(view.substr(r.at, r.len));
        const auto it = ids_.find(key);
        if (it == ids_.end()) return std::nullopt;
        return Join{double(scores_[size_t(it->second)]), it->second};
    });
    for (int i = 0; !sym.empty() && i >= 0; i = sym[size_t(i)].next) {
        const Symbol& s = sym[size_t(i)];
        if (s.id >= 0) {
            out.push_back(s.id);
            continue;
        }
        for (char ch : view.substr(s.at, s.len)) {  // byte fallback
            const int32_t b = byte_token_[static_cast<uint8_t>(ch)];
            if (b >= 0 || unk_ >= 0) out.push_back(b >= 0 ? b : unk_);
            if (b < 0) break;  // one unknown token for the whole character
        }
    }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos,
                                       bool parse_special) const {
    std::vector<int32_t> out;
    if (add_bos && bos_ >= 0) out.push_back(bos_);
    bool after_added = true;  // SentencePiece: the space prefix goes here
    Scratch scratch;
    for (const AddedTokens::Fragment& f : added_.split(text, parse_special)) {
        if (f.id >= 0) {
            out.push_back(f.id);
            after_added = true;
            continue;
        }
        const std::string_view part = text.substr(f.at, f.len);
        if (spm_) {
            spm(part, add_space_prefix_ && after_added, out);
        } else {
            pre_tokenize(part, scratch);
            for (const Span& p : scratch.pieces) bpe(part.substr(p.at, p.len), scratch, out);
        }
        after_added = false;
    }
    return out;
}

std::string Tokenizer::token_bytes(int32_t id, bool special) const {
    std::string out;
    append_bytes(id, special, out);
    return out;
}

void Tokenizer::append_bytes(int32_t id, bool special, std::string& out) const {
    if (id < 0 || id >= n_vocab()) return;
    const std::string& s = tokens_[size_t(id)];
    // As llama.cpp's token_to_piece: added tokens are their text as is, normal tokens the bytes
    // their spelling stands for, byte tokens (SentencePiece) their byte, other types nothing.
    switch (static_cast<TokenType>(types_[size_t(id)])) {
        case TokenType::control:
        case TokenType::unknown:
            if (special) out += s;
            return;
        case TokenType::user_defined: out += s; return;
        case TokenType::normal:
            if (spm_)
                append_spm_text(s, out);
            else
                append_gpt2_bytes(s, out);
            return;
        case TokenType::byte:
            if (spm_) append_spm_byte(s, out);
            return;
        default: return;
    }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool special) const {
    std::string out;
    bool after_special = true;
    for (int32_t id : ids) {
        const size_t start = out.size();
        append_bytes(id, special, out);
        const bool is_special = id >= 0 && id < n_vocab() &&
                                (types_[size_t(id)] == int32_t(TokenType::control) ||
                                 types_[size_t(id)] == int32_t(TokenType::user_defined));
        // SentencePiece: drop the space prefix encode() put in front of the text.
        if (spm_ && add_space_prefix_ && after_special && !is_special && out.size() > start &&
            out[start] == ' ')
            out.erase(start, 1);
        after_special = is_special;
    }
    return out;
}

}  // namespace sy::llm
