#include "switchyard/core/pattern.hpp"

#include <fmt/format.h>
#include <re2/re2.h>

#include "switchyard/core/error.hpp"

namespace sy {
namespace {

// Patterns are short; this caps what one may make RE2 build (its default is 8 MiB per pattern).
constexpr int64_t kMaxPatternMemory = int64_t(8) << 20;
constexpr size_t kMaxPatternLength = 64 * 1024;

// A reason a linear-time engine cannot take `text`, in the user's terms, or "".
std::string unsupported(std::string_view text) {
    for (size_t i = 0; i + 1 < text.size(); ++i) {
        if (text[i] == '\\') {
            if (text[i + 1] >= '1' && text[i + 1] <= '9')
                return fmt::format("backreferences (\\{}) are not supported", text[i + 1]);
            ++i;  // an escaped character, whatever it is
            continue;
        }
        if (text[i] == '[') {  // a class: skip to its end ('(' in it is a character)
            size_t j = i + 1;
            if (j < text.size() && text[j] == '^') ++j;
            if (j < text.size() && text[j] == ']') ++j;
            while (j < text.size() && text[j] != ']') j += text[j] == '\\' ? 2 : 1;
            i = j;
            continue;
        }
        if (text.substr(i, 3) == "(?=" || text.substr(i, 3) == "(?!" ||
            text.substr(i, 4) == "(?<=" || text.substr(i, 4) == "(?<!")
            return "lookahead and lookbehind are not supported";
    }
    return "";
}

}  // namespace

Pattern::Pattern(const std::string& text, std::string_view where) : text_(text) {
    const auto fail = [&](std::string_view why) {
        throw Error(
            fmt::format("{}: invalid regex '{}': {} (patterns are matched in linear "
                        "time: RE2 syntax)",
                        where, text.size() > 200 ? text.substr(0, 200) + "…" : text, why));
    };
    if (text.size() > kMaxPatternLength)
        fail(fmt::format("{} characters, more than {}", text.size(), kMaxPatternLength));
    if (const std::string why = unsupported(text); !why.empty()) fail(why);
    RE2::Options options;
    options.set_log_errors(false);
    options.set_max_mem(kMaxPatternMemory);
    auto re = std::make_shared<const RE2>(text, options);
    if (!re->ok()) fail(re->error());
    re_ = std::move(re);
}

bool Pattern::search(std::string_view s) const {
    return RE2::PartialMatch(re2::StringPiece(s.data(), s.size()), *re_);
}

}  // namespace sy
