#include "switchyard/llm/chat_template.hpp"

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

constexpr std::string_view kUser3 = "<｜User｜>";
constexpr std::string_view kAssistant3 = "<｜Assistant｜>";
constexpr std::string_view kEndOfSentence = "<｜end▁of▁sentence｜>";

}  // namespace

std::optional<ChatTemplate> chat_template_by_name(std::string_view name) {
    if (name == "deepseek2") return ChatTemplate::deepseek2;
    if (name == "deepseek3") return ChatTemplate::deepseek3;
    return std::nullopt;
}

std::string chat_template_name(ChatTemplate t) {
    return t == ChatTemplate::deepseek2 ? "deepseek2" : "deepseek3";
}

ChatTemplate detect_chat_template(const gguf::Reader& file) {
    const gguf::Value* v = file.find("tokenizer.chat_template");
    const std::string where = file.files().empty() ? "model" : file.files()[0].string();
    if (v == nullptr)
        throw Error(where +
                    ": no tokenizer.chat_template; choose the layout with --chat-template "
                    "deepseek2 or deepseek3");
    const std::string jinja = file.get_string("tokenizer.chat_template");
    const auto has = [&](std::string_view s) { return jinja.find(s) != std::string::npos; };
    if (has(kUser3) && has(kAssistant3)) return ChatTemplate::deepseek3;
    if (has("'User: '") || has("\"User: \"")) return ChatTemplate::deepseek2;
    throw Error(where +
                ": tokenizer.chat_template is not a DeepSeek layout switchyard knows; choose one "
                "with --chat-template deepseek2 or deepseek3");
}

std::string apply_chat_template(ChatTemplate t, std::span<const ChatMessage> messages,
                                bool add_generation_prompt) {
    const bool v3 = t == ChatTemplate::deepseek3;
    std::string out;
    for (const ChatMessage& m : messages) {
        if (m.role == "system") {
            out += m.content;
            if (!v3) out += "\n\n";
        } else if (m.role == "user") {
            out += v3 ? std::string(kUser3) + m.content : "User: " + m.content + "\n\n";
        } else if (m.role == "assistant") {
            out += std::string(v3 ? kAssistant3 : std::string_view("Assistant: ")) + m.content +
                   std::string(kEndOfSentence);
        } else {
            throw Error("chat message role '" + m.role + "': expected system, user or assistant");
        }
    }
    if (add_generation_prompt) out += v3 ? std::string(kAssistant3) : std::string("Assistant:");
    return out;
}

std::string chat_template_jinja(ChatTemplate t) {
    const bool v3 = t == ChatTemplate::deepseek3;
    // A message without content (an assistant's tool calls: OpenAI's clients send null) is an
    // empty turn.
    const std::string content = "(message['content'] or '')";
    const std::string system = v3 ? "{{ " + content + " }}" : "{{ " + content + " + '\\n\\n' }}";
    const std::string user =
        v3 ? "{{ '<｜User｜>' + " + content + " }}" : "{{ 'User: ' + " + content + " + '\\n\\n' }}";
    const std::string assistant = v3 ? "{{ '<｜Assistant｜>' + " + content + " + eos_token }}"
                                     : "{{ 'Assistant: ' + " + content + " + eos_token }}";
    const std::string cue = v3 ? "{{ '<｜Assistant｜>' }}" : "{{ 'Assistant:' }}";
    return "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}"
           "{% endif %}{{ bos_token }}{% for message in messages %}"
           "{% if message['role'] == 'system' %}" +
           system + "{% elif message['role'] == 'user' %}" + user +
           "{% elif message['role'] == 'assistant' %}" + assistant +
           "{% endif %}{% endfor %}{% if add_generation_prompt %}" + cue + "{% endif %}";
}

}  // namespace sy::llm
