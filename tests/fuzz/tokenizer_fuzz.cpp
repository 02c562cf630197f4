// libFuzzer target: the DeepSeek-LLM vocabulary (tests/data/vocab) tokenizes any byte string —
// with or without special-token parsing, and as a chat turn in either chat template — and
// decodes any id sequence, without a crash and in time close to linear (run_all.sh gives each
// input 2 s: the quadratic BPE took 19 s for 64 KiB of letters).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/llm/chat_template.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace {
std::unique_ptr<sy::llm::Tokenizer> tokenizer;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* vocab = std::getenv("SY_FUZZ_VOCAB");
    if (vocab == nullptr) std::abort();  // run_all.sh sets it
    tokenizer = std::make_unique<sy::llm::Tokenizer>(
        sy::llm::Tokenizer::from_gguf(sy::gguf::Reader::open(vocab)));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    // The first byte's low bits pick the path, so that each input takes one and the fuzzer
    // reaches all by mutating them: bit 1 parses special tokens, bit 0 also lays the bytes out
    // as a chat's user turn in the template bit 2 picks, tokenized as `run --chat` does
    // (special tokens parsed: the template's own markers are special tokens).
    const uint8_t mode = size > 0 ? data[0] : 0;
    const bool special = (mode & 2) != 0;
    const std::vector<int32_t> ids = tokenizer->encode(text, true, special);
    (void)tokenizer->decode(ids, special);
    if ((mode & 1) != 0) {
        const sy::llm::ChatTemplate t =
            (mode & 4) != 0 ? sy::llm::ChatTemplate::deepseek3 : sy::llm::ChatTemplate::deepseek2;
        const sy::llm::ChatMessage turn[] = {{"system", "Be brief."}, {"user", std::string(text)}};
        (void)tokenizer->encode(sy::llm::apply_chat_template(t, turn, true), true, true);
    }
    // The same bytes as ids: any value, in or out of the vocabulary.
    std::vector<int32_t> raw(size / 4);
    if (!raw.empty()) std::memcpy(raw.data(), data, raw.size() * 4);
    (void)tokenizer->decode(raw, true);
    return 0;
}
