// GBNF grammars (llm/grammar.hpp): what they accept, how they refuse bad text, and the tokens a
// matcher allows next against walking every token's text.
#include "switchyard/llm/grammar.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

// Whether `text` is a whole sentence of `grammar`.
bool sentence(const std::string& grammar, const std::string& text) {
    GrammarMatcher m(Grammar::parse(grammar));
    return m.feed(text) && m.complete();
}
// Whether `text` can begin a sentence.
bool prefix(const std::string& grammar, const std::string& text) {
    GrammarMatcher m(Grammar::parse(grammar));
    return m.feed(text);
}
std::string parse_error(const std::string& grammar) {
    try {
        Grammar::parse(grammar);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Grammar, LiteralsClassesGroupsAndReferences) {
    const std::string g = R"g(
        # a tiny arithmetic
        root   ::= expr
        expr   ::= term (("+" | "-") term)*
        term   ::= [0-9]+ | "(" expr ")"
    )g";
    EXPECT_TRUE(sentence(g, "1+2"));
    EXPECT_TRUE(sentence(g, "(10-2)+3"));
    EXPECT_TRUE(sentence(g, "42"));
    EXPECT_FALSE(sentence(g, "1+"));  // a prefix, not a sentence
    EXPECT_TRUE(prefix(g, "1+"));
    EXPECT_FALSE(prefix(g, "1+*"));
    EXPECT_FALSE(prefix(g, ")"));
}

TEST(Grammar, Repetitions) {
    EXPECT_FALSE(sentence(R"(root ::= "a"{2,3})", "a"));
    EXPECT_TRUE(sentence(R"(root ::= "a"{2,3})", "aa"));
    EXPECT_TRUE(sentence(R"(root ::= "a"{2,3})", "aaa"));
    EXPECT_FALSE(prefix(R"(root ::= "a"{2,3})", "aaaa"));
    EXPECT_TRUE(sentence(R"(root ::= "ab"{2})", "abab"));
    EXPECT_FALSE(sentence(R"(root ::= "ab"{2})", "ab"));
    EXPECT_TRUE(sentence(R"(root ::= "x"{1,} "y")", "xxxxy"));
    EXPECT_FALSE(sentence(R"(root ::= "x"{1,} "y")", "y"));
    EXPECT_TRUE(sentence(R"(root ::= "x"? "y")", "y"));
    EXPECT_TRUE(sentence(R"(root ::= "x"+)", "xxx"));
    EXPECT_FALSE(sentence(R"(root ::= "x"+)", ""));
    EXPECT_TRUE(sentence(R"(root ::= "x"*)", ""));
}

TEST(Grammar, AmbiguityIsFollowedEveryWay) {
    // "a"* "a" "b": which a is the last one is known only at the b.
    EXPECT_TRUE(sentence(R"(root ::= "a"* "a" "b")", "aaab"));
    EXPECT_TRUE(sentence(R"(root ::= "ab" | "a" "c" | "a" [b-c] "d")", "abd"));
    EXPECT_TRUE(sentence(R"(root ::= "ab" | "a" "c" | "a" [b-c] "d")", "ab"));
}

TEST(Grammar, CharactersAreCodePointsReadAsUtf8) {
    const std::string g = R"g(root ::= [^"|\\\x00-\x1F]* "|" [α-ω] . "\u2581" )g";
    EXPECT_TRUE(sentence(g, "héllo|λ😀▁"));
    EXPECT_FALSE(prefix(g, "a\"b"));
    EXPECT_FALSE(prefix(g, "|a"));
    // A character split between two pieces of text (tokens) is put together.
    GrammarMatcher m(Grammar::parse(g));
    const std::string lambda = "λ";
    ASSERT_TRUE(m.feed("x|"));
    ASSERT_TRUE(m.feed(lambda.substr(0, 1)));
    EXPECT_FALSE(m.complete());
    ASSERT_TRUE(m.feed(lambda.substr(1)));
    // Bytes that are no UTF-8 are refused, and a refused feed changes nothing.
    EXPECT_FALSE(m.feed("\xFF"));
    // Overlong spellings and surrogates are no UTF-8 either (F0 80 81 90 would be 'P').
    EXPECT_FALSE(m.feed("\xF0\x80"));
    EXPECT_FALSE(m.feed("\xE0\x80\xAF"));
    EXPECT_FALSE(m.feed("\xED\xA0\x80"));
    EXPECT_FALSE(m.feed("\xF4\x90\x80\x80"));
    EXPECT_FALSE(m.feed("z\x80"));
    EXPECT_TRUE(m.feed("z\xE2\x96\x81"));
    EXPECT_TRUE(m.complete());
    EXPECT_FALSE(m.can_continue());
}

TEST(Grammar, RulesContinueOnLinesThatBeginWithABar) {
    const std::string g = "root ::= \"a\"\n     | \"b\" # comment\n  | (\n \"c\"\n | \"d\" )\n";
    for (const char* s : {"a", "b", "c", "d"}) EXPECT_TRUE(sentence(g, s)) << s;
    EXPECT_FALSE(prefix(g, "e"));
}

TEST(Grammar, MistakesAreNamedWithTheirPlace) {
    EXPECT_EQ(parse_error("root ::= item\n"),
              "grammar: line 1, column 10: rule 'item' is not defined");
    EXPECT_EQ(parse_error("item ::= \"x\"\n"), "grammar: no rule 'root'");
    EXPECT_EQ(parse_error("root ::= \"x\"\nroot ::= \"y\"\n"),
              "grammar: line 2, column 1: rule 'root' is defined twice");
    EXPECT_EQ(parse_error("root ::= \"abc\n"),
              "grammar: line 1, column 14: a literal runs past the end of its line");
    EXPECT_EQ(parse_error("root ::= [ab\n"),
              "grammar: line 1, column 13: a character class runs past the end of its line");
    EXPECT_EQ(parse_error("root ::= \"\\q\"\n"), "grammar: line 1, column 11: unknown escape \\q");
    EXPECT_EQ(parse_error("root ::= [z-a]\n"),
              "grammar: line 1, column 14: a character range runs backwards");
    EXPECT_EQ(parse_error("root ::= * \"a\"\n"), "grammar: line 1, column 10: '*' follows nothing");
    EXPECT_EQ(parse_error("root ::= \"a\"{3,2}\n"),
              "grammar: line 1, column 18: a repetition's maximum is below its minimum");
    EXPECT_EQ(parse_error("root ::= \"a\"{99999}\n"),
              "grammar: line 1, column 14: a repetition count above 4096");
    EXPECT_EQ(parse_error("root ::= (\"a\"\n"), "grammar: line 2, column 1: expected )");
    EXPECT_EQ(parse_error("root ::= \"a\" ]\n"), "grammar: line 1, column 14: unexpected ']'");
    EXPECT_EQ(parse_error("root := \"a\"\n"),
              "grammar: line 1, column 6: expected ::= after 'root'");
}

TEST(Grammar, LeftRecursionIsRefused) {
    EXPECT_EQ(parse_error("root ::= root \"a\" | \"b\"\n"),
              "grammar: rule 'root' is left-recursive (it can begin with itself)");
    // Through a rule that can be empty.
    EXPECT_EQ(parse_error("root ::= e x\ne ::= \"\" | \"q\"\nx ::= root \"a\" | \"b\"\n"),
              "grammar: rule 'root' is left-recursive (it can begin with itself)");
    // Recursion after a character is fine.
    EXPECT_TRUE(sentence("root ::= \"(\" root \")\" | \"x\"\n", "((x))"));
}

TEST(Grammar, AllowedTokensAreTheOnesWhoseTextFits) {
    const std::vector<std::string> vocab = {
        "",    "{",  "}",   "\"",   "a",    "ab", "abc", "\"a", "\":",  ":",       " ",
        "1",   "12", "123", "true", "tr",   "ue", "x",   "λ",   "\xCE", "\xBB",    "\"λ\"",
        "{\"", ",",  ", ",  "},",   "null", "\n", "}}",  "{}",  "::",   "\"abc\"", "tru"};
    const TokenTrie trie(vocab);
    const std::string g = R"g(
        root  ::= "{" (pair ("," " "? pair)*)? "}"
        pair  ::= key ":" value
        key   ::= "\"" [a-zλ]+ "\""
        value ::= [0-9]+ | "true" | "null"
    )g";
    GrammarMatcher m(Grammar::parse(g));
    for (const char* text :
         {"", "{", "{\"a", "{\"ab\":", "{\"ab\":1", "{\"λ\":true,", "{\"a\":1}"}) {
        GrammarMatcher at = m;
        ASSERT_TRUE(at.feed(text)) << text;
        std::vector<uint8_t> allowed;
        at.allowed_tokens(trie, allowed);
        ASSERT_EQ(allowed.size(), vocab.size());
        for (size_t id = 0; id < vocab.size(); ++id) {
            const bool fits = !vocab[id].empty() && at.accepts(vocab[id]);
            EXPECT_EQ(allowed[id] != 0, fits)
                << "after '" << text << "' token '" << vocab[id] << "'";
        }
    }
}

}  // namespace
}  // namespace sy::llm
