// The jinja lexer: jinja2's rules for the HF environment (trim_blocks, lstrip_blocks), written
// out by hand. The data between tags is stripped here, as jinja2's lexer strips it.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "jinja_ast.hpp"
#include "switchyard/core/error.hpp"

namespace sy::llm::jinja {

void syntax_error(const std::string& source, size_t offset, const std::string& what) {
    const std::string_view before = std::string_view(source).substr(0, offset);
    const size_t line = std::count(before.begin(), before.end(), '\n') + 1;
    const size_t column =
        code_points(before.substr(before.rfind('\n') + 1)).size() + 1;  // npos + 1 == 0
    throw Error("jinja: line " + std::to_string(line) + ", column " + std::to_string(column) +
                ": " + what);
}

std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
    return out;
}

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

class Lexer {
  public:
    explicit Lexer(const std::string& src) : src_(src) {}

    std::vector<Token> run() {
        bool line_starting = true;  // the last thing lexed ended a line (lstrip_blocks)
        while (pos_ < src_.size()) {
            const size_t open = next_tag(pos_);
            if (open == std::string::npos) {
                emit(Tok::data, src_.substr(pos_), pos_);
                break;
            }
            const char kind = src_[open + 1];
            size_t p = open + 2;
            const char sign = (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ? src_[p] : 0;
            if (sign) ++p;
            std::string text = src_.substr(pos_, open - pos_);
            if (sign == '-') {
                text = rstrip_space(text);
            } else if (sign != '+' && kind != '{') {
                // lstrip_blocks: only white space between the line's start and a block tag.
                const size_t line_pos = text.rfind('\n') + 1;  // npos + 1 == 0
                if ((line_pos > 0 || line_starting) && line_pos < text.size() &&
                    rstrip_space(std::string_view(text).substr(line_pos)).empty())
                    text.resize(line_pos);
            }
            emit(Tok::data, std::move(text), pos_);
            if (kind == '#') {
                comment(p);
            } else {
                emit(kind == '%' ? Tok::block_begin : Tok::var_begin, "", open);
                tag(p, kind == '%');
            }
            line_starting = src_[pos_ - 1] == '\n';
        }
        emit(Tok::eof, "", src_.size());
        return std::move(tokens_);
    }

  private:
    size_t next_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1))
            if (i + 1 < src_.size() && std::strchr("{%#", src_[i + 1]) && src_[i + 1] != '\0')
                return i;
        return std::string::npos;
    }

    void emit(Tok kind, std::string text, size_t offset) {
        if (kind == Tok::data && text.empty()) return;
        tokens_.push_back(Token{kind, std::move(text), 0, 0, offset});
    }

    bool starts(size_t p, std::string_view s) const { return src_.compare(p, s.size(), s) == 0; }

    size_t skip_space(size_t p) const {
        while (p < src_.size()) {
            const auto [cp, len] = decode(src_, p);
            if (!is_space(cp)) break;
            p += len;
        }
        return p;
    }

    // The end of a block ("%}") with the HF environment's trim_blocks; returns false elsewhere.
    bool block_end(size_t& p) const {
        if (starts(p, "+%}")) {
            p += 3;
        } else if (starts(p, "-%}")) {
            p = skip_space(p + 3);
        } else if (starts(p, "%}")) {
            p += 2;
            if (p < src_.size() && src_[p] == '\n') ++p;
        } else {
            return false;
        }
        return true;
    }

    void comment(size_t p) {
        for (;; ++p) {
            if (p >= src_.size()) syntax_error(src_, pos_, "missing end of comment tag");
            if (starts(p, "+#}")) {
                pos_ = p + 3;
            } else if (starts(p, "-#}")) {
                pos_ = skip_space(p + 3);
            } else if (starts(p, "#}")) {
                pos_ = p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n');
            } else {
                continue;
            }
            return;
        }
    }

    // The tokens of a {% %} or {{ }} tag; its end counts only outside brackets, as in jinja2.
    void tag(size_t p, bool block) {
        std::string brackets;
        for (;;) {
            if (brackets.empty()) {
                size_t q = p;
                if (block ? block_end(q) : (starts(q, "-}}") || starts(q, "}}"))) {
                    if (!block) q = src_[q] == '-' ? skip_space(q + 3) : q + 2;
                    emit(block ? Tok::block_end : Tok::var_end, "", p);
                    pos_ = q;
                    return;
                }
            }
            if (p >= src_.size())
                syntax_error(src_, p,
                             block ? "unexpected end of template, expected '%}'"
                                   : "unexpected end of template, expected '}}'");
            const size_t q = skip_space(p);
            if (q != p) {
                p = q;
                continue;
            }
            const char c = src_[p];
            if (is_digit(c)) {
                p = number(p);
            } else if (is_name_start(c)) {
                size_t e = p;
                while (e < src_.size() && (is_name_start(src_[e]) || is_digit(src_[e]))) ++e;
                emit(Tok::name, src_.substr(p, e - p), p);
                p = e;
            } else if (c == '\'' || c == '"') {
                p = string(p);
            } else {
                p = op(p, brackets);
            }
        }
    }

    size_t digits(size_t p) const {  // \d+(_\d+)*
        while (p < src_.size() && (is_digit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() &&
                                                         is_digit(src_[p + 1]))))
            ++p;
        return p;
    }

    size_t number(size_t start) {
        size_t p = digits(start);
        bool is_float = false;
        if (p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
            p = digits(p + 1);
            is_float = true;
        }
        if (p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
            size_t e = p + 1;
            if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
            if (e < src_.size() && is_digit(src_[e])) {
                p = digits(e);
                is_float = true;
            }
        }
        std::string text;
        for (size_t i = start; i < p; ++i)
            if (src_[i] != '_') text += src_[i];
        Token t{is_float ? Tok::number : Tok::integer, text, 0, 0, start};
        if (is_float) {
            t.f = std::strtod(text.c_str(), nullptr);
        } else {
            if (text.size() > 1 && text[0] == '0' &&
                text.find_first_not_of('0') != std::string::npos)
                syntax_error(src_, start, "invalid integer '" + text + "'");
            errno = 0;
            t.i = std::strtoll(text.c_str(), nullptr, 10);
            if (errno == ERANGE) syntax_error(src_, start, "integer " + text + " is too large");
        }
        tokens_.push_back(std::move(t));
        return p;
    }

    // A string literal, unescaped as Python's "unicode-escape" codec does (jinja2's way).
    size_t string(size_t start) {
        const char quote = src_[start];
        std::string out;
        size_t p = start + 1;
        for (;;) {
            if (p >= src_.size()) syntax_error(src_, start, "unterminated string");
            const char c = src_[p];
            if (c == quote) break;
            if (c != '\\') {
                out += c;
                ++p;
                continue;
            }
            if (p + 1 >= src_.size()) syntax_error(src_, start, "unterminated string");
            const char e = src_[p + 1];
            p += 2;
            static const std::string_view escapes = "a\ab\bf\fn\nr\rt\tv\v\\\\\'\'\"\"";
            const size_t simple = e ? escapes.find(e) : escapes.npos;
            if (simple != escapes.npos && simple % 2 == 0) {
                out += escapes[simple + 1];
            } else if (e == '\n') {  // a line continuation
            } else if (e == 'N') {
                syntax_error(src_, start, "\\N{...} escapes are not supported");
            } else if (e >= '0' && e <= '7') {
                uint32_t v = e - '0';
                for (int k = 0; k < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++k)
                    v = v * 8 + (src_[p++] - '0');
                append_utf8(out, v);
            } else if (e == 'x' || e == 'u' || e == 'U') {
                const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                const std::string hex = src_.substr(p, n);
                if (hex.size() < n || !std::all_of(hex.begin(), hex.end(), [](char h) {
                        return std::isxdigit(uint8_t(h));
                    }))
                    syntax_error(src_, start, "truncated \\" + std::string(1, e) + " escape");
                const auto v = uint32_t(std::stoul(hex, nullptr, 16));
                if (v > 0x10FFFF) syntax_error(src_, start, "illegal Unicode character");
                append_utf8(out, v);
                p += n;
            } else if (static_cast<unsigned char>(e) >= 0x80) {
                // Python sees the backslash before its "\xe9" form of a non-ASCII character.
                const auto [cp, len] = decode(src_, p - 1);
                append_escape(out, cp);
                p += len - 1;
            } else {
                out += '\\';
                out += e;
            }
        }
        tokens_.push_back(Token{Tok::string, std::move(out), 0, 0, start});
        return p + 1;
    }

    size_t op(size_t p, std::string& brackets) {
        static const char* const ops[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/",
                                          "*",  "%",  "~",  "[",  "]",  "(",  ")", "{", "}",
                                          ">",  "<",  "=",  ".",  ":",  "|",  ",", ";"};
        for (const char* o : ops) {
            if (!starts(p, o)) continue;
            const char c = o[0];
            if (c == '(' || c == '[' || c == '{') {
                brackets += c == '(' ? ')' : c == '[' ? ']' : '}';
            } else if (c == ')' || c == ']' || c == '}') {
                if (brackets.empty()) syntax_error(src_, p, std::string("unexpected '") + c + "'");
                if (brackets.back() != c)
                    syntax_error(
                        src_, p,
                        std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
                brackets.pop_back();
            }
            emit(Tok::op, o, p);
            return p + std::strlen(o);
        }
        const auto [cp, len] = decode(src_, p);
        syntax_error(src_, p, "unexpected char '" + src_.substr(p, len) + "'");
    }

    const std::string& src_;
    size_t pos_ = 0;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) {
    return Lexer(source).run();
}

}  // namespace sy::llm::jinja
