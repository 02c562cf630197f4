// llama.cpp's spellings on switchyard's command line. CLI11 knows single-dash options of one
// letter only: it would read "-ngl 99" as "-n gl 99" and "-cnv" as "-c nv". So the words are
// walked once before parsing, with the command's own option table: a llama.cpp spelling becomes
// the long option it stands for, any other single-dash word of more than one letter is an
// unknown option named as typed, and the word after an option that takes a value is that value,
// whatever it looks like ("-p -ngl" is a prompt of "-ngl", "-n -1" a count of -1).
#include <string_view>

#include "commands/commands.hpp"

namespace sy::tools {
namespace {

struct LlamaSpelling {
    std::string_view llama;   // as llama.cpp / ik_llama.cpp / llama-bench write it
    std::string_view option;  // switchyard's long option
};

constexpr LlamaSpelling kSpellings[] = {
    {"-ngl", "--n-gpu-layers"},
    {"-fa", "--flash-attn"},
    {"-no-fa", "--no-flash-attn"},
    {"-ctk", "--cache-type-k"},
    {"-ctv", "--cache-type-v"},
    {"-ub", "--ubatch-size"},
    {"-tb", "--threads-batch"},
    {"-mla", "--mla"},
    {"-amb", "--attention-max-batch"},
    {"-fmoe", "--fused-moe"},
    {"-no-fmoe", "--no-fused-moe"},
    {"-ger", "--grouped-expert-routing"},
    {"-ser", "--smart-expert-reduction"},
    {"-ot", "--override-tensor"},
    {"-rtr", "--run-time-repack"},
    {"-mmp", "--mmap"},
    {"-op", "--offload-policy"},
    {"-ncmoe", "--n-cpu-moe"},
    {"-cmoe", "--cpu-moe"},
    {"-ts", "--tensor-split"},
    {"-sys", "--system-prompt"},
    {"-pg", "--pg"},
    {"-gp", "--gp"},
    {"-npp", "--n-prompt"},  // llama-batched-bench
    {"-ntg", "--n-gen"},
    {"-npl", "--n-parallel"},
    {"-np", "--parallel"},       // llama-server
    {"-cnv", "--conversation"},  // llama-cli
    {"-cram", "--cache-ram"},    // llama-server
    {"-jf", "--json-schema-file"},
};

const LlamaSpelling* spelling_of(std::string_view word) {
    for (const LlamaSpelling& s : kSpellings)
        if (s.llama == word) return &s;
    return nullptr;
}

class UnknownOption : public CLI::ParseError {
  public:
    explicit UnknownOption(const std::string& word)
        : CLI::ParseError("UnknownOption", "unknown option " + word, CLI::ExitCodes::ExtrasError) {}
};

// "-1", "-0.5", "-1e3": a value (a negative number), not an option.
bool is_negative_number(std::string_view word) {
    return word.size() > 1 && word[0] == '-' &&
           ((word[1] >= '0' && word[1] <= '9') || (word[1] == '.' && word.size() > 2));
}

const CLI::Option* find_option(const CLI::App& app, const std::string& name) {
    return app.get_option_no_throw(name);
}

// The help text shows the llama.cpp spelling in front of the option it stands for
// ("-ngl,--n-gpu-layers").
class LlamaSpellingFormatter : public CLI::Formatter {
  public:
    std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
        std::string name = CLI::Formatter::make_option_name(opt, is_positional);
        if (is_positional) return name;
        for (const std::string& lname : opt->get_lnames())
            for (const LlamaSpelling& s : kSpellings)
                if (s.option.substr(2) == lname) name = std::string(s.llama) + "," + name;
        return name;
    }
};

}  // namespace

std::vector<std::string> expand_llama_flags(const CLI::App& app, int argc, char** argv) {
    std::vector<std::string> args;
    const CLI::App* command = &app;
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") {  // the rest is positional
            for (; i < argc; ++i) args.emplace_back(argv[i]);
            break;
        }
        if (command == &app) {
            const auto subs =
                app.get_subcommands([&](const CLI::App* s) { return s->check_name(word); });
            if (!subs.empty()) {
                command = subs.front();
                args.push_back(word);
                continue;
            }
        }
        if (word.size() < 2 || word[0] != '-' || is_negative_number(word)) {
            args.push_back(word);  // a positional word (CLI11 reports extras)
            continue;
        }
        const bool long_form = word.starts_with("--");
        const size_t eq = long_form ? word.find('=') : std::string::npos;
        const std::string typed = word.substr(0, eq);
        std::string name = typed;
        if (!long_form && word.size() > 2) {
            const LlamaSpelling* s = spelling_of(word);
            if (s == nullptr) throw UnknownOption(word);
            name = std::string(s->option);
        }
        const CLI::Option* opt = find_option(*command, name);
        if (opt == nullptr) throw UnknownOption(typed);
        if (eq != std::string::npos || opt->get_items_expected_max() == 0) {
            args.push_back(eq == std::string::npos ? name : name + word.substr(eq));
            continue;
        }
        if (i + 1 == argc) {  // CLI11 says the value is missing
            args.push_back(name);
            continue;
        }
        // The next word is the value; one that starts with '-' is attached, so that CLI11 cannot
        // take it for an option ("" stays a word of its own: CLI11 refuses "--prompt=").
        const std::string value = argv[++i];
        const std::vector<std::string>& lnames = opt->get_lnames();
        if (!value.starts_with('-')) {
            args.push_back(name);
            args.push_back(value);
        } else if (!lnames.empty()) {
            args.push_back("--" + lnames.front() + "=" + value);
        } else {
            args.push_back(name + value);  // "-p" "-x" -> "-p-x": CLI11 reads -p with "-x"
        }
    }
    return args;
}

void show_llama_spellings(CLI::App& app) {
    auto formatter = std::make_shared<LlamaSpellingFormatter>();
    app.formatter(formatter);
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        sub->formatter(formatter);
}

}  // namespace sy::tools
