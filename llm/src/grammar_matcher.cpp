// Following a text through a Grammar (grammar.hpp), and the tokens that may come next.
#include <algorithm>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/grammar.hpp"

namespace sy::llm {
namespace {

// Expansion deeper than this means a grammar nests rules without reading anything on a scale
// no real grammar does; it is refused rather than followed into the stack's limit.
constexpr int kMaxExpansionDepth = 4096;

}  // namespace

bool Grammar::matches(const Symbol& s, uint32_t cp) const {
    bool in = false;
    for (uint32_t i = 0; i < s.b && !in; ++i) {
        const Range& r = ranges_[s.a + i];
        in = cp >= r.lo && cp <= r.hi;
    }
    return in != s.negated;
}

bool Grammar::may_match(const Symbol& s, uint32_t lo, uint32_t hi) const {
    for (uint32_t i = 0; i < s.b; ++i) {
        const Range& r = ranges_[s.a + i];
        if (!s.negated && r.lo <= hi && r.hi >= lo) return true;
        if (s.negated && r.lo <= lo && r.hi >= hi) return false;  // all of [lo, hi] excluded
    }
    return s.negated;
}

// ---- TokenTrie -------------------------------------------------------------------------------

TokenTrie::TokenTrie(const std::vector<std::string>& texts) : n_tokens_(texts.size()) {
    // Tokens sorted by text put each node's tokens next to each other in token_ids_.
    std::vector<int32_t> order;
    for (size_t i = 0; i < texts.size(); ++i)
        if (!texts[i].empty()) order.push_back(int32_t(i));
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return texts[size_t(a)] < texts[size_t(b)]; });
    nodes_.emplace_back();
    token_ids_.reserve(order.size());
    for (const int32_t id : order) {
        uint32_t node = 0;
        for (const char ch : texts[size_t(id)]) {
            const auto byte = uint8_t(ch);
            uint32_t child = nodes_[node].first_child, prev = 0;
            while (child != 0 && nodes_[child].byte != byte)
                prev = child, child = nodes_[child].next_sibling;
            if (child == 0) {
                child = uint32_t(nodes_.size());
                Node n;
                n.byte = byte;
                nodes_.push_back(n);
                if (prev == 0)
                    nodes_[node].first_child = child;
                else
                    nodes_[prev].next_sibling = child;
            }
            node = child;
        }
        if (nodes_[node].tokens_end == nodes_[node].tokens_begin)
            nodes_[node].tokens_begin = nodes_[node].tokens_end = uint32_t(token_ids_.size());
        token_ids_.push_back(id);
        ++nodes_[node].tokens_end;
    }
}

// ---- GrammarMatcher --------------------------------------------------------------------------

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)) {
    for (const uint32_t alt : grammar_->rules_[grammar_->root_])
        expand(Stack{alt}, state_.stacks, 0);
    std::sort(state_.stacks.begin(), state_.stacks.end());
    state_.stacks.erase(std::unique(state_.stacks.begin(), state_.stacks.end()),
                        state_.stacks.end());
}

void GrammarMatcher::expand(Stack stack, std::vector<Stack>& out, int depth) const {
    if (depth > kMaxExpansionDepth)
        throw Error("grammar: rules nest deeper than " + std::to_string(kMaxExpansionDepth) +
                    " without reading a character");
    const std::vector<Grammar::Symbol>& symbols = grammar_->symbols_;
    while (!stack.empty()) {
        const uint32_t at = stack.back();
        const Grammar::Symbol& s = symbols[at];
        if (s.kind == Grammar::Kind::end) {
            stack.pop_back();  // the alternative is done: its caller's continuation is next
            continue;
        }
        if (s.kind == Grammar::Kind::chars) break;
        // A reference: what follows it, then each alternative of the rule on top. A reference
        // that ends its alternative leaves nothing to come back to (so right recursion such
        // as `s ::= x s` keeps the stack flat).
        if (symbols[at + 1].kind == Grammar::Kind::end)
            stack.pop_back();
        else
            stack.back() = at + 1;
        const std::vector<uint32_t>& alts = grammar_->rules_[s.a];
        for (size_t i = 0; i < alts.size(); ++i) {
            Stack next = i + 1 < alts.size() ? stack : std::move(stack);
            next.push_back(alts[i]);
            expand(std::move(next), out, depth + 1);
        }
        return;
    }
    out.push_back(std::move(stack));
}

bool GrammarMatcher::feed_byte(const State& from, uint8_t byte, State& to) const {
    uint32_t cp;
    uint8_t pending, length;
    if (from.pending == 0) {
        pending = byte < 0x80                    ? 0
                  : byte >= 0xC2 && byte <= 0xDF ? 1
                  : byte >= 0xE0 && byte <= 0xEF ? 2
                  : byte >= 0xF0 && byte <= 0xF4 ? 3
                                                 : 4;
        if (pending == 4) return false;
        cp = pending == 0 ? byte : byte & (0x3Fu >> pending);
        length = uint8_t(pending + 1);
    } else {
        if ((byte & 0xC0) != 0x80) return false;
        cp = from.partial << 6 | (byte & 0x3F);
        pending = uint8_t(from.pending - 1);
        length = from.length;
    }
    // The code points a sequence of this length may encode: shorter (overlong) spellings and
    // the surrogates are no UTF-8, and would let a token spell a character in disguise.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    const uint32_t first = cp << (6 * pending), last = first | ((1u << (6 * pending)) - 1);
    if (last < kMin[length] || first > 0x10FFFF || (first >= 0xD800 && last <= 0xDFFF))
        return false;
    const std::vector<Grammar::Symbol>& symbols = grammar_->symbols_;
    to.stacks.clear();
    if (pending > 0) {
        // Part of a character: keep the ways whose class may take one that begins so.
        for (const Stack& s : from.stacks)
            if (!s.empty() &&
                grammar_->may_match(symbols[s.back()], std::max(first, kMin[length]), last))
                to.stacks.push_back(s);
        to.partial = cp;
        to.pending = pending;
        to.length = length;
        return !to.stacks.empty();
    }
    to.partial = 0;
    to.pending = 0;
    to.length = 0;
    for (const Stack& s : from.stacks) {
        if (s.empty() || !grammar_->matches(symbols[s.back()], cp)) continue;
        Stack next = s;
        next.back() += 1;
        expand(std::move(next), to.stacks, 0);
    }
    if (to.stacks.empty()) return false;
    std::sort(to.stacks.begin(), to.stacks.end());
    to.stacks.erase(std::unique(to.stacks.begin(), to.stacks.end()), to.stacks.end());
    return true;
}

bool GrammarMatcher::read(std::string_view bytes, State& out) const {
    out = state_;
    State next;
    for (const char c : bytes) {
        if (!feed_byte(out, uint8_t(c), next)) return false;
        std::swap(out, next);
    }
    return true;
}

bool GrammarMatcher::feed(std::string_view bytes) {
    State s;
    if (!read(bytes, s)) return false;
    state_ = std::move(s);
    return true;
}

bool GrammarMatcher::accepts(std::string_view bytes) const {
    State s;
    return read(bytes, s);
}

bool GrammarMatcher::complete() const {
    return state_.pending == 0 && std::any_of(state_.stacks.begin(), state_.stacks.end(),
                                              [](const Stack& s) { return s.empty(); });
}

bool GrammarMatcher::can_continue() const {
    return std::any_of(state_.stacks.begin(), state_.stacks.end(),
                       [](const Stack& s) { return !s.empty(); });
}

void GrammarMatcher::allowed_tokens(const TokenTrie& trie, std::vector<uint8_t>& allowed) const {
    allowed.assign(trie.size(), 0);
    walk(trie, 0, state_, allowed);
}

void GrammarMatcher::walk(const TokenTrie& trie, uint32_t node, const State& state,
                          std::vector<uint8_t>& allowed) const {
    State next;
    for (uint32_t c = trie.nodes_[node].first_child; c != 0; c = trie.nodes_[c].next_sibling) {
        const TokenTrie::Node& child = trie.nodes_[c];
        if (!feed_byte(state, child.byte, next)) continue;
        for (uint32_t i = child.tokens_begin; i < child.tokens_end; ++i)
            allowed[size_t(trie.token_ids_[i])] = 1;
        if (child.first_child != 0) walk(trie, c, next, allowed);
    }
}

}  // namespace sy::llm
