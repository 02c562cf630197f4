// `switchyard imatrix`: llama-imatrix for deepseek2 GGUFs. The text is cut into chunks of -c
// tokens (each from an empty cache, its first token BOS when the vocabulary adds one); the
// activations of every weight product are accumulated (llm/imatrix.hpp) and written as a GGUF or
// legacy .dat importance matrix, with llama-imatrix's per-chunk perplexity on the way.
//
// Attention mode: the products an imatrix records depend on it. Without -mla the file decides:
// one that stores attn_k_b runs latent attention (mla 2: attn_k_b and attn_v_b per head, as
// llama.cpp collects them; attn_kv_b, if also stored, gets no entry), one without runs standard
// attention (mla 0: attn_kv_b over each token's latent). mla 3 becomes 2: its prompt path
// multiplies attn_kv_b by every cached latent, not by each token's.
#include "switchyard/llm/imatrix.hpp"

#include <chrono>
#include <cstdio>
#include <memory>

#include "commands/model_session.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/perplexity.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::tools {
namespace {

struct ImatrixOptions {
    ModelOptions model;
    std::string text_file;
    std::string output = "imatrix.gguf";
    std::string output_format;  // "": by the output's suffix
    int chunks = -1;
    int skip_chunks = 0;
    bool process_output = false;
    bool no_ppl = false;
};

std::string duration_text(double seconds) {
    char buf[64];
    if (seconds >= 3600)
        std::snprintf(buf, sizeof buf, "%d h %02d min", int(seconds / 3600),
                      int(seconds / 60) % 60);
    else if (seconds >= 60)
        std::snprintf(buf, sizeof buf, "%.1f min", seconds / 60);
    else
        std::snprintf(buf, sizeof buf, "%.1f s", seconds);
    return buf;
}

// The attention mode for collection (see the top of this file).
int collection_mla(int asked, const std::string& model_path) {
    if (asked == 3) {
        std::fprintf(stderr,
                     "imatrix: --mla 3 collects as --mla 2 (its prompt path multiplies "
                     "attn_kv_b by the cached latents, not by each token's)\n");
        return 2;
    }
    if (asked >= 0) return asked;
    const gguf::Reader file = gguf::Reader::open(model_path);
    const bool has_k_b = file.tensor("blk.0.attn_k_b.weight") != nullptr;
    std::fprintf(stderr, "imatrix: %s\n",
                 has_k_b ? "the file stores attn_k_b: latent attention (--mla 2) collects "
                           "attn_k_b and attn_v_b"
                         : "standard attention (--mla 0) collects attn_kv_b");
    return has_k_b ? 2 : 0;
}

int run_imatrix(ImatrixOptions o) {
    const llm::ImatrixFormat format =
        llm::parse_imatrix_format(!o.output_format.empty()     ? o.output_format
                                  : o.output.ends_with(".dat") ? "dat"
                                                               : "gguf");
    if (format == llm::ImatrixFormat::gguf && !o.output.ends_with(".gguf"))
        std::fprintf(stderr,
                     "imatrix: writing the GGUF format to %s (--output-format dat for "
                     "the legacy one)\n",
                     o.output.c_str());
    const std::string text = read_text_file("-f", o.text_file);
    if (o.model.ctx == 0) o.model.ctx = 512;
    o.model.ubatch = std::min(o.model.ubatch, o.model.ctx);
    o.model.mla = collection_mla(o.model.mla, o.model.model);

    LoadedModel loaded = load_model(o.model);
    if (loaded.several)
        throw Error(
            "imatrix: collection runs on one backend; drop the placement options (-ot, "
            "--cpu-moe, -ts, --fit)");
    const llm::Model& model = *loaded.model;
    const std::unique_ptr<llm::Session> session = loaded.make_session();
    check_session_memory(loaded, *session);
    const llm::Tokenizer tok = llm::Tokenizer::for_model(model.file(), model.n_vocab());

    std::vector<int32_t> tokens = tok.encode(text, tok.add_bos(), false);
    const int64_t n_ctx = model.options().n_ctx;
    if (o.skip_chunks > 0) {
        if ((int64_t(o.skip_chunks) + 2) * n_ctx >= int64_t(tokens.size()))
            throw Error("imatrix: --chunk " + std::to_string(o.skip_chunks) +
                        " leaves fewer than "
                        "two chunks of the " +
                        std::to_string(tokens.size()) + " tokens");
        tokens.erase(tokens.begin(), tokens.begin() + o.skip_chunks * n_ctx);
    }
    if (int64_t(tokens.size()) < 2 * n_ctx)
        throw Error("imatrix: " + o.text_file + " has " + std::to_string(tokens.size()) +
                    " tokens; a context of " + std::to_string(n_ctx) + " needs at least " +
                    std::to_string(2 * n_ctx) + " (as llama-imatrix; lower -c)");
    int n_chunks = int(int64_t(tokens.size()) / n_ctx);
    if (o.chunks > 0) n_chunks = std::min(n_chunks, o.chunks);
    const bool ppl = !o.no_ppl;
    std::fprintf(stderr, "imatrix: %zu tokens, %d chunks of %lld, mla %d%s\n", tokens.size(),
                 n_chunks, static_cast<long long>(n_ctx), model.options().mla,
                 session->uses_fused_moe() ? ", fused MoE (its up and gate read as experts)" : "");

    // The weights of the file (not the attention tensors derived at load), output.weight on
    // request.
    llm::ImatrixCollector collector([&](const std::string& name) {
        if (model.file().tensor(name) == nullptr) return false;
        return name.rfind("blk.", 0) == 0 || (o.process_output && name == "output.weight");
    });
    session->set_node_observer(&collector.observer());

    llm::NllAccumulator nll;
    const int32_t bos = tok.add_bos() ? tok.bos() : -1;
    const int64_t n_vocab = model.n_vocab(), first = n_ctx / 2;
    const auto start = std::chrono::steady_clock::now();
    std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
    for (int c = 0; c < n_chunks; ++c) {
        const auto t0 = std::chrono::steady_clock::now();
        chunk.assign(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
        if (bos >= 0) chunk[0] = bos;
        session->reset();
        const std::vector<float> logits = session->eval(chunk, ppl || o.process_output);
        if (ppl)
            for (int64_t j = first; j + 1 < n_ctx; ++j)
                nll.add(std::span<const float>(logits.data() + j * n_vocab, size_t(n_vocab)),
                        chunk[size_t(j + 1)]);
        const auto now = std::chrono::steady_clock::now();
        const double took = std::chrono::duration<double>(now - t0).count();
        const double elapsed = std::chrono::duration<double>(now - start).count();
        std::fprintf(stderr, "imatrix: chunk %d/%d, %.2f s, ETA %s%s\n", c + 1, n_chunks, took,
                     duration_text(elapsed / (c + 1) * (n_chunks - c - 1)).c_str(),
                     ppl ? (", PPL " + std::to_string(nll.perplexity())).c_str() : "");
        if (ppl) {
            std::printf("[%d]%.4f,", c + 1, nll.perplexity());
            std::fflush(stdout);
        }
    }
    session->set_node_observer(nullptr);
    if (ppl)
        std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", nll.perplexity(),
                    nll.perplexity_error());

    const llm::Imatrix m = collector.result({o.text_file}, uint32_t(n_chunks), uint32_t(n_ctx));
    if (m.entries.empty()) throw Error("imatrix: no weight product was seen");
    llm::write_imatrix(o.output, m, format);
    std::fprintf(stderr, "imatrix: %zu entries from %d chunks written to %s (%s)\n",
                 m.entries.size(), n_chunks, o.output.c_str(),
                 format == llm::ImatrixFormat::gguf ? "gguf" : "dat");
    return 0;
}

}  // namespace

Command add_imatrix_command(CLI::App& app) {
    auto o = std::make_shared<ImatrixOptions>();
    o->model.mla = -1;  // chosen from the file unless given
    CLI::App* cmd =
        app.add_subcommand("imatrix",
                           "Compute an importance matrix of a deepseek2 GGUF model over a text "
                           "(llama-imatrix's method and files)");
    o->model.add_to(*cmd, "Tokens per chunk (default 512)");
    cmd->add_option("-f,--file", o->text_file, "Text file to run the model over")->required();
    cmd->add_option("-o,--output-file", o->output,
                    "Importance matrix file to write (default imatrix.gguf)");
    cmd->add_option("--output-format", o->output_format,
                    "gguf (llama.cpp) or dat (legacy, ik_llama.cpp); default: dat for a .dat "
                    "output, else gguf");
    cmd->add_option("--chunks", o->chunks, "Process at most this many chunks (default: all)");
    cmd->add_option("--chunk", o->skip_chunks, "Skip this many chunks at the start of the text")
        ->check(CLI::NonNegativeNumber);
    cmd->add_flag("--process-output", o->process_output, "Collect output.weight too");
    cmd->add_flag("--no-ppl", o->no_ppl, "Do not compute the perplexity of each chunk");
    return [o] { return run_imatrix(*o); };
}

}  // namespace sy::tools
