// The regular expressions users write into -ot, [[placement.rules]], [[offload.pins]] and
// quantize rules: llama.cpp's syntax as users type it (`\.ffn_.*_exps\.`, alternations, classes,
// anchors, repetition), matched by RE2 in time linear in the name and with bounded memory, so a
// hostile pattern can neither backtrack for hours nor overflow the stack while compiling.
// Backreferences and lookaround, which no linear-time engine has, are refused with a message.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace sy {

class Pattern {
  public:
    // Throws Error("<where>: invalid regex '<text>': <reason>").
    Pattern(const std::string& text, std::string_view where);

    // True when the pattern matches anywhere in `s` (std::regex_search's meaning).
    bool search(std::string_view s) const;
    const std::string& text() const { return text_; }

  private:
    std::string text_;
    std::shared_ptr<const re2::RE2> re_;
};

}  // namespace sy
