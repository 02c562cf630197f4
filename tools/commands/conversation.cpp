#include "commands/conversation.hpp"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/chat_formatter.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

// The answer being written, for the SIGINT handler (cancelling is an atomic store).
std::atomic<llm::Completion*> g_answering{nullptr};

void on_sigint(int) {
    if (llm::Completion* c = g_answering.load()) c->cancel();
}

// One message from standard input: a line (a line ending in '\' continues on the next), or with
// `multiline` every line up to an empty one. nullopt at the end of input.
std::optional<std::string> read_message(bool multiline) {
    std::string message, line;
    for (;;) {
        if (!std::getline(std::cin, line)) {
            if (std::cin.bad() || message.empty()) return std::nullopt;
            return message;
        }
        if (multiline) {
            if (line.empty() && !message.empty()) return message;
            if (!message.empty()) message += '\n';
            message += line;
            continue;
        }
        if (!line.empty() && line.back() == '\\') {
            line.pop_back();
            message += line + '\n';
            continue;
        }
        return message + line;
    }
}

}  // namespace

int run_conversation(LoadedModel& loaded, llm::Session& session, const ConversationOptions& o) {
    const llm::Model& model = *loaded.model;
    const llm::Tokenizer tok = llm::Tokenizer::for_model(model.file(), model.n_vocab());
    const llm::ChatFormatter chat =
        llm::ChatFormatter::for_model(model.file(), tok, o.chat_template_file, o.chat_template);
    const nlohmann::ordered_json no_tools = nlohmann::ordered_json::array();
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!o.system_prompt.empty())
        messages.push_back({{"role", "system"}, {"content", o.system_prompt}});
    // Throws now, naming the template, if the file has none this can lay out.
    chat.render(messages.empty()
                    ? nlohmann::ordered_json::array({{{"role", "user"}, {"content", "hi"}}})
                    : messages,
                no_tools, true);

    llm::Engine engine(session, tok, {.slots = 1, .max_queue = 1});
    struct sigaction action = {};
    action.sa_handler = on_sigint;
    action.sa_flags = SA_RESTART;  // a read at the prompt goes on
    sigemptyset(&action.sa_mask);
    struct sigaction previous = {};
    sigaction(SIGINT, &action, &previous);

    std::fprintf(stderr,
                 "conversation: type a message and press Enter (a line ending in \\ goes on%s); "
                 "/exit or end of input (Ctrl-D) leaves, Ctrl-C stops an answer\n",
                 o.multiline ? "; --multiline-input: an empty line sends" : "");
    bool first = true;
    for (;;) {
        std::optional<std::string> text;
        if (first && !o.first_message.empty()) {
            text = o.first_message;
            std::printf("\n> %s\n", text->c_str());
        } else {
            std::printf("\n> ");
            std::fflush(stdout);
            text = read_message(o.multiline);
        }
        first = false;
        if (!text || *text == "/exit") break;
        if (text->empty()) continue;
        messages.push_back({{"role", "user"}, {"content", *text}});
        std::vector<int32_t> prompt;
        try {
            prompt = chat.tokens(chat.render(messages, no_tools, true));
        } catch (const Error& e) {
            std::fprintf(stderr, "conversation: %s\n", e.what());
            messages.erase(messages.end() - 1);
            continue;
        }
        std::shared_ptr<llm::Completion> answer;
        try {
            answer = engine.submit({prompt, o.params});
        } catch (const Error& e) {
            std::fprintf(stderr, "\nconversation: %s (the history is kept; /exit to leave)\n",
                         e.what());
            messages.erase(messages.end() - 1);
            continue;
        }
        g_answering = answer.get();
        while (std::optional<llm::Piece> piece = answer->next()) {
            std::fwrite(piece->text.data(), 1, piece->text.size(), stdout);
            std::fflush(stdout);
        }
        g_answering = nullptr;
        const llm::CompletionResult r = answer->result();
        messages.push_back({{"role", "assistant"}, {"content", r.text}});
        std::printf("\n");
        std::fflush(stdout);
        const int64_t evaluated = r.prompt_tokens - r.cached_tokens;
        std::fprintf(
            stderr,
            "[%s; prompt: %lld tokens (%lld from the cache) in %.3f s = %.2f t/s; "
            "answer: %lld tokens in %.3f s = %.2f t/s]\n",
            r.finish == llm::FinishReason::cancelled ? "stopped (Ctrl-C)"
            : r.finish == llm::FinishReason::length  ? "length limit"
            : r.finish == llm::FinishReason::error   ? ("error: " + r.error).c_str()
                                                     : "end of answer",
            static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.cached_tokens),
            r.prompt_seconds, r.prompt_seconds > 0 ? double(evaluated) / r.prompt_seconds : 0.0,
            static_cast<long long>(r.completion_tokens), r.generation_seconds,
            r.generation_seconds > 0 ? double(r.completion_tokens) / r.generation_seconds : 0.0);
    }
    sigaction(SIGINT, &previous, nullptr);
    engine.shutdown();
    return 0;
}

}  // namespace sy::tools
