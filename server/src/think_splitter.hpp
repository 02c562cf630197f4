// Splits R1-style output into its reasoning and its answer as the text streams in:
//   [<think>] reasoning </think> answer
// The reasoning is what lies between the tags; the answer is the rest with the whitespace after
// </think> dropped. A generation prompt that already ends with "<think>" (R1's templates open
// the block for the model) starts inside the reasoning. A tag split across pieces is held back
// until it is whole; text without tags is all answer, as it came.
#pragma once

#include <string>
#include <string_view>

#include "text_scan.hpp"

namespace sy::server {

class ThinkSplitter {
  public:
    static constexpr std::string_view kOpen = "<think>";
    static constexpr std::string_view kClose = "</think>";

    explicit ThinkSplitter(bool inside) : inside_(inside), at_start_(!inside) {}

    // Whether a prompt ending this way leaves the model inside a reasoning block.
    static bool starts_inside(std::string_view prompt) {
        while (!prompt.empty() && (prompt.back() == '\n' || prompt.back() == ' '))
            prompt.remove_suffix(1);
        return prompt.size() >= kOpen.size() &&
               prompt.substr(prompt.size() - kOpen.size()) == kOpen;
    }

    // Adds generated text; appends what is final to `reasoning` and `answer`.
    void feed(std::string_view text, std::string& reasoning, std::string& answer) {
        pending_ += text;
        for (;;) {
            if (inside_) {
                const size_t at = pending_.find(kClose);
                if (at == std::string::npos) {
                    const size_t keep = partial_tag(pending_, kClose);
                    reasoning += pending_.substr(0, pending_.size() - keep);
                    pending_.erase(0, pending_.size() - keep);
                    return;
                }
                reasoning += pending_.substr(0, at);
                pending_.erase(0, at + kClose.size());
                inside_ = false;
                after_close_ = true;
                continue;
            }
            if (after_close_) {
                // The whitespace between </think> and the answer is dropped.
                const size_t text_at = pending_.find_first_not_of(" \n\r\t");
                if (text_at == std::string::npos) {
                    pending_.clear();
                    return;
                }
                pending_.erase(0, text_at);
                after_close_ = false;
            }
            if (at_start_) {
                // A block may open the text, after whitespace: wait until that is decided.
                const size_t text_at = pending_.find_first_not_of(" \n\r\t");
                if (text_at == std::string::npos) return;
                const std::string_view rest = std::string_view(pending_).substr(text_at);
                if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return;
                at_start_ = false;
                if (rest.substr(0, kOpen.size()) == kOpen) {
                    pending_.erase(0, text_at + kOpen.size());
                    inside_ = true;
                    continue;
                }
            }
            answer += pending_;
            pending_.clear();
            return;
        }
    }

    // The end of the text: what was held back is given out as it stands.
    void finish(std::string& reasoning, std::string& answer) {
        (inside_ ? reasoning : answer) += pending_;
        pending_.clear();
    }

  private:
    bool inside_;
    bool at_start_;
    bool after_close_ = false;
    std::string pending_;
};

}  // namespace sy::server
