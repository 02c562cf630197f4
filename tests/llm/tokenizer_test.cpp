// The byte-level BPE tokenizer on a synthetic model's vocabulary: round trips, BOS, special
// tokens, the pre-tokenizer's digit rule per family, and errors for broken vocabularies.
#include "switchyard/llm/tokenizer.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "llm_test_util.hpp"
#include "switchyard/llm/bpe_vocab.hpp"
#include "switchyard/llm/synthetic_model.hpp"

namespace sy::llm::test {
namespace {

gguf::Reader tiny_model(const ScratchDir& dir, const std::string& pre = "deepseek-v3") {
    Deepseek2Config cfg = deepseek2_preset("tiny");
    cfg.tokenizer_pre = pre;
    const auto path = dir / (pre + ".gguf");
    write_synthetic_model(path, plan_deepseek2(cfg, SY_TYPE_F32, KvLayout::kv_b), 1, 1);
    return gguf::Reader::open(path);
}

TEST(Tokenizer, RoundTripsTextExactly) {
    ScratchDir dir;
    const gguf::Reader f = tiny_model(dir);
    const Tokenizer tok = Tokenizer::from_gguf(f);
    for (const std::string text :
         {"The quick brown fox jumps over the lazy dog.", "  two spaces\n\nand\ttabs  ",
          "numbers 1234567 and 3.14159", "caf\xc3\xa9 na\xc3\xafve \xe4\xb8\xad\xe6\x96\x87 text",
          "punctuation!? (yes) -- \"quoted\" 'single'\n", "\xff\xfe raw bytes"}) {
        const std::vector<int32_t> ids = tok.encode(text, false, false);
        EXPECT_EQ(tok.decode(ids), text);
        // Merges make common English shorter than its bytes.
        if (text[0] == 'T') {
            EXPECT_LT(ids.size(), text.size() * 2 / 3);
        }
    }
}

TEST(Tokenizer, AddsBosAndParsesSpecialTokensWhenAsked) {
    ScratchDir dir;
    const gguf::Reader f = tiny_model(dir);
    const Tokenizer tok = Tokenizer::from_gguf(f);
    ASSERT_TRUE(tok.add_bos());
    const std::vector<int32_t> ids = tok.encode("hello", true, false);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), tok.bos());
    const std::string eos_text =
        "<\xef\xbd\x9c"
        "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>";
    ASSERT_EQ(tok.find(eos_text), tok.eos());
    const auto parsed = tok.encode("hi" + eos_text + "there", false, true);
    EXPECT_EQ(std::count(parsed.begin(), parsed.end(), tok.eos()), 1);
    const auto literal = tok.encode("hi" + eos_text + "there", false, false);
    EXPECT_EQ(std::count(literal.begin(), literal.end(), tok.eos()), 0);
    EXPECT_TRUE(tok.is_end_of_generation(tok.eos()));
    EXPECT_EQ(tok.token_bytes(tok.eos()), "");
    EXPECT_EQ(tok.token_bytes(tok.eos(), true), eos_text);
}

TEST(Tokenizer, DigitsSplitInThreesOrWholeByFamily) {
    ScratchDir dir;
    const gguf::Reader v3 = tiny_model(dir, "deepseek-v3");
    const gguf::Reader llm = tiny_model(dir, "deepseek-llm");
    const Tokenizer a = Tokenizer::from_gguf(v3), b = Tokenizer::from_gguf(llm);
    // Digits never merge across pieces: 7 digits are at least 3 pieces in threes.
    auto pieces = [](const Tokenizer& t, const std::string& s) {
        std::vector<std::string> out;
        for (int32_t id : t.encode(s, false, false)) out.push_back(t.token_bytes(id));
        return out;
    };
    const auto p3 = pieces(a, "1234567");
    EXPECT_GE(p3.size(), 3u);
    std::string joined;
    for (const auto& p : p3) {
        EXPECT_LE(p.size(), 3u) << p;
        joined += p;
    }
    EXPECT_EQ(joined, "1234567");
    EXPECT_EQ(b.decode(b.encode("1234567", false, false)), "1234567");
}

// Characters outside ASCII split by their Unicode category: symbols and punctuation apart
// from letters, marks inside words, every script's digits in threes (deepseek-v3).
TEST(Tokenizer, PreTokenizerUsesUnicodeCategories) {
    ScratchDir dir;
    const Tokenizer tok = Tokenizer::from_gguf(tiny_model(dir));
    using Pieces = std::vector<std::string>;
    EXPECT_EQ(tok.pre_tokenize("x\xE2\x86\x92y"), (Pieces{"x", "\xE2\x86\x92", "y"}));  // x→y
    EXPECT_EQ(tok.pre_tokenize("cafe\xCC\x81 ok"), (Pieces{"cafe\xCC\x81", " ok"}));    // combining
    // Arabic-Indic ١٢٣٤ (Nd): 3 + 1.
    EXPECT_EQ(tok.pre_tokenize("\xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4"),
              (Pieces{"\xD9\xA1\xD9\xA2\xD9\xA3", "\xD9\xA4"}));
    EXPECT_EQ(tok.pre_tokenize("\xE2\x82\xAC"
                               "5"),
              (Pieces{"\xE2\x82\xAC", "5"}));                                    // €5
    EXPECT_EQ(tok.pre_tokenize("\xCE\xB1\xCE\xB2\xCE\xB3 \xC2\xBFQu\xC3\xA9?"),  // αβγ ¿Qué?
              (Pieces{"\xCE\xB1\xCE\xB2\xCE\xB3", " \xC2\xBF", "Qu\xC3\xA9", "?"}));
    // llama3's regex has no \p{M} in its letters: the combining accent stands apart.
    const Tokenizer l3 = Tokenizer::from_gguf(tiny_model(dir, "llama3"));
    EXPECT_EQ(l3.pre_tokenize("cafe\xCC\x81"), (Pieces{"cafe", "\xCC\x81"}));
    // No-break space (Zs) is white space.
    EXPECT_EQ(tok.pre_tokenize("a\xC2\xA0"
                               "b"),
              (Pieces{"a",
                      "\xC2\xA0"
                      "b"}));
}

TEST(Tokenizer, RefusesOtherModelsAndBrokenVocabularies) {
    ScratchDir dir;
    ModelPlan plan = plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, KvLayout::kv_b);
    for (auto& kv : plan.metadata)
        if (kv.key == "tokenizer.ggml.model") kv.value = gguf::Value::string("llama");
    write_synthetic_model(dir / "spm.gguf", plan, 1, 1);
    try {  // a SentencePiece vocabulary without its scores
        Tokenizer::from_gguf(gguf::Reader::open(dir / "spm.gguf"));
        FAIL() << "accepted a llama vocabulary without scores";
    } catch (const gguf::FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.scores"), std::string::npos);
    }
    for (auto& kv : plan.metadata)
        if (kv.key == "tokenizer.ggml.model") kv.value = gguf::Value::string("bert");
    write_synthetic_model(dir / "bert.gguf", plan, 1, 1);
    try {
        Tokenizer::from_gguf(gguf::Reader::open(dir / "bert.gguf"));
        FAIL() << "accepted a bert vocabulary";
    } catch (const gguf::FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("'bert'"), std::string::npos) << e.what();
    }
    plan = plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, KvLayout::kv_b);
    for (auto& kv : plan.metadata)
        if (kv.key == "tokenizer.ggml.bos_token_id") kv.value = gguf::Value::u32(99999);
    write_synthetic_model(dir / "bos.gguf", plan, 1, 1);
    EXPECT_THROW(Tokenizer::from_gguf(gguf::Reader::open(dir / "bos.gguf")), gguf::FormatError);
}

// A SentencePiece (`llama`) vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then pieces
// with scores (higher merges first).
gguf::Reader spm_vocab(const ScratchDir& dir, bool add_space_prefix = true) {
    std::vector<gguf::Value> tokens, scores, types;
    const auto add = [&](const std::string& t, float score, TokenType type) {
        tokens.push_back(gguf::Value::string(t));
        scores.push_back(gguf::Value::f32(score));
        types.push_back(gguf::Value::i32(static_cast<int32_t>(type)));
    };
    add("<unk>", 0, TokenType::unknown);
    add("<s>", 0, TokenType::control);
    add("</s>", 0, TokenType::control);
    char name[8];
    for (int b = 0; b < 256; ++b) {
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        add(name, 0, TokenType::byte);
    }
    float score = -1;
    for (const char* piece : {"▁", "h", "e", "l", "o", "w", "r", "d", "▁h", "ll", "he", "▁he",
                              "llo", "▁hello", "▁w", "or", "▁wor", "ld", "▁world"})
        add(piece, score--, TokenType::normal);
    const auto path = dir / (add_space_prefix ? "spm.gguf" : "spm-noprefix.gguf");
    {
        gguf::Writer w(path);
        w.add("general.architecture", gguf::Value::string("llama"));
        w.add("tokenizer.ggml.model", gguf::Value::string("llama"));
        w.add("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, tokens));
        w.add("tokenizer.ggml.scores", gguf::Value::array(gguf::ValueType::F32, scores));
        w.add("tokenizer.ggml.token_type", gguf::Value::array(gguf::ValueType::I32, types));
        w.add("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
        w.add("tokenizer.ggml.eos_token_id", gguf::Value::u32(2));
        w.add("tokenizer.ggml.unknown_token_id", gguf::Value::u32(0));
        w.add("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(add_space_prefix));
        w.write_header();
        w.finish();
    }
    return gguf::Reader::open(path);
}

TEST(SentencePiece, MergesByScoreWithTheSpacePrefix) {
    ScratchDir dir;
    const Tokenizer tok = Tokenizer::from_gguf(spm_vocab(dir));
    ASSERT_TRUE(tok.sentencepiece());
    // "▁hello▁world": ▁h, ll, ▁he, llo, ▁hello, ▁w, or, ▁wor, ld, ▁world in score order.
    const std::vector<int32_t> want = {tok.bos(), tok.find("▁hello"), tok.find("▁world")};
    EXPECT_EQ(tok.encode("hello world", true, false), want);
    EXPECT_EQ(tok.decode(want), "hello world");
    EXPECT_EQ(tok.token_bytes(tok.find("▁world")), " world");
    // Without the prefix "hello" is he + llo (no "hello" token).
    const Tokenizer bare = Tokenizer::from_gguf(spm_vocab(dir, false));
    const std::vector<int32_t> he_llo = {bare.find("he"), bare.find("llo")};
    EXPECT_EQ(bare.encode("hello", false, false), he_llo);
}

TEST(SentencePiece, BytesFallBackAndSpecialsTakeTheSpacePrefix) {
    ScratchDir dir;
    const Tokenizer tok = Tokenizer::from_gguf(spm_vocab(dir));
    // é is no token: its two UTF-8 bytes.
    const std::vector<int32_t> want = {tok.find("▁h"), tok.find("<0xC3>"), tok.find("<0xA9>")};
    EXPECT_EQ(tok.encode("h\xC3\xA9", false, false), want);
    EXPECT_EQ(tok.decode(want), "h\xC3\xA9");
    // After a special token the text starts with the space prefix again.
    const std::vector<int32_t> ids = tok.encode("hello</s>world", false, true);
    const std::vector<int32_t> split = {tok.find("▁hello"), tok.eos(), tok.find("▁world")};
    EXPECT_EQ(ids, split);
    EXPECT_EQ(tok.decode(ids, true), "hello</s>world");
    for (const std::string text :
         {"hello world", "  two  spaces\n", "dd\tr\xE2\x82\xAC!", "world hello"})
        EXPECT_EQ(tok.decode(tok.encode(text, true, false)), text) << text;
}

}  // namespace
}  // namespace sy::llm::test
