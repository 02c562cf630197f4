// The server's readers of generated text, fed whole and a byte at a time: R1's <think> blocks
// (think_splitter.hpp) and DeepSeek's tool-call markup in its V3 and V3.1 forms (tool_calls.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "think_splitter.hpp"
#include "tool_calls.hpp"

namespace sy::server {
namespace {

struct Split {
    std::string reasoning, answer;
};

// The text fed in pieces of `step` bytes (0: whole).
Split split(bool inside, const std::string& text, size_t step) {
    ThinkSplitter s(inside);
    Split out;
    if (step == 0) step = text.size();
    for (size_t i = 0; i < text.size(); i += step)
        s.feed(std::string_view(text).substr(i, step), out.reasoning, out.answer);
    s.finish(out.reasoning, out.answer);
    return out;
}

TEST(ThinkSplitter, ReasoningAndAnswerWholeOrByteByByte) {
    for (size_t step : {0, 1, 3}) {
        SCOPED_TRACE(step);
        Split a = split(false, "<think>\nLet me see.\n</think>\n\nThe answer is 4.", step);
        EXPECT_EQ(a.reasoning, "\nLet me see.\n");
        EXPECT_EQ(a.answer, "The answer is 4.");
        // R1's template opens the block in the prompt.
        Split b = split(true, "Hmm, 2+2.</think>\n\n4", step);
        EXPECT_EQ(b.reasoning, "Hmm, 2+2.");
        EXPECT_EQ(b.answer, "4");
        // No block: the text as it came, leading whitespace and later tags included.
        Split c = split(false, "  plain <think> text", step);
        EXPECT_EQ(c.reasoning, "");
        EXPECT_EQ(c.answer, "  plain <think> text");
        // Stopped inside the reasoning: all of it is reasoning, a partial tag too.
        Split d = split(true, "still thinking </thi", step);
        EXPECT_EQ(d.reasoning, "still thinking </thi");
        EXPECT_EQ(d.answer, "");
    }
    EXPECT_TRUE(ThinkSplitter::starts_inside("<｜Assistant｜><think>\n"));
    EXPECT_FALSE(ThinkSplitter::starts_inside("<｜Assistant｜>"));
}

struct Parsed {
    std::string answer;
    std::vector<ToolCall> calls;
};

Parsed parse(const std::string& text, size_t step) {
    ToolCallParser p;
    Parsed out;
    if (step == 0) step = text.size();
    for (size_t i = 0; i < text.size(); i += step)
        p.feed(std::string_view(text).substr(i, step), out.answer, out.calls);
    p.finish(out.answer);
    return out;
}

TEST(ToolCalls, V3AndV31FormsWholeOrByteByByte) {
    const std::string v3 =
        "Let me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
        "```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    const std::string v31 =
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Oslo\"}"
        "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
        "<｜tool▁calls▁end｜>";
    for (size_t step : {0, 1, 5}) {
        SCOPED_TRACE(step);
        Parsed a = parse(v3, step);
        EXPECT_EQ(a.answer, "Let me look.");
        ASSERT_EQ(a.calls.size(), 1u);
        EXPECT_EQ(a.calls[0].name, "get_weather");
        EXPECT_EQ(a.calls[0].arguments, "{\"city\": \"Paris\"}");
        Parsed b = parse(v31, step);
        EXPECT_EQ(b.answer, "");
        ASSERT_EQ(b.calls.size(), 2u);
        EXPECT_EQ(b.calls[0].name, "get_weather");
        EXPECT_EQ(b.calls[0].arguments, "{\"city\": \"Oslo\"}");
        EXPECT_EQ(b.calls[1].name, "get_time");
        EXPECT_EQ(b.calls[1].arguments, "{}");
        // Text without markup, a '<' that starts nothing among it.
        Parsed c = parse("a < b and <｜tool", step);
        EXPECT_EQ(c.answer, "a < b and <｜tool");
        EXPECT_TRUE(c.calls.empty());
        // Stopped inside a call: the call is dropped, the answer kept.
        Parsed d = parse("ok<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_we", step);
        EXPECT_EQ(d.answer, "ok");
        EXPECT_TRUE(d.calls.empty());
    }
}

}  // namespace
}  // namespace sy::server
