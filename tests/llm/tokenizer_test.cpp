// The byte-level BPE tokenizer on a synthetic model's vocabulary: round trips, BOS, special
// tokens, the pre-tokenizer's digit rule per family, and errors for broken vocabularies.
#include "switchyard/llm/tokenizer.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llm_test_util.hpp"
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

TEST(Tokenizer, RefusesOtherModelsAndBrokenVocabularies) {
    ScratchDir dir;
    ModelPlan plan = plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, KvLayout::kv_b);
    for (auto& kv : plan.metadata)
        if (kv.key == "tokenizer.ggml.model") kv.value = gguf::Value::string("llama");
    write_synthetic_model(dir / "spm.gguf", plan, 1, 1);
    try {
        Tokenizer::from_gguf(gguf::Reader::open(dir / "spm.gguf"));
        FAIL() << "accepted a llama (SentencePiece) vocabulary";
    } catch (const gguf::FormatError& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.model"), std::string::npos);
    }
    plan = plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, KvLayout::kv_b);
    for (auto& kv : plan.metadata)
        if (kv.key == "tokenizer.ggml.bos_token_id") kv.value = gguf::Value::u32(99999);
    write_synthetic_model(dir / "bos.gguf", plan, 1, 1);
    EXPECT_THROW(Tokenizer::from_gguf(gguf::Reader::open(dir / "bos.gguf")), gguf::FormatError);
}

}  // namespace
}  // namespace sy::llm::test
