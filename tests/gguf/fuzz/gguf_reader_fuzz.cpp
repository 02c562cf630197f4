// libFuzzer target: any byte string given to the GGUF parser either parses or raises
// FormatError — never a crash, a hang or a huge allocation.
#include <cstddef>
#include <cstdint>

#include "switchyard/llm/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const sy::gguf::Reader r = sy::gguf::Reader::open_memory({data, size}, "fuzz.gguf");
        // Touch what a caller would: every tensor's first and last byte, every key.
        volatile uint8_t sink = 0;
        for (const sy::gguf::TensorInfo& t : r.tensors()) {
            if (t.nbytes) sink = sink ^ t.data[0] ^ t.data[t.nbytes - 1];
        }
        for (const sy::gguf::KeyValue& kv : r.metadata()) (void)r.find(kv.key);
    } catch (const sy::gguf::FormatError&) {
    }
    return 0;
}
