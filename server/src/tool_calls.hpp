// DeepSeek's tool-call markup, read out of generated text as the text streams in. After any
// answer text, a block of calls:
//   <｜tool▁calls▁begin｜> call... <｜tool▁calls▁end｜>
// each call, in V3's (and R1's) form:
//   <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGUMENTS\n```<｜tool▁call▁end｜>
// or in V3.1's:
//   <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGUMENTS<｜tool▁call▁end｜>
// The text before the block is the answer; each call is given out whole once its end marker
// arrives (OpenAI's clients put streamed calls together from deltas, and a whole call is one).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "text_scan.hpp"

namespace sy::server {

struct ToolCall {
    std::string name;
    std::string arguments;  // JSON text, as the model wrote it
};

class ToolCallParser {
  public:
    static constexpr std::string_view kBlockBegin = "<｜tool▁calls▁begin｜>";
    static constexpr std::string_view kBlockEnd = "<｜tool▁calls▁end｜>";
    static constexpr std::string_view kCallBegin = "<｜tool▁call▁begin｜>";
    static constexpr std::string_view kCallEnd = "<｜tool▁call▁end｜>";
    static constexpr std::string_view kSep = "<｜tool▁sep｜>";

    // Adds text; appends the answer text that is final to `answer` and finished calls to
    // `calls`.
    void feed(std::string_view text, std::string& answer, std::vector<ToolCall>& calls) {
        pending_ += text;
        for (;;) {
            if (!in_block_) {
                const size_t at = pending_.find(kBlockBegin);
                if (at == std::string::npos) {
                    // Hold back what may be the start of the block's marker.
                    const size_t keep = partial_tag(pending_, kBlockBegin);
                    answer += pending_.substr(0, pending_.size() - keep);
                    pending_.erase(0, pending_.size() - keep);
                    return;
                }
                answer += pending_.substr(0, at);
                pending_.erase(0, at + kBlockBegin.size());
                in_block_ = true;
                continue;
            }
            const size_t begin = pending_.find(kCallBegin);
            const size_t end = pending_.find(kCallEnd);
            if (begin == std::string::npos || end == std::string::npos || end < begin) return;
            calls.push_back(parse_call(std::string_view(pending_).substr(
                begin + kCallBegin.size(), end - begin - kCallBegin.size())));
            pending_.erase(0, end + kCallEnd.size());
        }
    }

    // The end of the text: what was held back outside a block is answer text; an unfinished
    // call is dropped (the model stopped inside it).
    void finish(std::string& answer) {
        if (!in_block_) answer += pending_;
        pending_.clear();
    }

    bool saw_calls() const { return in_block_; }

    // One call's text between its markers.
    static ToolCall parse_call(std::string_view body) {
        ToolCall call;
        const size_t sep = body.find(kSep);
        if (sep == std::string_view::npos) {
            call.name = std::string(trim(body));
            return call;
        }
        const std::string_view left = trim(body.substr(0, sep));
        std::string_view right = body.substr(sep + kSep.size());
        const size_t fence = right.find("```");
        if (left == "function" && fence != std::string_view::npos) {
            // V3: NAME\n```json\nARGUMENTS\n```
            call.name = std::string(trim(right.substr(0, fence)));
            std::string_view args = right.substr(fence + 3);
            if (args.substr(0, 4) == "json") args.remove_prefix(4);
            const size_t close = args.rfind("```");
            if (close != std::string_view::npos) args = args.substr(0, close);
            call.arguments = std::string(trim(args));
        } else {
            call.name = std::string(left);
            call.arguments = std::string(trim(right));
        }
        return call;
    }

  private:
    static std::string_view trim(std::string_view s) {
        const size_t a = s.find_first_not_of(" \n\r\t");
        if (a == std::string_view::npos) return {};
        const size_t b = s.find_last_not_of(" \n\r\t");
        return s.substr(a, b - a + 1);
    }

    bool in_block_ = false;
    std::string pending_;
};

}  // namespace sy::server
