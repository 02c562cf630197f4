// `switchyard perplexity`: llama.cpp's perplexity measurement (llm/perplexity.hpp) on a
// deepseek2 GGUF, with the same chunking, BOS rule and output lines, so figures compare; and
// llama-perplexity's KL divergence against a base model: --kl-divergence-base FILE alone saves
// the base's log-probabilities, with --kl-divergence compares this model against them.
#include "switchyard/llm/perplexity.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

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
    std::string kld_base;
    bool kl_divergence = false;
};

// llama-perplexity's line after the first pass.
void print_pass_time(const char* what, double seconds, int chunks, int per_pass) {
    int total = static_cast<int>(seconds * chunks / per_pass);
    std::fprintf(stderr, "%s: %.2f seconds per pass - ETA ", what, seconds);
    if (total >= 3600) {
        std::fprintf(stderr, "%d hours ", total / 3600);
        total %= 3600;
    }
    std::fprintf(stderr, "%.2f minutes\n", total / 60.0);
}

// The per-chunk row of llama-perplexity --kl-divergence (under kKldHeader).
constexpr const char* kKldHeader =
    "\nchunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence         "
    "     Δp RMS            Same top p\n";

void print_kld_row(int chunk, const llm::KldStatistics& s) {
    std::printf("%4d", chunk);
    std::printf("    %9.4lf ± %9.4lf", s.ppl.value, s.ppl.error);
    std::printf("    %10.5lf ± %10.5lf", s.ln_ppl_ratio.value, s.ln_ppl_ratio.error);
    std::printf("    %10.5lf ± %10.5lf", s.kld.value, s.kld.error);
    std::printf("    %6.3lf ± %6.3lf %%", 100 * s.rms_delta_p.value, 100 * s.rms_delta_p.error);
    std::printf("    %6.3lf ± %6.3lf %%\n", 100 * s.same_top.value, 100 * s.same_top.error);
    std::fflush(stdout);
}

// llama-perplexity's closing statistics (printed for 100 scored positions or more).
void print_kld_summary(const llm::KldStatistics& s) {
    std::printf("====== Perplexity statistics ======\n");
    std::printf("Mean PPL(Q)                   : %10.6lf ± %10.6lf\n", s.ppl.value, s.ppl.error);
    std::printf("Mean PPL(base)                : %10.6lf ± %10.6lf\n", s.ppl_base.value,
                s.ppl_base.error);
    std::printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100 * s.ln_ppl_correlation);
    std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6lf ± %10.6lf\n", s.ln_ppl_ratio.value,
                s.ln_ppl_ratio.error);
    std::printf("Mean PPL(Q)/PPL(base)         : %10.6lf ± %10.6lf\n", s.ppl_ratio.value,
                s.ppl_ratio.error);
    std::printf("Mean PPL(Q)-PPL(base)         : %10.6lf ± %10.6lf\n", s.ppl_difference.value,
                s.ppl_difference.error);
    std::printf("\n====== KL divergence statistics ======\n");
    std::printf("Mean    KLD: %10.6lf ± %10.6lf\n", s.kld.value, s.kld.error);
    std::printf("Maximum KLD: %10.6f\n", s.kld_values.back());
    const struct {
        const char* label;
        float fraction;
    } kld_rows[] = {{"99.9%", 0.999f}, {"99.0%", 0.990f}, {"95.0%", 0.950f},
                    {"90.0%", 0.900f}, {nullptr, 0.5f},   {"10.0%", 0.100f},
                    {" 5.0%", 0.050f}, {" 1.0%", 0.010f}, {" 0.1%", 0.001f}};
    for (const auto& r : kld_rows) {
        if (r.label)
            std::printf("%s   KLD: %10.6f\n", r.label, s.kld_percentile(r.fraction));
        else
            std::printf("Median  KLD: %10.6f\n", s.kld_median());
    }
    std::printf("Minimum KLD: %10.6f\n", s.kld_values.front());
    std::printf("\n====== Token probability statistics ======\n");
    std::printf("Mean    Δp: %6.3lf ± %5.3lf %%\n", 100 * s.delta_p.value, 100 * s.delta_p.error);
    std::printf("Maximum Δp: %6.3lf%%\n", 100.0 * s.delta_p_values.back());
    const struct {
        const char* label;
        float fraction;
    } dp_rows[] = {{"99.9%", 0.999f}, {"99.0%", 0.990f}, {"95.0%", 0.950f}, {"90.0%", 0.900f},
                   {"75.0%", 0.750f}, {nullptr, 0.5f},   {"25.0%", 0.250f}, {"10.0%", 0.100f},
                   {" 5.0%", 0.050f}, {" 1.0%", 0.010f}, {" 0.1%", 0.001f}};
    for (const auto& r : dp_rows) {
        if (r.label)
            std::printf("%s   Δp: %6.3lf%%\n", r.label, 100.0 * s.delta_p_percentile(r.fraction));
        else
            std::printf("Median  Δp: %6.3lf%%\n", 100.0 * s.delta_p_median());
    }
    std::printf("Minimum Δp: %6.3lf%%\n", 100.0 * s.delta_p_values.front());
    std::printf("RMS Δp    : %6.3lf ± %5.3lf %%\n", 100 * s.rms_delta_p.value,
                100 * s.rms_delta_p.error);
    std::printf("Same top p: %6.3lf ± %5.3lf %%\n", 100 * s.same_top.value, 100 * s.same_top.error);
}

int run_perplexity(PerplexityOptions o) {
    if (o.kl_divergence && o.kld_base.empty())
        throw Error("--kl-divergence compares against a base: give --kl-divergence-base FILE");
    if (!o.kl_divergence && o.text_file.empty())
        throw Error("perplexity needs the text to score: -f FILE");
    // --kl-divergence: the tokens and the context come from the base's file.
    std::optional<llm::KldBaseFile> base;
    if (o.kl_divergence) base.emplace(o.kld_base);
    const int64_t given_ctx = o.model.ctx;
    const int64_t n_ctx = base ? base->n_ctx() : (given_ctx > 0 ? given_ctx : 512);
    if (base && given_ctx > 0) base->expect_context(given_ctx);
    const std::string text = o.text_file.empty() ? "" : read_text_file("-f", o.text_file);

    // As llama.cpp: -b / -c chunks per pass, each its own sequence in a cache of that many
    // contexts; one chunk is evaluated in batches of min(-b, -c) tokens, each graph holds at
    // most -ub tokens.
    int n_seqs = static_cast<int>(std::max<int64_t>(1, o.batch / n_ctx));
    const int base_chunks =
        base ? (o.chunks > 0 ? std::min(o.chunks, base->n_chunk()) : base->n_chunk()) : 0;
    if (base) n_seqs = std::min(n_seqs, base_chunks);  // no cache for sequences never used
    o.model.ctx = n_ctx * n_seqs;
    o.model.ubatch = std::min({o.model.ubatch, o.batch, o.model.ctx});

    LoadedModel loaded = load_model(o.model);
    const llm::Model& model = *loaded.model;
    const int64_t n_vocab = model.n_vocab();
    if (base) base->expect_vocabulary(n_vocab);
    const std::unique_ptr<llm::Session> owned = loaded.make_session();
    llm::Session& session = *owned;
    check_session_memory(loaded, session);
    const llm::Tokenizer tok = llm::Tokenizer::for_model(model.file(), model.n_vocab());

    std::vector<int32_t> tokens;
    if (!text.empty() || !base) {
        const auto t_tok = std::chrono::steady_clock::now();
        tokens = tok.encode(text, tok.add_bos(), false);
        std::fprintf(
            stderr, "perplexity: tokenizing the input: %zu tokens in %.1f ms\n", tokens.size(),
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_tok)
                .count());
    }
    if (base) {
        const std::vector<int32_t>& stored = base->tokens();
        if (!tokens.empty() && (tokens.size() < stored.size() ||
                                !std::equal(stored.begin(), stored.end(), tokens.begin())))
            std::fprintf(stderr,
                         "warning: the tokens of -f %s differ from those in %s; scoring the "
                         "file's\n",
                         o.text_file.c_str(), base->path().c_str());
        tokens = stored;
    }
    const int chunks = base ? base_chunks : llm::count_chunks(tokens.size(), n_ctx, o.chunks);
    const char* what = base ? "kl_divergence" : "perplexity";
    std::fprintf(stderr,
                 "%s: calculating %s over %d chunks, n_ctx=%lld, batch_size=%lld, n_seq=%d, "
                 "ubatch=%lld\n",
                 what, base ? "KL divergence" : "perplexity", chunks, static_cast<long long>(n_ctx),
                 static_cast<long long>(std::min(o.batch, n_ctx)), n_seqs,
                 static_cast<long long>(model.options().n_ubatch));

    std::optional<llm::KldBaseWriter> writer;
    if (!base && !o.kld_base.empty()) {
        writer.emplace(o.kld_base, int32_t(n_ctx), int32_t(n_vocab), chunks,
                       std::span<const int32_t>(tokens).first(size_t(chunks * n_ctx)));
        std::fprintf(stderr, "perplexity: saving the log-probabilities to %s\n",
                     o.kld_base.c_str());
    }

    const llm::PerplexityModel pm = llm::perplexity_model(session, n_vocab);
    const int32_t bos = tok.add_bos() ? tok.bos() : -1;
    const int64_t first = n_ctx / 2, scored = llm::scored_positions(n_ctx);
    llm::NllAccumulator nll;
    llm::KldAccumulator kld;
    std::vector<uint16_t> records;
    double eval_seconds = 0;
    const auto row = [&](const llm::ScoredChunk& c, int64_t j) {
        return c.logits.subspan(size_t(j * n_vocab), size_t(n_vocab));
    };
    llm::evaluate_chunks(pm, tokens, n_ctx, chunks, n_seqs, bos, [&](const llm::ScoredChunk& c) {
        if (c.index % n_seqs == 0) eval_seconds += c.pass_seconds;
        if (c.index == 0) {
            print_pass_time(what, c.pass_seconds, chunks, n_seqs);
            if (base) std::printf("%s", kKldHeader);
        }
        if (base) {
            base->read_chunk(c.index, records);
            const auto nv = size_t(llm::log_prob_record_size(n_vocab));
            for (int64_t j = 0; j < scored; ++j)
                kld.add(row(c, j), std::span<const uint16_t>(records).subspan(size_t(j) * nv, nv),
                        c.tokens[size_t(first + j + 1)]);
            print_kld_row(c.index + 1, kld.statistics(false));
            return;
        }
        for (int64_t j = 0; j < scored; ++j) nll.add(row(c, j), c.tokens[size_t(first + j + 1)]);
        if (writer) writer->add_chunk(c.logits);
        std::printf("[%d]%.4f,", c.index + 1, nll.perplexity());
        std::fflush(stdout);
    });
    const int64_t count = base ? kld.count() : nll.count();
    if (base) {
        std::printf("\n");
        if (count >= 100)  // llama.cpp: no statistics over fewer values
            print_kld_summary(kld.statistics(true));
        else
            std::fprintf(stderr,
                         "kl_divergence: %lld scored tokens, too few for the statistics "
                         "(100 or more)\n",
                         static_cast<long long>(count));
    } else {
        if (writer) writer->close();
        std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", nll.perplexity(),
                    nll.perplexity_error());
    }
    std::fprintf(stderr,
                 "scored %lld tokens in %d chunks; %d chunks per pass, %.1f t/s evaluated; mla "
                 "%d, KV cache %.2f MiB\n",
                 static_cast<long long>(count), chunks, n_seqs,
                 eval_seconds > 0 ? double(chunks) * double(n_ctx) / eval_seconds : 0.0,
                 model.options().mla, mib(session.cache().bytes()));
    return 0;
}

}  // namespace

Command add_perplexity_command(CLI::App& app) {
    auto o = std::make_shared<PerplexityOptions>();
    CLI::App* cmd = app.add_subcommand(
        "perplexity",
        "Perplexity of a deepseek2 GGUF model on a text, or its KL divergence from a base model "
        "(llama.cpp's method and files)");
    o->model.add_to(*cmd, "Tokens per chunk (default 512; with --kl-divergence the file's)");
    cmd->add_option(
        "-f,--file", o->text_file,
        "Text file to score (with --kl-divergence optional: the tokens are the file's)");
    cmd->add_option("--chunks", o->chunks, "Score at most this many chunks (default: all)");
    cmd->add_option("-b,--batch-size", o->batch,
                    "Tokens per evaluation batch (default 2048): -b / -c chunks per pass")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
    cmd->add_option("--kl-divergence-base", o->kld_base,
                    "llama-perplexity's log-probability file: written here (the base model's "
                    "run), or read with --kl-divergence");
    cmd->add_flag("--kl-divergence", o->kl_divergence,
                  "Compare this model with the base's log-probabilities in --kl-divergence-base "
                  "(KL divergence, perplexity ratio, top-token agreement, Δp)");
    return [o] { return run_perplexity(*o); };
}

}  // namespace sy::tools
