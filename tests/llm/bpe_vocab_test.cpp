// The synthetic byte-level BPE vocabulary: GPT-2 byte spelling, valid merges, specials last.
#include "switchyard/llm/bpe_vocab.hpp"

#include <gtest/gtest.h>

#include <set>

namespace sy::llm {
namespace {

TEST(BpeVocab, ByteTokensUseGpt2Spelling) {
    EXPECT_EQ(gpt2_byte_token('a'), "a");
    EXPECT_EQ(gpt2_byte_token(' '), "\xC4\xA0");   // Ġ
    EXPECT_EQ(gpt2_byte_token('\n'), "\xC4\x8A");  // Ċ
    EXPECT_EQ(gpt2_byte_token(0), "\xC4\x80");     // Ā
    std::set<std::string> distinct;
    for (int b = 0; b < 256; ++b) distinct.insert(gpt2_byte_token(static_cast<uint8_t>(b)));
    EXPECT_EQ(distinct.size(), 256u);
}

void expect_valid(const BpeVocab& v, uint32_t size) {
    ASSERT_EQ(v.tokens.size(), size);
    ASSERT_EQ(v.token_types.size(), size);
    EXPECT_EQ(v.merges.size(), size - 260);
    EXPECT_EQ(v.tokens[v.bos_id], "<｜begin▁of▁sentence｜>");
    EXPECT_EQ(v.tokens[v.eos_id], "<｜end▁of▁sentence｜>");
    EXPECT_EQ(v.token_types[v.bos_id], static_cast<int32_t>(TokenType::control));
    EXPECT_EQ(v.token_types[0], static_cast<int32_t>(TokenType::normal));
    const std::set<std::string> tokens(v.tokens.begin(), v.tokens.end());
    EXPECT_EQ(tokens.size(), size) << "tokens are unique";
    // Merge i joins two earlier tokens into token 256 + i.
    std::set<std::string> seen(v.tokens.begin(), v.tokens.begin() + 256);
    for (size_t i = 0; i < v.merges.size(); ++i) {
        const std::string& m = v.merges[i];
        const size_t sp = m.find(' ');
        ASSERT_NE(sp, std::string::npos) << m;
        const std::string a = m.substr(0, sp), b = m.substr(sp + 1);
        ASSERT_TRUE(seen.count(a) && seen.count(b)) << m;
        ASSERT_EQ(v.tokens[256 + i], a + b) << m;
        seen.insert(a + b);
    }
}

TEST(BpeVocab, SmallVocabularyIsLearnedFromText) {
    const BpeVocab v = build_bpe_vocab(512);
    expect_valid(v, 512);
    const std::set<std::string> tokens(v.tokens.begin(), v.tokens.end());
    EXPECT_TRUE(tokens.count("\xC4\xA0the")) << "Ġthe is learned from English text";
}

TEST(BpeVocab, LargeVocabularyIsExtendedDeterministically) {
    const BpeVocab a = build_bpe_vocab(20000);
    expect_valid(a, 20000);
    EXPECT_EQ(a.tokens, build_bpe_vocab(20000).tokens);
}

TEST(BpeVocab, TooSmallIsAnError) {
    EXPECT_THROW(build_bpe_vocab(100), std::invalid_argument);
}

}  // namespace
}  // namespace sy::llm
