// `switchyard run -cnv` (and -i): a conversation in the terminal, llama-cli's way. Each turn is
// laid out with the model's chat template and the whole history; the session keeps the history
// in its cache, so only the new turn is evaluated.
#pragma once

#include <string>

#include "commands/model_session.hpp"
#include "switchyard/llm/engine.hpp"

namespace sy::tools {

struct ConversationOptions {
    std::string system_prompt;
    std::string chat_template;       // a layout name, "" for the file's template
    std::string chat_template_file;  // a Jinja file instead of the file's template
    std::string first_message;       // -p: the first user turn, sent without asking
    llm::CompletionParams params;
    bool multiline = false;  // --multiline-input: a message ends at an empty line
};

// Reads turns from standard input until /exit or its end; answers stream to standard output,
// the timings of each answer go to standard error. Ctrl-C stops the answer being written, not
// the program. Returns the exit code.
int run_conversation(LoadedModel& loaded, llm::Session& session,
                     const ConversationOptions& options);

}  // namespace sy::tools
