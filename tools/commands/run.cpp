// `switchyard run`: text in, text out, on a deepseek2 GGUF (llm/deepseek2 does the work).
// The generated text streams to stdout; everything else (sizes, timings) goes to stderr.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "commands/conversation.hpp"
#include "commands/model_session.hpp"
#include "commands/plan.hpp"
#include "commands/prompt_escapes.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/profile.hpp"
#include "switchyard/llm/chat_formatter.hpp"
#include "switchyard/llm/chat_template.hpp"
#include "switchyard/llm/grammar_sampler.hpp"
#include "switchyard/llm/json_schema.hpp"
#include "switchyard/llm/sampler.hpp"
#include "switchyard/llm/session.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

using Clock = std::chrono::steady_clock;

struct RunOptions {
    ModelOptions model;
    std::string prompt;
    std::string prompt_file;
    int n_predict = 64;      // -1: until end of text; -2: until the context is full
    int64_t n_batch = 2048;  // -b: prompt tokens per eval call (each split into -ub ubatches)
    int threads_batch = 0;   // -tb: threads for the prompt (0: as -t)
    bool no_escape = false;
    llm::SamplerParams sampling;
    bool ignore_eos = false;
    bool print_tokens = false;
    bool no_special = false;
    bool context_shift = false;
    int keep = 0;
    bool chat = false;
    std::string system_prompt;
    std::string chat_template;
    std::string chat_template_file;
    std::string logits_out;
    bool no_warmup = false;
    bool profile = false;
    bool verbose_plan = false;
    bool conversation = false;  // -cnv, -i
    bool multiline = false;
    // Constrained output (llama.cpp's flags): one of them.
    std::string grammar, grammar_file, json_schema, json_schema_file;

    // --chat, -sys and --chat-template each lay the prompt out as a conversation.
    bool chat_mode() const {
        return chat || !system_prompt.empty() || !chat_template.empty() ||
               !chat_template_file.empty();
    }
};

// The prompt's tokens: the text as given, or (--chat, -sys, --chat-template, --chat-template-file)
// a conversation of the optional system prompt and the prompt as the user's message, laid out by
// the model's chat template.
std::vector<int32_t> prompt_tokens(const RunOptions& o, const std::string& prompt,
                                   const gguf::Reader& file, const llm::Tokenizer& tok) {
    if (!o.chat_mode()) return tok.encode(prompt, tok.add_bos(), !o.no_special);
    const llm::ChatFormatter chat =
        llm::ChatFormatter::for_model(file, tok, o.chat_template_file, o.chat_template);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!o.system_prompt.empty())
        messages.push_back({{"role", "system"}, {"content", o.system_prompt}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    std::fprintf(stderr, "chat template: %s%s\n", chat.source().c_str(),
                 o.system_prompt.empty() ? "" : ", with a system prompt");
    return chat.tokens(chat.render(messages, nlohmann::ordered_json::array(), true));
}

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// Where the generation steps' evaluation time went (the stats' growth from `before` to `after`;
// llm::eval_time_shares). Unlike --profile, nothing is synchronized per node, so the figures are
// those of a normal run.
void print_generation_time(const llm::EvalStats& before, const llm::EvalStats& after) {
    const std::optional<llm::EvalTimeShares> s = llm::eval_time_shares(before, after);
    if (!s) return;
    const std::string overlapped =
        s->overlapped_nodes > 0
            ? fmt::format("; {:.1f} nodes per step ran beside the split before them",
                          s->overlapped_nodes)
            : "";
    std::fprintf(stderr,
                 "generation time: backend ops %.1f%%, waiting in synchronize %.1f%%, copies "
                 "between backends %.1f%%, staging on devices %.1f%%, host %.1f%% (copies + "
                 "synchronization + host: %.1f%%)%s\n",
                 100 * s->ops, 100 * s->sync, 100 * s->copies, 100 * s->staging, 100 * s->host,
                 100 * s->overhead(), overlapped.c_str());
}

// Logits of the prompt's and the generated positions as a float32 .npy array {positions,
// n_vocab} (positions re-processed by a context shift are not repeated).
class NpyWriter {
  public:
    NpyWriter(const std::string& path, int64_t n_vocab) : path_(path), n_vocab_(n_vocab) {}
    void add(const std::vector<float>& logits) {
        data_.insert(data_.end(), logits.begin(), logits.end());
    }
    void write() const {
        const int64_t rows = static_cast<int64_t>(data_.size()) / n_vocab_;
        std::string header = fmt::format(
            "{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", rows, n_vocab_);
        const size_t total = 10 + header.size() + 1;
        header.append((64 - total % 64) % 64, ' ');
        header.push_back('\n');
        const std::string tmp = path_ + ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            if (!out) throw Error("--logits-out " + path_ + ": cannot create the file");
            const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
            out.write(magic, 8);
            const auto len = static_cast<uint16_t>(header.size());
            const char len_bytes[2] = {static_cast<char>(len & 0xFF), static_cast<char>(len >> 8)};
            out.write(len_bytes, 2);
            out.write(header.data(), static_cast<std::streamsize>(header.size()));
            out.write(reinterpret_cast<const char*>(data_.data()),
                      static_cast<std::streamsize>(data_.size() * sizeof(float)));
            if (!out) throw Error("--logits-out " + path_ + ": write failed");
        }
        std::filesystem::rename(tmp, path_);
    }

  private:
    std::string path_;
    int64_t n_vocab_;
    std::vector<float> data_;
};

// The grammar --grammar, --grammar-file, -j or -jf give (none: null). Throws sy::Error naming
// the flag for two of them, a file that cannot be read, and a grammar or schema that is wrong.
std::shared_ptr<const llm::Grammar> output_grammar(const RunOptions& o) {
    std::vector<std::pair<const char*, const std::string*>> given;
    for (const auto& [flag, value] :
         {std::pair{"--grammar", &o.grammar}, std::pair{"--grammar-file", &o.grammar_file},
          std::pair{"--json-schema", &o.json_schema},
          std::pair{"--json-schema-file", &o.json_schema_file}})
        if (!value->empty()) given.emplace_back(flag, value);
    if (given.empty()) return nullptr;
    if (given.size() > 1)
        throw Error(std::string(given[0].first) + " and " + given[1].first +
                    " both constrain the output: give one of them");
    const auto [flag, value] = given[0];
    const bool is_file =
        flag == std::string("--grammar-file") || flag == std::string("--json-schema-file");
    const std::string text = is_file ? read_text_file(flag, *value) : *value;
    try {
        if (flag == std::string("--grammar") || flag == std::string("--grammar-file"))
            return llm::Grammar::parse(text);
        const auto schema = nlohmann::ordered_json::parse(text, nullptr, false);
        if (schema.is_discarded()) throw Error("not valid JSON");
        return llm::Grammar::parse(llm::json_schema_to_gbnf(schema));
    } catch (const Error& e) {
        throw Error(std::string(flag) + (is_file ? " " + *value : "") + ": " + e.what());
    }
}

// -cnv: the model and session as for a prompt, then turns from standard input.
int run_conversation_mode(const RunOptions& o) {
    if (!o.prompt_file.empty()) throw Error("-cnv takes no -f: type the messages, or give -p");
    if (o.no_special) throw Error("--no-special cannot be combined with -cnv");
    llm::validate(o.sampling);
    LoadedModel loaded = load_model(o.model);
    const std::unique_ptr<llm::Session> session = loaded.make_session();
    check_session_memory(loaded, *session);
    ConversationOptions c;
    c.system_prompt = o.system_prompt;
    c.chat_template = o.chat_template;
    c.chat_template_file = o.chat_template_file;
    c.first_message = o.no_escape ? o.prompt : process_escapes(o.prompt);
    c.params.sampling = o.sampling;
    c.params.ignore_eos = o.ignore_eos;
    c.params.max_tokens = o.n_predict < 0 ? -1 : o.n_predict;
    c.params.grammar = output_grammar(o);
    c.multiline = o.multiline;
    return run_conversation(loaded, *session, c);
}

int run_run(const RunOptions& o) {
    if (o.conversation) return run_conversation_mode(o);
    if (o.prompt.empty() == o.prompt_file.empty())
        throw Error("run: give the prompt with exactly one of -p TEXT or -f FILE");
    // -p's escapes are processed (llama.cpp's default); a file's text is used as it is.
    const std::string prompt = !o.prompt_file.empty() ? read_text_file("-f", o.prompt_file)
                               : o.no_escape          ? o.prompt
                                                      : process_escapes(o.prompt);
    if (o.chat_mode() && o.no_special)
        throw Error(
            "--no-special cannot be combined with --chat, --system-prompt or "
            "--chat-template: the chat layout's markers are special tokens");
    if (!o.chat_template.empty() && !llm::chat_template_by_name(o.chat_template))
        throw Error("--chat-template '" + o.chat_template +
                    "': unknown layout (deepseek2, deepseek3)");
    llm::validate(o.sampling);
    const std::shared_ptr<const llm::Grammar> grammar = output_grammar(o);
    if (o.n_predict < -2)
        throw Error("-n " + std::to_string(o.n_predict) +
                    ": expected a count >= 0, -1 (until the end of the text) or -2 (until the "
                    "context is full)");

    const auto t_load = Clock::now();
    // As llama.cpp: a ubatch is part of a batch.
    ModelOptions model_options = o.model;
    model_options.ubatch = std::min(model_options.ubatch, o.n_batch);
    LoadedModel loaded = load_model(model_options);
    const llm::Model& model = *loaded.model;
    const llm::Tokenizer tok = llm::Tokenizer::for_model(model.file(), model.n_vocab());
    const llm::ContextOptions& opt = model.options();
    const std::unique_ptr<llm::Session> owned = loaded.make_session();
    llm::Session& session = *owned;
    check_session_memory(loaded, session);
    if (o.verbose_plan)
        std::fputs(explain_plan(session, model.options().n_ubatch, 0).c_str(), stderr);
    const double load_s = seconds_since(t_load);

    std::vector<int32_t> tokens = prompt_tokens(o, prompt, model.file(), tok);
    if (tokens.empty()) throw Error("run: the prompt encodes to no tokens");
    if (static_cast<int64_t>(tokens.size()) > opt.n_ctx)
        throw Error(fmt::format("the prompt has {} tokens, more than the context of {}: raise -c",
                                tokens.size(), opt.n_ctx));
    if (o.print_tokens) {
        std::string ids;
        for (int32_t t : tokens) ids += (ids.empty() ? "" : " ") + std::to_string(t);
        std::fprintf(stderr, "prompt tokens: %s\n", ids.c_str());
    }

    // Warm-up, then an empty cache again, so that first uses are not timed as the prompt's: a
    // generation step (as llama.cpp's warm-up), and on a GPU or over several backends also one
    // prompt ubatch (its first use loads kernel modules and has cuBLAS choose kernels for the
    // prompt's shapes; blas prepares oneDNN's kernels and keeps its converted weights).
    double warmup_s = 0;
    if (!o.no_warmup) {
        const auto t_warm = Clock::now();
        const size_t n = session.on_device() || loaded.several
                             ? std::min(tokens.size(), size_t(opt.n_ubatch))
                             : 0;
        if (n > 1) session.eval(std::span<const int32_t>(tokens.data(), n));
        if (int64_t(n) < opt.n_ctx) session.eval(std::span<const int32_t>(tokens.data(), 1));
        session.reset();
        session.clear_stats();
        warmup_s = seconds_since(t_warm);
    }
    Profile profile;
    if (o.profile) session.set_profile(&profile);

    std::unique_ptr<NpyWriter> npy;
    if (!o.logits_out.empty()) npy = std::make_unique<NpyWriter>(o.logits_out, model.n_vocab());
    llm::Sampler sampler(o.sampling);
    for (int32_t t : tokens) sampler.accept(t);
    std::optional<llm::GrammarSampler> constrained;
    if (grammar) constrained.emplace(grammar, tok, o.ignore_eos);
    std::optional<llm::TokenTrie> trie;  // the vocabulary, when the grammar first needs it
    const auto vocabulary = [&]() -> const llm::TokenTrie& {
        if (!trie) trie.emplace(llm::vocabulary_trie(tok));
        return *trie;
    };

    // -tb: the prompt's threads, then -t's for generation (the cpu plugin starts its pool anew
    // on each change).
    const bool switch_threads = o.threads_batch > 0 && o.threads_batch != o.model.plugins.threads;
    if (switch_threads) loaded.set_threads(o.threads_batch);
    const uint64_t moved_before_prompt = session.stats().staged_bytes;
    const auto t_prompt = Clock::now();
    // The prompt in -b chunks (each split into ubatches by the session), as llama.cpp's batches.
    std::vector<float> logits;
    for (size_t at = 0; at < tokens.size(); at += size_t(o.n_batch)) {
        const size_t n = std::min(tokens.size() - at, size_t(o.n_batch));
        std::vector<float> chunk =
            session.eval(std::span<const int32_t>(tokens.data() + at, n), npy != nullptr);
        if (npy && at + n < tokens.size()) npy->add(chunk);
        logits = std::move(chunk);
    }
    const double prompt_s = seconds_since(t_prompt);
    if (switch_threads) loaded.set_threads(o.model.plugins.threads);
    const uint64_t moved_prompt = session.stats().staged_bytes - moved_before_prompt;
    if (npy) {
        npy->add(logits);
        logits.erase(logits.begin(), logits.end() - model.n_vocab());
    }

    // --keep: prompt tokens a context shift keeps (BOS always; -1: the whole prompt).
    const int64_t n_keep =
        o.keep < 0 || size_t(o.keep) >= tokens.size()
            ? int64_t(tokens.size())
            : int64_t(o.keep) + (tok.add_bos() && tokens.front() == tok.bos() ? 1 : 0);
    std::vector<int32_t> history = tokens;  // what the cache holds, in order
    int64_t shifts = 0;
    double reprocess_s = 0;

    std::vector<int32_t> generated;
    std::string stop_reason = "-n reached";
    const llm::EvalStats before_gen = session.stats();
    const auto t_gen = Clock::now();
    double gen_eval_s = 0;
    const int64_t n_predict = o.n_predict < 0 ? INT64_MAX : o.n_predict;
    for (int64_t i = 0; i < n_predict; ++i) {
        const int32_t next =
            constrained ? constrained->sample(sampler, logits, vocabulary) : sampler.sample(logits);
        if (constrained) constrained->accept(next);
        sampler.accept(next);
        generated.push_back(next);
        if (o.print_tokens) std::fprintf(stdout, "[%d]", next);
        const std::string piece = tok.token_bytes(next);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        if (!o.ignore_eos && tok.is_end_of_generation(next)) {
            stop_reason = "end of generation token";
            break;
        }
        if (constrained && constrained->done()) {
            stop_reason = "the grammar's text is whole";
            break;
        }
        if (i + 1 == n_predict) break;
        if (session.n_past() >= session.n_ctx() && o.n_predict == -2) {
            stop_reason = fmt::format("the context of {} tokens is full (-n -2)", session.n_ctx());
            break;
        }
        if (session.n_past() >= session.n_ctx()) {
            // The latent caches cannot be shifted in place (their keys carry rotary positions
            // baked into shared rows), so a shift drops the oldest tokens after the kept ones
            // and evaluates what remains again from an empty cache.
            const int64_t n_discard = (session.n_past() - n_keep) / 2;
            if (!o.context_shift || n_discard < 1) {
                stop_reason = fmt::format(
                    "the context of {} tokens is full ({})", session.n_ctx(),
                    o.context_shift ? "--keep leaves nothing to drop; lower it or raise -c"
                                    : "raise -c, or --context-shift to drop the oldest tokens");
                break;
            }
            std::vector<int32_t> kept(history.begin(), history.begin() + n_keep);
            kept.insert(kept.end(), history.begin() + n_keep + n_discard, history.end());
            std::fprintf(stderr,
                         "\n[context full: dropped %lld tokens after the first %lld, "
                         "re-processing %zu]\n",
                         static_cast<long long>(n_discard), static_cast<long long>(n_keep),
                         kept.size());
            const auto t0 = Clock::now();
            session.reset();
            session.eval(kept);
            reprocess_s += seconds_since(t0);
            history = std::move(kept);
            ++shifts;
        }
        const auto t0 = Clock::now();
        logits = session.eval(std::span<const int32_t>(&next, 1));
        gen_eval_s += seconds_since(t0);
        history.push_back(next);
        if (npy) npy->add(logits);
    }
    const double gen_s = seconds_since(t_gen);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (npy) npy->write();

    if (switch_threads)
        std::fprintf(stderr, "threads: %d for the prompt (-tb), %s for generation\n",
                     o.threads_batch,
                     o.model.plugins.threads > 0 ? std::to_string(o.model.plugins.threads).c_str()
                                                 : "the backends' default");
    if (shifts > 0)
        std::fprintf(stderr, "context shifts: %lld (%.3f s re-processing)\n",
                     static_cast<long long>(shifts), reprocess_s);
    const llm::EvalStats& st = session.stats();
    const size_t evaluated = generated.empty() ? 0 : generated.size() - 1;
    std::fprintf(stderr, "\nstopped: %s\n", stop_reason.c_str());
    std::fprintf(stderr, "load:       %8.3f s\n", load_s);
    if (!o.no_warmup) std::fprintf(stderr, "warm-up:    %8.3f s\n", warmup_s);
    std::fprintf(stderr, "prompt:     %6zu tokens in %8.3f s = %9.2f t/s\n", tokens.size(),
                 prompt_s, double(tokens.size()) / prompt_s);
    std::fprintf(stderr,
                 "generation: %6zu tokens in %8.3f s = %9.2f t/s (%zu evaluated, %.2f t/s)\n",
                 generated.size(), gen_s, gen_s > 0 ? double(generated.size()) / gen_s : 0.0,
                 evaluated, gen_eval_s > 0 ? double(evaluated) / gen_eval_s : 0.0);
    const double tg = gen_eval_s > 0 ? double(evaluated) / gen_eval_s : 0.0;
    std::fprintf(stderr, "weights read per generated token: %.1f MiB (%.2f GB/s at %.2f t/s)\n",
                 mib(model.weight_bytes_per_token()),
                 double(model.weight_bytes_per_token()) * tg / 1e9, tg);
    const double eval_s = st.graph_build_seconds + st.compute_seconds;
    const auto share = [&](double s) { return 100.0 * s / eval_s; };
    std::fprintf(
        stderr,
        "host overhead: %.1f%% of evaluation time (graph building %.1f%%, planning "
        "and binding %.1f%%: op placement %.1f%% (%lld placed anew), memory plans and "
        "binding %.1f%%, between and around the backends' calls %.1f%%; %lld graphs, %lld "
        "built; the backend's own checks count as compute)\n",
        share(st.graph_build_seconds + st.plan_bind_seconds), share(st.graph_build_seconds),
        share(st.plan_bind_seconds), share(st.placement_seconds),
        static_cast<long long>(st.placements), share(st.setup_seconds),
        share(std::max(0.0, st.plan_bind_seconds - st.placement_seconds - st.setup_seconds)),
        static_cast<long long>(st.graphs), static_cast<long long>(st.graphs_built));
    print_generation_time(before_gen, st);
    if (st.staged_bytes > 0) {
        const uint64_t moved_gen = st.staged_bytes - moved_before_prompt - moved_prompt;
        std::fprintf(stderr,
                     "copied to and between backends: prompt %.2f MiB, generation %.2f MiB per "
                     "token (%.1f KiB; staged weights and inputs, results passed on)\n",
                     mib(moved_prompt), evaluated > 0 ? mib(moved_gen) / double(evaluated) : 0.0,
                     evaluated > 0 ? double(moved_gen) / 1024.0 / double(evaluated) : 0.0);
    }
    std::fprintf(stderr, "KV cache: %.2f MiB, compute buffer: %.2f MiB\n",
                 mib(session.cache().bytes()), mib(st.compute_buffer_bytes));
    if (st.staging_buffer_bytes > 0)
        std::fprintf(stderr,
                     "staging buffer: %.2f MiB (copies of host-resident weights and inputs on "
                     "devices)\n",
                     mib(st.staging_buffer_bytes));
    if (const std::string extra = plugin_extra_memory(*loaded.host); !extra.empty())
        std::fprintf(stderr, "plugin memory beyond the buffers above: %s\n", extra.c_str());
    if (o.profile) std::fputs(profile.format().c_str(), stderr);
    return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App* cmd = app.add_subcommand("run", "Generate text with a deepseek2 GGUF model");
    o->model.add_to(*cmd, "Context length (default: min(4096, trained))");
    cmd->add_option(
        "-p,--prompt", o->prompt,
        "Prompt text; \\n, \\t, \\\\, \\\", \\xHH ... are processed unless --no-escape");
    cmd->add_flag("--no-escape", o->no_escape, "Take -p's text as it is (no escape processing)");
    cmd->add_flag("-e,--escape")
        ->description("Process -p's escapes (the default; accepted for llama.cpp)");
    cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from this file");
    cmd->add_option("-n,--n-predict", o->n_predict,
                    "Tokens to generate; -1: until the end of the text (or a full context, "
                    "without --context-shift); -2: until the context is full");
    cmd->add_option("-b,--batch-size", o->n_batch,
                    "Prompt tokens per eval call (logical batch, default 2048); -ub is cut to it")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
    cmd->add_option("--threads-batch", o->threads_batch,
                    "Threads for the prompt (default: as -t); -t's for generation")
        ->check(CLI::Range(1, 4096));
    cmd->add_option("--temp", o->sampling.temperature, "Temperature (0: greedy)");
    cmd->add_option("--top-k", o->sampling.top_k, "Top-k (0: off)");
    cmd->add_option("--top-p", o->sampling.top_p, "Top-p (1: off)");
    cmd->add_option("--min-p", o->sampling.min_p, "Min-p (0: off)");
    cmd->add_option("--repeat-penalty", o->sampling.repeat_penalty, "Repetition penalty (1: off)");
    cmd->add_option("--repeat-last-n", o->sampling.repeat_last_n, "Tokens the penalty looks at");
    cmd->add_option("-s,--seed", o->sampling.seed, "Sampling seed");
    cmd->add_flag("--ignore-eos", o->ignore_eos, "Keep generating after an end-of-text token");
    cmd->add_flag(
        "--no-warmup", o->no_warmup,
        "Time the prompt from a cold start (no warm-up step first, nor a prompt ubatch on a GPU "
        "or over several backends)");
    cmd->add_flag("--verbose-plan", o->verbose_plan,
                  "Print where the weights and the ops of a prompt ubatch and a decode step go, "
                  "and why (as `switchyard plan`), before generating");
    cmd->add_flag("--profile", o->profile,
                  "Time every op (run one at a time) and print, per backend, ops and matrix "
                  "products by weight sorted by time, copies and the host's share");
    cmd->add_flag("--tokens", o->print_tokens, "Print token ids (prompt on stderr, output inline)");
    cmd->add_flag("--no-special", o->no_special, "Do not parse special tokens in the prompt");
    cmd->add_flag("--context-shift", o->context_shift,
                  "When the context is full, drop the oldest half after --keep and re-process "
                  "the rest (default: stop)");
    cmd->add_option("--keep", o->keep, "Prompt tokens a context shift keeps, BOS aside (-1: all)")
        ->check(CLI::Range(-1, 1 << 24));
    cmd->add_flag("--chat", o->chat,
                  "Lay the prompt out as a user message in the model's chat template");
    cmd->add_option("--system-prompt", o->system_prompt,
                    "System prompt before the user message (implies --chat)");
    cmd->add_option("--chat-template", o->chat_template,
                    "deepseek2 or deepseek3 instead of the file's tokenizer.chat_template "
                    "(implies --chat)");
    cmd->add_flag("--conversation,-i,--interactive", o->conversation,
                  "A conversation in the terminal with the model's chat template: turns from "
                  "standard input (-p: the first), only each new turn evaluated, /exit to leave");
    cmd->add_option("--chat-template-file", o->chat_template_file,
                    "A Jinja chat template instead of the file's tokenizer.chat_template "
                    "(implies --chat)");
    cmd->add_flag("--multiline-input", o->multiline,
                  "With --conversation: a message is every line up to an empty one");
    cmd->add_option("--grammar", o->grammar,
                    "Hold the output to this GBNF grammar (llama.cpp's notation; rule root)");
    cmd->add_option("--grammar-file", o->grammar_file, "--grammar from a file");
    cmd->add_option("-j,--json-schema", o->json_schema,
                    "Hold the output to JSON of this JSON Schema (e.g. {} for any JSON value)");
    cmd->add_option("--json-schema-file", o->json_schema_file, "--json-schema from a file");
    cmd->add_option("--logits-out", o->logits_out,
                    "Write the logits of the prompt's and every generated position (float32 .npy)");
    return [o] { return run_run(*o); };
}

}  // namespace sy::tools
