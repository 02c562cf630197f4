#include "commands/chat_renderer.hpp"

#include <optional>
#include <vector>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/chat_template.hpp"

namespace sy::tools {

server::ChatRenderer chat_renderer(const gguf::Reader& file, const std::string& name) {
    std::optional<llm::ChatTemplate> layout;
    std::string why;
    if (!name.empty()) {
        layout = llm::chat_template_by_name(name);
        if (!layout)
            throw Error("--chat-template '" + name + "': unknown layout (deepseek2, deepseek3)");
    } else {
        try {
            layout = llm::detect_chat_template(file);
        } catch (const Error& e) {
            why = e.what();  // completions still work; chats are refused with this
        }
    }
    return [layout, why](const nlohmann::json& messages, const nlohmann::json& tools,
                         bool add_generation_prompt) {
        if (!layout) throw Error(why);
        if (!tools.empty()) throw Error("this chat layout has no tools");
        std::vector<llm::ChatMessage> turns;
        for (const nlohmann::json& m : messages) {
            const nlohmann::json& c = m.contains("content") ? m["content"] : nlohmann::json();
            turns.push_back(
                {m["role"].get<std::string>(), c.is_string() ? c.get<std::string>() : ""});
        }
        return llm::apply_chat_template(*layout, turns, add_generation_prompt);
    };
}

}  // namespace sy::tools
