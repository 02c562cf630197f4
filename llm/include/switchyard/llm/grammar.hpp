// Constrained generation: a context-free grammar in llama.cpp's GBNF notation, a matcher that
// follows a text through it, and the set of tokens that may come next.
//
//   root   ::= "{" ws pair ("," ws pair)* "}"      # rules: name ::= alternatives
//   pair   ::= [a-z]+ ":" ws ("true" | "false")    # literals, [classes], groups, refs
//   ws     ::= " "?                                 # postfix ? * + {m} {m,} {m,n}
//
// Literals take the escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH; a class [^...] is its
// complement; `.` is any character. A rule ends at the end of its line unless a parenthesis is
// open or the line ends in `|` / `::=` or the next line begins with `|`. Characters are Unicode
// code points; the matcher reads UTF-8 bytes, so a token may end inside a character.
//
// The matcher keeps every way the text so far can continue (a set of stacks of grammar
// positions, each stack's top a character class), which is what lets one grammar be ambiguous.
// Left-recursive rules would expand forever and are refused when the grammar is read.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sy::llm {

class Grammar {
  public:
    // Reads GBNF text; `root` names the start rule. Throws sy::Error naming the line and column
    // of a syntax error, an undefined rule, a missing root, or a left-recursive rule.
    static std::shared_ptr<const Grammar> parse(std::string_view text,
                                                std::string_view root = "root");

    size_t rule_count() const { return rules_.size(); }

  private:
    friend class GrammarMatcher;
    friend class GrammarParser;

    enum class Kind : uint8_t { end, ref, chars };
    // One position of an alternative: its end, a rule to expand, or a character class (the
    // ranges [first, first + count) of ranges_, matched or, when negated, not matched).
    struct Symbol {
        Kind kind = Kind::end;
        bool negated = false;
        uint32_t a = 0;  // ref: the rule; chars: the first range
        uint32_t b = 0;  // chars: the number of ranges
    };
    struct Range {
        uint32_t lo, hi;  // code points, inclusive
    };

    bool matches(const Symbol& s, uint32_t cp) const;
    // Whether s may match some code point in [lo, hi] (a character read part of the way).
    bool may_match(const Symbol& s, uint32_t lo, uint32_t hi) const;

    std::vector<Symbol> symbols_;               // alternatives one after another, each ended
    std::vector<std::vector<uint32_t>> rules_;  // per rule: where its alternatives start
    std::vector<std::string> names_;            // per rule
    std::vector<Range> ranges_;
    uint32_t root_ = 0;
};

// The tokens of a vocabulary by their text (a byte trie), for asking a grammar which of them
// may come next without walking each token's text from the start.
class TokenTrie {
  public:
    // texts[id]: the bytes token id stands for; empty texts are never allowed.
    explicit TokenTrie(const std::vector<std::string>& texts);
    size_t size() const { return n_tokens_; }

  private:
    friend class GrammarMatcher;
    struct Node {
        uint32_t first_child = 0;   // 0: none (the root is node 0 and no one's child)
        uint32_t next_sibling = 0;  // 0: none
        uint32_t tokens_begin = 0;  // into token_ids_: the tokens whose text ends here
        uint32_t tokens_end = 0;
        uint8_t byte = 0;
    };
    std::vector<Node> nodes_;
    std::vector<int32_t> token_ids_;
    size_t n_tokens_ = 0;
};

// Where a text stands in a grammar. Copyable: a copy is an independent position.
class GrammarMatcher {
  public:
    explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

    // Reads bytes; false, leaving the matcher as it was, when they cannot continue the text.
    bool feed(std::string_view bytes);
    // Whether `bytes` could be read (feed without the change).
    bool accepts(std::string_view bytes) const;
    // The text so far is a whole sentence of the grammar (and no character is unfinished).
    bool complete() const;
    // Some more text may follow.
    bool can_continue() const;
    // allowed[id] = 1 for each token of the trie whose text may come next, 0 for the others;
    // `allowed` has trie.size() entries.
    void allowed_tokens(const TokenTrie& trie, std::vector<uint8_t>& allowed) const;
    // The same position of the same grammar: every continuation alike (inside a JSON string,
    // each character leads back to the same one).
    bool operator==(const GrammarMatcher& other) const {
        return grammar_ == other.grammar_ && state_.stacks == other.state_.stacks &&
               state_.partial == other.state_.partial && state_.pending == other.state_.pending &&
               state_.length == other.state_.length;
    }

  private:
    using Stack = std::vector<uint32_t>;  // symbol positions; back() is the next to match
    struct State {
        std::vector<Stack> stacks;  // sorted, no two alike
        uint32_t partial = 0;       // the bits of an unfinished UTF-8 character
        uint8_t pending = 0;        // its continuation bytes still to come
        uint8_t length = 0;         // its length in bytes
    };

    // Adds `stack` to `out` after expanding references until its top is a character class
    // (an empty stack: the grammar's end is reached).
    void expand(Stack stack, std::vector<Stack>& out, int depth) const;
    // The state after `bytes`, into out; false when they cannot follow.
    bool read(std::string_view bytes, State& out) const;
    // `from` after reading one byte, into `to`; false when the byte cannot follow.
    bool feed_byte(const State& from, uint8_t byte, State& to) const;
    void walk(const TokenTrie& trie, uint32_t node, const State& state,
              std::vector<uint8_t>& allowed) const;

    std::shared_ptr<const Grammar> grammar_;
    State state_;
};

}  // namespace sy::llm
