// Chat layouts of the DeepSeek families: the exact text of each, recognition from a file's
// tokenizer.chat_template, the markers as single tokens, and errors.
#include "switchyard/llm/chat_template.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llm_test_util.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::llm::test {
namespace {

gguf::Reader template_model(const ScratchDir& dir, const std::string& pre,
                            bool with_template = true) {
    Deepseek2Config cfg = deepseek2_preset("tiny");
    cfg.tokenizer_pre = pre;
    ModelPlan plan = plan_deepseek2(cfg, SY_TYPE_F32, KvLayout::kv_b);
    if (!with_template)
        std::erase_if(plan.metadata,
                      [](const gguf::KeyValue& kv) { return kv.key == "tokenizer.chat_template"; });
    const auto path = dir / (pre + (with_template ? "" : "-plain") + ".gguf");
    write_synthetic_model(path, plan, 1, 1);
    return gguf::Reader::open(path);
}

const std::vector<ChatMessage> kConversation = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "2+2?"}};

TEST(ChatTemplate, DeepSeek2Layout) {
    EXPECT_EQ(apply_chat_template(ChatTemplate::deepseek2, kConversation, true),
              "Be brief.\n\nUser: Hi\n\nAssistant: Hello.<｜end▁of▁sentence｜>User: 2+2?\n\n"
              "Assistant:");
    const std::vector<ChatMessage> user_only = {{"user", "Hi"}};
    EXPECT_EQ(apply_chat_template(ChatTemplate::deepseek2, user_only, false), "User: Hi\n\n");
}

TEST(ChatTemplate, DeepSeek3Layout) {
    EXPECT_EQ(apply_chat_template(ChatTemplate::deepseek3, kConversation, true),
              "Be brief.<｜User｜>Hi<｜Assistant｜>Hello.<｜end▁of▁sentence｜><｜User｜>2+2?"
              "<｜Assistant｜>");
}

TEST(ChatTemplate, NamesAndUnknownRoles) {
    EXPECT_EQ(chat_template_by_name("deepseek3"), ChatTemplate::deepseek3);
    EXPECT_EQ(chat_template_by_name("deepseek2"), ChatTemplate::deepseek2);
    EXPECT_FALSE(chat_template_by_name("chatml").has_value());
    const std::vector<ChatMessage> bad = {{"tool", "x"}};
    try {
        apply_chat_template(ChatTemplate::deepseek3, bad, true);
        FAIL() << "role 'tool' accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'tool'"), std::string::npos) << e.what();
    }
}

TEST(ChatTemplate, RecognizedFromTheFile) {
    ScratchDir dir;
    EXPECT_EQ(detect_chat_template(template_model(dir, "deepseek-llm")), ChatTemplate::deepseek2);
    EXPECT_EQ(detect_chat_template(template_model(dir, "deepseek-v3")), ChatTemplate::deepseek3);
    try {
        detect_chat_template(template_model(dir, "deepseek-v3", false));
        FAIL() << "a file without a template was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("tokenizer.chat_template"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("--chat-template"), std::string::npos);
    }
}

TEST(ChatTemplate, MarkersAreSingleTokens) {
    ScratchDir dir;
    const gguf::Reader f = template_model(dir, "deepseek-v3");
    const Tokenizer tok = Tokenizer::from_gguf(f);
    const std::vector<ChatMessage> m = {{"user", "Hi"}};
    const std::string text = apply_chat_template(ChatTemplate::deepseek3, m, true);
    const std::vector<int32_t> ids = tok.encode(text, tok.add_bos(), true);
    ASSERT_GE(ids.size(), 4u);
    EXPECT_EQ(ids.front(), tok.bos());
    EXPECT_EQ(ids[1], tok.find("<｜User｜>"));
    EXPECT_EQ(ids.back(), tok.find("<｜Assistant｜>"));
    EXPECT_GE(tok.find("<｜Assistant｜>"), 0);
    EXPECT_EQ(tok.decode(ids, true), "<｜begin▁of▁sentence｜>" + text);
}

}  // namespace
}  // namespace sy::llm::test
