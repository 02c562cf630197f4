// How added tokens cut a text before BPE, as llama.cpp's tokenizer does: longest token first
// (equal lengths: lower id first), leftmost non-overlapping occurrences, user-defined tokens
// always and control tokens only when special tokens are parsed.
#include "switchyard/llm/added_tokens.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace sy::llm::test {
namespace {

using Fragments = std::vector<AddedTokens::Fragment>;

TEST(AddedTokens, LongerTokenWinsOverOneThatStartsFirst) {
    AddedTokens added;
    added.add(6, "xa", true);
    added.add(5, "abc", true);
    // "xa" starts first, but "abc" is longer: it is taken first and "x" is left as text.
    EXPECT_EQ(added.split("xabcd", false), (Fragments{{0, 1, -1}, {1, 3, 5}, {4, 1, -1}}));
    EXPECT_EQ(added.split("xab", false), (Fragments{{0, 2, 6}, {2, 1, -1}}));
}

TEST(AddedTokens, EqualLengthsGoToTheLowerId) {
    AddedTokens added;
    added.add(9, "ab", true);
    added.add(3, "bc", true);
    EXPECT_EQ(added.split("abc", false), (Fragments{{0, 1, -1}, {1, 2, 3}}));
}

TEST(AddedTokens, ControlTokensOnlyWhenParsingSpecials) {
    AddedTokens added;
    added.add(1, "<s>", false);
    added.add(2, "\xC3\xBC", true);  // ü
    const std::string text = "a<s>\xC3\xBC";
    EXPECT_EQ(added.split(text, false), (Fragments{{0, 4, -1}, {4, 2, 2}}));
    EXPECT_EQ(added.split(text, true), (Fragments{{0, 1, -1}, {1, 3, 1}, {4, 2, 2}}));
}

TEST(AddedTokens, OneTextForAUserDefinedAndAControlToken) {
    AddedTokens added;
    added.add(4, "tok", false);
    added.add(7, "tok", true);
    EXPECT_EQ(added.split("tok", false), (Fragments{{0, 3, 7}}));
    EXPECT_EQ(added.split("tok", true), (Fragments{{0, 3, 4}}));  // the lower id
}

TEST(AddedTokens, RepeatedOccurrencesLeftToRightWithoutOverlap) {
    AddedTokens added;
    added.add(0, "aa", true);
    EXPECT_EQ(added.split("aaaaa", false), (Fragments{{0, 2, 0}, {2, 2, 0}, {4, 1, -1}}));
    // A prefix of a token is no match, and a token at the very end is.
    EXPECT_EQ(added.split("baba a", false), (Fragments{{0, 6, -1}}));
    EXPECT_EQ(added.split("b aa", false), (Fragments{{0, 2, -1}, {2, 2, 0}}));
}

TEST(AddedTokens, EmptyTextsAndNoTokens) {
    AddedTokens none;
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(none.split("text", true), (Fragments{{0, 4, -1}}));
    EXPECT_TRUE(none.split("", true).empty());
    AddedTokens added;
    added.add(1, "", true);  // never matched
    EXPECT_TRUE(added.empty());
    added.add(2, "x", true);
    EXPECT_TRUE(added.split("", true).empty());
    EXPECT_EQ(added.split("yy", true), (Fragments{{0, 2, -1}}));
}

}  // namespace
}  // namespace sy::llm::test
