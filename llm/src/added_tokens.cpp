#include "switchyard/llm/added_tokens.hpp"

#include <algorithm>

namespace sy::llm {

int32_t AddedTokens::Entry::id(bool parse_special) const {
    if (!parse_special || special_id < 0) return always_id;
    return always_id < 0 ? special_id : std::min(always_id, special_id);
}

void AddedTokens::add(int32_t id, std::string_view text, bool always) {
    if (text.empty()) return;
    uint32_t node = 0;
    for (char c : text) {
        const uint64_t edge = uint64_t{node} << 8 | static_cast<uint8_t>(c);
        const auto [it, fresh] = edges_.try_emplace(edge, static_cast<uint32_t>(entry_of_.size()));
        if (fresh) entry_of_.push_back(-1);
        node = it->second;
    }
    if (entry_of_[node] < 0) {
        entry_of_[node] = static_cast<int32_t>(entries_.size());
        entries_.push_back({static_cast<uint32_t>(text.size())});
    }
    Entry& e = entries_[size_t(entry_of_[node])];
    int32_t& slot = always ? e.always_id : e.special_id;
    if (slot < 0 || id < slot) slot = id;
}

std::vector<AddedTokens::Fragment> AddedTokens::split(std::string_view text,
                                                      bool parse_special) const {
    // Every occurrence of every added token that applies (a walk down the trie from each byte),
    // then taken in priority order where the text is still free: the same fragments as
    // cutting the text token by token, longest token first.
    struct Hit {
        size_t at;
        uint32_t len;
        int32_t id;
    };
    std::vector<Hit> hits;
    for (size_t at = 0; at < text.size() && !entries_.empty(); ++at) {
        uint32_t node = 0;
        for (size_t k = at; k < text.size(); ++k) {
            const auto it = edges_.find(uint64_t{node} << 8 | static_cast<uint8_t>(text[k]));
            if (it == edges_.end()) break;
            node = it->second;
            if (entry_of_[node] < 0) continue;
            const Entry& e = entries_[size_t(entry_of_[node])];
            if (const int32_t id = e.id(parse_special); id >= 0) hits.push_back({at, e.len, id});
        }
    }
    std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
        if (a.len != b.len) return a.len > b.len;
        return a.id != b.id ? a.id < b.id : a.at < b.at;
    });
    std::vector<Hit> kept;
    std::vector<char> taken(hits.empty() ? 0 : text.size(), 0);
    for (const Hit& h : hits) {
        const auto from = taken.begin() + static_cast<std::ptrdiff_t>(h.at);
        if (std::find(from, from + h.len, 1) != from + h.len) continue;
        std::fill(from, from + h.len, 1);
        kept.push_back(h);
    }
    std::sort(kept.begin(), kept.end(), [](const Hit& a, const Hit& b) { return a.at < b.at; });

    std::vector<Fragment> out;
    size_t plain = 0;  // where the plain text not yet emitted begins
    for (const Hit& h : kept) {
        if (h.at > plain) out.push_back({plain, h.at - plain, -1});
        out.push_back({h.at, h.len, h.id});
        plain = h.at + h.len;
    }
    if (plain < text.size()) out.push_back({plain, text.size() - plain, -1});
    return out;
}

}  // namespace sy::llm
