// GBNF text -> Grammar (grammar.hpp). Groups and repetitions become rules of their own:
//   (A | B)   -> g ::= A | B
//   x*        -> s ::= x s |            x+ -> x s
//   x?        -> o ::= x |              x{m,n} -> x (m times) then n - m nested optionals
#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/grammar.hpp"

namespace sy::llm {

class GrammarParser {
  public:
    using Symbol = Grammar::Symbol;
    using Sequence = std::vector<Symbol>;

    explicit GrammarParser(std::string_view text) : src_(text) {}

    std::shared_ptr<const Grammar> run(std::string_view root) {
        for (;;) {
            skip_space(true);
            if (at_end()) break;
            const size_t name_at = pos_;
            const std::string name = parse_name();
            if (name.empty()) fail("expected a rule name");
            skip_space(false);
            if (src_.substr(pos_, 3) != "::=") fail("expected ::= after '" + name + "'");
            pos_ += 3;
            skip_space(true);
            const uint32_t id = rule_id(name, name_at);
            if (defined_[id]) fail_at(name_at, "rule '" + name + "' is defined twice");
            defined_[id] = true;
            parse_alternates(id, false);
            skip_space(false);
            if (!at_end() && src_[pos_] != '\n' && src_[pos_] != '\r')
                fail(std::string("unexpected '") + src_[pos_] + "'");
        }
        for (size_t i = 0; i < names_.size(); ++i)
            if (!defined_[i]) fail_at(used_at_[i], "rule '" + names_[i] + "' is not defined");
        const auto it = ids_.find(std::string(root));
        if (it == ids_.end()) throw Error("grammar: no rule '" + std::string(root) + "'");
        check_left_recursion();

        auto g = std::shared_ptr<Grammar>(new Grammar());
        g->names_ = names_;
        g->ranges_ = std::move(ranges_);
        g->root_ = it->second;
        g->rules_.resize(rules_.size());
        for (size_t r = 0; r < rules_.size(); ++r) {
            for (const Sequence& alt : rules_[r]) {
                g->rules_[r].push_back(uint32_t(g->symbols_.size()));
                g->symbols_.insert(g->symbols_.end(), alt.begin(), alt.end());
                g->symbols_.push_back(Symbol{});
            }
        }
        return g;
    }

  private:
    static constexpr uint32_t kMaxRepetition = 4096;

    bool at_end() const { return pos_ >= src_.size(); }

    std::pair<size_t, size_t> line_column(size_t at) const {
        size_t line = 1, column = 1;
        for (size_t i = 0; i < at && i < src_.size(); ++i) {
            if (src_[i] == '\n') {
                ++line;
                column = 1;
            } else if ((uint8_t(src_[i]) & 0xC0) != 0x80) {
                ++column;
            }
        }
        return {line, column};
    }
    [[noreturn]] void fail_at(size_t at, const std::string& what) const {
        const auto [line, column] = line_column(at);
        throw Error("grammar: line " + std::to_string(line) + ", column " + std::to_string(column) +
                    ": " + what);
    }
    [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

    static bool name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
    }

    // Spaces, tabs and comments; newlines too when `newlines`.
    void skip_space(bool newlines) {
        while (!at_end()) {
            const char c = src_[pos_];
            if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && src_[pos_] != '\n') ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (!at_end() && name_char(src_[pos_])) ++pos_;
        return std::string(src_.substr(start, pos_ - start));
    }

    uint32_t rule_id(const std::string& name, size_t at) {
        const auto [it, added] = ids_.try_emplace(name, uint32_t(names_.size()));
        if (added) {
            names_.push_back(name);
            rules_.emplace_back();
            defined_.push_back(false);
            used_at_.push_back(at);
        }
        return it->second;
    }
    uint32_t new_rule(const std::string& base) {
        for (;;) {
            // '/' is no name character: a generated name never meets one of the text's.
            const std::string name = base + "/" + std::to_string(++generated_);
            if (!ids_.contains(name)) {
                const uint32_t id = rule_id(name, pos_);
                defined_[id] = true;
                return id;
            }
        }
    }

    // One code point of the source (UTF-8), or an escape.
    uint32_t parse_char() {
        if (at_end()) fail("unexpected end of the grammar");
        const auto b = uint8_t(src_[pos_]);
        if (b == '\\') {
            if (pos_ + 1 >= src_.size()) fail("an escape at the end of the grammar");
            const char e = src_[pos_ + 1];
            pos_ += 2;
            switch (e) {
                case 'n': return '\n';
                case 'r': return '\r';
                case 't': return '\t';
                case '\\':
                case '"':
                case '[':
                case ']':
                case '-':
                case '/': return uint32_t(e);
                case 'x': return parse_hex(2);
                case 'u': return parse_hex(4);
                case 'U': return parse_hex(8);
                default: fail_at(pos_ - 2, std::string("unknown escape \\") + e);
            }
        }
        const size_t length = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
        if (length == 0 || pos_ + length > src_.size()) fail("invalid UTF-8");
        uint32_t cp = length == 1 ? b : b & (0x7F >> length);
        for (size_t i = 1; i < length; ++i) {
            const auto c = uint8_t(src_[pos_ + i]);
            if ((c & 0xC0) != 0x80) fail("invalid UTF-8");
            cp = cp << 6 | (c & 0x3F);
        }
        pos_ += length;
        return cp;
    }
    uint32_t parse_hex(int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i, ++pos_) {
            if (at_end()) fail("expected " + std::to_string(digits) + " hex digits");
            const char c = src_[pos_];
            const int d = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
            if (d < 0) fail("expected " + std::to_string(digits) + " hex digits");
            v = v << 4 | uint32_t(d);
        }
        if (v > 0x10FFFF) fail("code point beyond U+10FFFF");
        return v;
    }

    Symbol chars(std::vector<Grammar::Range> ranges, bool negated) {
        Symbol s{Grammar::Kind::chars, negated, uint32_t(ranges_.size()), uint32_t(ranges.size())};
        ranges_.insert(ranges_.end(), ranges.begin(), ranges.end());
        return s;
    }
    static Symbol ref(uint32_t rule) { return Symbol{Grammar::Kind::ref, false, rule, 0}; }

    void parse_alternates(uint32_t rule, bool nested) {
        for (;;) {
            Sequence seq = parse_sequence(rule, nested);
            rules_[rule].push_back(std::move(seq));
            if (!at_end() && src_[pos_] == '|') {
                ++pos_;
                skip_space(true);
                continue;
            }
            if (!nested) {
                // A next line that begins with `|` continues the rule.
                const size_t here = pos_;
                skip_space(true);
                if (!at_end() && src_[pos_] == '|') {
                    ++pos_;
                    skip_space(true);
                    continue;
                }
                pos_ = here;
            }
            return;
        }
    }

    Sequence parse_sequence(uint32_t rule, bool nested) {
        Sequence seq;
        size_t last = 0;  // where the last item's symbols begin in seq
        bool have_last = false;
        for (;;) {
            skip_space(nested);
            if (at_end()) break;
            const char c = src_[pos_];
            const size_t item_at = seq.size();
            if (c == '"') {
                ++pos_;
                while (!at_end() && src_[pos_] != '"') {
                    if (src_[pos_] == '\n') fail("a literal runs past the end of its line");
                    const uint32_t cp = parse_char();
                    seq.push_back(chars({{cp, cp}}, false));
                }
                if (at_end()) fail("unterminated literal");
                ++pos_;
            } else if (c == '[') {
                ++pos_;
                bool negated = false;
                if (!at_end() && src_[pos_] == '^') negated = true, ++pos_;
                std::vector<Grammar::Range> ranges;
                while (!at_end() && src_[pos_] != ']') {
                    if (src_[pos_] == '\n') fail("a character class runs past the end of its line");
                    const uint32_t lo = parse_char();
                    uint32_t hi = lo;
                    if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
                        ++pos_;
                        hi = parse_char();
                        if (hi < lo) fail("a character range runs backwards");
                    }
                    ranges.push_back({lo, hi});
                }
                if (at_end()) fail("unterminated character class");
                ++pos_;
                seq.push_back(chars(std::move(ranges), negated));
            } else if (c == '.') {
                ++pos_;
                seq.push_back(chars({}, true));
            } else if (c == '(') {
                ++pos_;
                skip_space(true);
                const uint32_t group = new_rule(names_[rule]);
                parse_alternates(group, true);
                skip_space(true);
                if (at_end() || src_[pos_] != ')') fail("expected )");
                ++pos_;
                seq.push_back(ref(group));
            } else if (name_char(c)) {
                const size_t at = pos_;
                seq.push_back(ref(rule_id(parse_name(), at)));
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (!have_last) fail(std::string("'") + c + "' follows nothing");
                repeat(rule, seq, last);
                continue;
            } else {
                break;  // | ) newline: the caller's
            }
            last = item_at;
            have_last = true;
        }
        return seq;
    }

    // Applies the postfix operator at pos_ to seq[last..].
    void repeat(uint32_t rule, Sequence& seq, size_t last) {
        Sequence item(seq.begin() + std::ptrdiff_t(last), seq.end());
        seq.resize(last);
        uint32_t x;  // a rule for the item
        if (item.size() == 1 && item[0].kind == Grammar::Kind::ref) {
            x = item[0].a;
        } else {
            x = new_rule(names_[rule]);
            rules_[x].push_back(std::move(item));
        }
        uint32_t min = 0, max = UINT32_MAX;  // UINT32_MAX: unbounded
        const char op = src_[pos_++];
        if (op == '+') {
            min = 1;
        } else if (op == '?') {
            max = 1;
        } else if (op == '{') {
            skip_space(false);
            min = parse_count();
            skip_space(false);
            max = min;
            if (!at_end() && src_[pos_] == ',') {
                ++pos_;
                skip_space(false);
                max = !at_end() && src_[pos_] == '}' ? UINT32_MAX : parse_count();
                skip_space(false);
            }
            if (at_end() || src_[pos_] != '}') fail("expected } after a repetition count");
            ++pos_;
            if (max < min) fail("a repetition's maximum is below its minimum");
        }
        for (uint32_t i = 0; i < min; ++i) seq.push_back(ref(x));
        if (max == UINT32_MAX) {
            const uint32_t star = new_rule(names_[rule]);
            rules_[star].push_back({ref(x), ref(star)});
            rules_[star].push_back({});
            seq.push_back(ref(star));
        } else if (max > min) {
            uint32_t tail = 0;  // x{0,k}: o_k ::= x o_(k-1) |, o_1 ::= x |
            for (uint32_t k = 1; k <= max - min; ++k) {
                const uint32_t o = new_rule(names_[rule]);
                rules_[o].push_back(k == 1 ? Sequence{ref(x)} : Sequence{ref(x), ref(tail)});
                rules_[o].push_back({});
                tail = o;
            }
            seq.push_back(ref(tail));
        }
    }
    uint32_t parse_count() {
        const size_t start = pos_;
        uint64_t v = 0;
        while (!at_end() && src_[pos_] >= '0' && src_[pos_] <= '9') {
            v = v * 10 + uint64_t(src_[pos_++] - '0');
            if (v > kMaxRepetition)
                fail_at(start, "a repetition count above " + std::to_string(kMaxRepetition));
        }
        if (pos_ == start) fail("expected a repetition count");
        return uint32_t(v);
    }

    // A rule that can reach itself without reading a character would expand forever.
    void check_left_recursion() const {
        const size_t n = rules_.size();
        std::vector<bool> nullable(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (const Sequence& alt : rules_[r]) {
                    const bool all = std::all_of(alt.begin(), alt.end(), [&](const Symbol& s) {
                        return s.kind == Grammar::Kind::ref && nullable[s.a];
                    });
                    if (all) {
                        nullable[r] = changed = true;
                        break;
                    }
                }
            }
        }
        std::vector<std::vector<uint32_t>> left(n);  // rules each can begin with
        for (size_t r = 0; r < n; ++r)
            for (const Sequence& alt : rules_[r])
                for (const Symbol& s : alt) {
                    if (s.kind != Grammar::Kind::ref) break;
                    left[r].push_back(s.a);
                    if (!nullable[s.a]) break;
                }
        std::vector<uint8_t> mark(n, 0);  // 1: on the path, 2: done
        std::function<void(uint32_t)> visit = [&](uint32_t r) {
            mark[r] = 1;
            for (uint32_t next : left[r]) {
                if (mark[next] == 1)
                    throw Error("grammar: rule '" + names_[next] +
                                "' is left-recursive (it can begin with itself)");
                if (mark[next] == 0) visit(next);
            }
            mark[r] = 2;
        };
        for (uint32_t r = 0; r < n; ++r)
            if (mark[r] == 0) visit(r);
    }

    std::string_view src_;
    size_t pos_ = 0;
    std::map<std::string, uint32_t> ids_;
    std::vector<std::string> names_;
    std::vector<std::vector<Sequence>> rules_;
    std::vector<bool> defined_;
    std::vector<size_t> used_at_;
    std::vector<Grammar::Range> ranges_;
    uint32_t generated_ = 0;
};

std::shared_ptr<const Grammar> Grammar::parse(std::string_view text, std::string_view root) {
    return GrammarParser(text).run(root);
}

}  // namespace sy::llm
