// `switchyard perplexity`: llama.cpp's perplexity measurement (llm/perplexity.hpp) on a
// deepseek2 GGUF, with the same chunking, BOS rule and output lines, so figures compare.
#include "switchyard/llm/perplexity.hpp"

#include <chrono>
#include <cstdio>
#include <memory>

#include "commands/model_session.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

struct PerplexityOptions {
    ModelOptions model;
    std::string text_file;
    int chunks = -1;
    int64_t batch = 2048;
};

int run_perplexity(PerplexityOptions o) {
    const std::string text = read_text_file("-f", o.text_file);
    if (o.model.ctx == 0) o.model.ctx = 512;
    // As llama.cpp: a chunk is evaluated in batches of min(-b, -c) tokens, each split into
    // ubatches of -ub.
    o.model.ubatch = std::min({o.model.ubatch, o.batch, o.model.ctx});

    LoadedModel loaded = load_model(o.model);
    const llm::Deepseek2Model& model = *loaded.model;
    const std::unique_ptr<llm::Deepseek2Session> owned = loaded.make_session();
    llm::Deepseek2Session& session = *owned;
    check_session_memory(loaded, session);
    const llm::Tokenizer tok = llm::Tokenizer::from_gguf(model.file());

    const auto t_tok = std::chrono::steady_clock::now();
    const std::vector<int32_t> tokens = tok.encode(text, tok.add_bos(), false);
    std::fprintf(stderr, "perplexity: tokenizing the input: %zu tokens in %.1f ms\n", tokens.size(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_tok)
                     .count());

    const llm::PerplexityModel pm = llm::perplexity_model(session, model.hparams().n_vocab);

    const int64_t n_ctx = model.options().n_ctx;
    const int max_chunks = static_cast<int>(int64_t(tokens.size()) / n_ctx);
    std::fprintf(stderr,
                 "perplexity: calculating perplexity over %d chunks, n_ctx=%lld, batch_size=%lld, "
                 "ubatch=%lld\n",
                 o.chunks > 0 ? std::min(o.chunks, max_chunks) : max_chunks,
                 static_cast<long long>(n_ctx), static_cast<long long>(std::min(o.batch, n_ctx)),
                 static_cast<long long>(model.options().n_ubatch));
    const int32_t bos = tok.add_bos() ? tok.bos() : -1;
    const llm::PerplexityResult r =
        llm::perplexity(pm, tokens, n_ctx, o.chunks, bos, [&](const llm::PerplexityChunk& c) {
            if (c.index == 1)
                std::fprintf(stderr, "perplexity: %.2f seconds per pass (%.1f t/s)\n", c.seconds,
                             double(n_ctx) / c.seconds);
            std::printf("[%d]%.4f,", c.index, c.running_ppl);
            std::fflush(stdout);
        });
    std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.error);
    std::fprintf(stderr, "scored %lld tokens in %d chunks; mla %d, KV cache %.2f MiB\n",
                 static_cast<long long>(r.scored_tokens), r.chunks, model.options().mla,
                 mib(session.cache().bytes()));
    return 0;
}

}  // namespace

Command add_perplexity_command(CLI::App& app) {
    auto o = std::make_shared<PerplexityOptions>();
    CLI::App* cmd = app.add_subcommand(
        "perplexity", "Perplexity of a deepseek2 GGUF model on a text (llama.cpp's method)");
    o->model.add_to(*cmd, "Tokens per chunk (default 512)");
    cmd->add_option("-f,--file", o->text_file, "Text file to score")->required();
    cmd->add_option("--chunks", o->chunks, "Score at most this many chunks (default: all)");
    cmd->add_option("-b,--batch-size", o->batch, "Tokens per evaluation batch (default 2048)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
    return [o] { return run_perplexity(*o); };
}

}  // namespace sy::tools
