#include "commands/prompt_escapes.hpp"

namespace sy::tools {
namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace

std::string process_escapes(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\' || i + 1 == text.size()) {
            out.push_back(text[i]);
            continue;
        }
        const char e = text[i + 1];
        char c = 0;
        switch (e) {
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'v': c = '\v'; break;
            case 'f': c = '\f'; break;
            case 'a': c = '\a'; break;
            case 'b': c = '\b'; break;
            case '\'':
            case '"':
            case '?':
            case '\\': c = e; break;
            case 'x': {
                int value = 0, digits = 0;
                while (digits < 2 && i + 2 + digits < text.size()) {
                    const int h = hex_value(text[i + 2 + digits]);
                    if (h < 0) break;
                    value = value * 16 + h;
                    ++digits;
                }
                if (digits == 0) break;  // "\x" without a digit stays
                out.push_back(static_cast<char>(value));
                i += 1 + digits;
                continue;
            }
            default: break;
        }
        if (c == 0) {
            out.push_back('\\');  // kept as written; the next character is copied next round
            continue;
        }
        out.push_back(c);
        ++i;
    }
    return out;
}

}  // namespace sy::tools
