#include "switchyard/llm/chat_formatter.hpp"

#include <fstream>
#include <sstream>

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

// A template file is small: anything beyond this is not one.
constexpr std::streamoff kMaxTemplateBytes = std::streamoff(1) << 20;

ToolCallMarkup markup_of(const std::string& jinja) {
    if (jinja.find("```json") != std::string::npos) return ToolCallMarkup::deepseek_v3;
    if (jinja.find("<｜tool▁sep｜>") != std::string::npos) return ToolCallMarkup::deepseek_v31;
    return ToolCallMarkup::deepseek_v3;
}

std::string read_template(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw Error("--chat-template-file " + path + ": cannot open the file");
    const std::streamoff size = in.tellg();
    if (size > kMaxTemplateBytes)
        throw Error("--chat-template-file " + path + ": " + std::to_string(size) +
                    " bytes is too large for a chat template (at most 1 MiB)");
    in.seekg(0);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

ChatFormatter ChatFormatter::for_model(const gguf::Reader& file, const Tokenizer& tokenizer,
                                       const std::string& template_file,
                                       const std::string& layout) {
    ChatFormatter f;
    f.tokenizer_ = &tokenizer;
    if (tokenizer.bos() >= 0) f.bos_ = tokenizer.token_bytes(tokenizer.bos(), true);
    if (tokenizer.eos() >= 0) f.eos_ = tokenizer.token_bytes(tokenizer.eos(), true);
    if (!layout.empty()) {
        f.layout_ = chat_template_by_name(layout);
        if (!f.layout_)
            throw Error("--chat-template '" + layout + "': unknown layout (deepseek2, deepseek3)");
        f.source_ = "the " + layout + " layout";
        return f;
    }
    if (!template_file.empty()) {
        try {
            const std::string text = read_template(template_file);
            f.jinja_ = std::make_shared<jinja::Template>(text);
            f.markup_ = markup_of(text);
        } catch (const Error& e) {
            throw Error("--chat-template-file " + template_file + ": " + e.what());
        }
        f.source_ = "--chat-template-file " + template_file;
        return f;
    }
    const std::string where = file.files().empty() ? "model" : file.files()[0].string();
    if (file.find("tokenizer.chat_template") == nullptr) {
        f.missing_ = where +
                     ": no tokenizer.chat_template; give one with --chat-template-file or a "
                     "layout with --chat-template deepseek2|deepseek3";
        f.source_ = "none";
        return f;
    }
    try {
        const std::string text = file.get_string("tokenizer.chat_template");
        f.jinja_ = std::make_shared<jinja::Template>(text);
        f.markup_ = markup_of(text);
    } catch (const Error& e) {
        throw Error(where + ": tokenizer.chat_template: " + e.what() +
                    " (--chat-template-file or --chat-template deepseek2|deepseek3 instead)");
    }
    f.source_ = "the file's template";
    return f;
}

std::string ChatFormatter::render(const nlohmann::ordered_json& messages,
                                  const nlohmann::ordered_json& tools,
                                  bool add_generation_prompt) const {
    if (layout_) {
        if (!tools.empty())
            throw Error("the " + chat_template_name(*layout_) + " layout has no tools");
        std::vector<ChatMessage> turns;
        for (const auto& m : messages) {
            const auto c = m.find("content");
            turns.push_back({m.at("role").get<std::string>(),
                             c != m.end() && c->is_string() ? c->get<std::string>() : ""});
        }
        return apply_chat_template(*layout_, turns, add_generation_prompt);
    }
    if (!jinja_) throw Error(missing_);
    nlohmann::ordered_json context = {{"messages", messages},
                                      {"add_generation_prompt", add_generation_prompt},
                                      {"bos_token", bos_},
                                      {"eos_token", eos_}};
    if (!tools.empty()) context["tools"] = tools;
    return jinja_->render(context);
}

std::vector<int32_t> ChatFormatter::tokens(const std::string& text) const {
    const bool has_bos = !bos_.empty() && text.compare(0, bos_.size(), bos_) == 0;
    return tokenizer_->encode(text, tokenizer_->add_bos() && !has_bos, true);
}

}  // namespace sy::llm
