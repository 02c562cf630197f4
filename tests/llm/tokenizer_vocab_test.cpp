// The tokenizer on the real DeepSeek-LLM vocabulary (tests/data/vocab): every one of llama.cpp's
// test cases for it gives exactly the expected ids, decodes back to its text, and the
// vocabulary's added tokens (single characters such as "ü" are user-defined) are matched as
// llama.cpp matches them.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "switchyard/llm/tokenizer.hpp"

namespace sy::llm::test {
namespace {

const std::string kVocab = std::string(SWITCHYARD_TEST_VOCAB_DIR) + "/ggml-vocab-deepseek-llm.gguf";

std::string file_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << "cannot open " << path;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

struct VocabCase {
    std::string text;
    std::vector<int32_t> ids;
};

// llama.cpp's format: each input followed by "\n__ggml_vocab_test__\n"; line i of .out holds
// input i's ids.
std::vector<VocabCase> vocab_cases(const std::string& vocab) {
    const std::string inp = file_text(vocab + ".inp");
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<VocabCase> cases;
    for (size_t at = 0, end; (end = inp.find(sep, at)) != std::string::npos; at = end + sep.size())
        cases.push_back({inp.substr(at, end - at), {}});
    std::istringstream out(file_text(vocab + ".out"));
    std::string line;
    size_t n = 0;
    for (; std::getline(out, line); ++n) {
        if (n >= cases.size()) break;
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) cases[n].ids.push_back(id);
    }
    EXPECT_EQ(n, cases.size()) << vocab << ".out has another number of lines than inputs";
    return cases;
}

class DeepseekLlmVocab : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        file_ = new gguf::Reader(gguf::Reader::open(kVocab));
        tok_ = new Tokenizer(Tokenizer::from_gguf(*file_));
    }
    static void TearDownTestSuite() {
        delete tok_;
        delete file_;
    }
    static const Tokenizer& tok() { return *tok_; }

  private:
    static inline gguf::Reader* file_ = nullptr;
    static inline Tokenizer* tok_ = nullptr;
};

TEST_F(DeepseekLlmVocab, EncodesEveryLlamaCppCaseExactly) {
    const std::vector<VocabCase> cases = vocab_cases(kVocab);
    ASSERT_EQ(cases.size(), 46u);
    size_t passed = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::vector<int32_t> ids = tok().encode(cases[i].text, false, false);
        EXPECT_EQ(ids, cases[i].ids) << "case " << i << ": \"" << cases[i].text << "\"";
        passed += ids == cases[i].ids;
    }
    EXPECT_EQ(passed, cases.size());
}

TEST_F(DeepseekLlmVocab, EveryCaseDecodesBackToItsText) {
    for (const VocabCase& c : vocab_cases(kVocab)) {
        EXPECT_EQ(tok().decode(c.ids), c.text);
        const std::vector<int32_t> with_bos = tok().encode(c.text, true, true);
        ASSERT_FALSE(with_bos.empty());
        EXPECT_EQ(with_bos.front(), tok().bos());
        EXPECT_EQ(tok().decode(with_bos), c.text) << "BOS decodes to nothing";
    }
}

TEST_F(DeepseekLlmVocab, UserDefinedTokensMatchWithoutParsingSpecials) {
    const std::vector<int32_t> fuehrer = {37, 100014, 71, 6245};  // F ü h rer
    EXPECT_EQ(tok().encode("Führer", false, false), fuehrer);
    EXPECT_EQ(tok().encode("Führer", false, true), fuehrer);
    EXPECT_EQ(tok().token_bytes(100014), "ü");  // its text, not byte-decoded
    EXPECT_EQ(tok().encode("[PAD100015]", false, false), std::vector<int32_t>{100015});
    EXPECT_EQ(tok().decode(std::vector<int32_t>{100015}), "[PAD100015]");
}

TEST_F(DeepseekLlmVocab, ControlTokensOnlyWhenParsingSpecials) {
    ASSERT_TRUE(tok().add_bos());
    ASSERT_EQ(tok().bos(), 100000);
    const std::string bos = "<｜begin▁of▁sentence｜>";
    EXPECT_EQ(tok().encode(bos + "Hello", false, true), (std::vector<int32_t>{100000, 17464}));
    const std::vector<int32_t> plain = tok().encode(bos + "Hello", false, false);
    EXPECT_GT(plain.size(), 2u);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 100000), 0);
    EXPECT_EQ(tok().decode(plain), bos + "Hello");
    EXPECT_EQ(tok().token_bytes(100000), "");
    EXPECT_EQ(tok().token_bytes(100000, true), bos);
}

}  // namespace
}  // namespace sy::llm::test
