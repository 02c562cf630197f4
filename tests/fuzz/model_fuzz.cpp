// libFuzzer target: any bytes as a DeepSeek2 model file, loaded the way `switchyard run` loads
// one, short of computing: the GGUF image is parsed, the hyperparameters read and checked, every
// tensor bound by name, type and shape, the attention weights the MLA modes need derived from
// the file's (dequantized and rearranged), the options validated, and the vocabulary read and
// checked against the output rows, the chat template recognized and applied. Each step may refuse
// the input with sy::Error (its gguf::FormatError included); nothing may crash, overflow, leak or
// allocate without bound (run_all.sh: -malloc_limit_mb, -rss_limit_mb).
//
// Seeds: with SY_FUZZ_MODEL_SEEDS=DIR the target writes two micro models (128 and 240 KB: q8_0
// with attn_kv_b, f16 with attn_k_b/attn_v_b and plain attn_q) into DIR and exits. Its findings
// are kept as unit tests (a model image is too big for a committed corpus).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <span>
#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/chat_template.hpp"
#include "switchyard/llm/models/deepseek2.hpp"
#include "switchyard/llm/session.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace {

// The smallest shapes the model code accepts: q8_0 rows (32-element blocks) in every product,
// one dense and one MoE block, a byte-level vocabulary of 260 tokens.
sy::llm::Deepseek2Config micro(bool plain_q) {
    sy::llm::Deepseek2Config c;
    c.name = "switchyard fuzz seed";
    c.n_layer = 2;
    c.n_ctx_train = 256;
    c.n_embd = 32;
    c.n_ff = 32;
    c.n_head = 2;
    c.q_lora_rank = plain_q ? 0 : 32;
    c.kv_lora_rank = 32;
    c.qk_nope = 32;
    c.qk_rope = 32;
    c.v_head = 32;
    c.n_expert = 4;
    c.n_expert_used = 2;
    c.n_expert_shared = 1;
    c.n_ff_exp = 32;
    c.gating_func = 2;
    c.expert_weights_norm = true;
    c.n_vocab = 260;
    c.tokenizer_pre = "deepseek-v3";
    return c;
}

void write_seeds(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    write_synthetic_model(dir / "micro-q8_0-kv_b.gguf",
                          plan_deepseek2(micro(false), SY_TYPE_Q8_0, sy::llm::KvLayout::kv_b), 1,
                          1);
    write_synthetic_model(dir / "micro-f16-split.gguf",
                          plan_deepseek2(micro(true), SY_TYPE_F16, sy::llm::KvLayout::split), 2, 1);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("SY_FUZZ_MODEL_SEEDS")) {
        write_seeds(dir);
        std::exit(0);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        sy::gguf::Reader file = sy::gguf::Reader::open_memory(std::span(data, size), "fuzz.gguf");
        // mla 3 derives attn_k_b/attn_v_b from attn_kv_b; mla 0 needs attn_kv_b (derived from
        // attn_k_b/attn_v_b when the file has only those). The input's length picks one, so
        // mutation tries both on every seed.
        sy::llm::ContextOptions options;
        options.mla = size % 2 == 0 ? 3 : 0;
        options.n_ctx = 64;
        const sy::llm::Deepseek2Model model(std::move(file), options);
        sy::llm::validate(model.options(), model.hparams());
        (void)model.weight_bytes_per_token();
        (void)model.derived_bytes();
        const sy::llm::Tokenizer tokenizer =
            sy::llm::Tokenizer::for_model(model.file(), model.hparams().n_vocab);
        (void)tokenizer.decode(tokenizer.encode("Hello, world! 123", true, true), true);
        // The file's chat template (a Jinja text, recognized, not executed), if it has one.
        try {
            const sy::llm::ChatMessage turn[] = {{"user", "Hi"}};
            (void)tokenizer.encode(
                apply_chat_template(sy::llm::detect_chat_template(model.file()), turn, true), true,
                true);
        } catch (const sy::Error&) {
        }
    } catch (const sy::Error&) {  // gguf::FormatError included: a refusal with a message
    }
    return 0;
}
