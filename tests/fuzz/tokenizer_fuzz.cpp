// libFuzzer target: the DeepSeek-LLM vocabulary (tests/data/vocab) tokenizes any byte string —
// with and without special-token parsing, and as a chat turn in each chat template — and
// decodes any id sequence, without a crash and in
// time close to linear (run_all.sh gives each input 2 s: the quadratic BPE took 19 s for 64 KiB
// of letters).
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
    for (bool special : {false, true}) {
        const std::vector<int32_t> ids = tokenizer->encode(text, true, special);
        (void)tokenizer->decode(ids, special);
    }
    // The bytes as a chat's user turn, laid out by each template and tokenized as `run --chat`
    // does (special tokens parsed: the template's own markers are special tokens). Only inputs
    // whose first byte is odd take this path, so that the others run at twice the rate.
    if (size > 0 && (data[0] & 1) != 0)
        for (sy::llm::ChatTemplate t :
             {sy::llm::ChatTemplate::deepseek2, sy::llm::ChatTemplate::deepseek3}) {
            const sy::llm::ChatMessage turn[] = {{"system", "Be brief."},
                                                 {"user", std::string(text)}};
            (void)tokenizer->encode(sy::llm::apply_chat_template(t, turn, true), true, true);
        }
    // The same bytes as ids: any value, in or out of the vocabulary.
    std::vector<int32_t> raw(size / 4);
    if (!raw.empty()) std::memcpy(raw.data(), data, raw.size() * 4);
    (void)tokenizer->decode(raw, true);
    return 0;
}
