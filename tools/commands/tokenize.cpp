// `switchyard tokenize -m MODEL (-p TEXT | -f FILE) [--ids] [--no-bos] [--no-parse-special]
// [--no-escape] [--show-count]`: a text's tokens under a GGUF file's vocabulary, printed as
// llama.cpp's llama-tokenize prints them. Only the metadata is read (the file is mapped and no
// tensor is touched), so a vocabulary-only GGUF is enough.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "commands/commands.hpp"
#include "commands/model_session.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

struct TokenizeOptions {
    std::string model;
    std::string prompt;
    std::string prompt_file;
    bool ids = false;
    bool no_bos = false;
    bool no_parse_special = false;
    bool no_escape = false;
    bool show_count = false;
    CLI::Option* prompt_option = nullptr;
    CLI::Option* file_option = nullptr;
};

// llama-tokenize's escapes: \n \r \t \' \" \\ and \xHH; any other backslash stays as it is.
std::string process_escapes(const std::string& in) {
    std::string out;
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '\\' || i + 1 == in.size()) {
            out += in[i];
            continue;
        }
        const char c = in[i + 1];
        const char simple = c == 'n' ? '\n' : c == 'r' ? '\r' : c == 't' ? '\t' : 0;
        unsigned byte = 0;
        const char* hex = in.data() + i + 2;
        if (simple != 0 || c == '\'' || c == '"' || c == '\\') {
            out += simple != 0 ? simple : c;
            ++i;
        } else if (c == 'x' && i + 3 < in.size() &&
                   std::from_chars(hex, hex + 2, byte, 16).ptr == hex + 2) {
            out += static_cast<char>(byte);
            i += 3;
        } else {
            out += in[i];
        }
    }
    return out;
}

std::string prompt_text(const TokenizeOptions& o) {
    const bool by_prompt = o.prompt_option->count() > 0, by_file = o.file_option->count() > 0;
    if (by_prompt == by_file)
        throw Error(by_prompt ? "tokenize: -p and -f both given; give the text one way"
                              : "tokenize: no text; give it with -p TEXT or -f FILE");
    if (by_prompt) return o.prompt;
    return read_text_file("-f", o.prompt_file);
}

int tokenize(const TokenizeOptions& o) {
    std::string text = prompt_text(o);
    if (!o.no_escape) text = process_escapes(text);
    const gguf::Reader file = gguf::Reader::open(o.model);
    if (file.find("tokenizer.ggml.model") == nullptr)
        throw Error(o.model +
                    ": no vocabulary in this GGUF file (metadata key 'tokenizer.ggml.model' "
                    "is missing)");
    const llm::Tokenizer tok = llm::Tokenizer::from_gguf(file);
    const std::vector<int32_t> ids =
        tok.encode(text, tok.add_bos() && !o.no_bos, !o.no_parse_special);

    if (o.ids) {
        std::printf("[");
        for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? ", %d" : "%d", ids[i]);
        std::printf("]\n");
    } else {
        for (int32_t id : ids) {
            const std::string piece = tok.token_bytes(id, true);
            std::printf("%6d -> '", id);
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::printf("'\n");
        }
    }
    if (o.show_count) std::printf("Total number of tokens: %zu\n", ids.size());
    return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
    auto* cmd = app.add_subcommand(
        "tokenize", "Print a text's tokens under a model's vocabulary (as llama-tokenize)");
    auto o = std::make_shared<TokenizeOptions>();
    cmd->add_option("-m,--model", o->model,
                    "GGUF file with the vocabulary (a vocabulary-only file is enough)")
        ->required();
    o->prompt_option = cmd->add_option("-p,--prompt", o->prompt, "Text to tokenize");
    o->file_option = cmd->add_option("-f,--file", o->prompt_file, "Read the text from this file");
    cmd->add_flag("--ids", o->ids, "Print only the ids, as a list [1, 2, 3]");
    cmd->add_flag("--no-bos", o->no_bos, "Do not add BOS (added when the vocabulary asks for it)");
    cmd->add_flag("--no-parse-special", o->no_parse_special,
                  "Control tokens in the text are plain text (user-defined tokens still match)");
    cmd->add_flag("--no-escape", o->no_escape,
                  "Keep escapes (\\n, \\t, \\xHH, ...) as written instead of processing them");
    cmd->add_flag("--show-count", o->show_count, "Print the number of tokens at the end");
    return [o] { return tokenize(*o); };
}

}  // namespace sy::tools
