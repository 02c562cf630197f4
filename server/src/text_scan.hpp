// What the readers of streamed text (think_splitter.hpp, tool_calls.hpp) hold back.
#pragma once

#include <algorithm>
#include <string_view>

namespace sy::server {

// Bytes at the end of `text` that begin `tag` (and so may become it with the next piece).
inline size_t partial_tag(std::string_view text, std::string_view tag) {
    for (size_t k = std::min(tag.size() - 1, text.size()); k > 0; --k)
        if (text.substr(text.size() - k) == tag.substr(0, k)) return k;
    return 0;
}

}  // namespace sy::server
