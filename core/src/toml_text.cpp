#include "toml_text.hpp"

#include <cstdint>
#include <string>

#include "switchyard/core/config.hpp"

namespace fs = std::filesystem;

namespace sy {
namespace {

// The text as toml++ gets it: pure ASCII. TOML allows other characters only in strings
// and comments, and toml++ 3.3 tests characters for white space with a table that reaches
// __builtin_unreachable() for most of U+00A1-U+0499, U+2C5E-U+3057 and U+FB26-U+FEFE (found by
// tests/fuzz) wherever its lexer looks for white space, inside malformed values and after
// backslashes in strings too. So nothing outside ASCII reaches it:
//   - in a basic string ("...", """..."""), each such character becomes its \uXXXX or
//     \UXXXXXXXX escape (the same string once parsed);
//   - a literal string ('...', three quotes) holding one becomes the equal basic string, with
//     backslashes and quotes escaped;
//   - in a comment each such byte becomes '?';
//   - anywhere else it is an error at its line and column.
// Strings are found as TOML places them: a value after '=' (or in an array or inline table opened
// there, after '[', '{' or ','), a quoted key first on its line or after '.', a quoted key in a
// table header. Lines are kept, so toml++'s line numbers stay right (columns may move on a line
// whose strings were rewritten).
std::string ascii_for_toml(std::string_view text, const fs::path& file) {
    size_t i = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte order mark
    std::string out;
    out.reserve(text.size() - i);
    uint32_t line = 1;
    size_t line_start = i;
    const auto fail_at = [&](size_t at, const std::string& what) {
        throw ConfigError(file.string() + ":" + std::to_string(line) + ":" +
                          std::to_string(at - line_start + 1) + ": " + what);
    };
    // The code point of the UTF-8 sequence at i (advanced past it), or an error.
    const auto code_point = [&]() -> uint32_t {
        const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
        const unsigned char c = b(0);
        const int len = c >= 0xC2 && c <= 0xDF   ? 2
                        : c >= 0xE0 && c <= 0xEF ? 3
                        : c >= 0xF0 && c <= 0xF4 ? 4
                                                 : 0;
        bool valid = len > 0 && i + size_t(len) <= text.size();
        for (int k = 1; valid && k < len; ++k) valid = (b(size_t(k)) & 0xC0) == 0x80;
        if (!valid) fail_at(i, "invalid UTF-8 in a string");
        uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
        for (int k = 1; k < len; ++k) cp = cp << 6 | (b(size_t(k)) & 0x3F);
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            fail_at(i, "invalid UTF-8 in a string");
        i += size_t(len);
        return cp;
    };
    const auto escape = [&](uint32_t cp) {
        char buffer[16];
        std::snprintf(buffer, sizeof buffer, cp <= 0xFFFF ? "\\u%04X" : "\\U%08X", unsigned(cp));
        out += buffer;
    };
    // A string starting at i (its opening quote), copied to out as a basic string.
    const auto string = [&](char quote) {
        const bool multi = text.substr(i, 3) == std::string(3, quote);
        const std::string delimiter(multi ? 3 : 1, '"');
        out += delimiter;
        i += multi ? 3 : 1;
        while (i < text.size()) {
            const char c = text[i];
            if (static_cast<unsigned char>(c) >= 0x80) {
                escape(code_point());
                continue;
            }
            if (c == quote && (!multi || text.substr(i, 3) == std::string(3, quote))) {
                out += delimiter;
                i += multi ? 3 : 1;
                return;
            }
            if (c == '\n') {
                if (!multi) return;  // toml++ reports the unterminated string
                ++line;
                line_start = i + 1;
            }
            if (quote == '\'' && (c == '\\' || c == '"')) {
                out += '\\';  // literal text in a basic string
            } else if (quote == '"' && c == '\\') {
                // An escape: the backslash and the next character go as they are (escapes are
                // ASCII; anything else is an error).
                out += c;
                ++i;
                if (i < text.size() && static_cast<unsigned char>(text[i]) >= 0x80)
                    fail_at(i,
                            "a non-ASCII character after a backslash in a string (escapes are "
                            "ASCII)");
                if (i >= text.size()) return;
                if (text[i] == '\n') {
                    ++line;
                    line_start = i + 1;
                }
                out += text[i++];
                continue;
            }
            out += c;
            ++i;
        }
    };
    char last = '\n';     // the last character other than space and tab
    bool value = false;   // a value may start here
    bool header = false;  // inside a table header
    int depth = 0;        // arrays and inline tables opened in value position
    while (i < text.size()) {
        const char c = text[i];
        if (static_cast<unsigned char>(c) >= 0x80)
            fail_at(i,
                    "a non-ASCII character outside a string or comment (TOML allows them only in "
                    "quoted strings and comments)");
        if (c == ' ' || c == '\t') {
            out += c;
            ++i;
            continue;
        }
        if (c == '\n') {
            out += c;
            ++line;
            line_start = ++i;
            header = false;
            if (depth == 0) value = false;
            last = c;
            continue;
        }
        if (c == '#') {
            for (; i < text.size() && text[i] != '\n'; ++i)
                out += static_cast<unsigned char>(text[i]) >= 0x80 ? '?' : text[i];
            continue;
        }
        if (c == '"' || c == '\'') {
            const bool key = depth == 0 && (last == '\n' || last == '.');
            const bool header_key = header && (last == '[' || last == '.');
            if (value || key || header_key) {
                string(c);
                value = false;
                last = c;
                continue;
            }
            value = false;
        } else if (value && (c == '[' || c == '{')) {
            ++depth;  // an array's items or an inline table's keys follow
        } else if (depth > 0 && (c == ',' || c == '=')) {
            value = true;
        } else if (depth > 0 && (c == ']' || c == '}')) {
            --depth;
            value = false;
        } else if (c == '=') {
            value = true;
        } else {
            if (c == '[' && last == '\n' && depth == 0) header = true;
            value = false;
        }
        out += c;
        ++i;
        last = c;
    }
    return out;
}

}  // namespace

toml::table parse_toml(std::string_view text, const fs::path& source_name) {
    const std::string ascii = ascii_for_toml(text, source_name);
    try {
        return toml::parse(ascii, source_name.string());
    } catch (const toml::parse_error& e) {
        const toml::source_position p = e.source().begin;
        std::string at = source_name.string();
        if (p.line > 0) at += ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
        throw ConfigError(at + ": " + std::string(e.description()));
    }
}

}  // namespace sy
