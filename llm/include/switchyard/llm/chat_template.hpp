// Chat prompts for the DeepSeek families (`switchyard run --chat`): the conversation laid out
// the way the model was trained to see it. Two layouts exist (llama.cpp names them the same):
//
//   deepseek2 (V2, V2-Lite; some V2.5 files):
//     {system}\n\nUser: {user}\n\nAssistant: {reply}<｜end▁of▁sentence｜>
//   deepseek3 (V3, R1, Kimi-K2-style, later V2.5):
//     {system}<｜User｜>{user}<｜Assistant｜>{reply}<｜end▁of▁sentence｜>
//
// each ending with the assistant's cue ("Assistant:" / "<｜Assistant｜>") when a reply is wanted.
// BOS is not part of the text: the tokenizer adds it (tokenizer.ggml.add_bos_token).
// The layout is recognized from the file's tokenizer.chat_template (a Jinja program, which is
// not executed) or chosen by name.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "switchyard/llm/gguf.hpp"

namespace sy::llm {

enum class ChatTemplate { deepseek2, deepseek3 };

struct ChatMessage {
    std::string role;  // system, user or assistant
    std::string content;
};

// "deepseek2" / "deepseek3", or nullopt.
std::optional<ChatTemplate> chat_template_by_name(std::string_view name);
std::string chat_template_name(ChatTemplate t);

// The layout of the file's tokenizer.chat_template; throws sy::Error naming the key when the
// file has none or one of another family (then --chat-template NAME chooses).
ChatTemplate detect_chat_template(const gguf::Reader& file);

// The conversation as text; `add_generation_prompt` ends it with the assistant's cue. Throws
// sy::Error for a role other than system, user and assistant.
std::string apply_chat_template(ChatTemplate t, std::span<const ChatMessage> messages,
                                bool add_generation_prompt);

// A Jinja template of the layout, as model files carry one (written into synthetic models).
std::string chat_template_jinja(ChatTemplate t);

}  // namespace sy::llm
