// A conversation laid out for a model, as llama-server and llama-cli lay it out: the Jinja
// program of the file's tokenizer.chat_template (jinja.hpp) rendered with the messages, the tools,
// add_generation_prompt and the vocabulary's bos_token and eos_token; or a template file given
// instead; or one of the built-in DeepSeek layouts by name (chat_template.hpp).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "switchyard/llm/chat_template.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/jinja.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::llm {

// How a template writes an assistant's tool calls, and so how the model was taught to:
enum class ToolCallMarkup {
    // V3 and R1:
    // <｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
    deepseek_v3,
    // V3.1: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>
    deepseek_v31,
};

class ChatFormatter {
  public:
    // `template_file` (--chat-template-file): that Jinja program; `layout` (--chat-template):
    // a built-in layout, deepseek2 or deepseek3; neither: the file's tokenizer.chat_template.
    // Throws sy::Error naming the file and the construct for a template that cannot be parsed,
    // and for an unknown layout. A model file without a template gives a formatter whose
    // render() throws that (what needs no chat still works).
    static ChatFormatter for_model(const gguf::Reader& file, const Tokenizer& tokenizer,
                                   const std::string& template_file, const std::string& layout);

    // The conversation as prompt text: messages (OpenAI's form: role, content, tool_calls, ...)
    // and tools (OpenAI's function definitions; empty: none). Throws sy::Error naming what the
    // template cannot render (or its raise_exception message).
    std::string render(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                       bool add_generation_prompt) const;

    // The prompt's tokens: special tokens parsed, BOS added unless the text begins with it
    // (templates that write bos_token themselves).
    std::vector<int32_t> tokens(const std::string& text) const;

    // "the file's template", "--chat-template-file PATH", "the deepseek3 layout"
    const std::string& source() const { return source_; }

    // Read off the template's own text for a tool call (V3's when it writes none).
    ToolCallMarkup tool_call_markup() const { return markup_; }

  private:
    const Tokenizer* tokenizer_ = nullptr;
    std::shared_ptr<const jinja::Template> jinja_;
    std::optional<ChatTemplate> layout_;
    std::string missing_;  // why render() cannot work, when neither is set
    std::string source_;
    std::string bos_, eos_;
    ToolCallMarkup markup_ = ToolCallMarkup::deepseek_v3;
};

}  // namespace sy::llm
