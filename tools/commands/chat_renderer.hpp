// The chat layout `serve` and `run -cnv` lay conversations out with: messages and tools
// (OpenAI JSON) to prompt text.
#pragma once

#include <string>

#include "switchyard/llm/gguf.hpp"
#include "switchyard/server/openai_server.hpp"

namespace sy::tools {

// The file's layout, or --chat-template's (`name`: deepseek2 or deepseek3). Throws sy::Error for
// an unknown name; a file without a known layout gives a renderer that throws when called, so
// that what needs no chat (completions) still works.
server::ChatRenderer chat_renderer(const gguf::Reader& file, const std::string& name);

}  // namespace sy::tools
