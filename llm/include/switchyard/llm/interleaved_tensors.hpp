// Tensors stored in ik_llama.cpp's row-interleaved layouts (switchyard/interleaved.hpp): read by
// converting them once into the rows of their base type.
#pragma once

#include <cstdint>
#include <vector>

#include "switchyard/llm/gguf.hpp"

namespace sy::llm {

struct DeinterleavedTensor {
    int32_t type = 0;               // the base type
    const uint8_t* data = nullptr;  // its rows: the file's bytes rewritten, or `owned`'s
    std::vector<uint8_t> owned;     // where the base rows are larger than the file's (IQ1_S_R4)
};

// Converts t (one of the interleaved types) to packed rows of its base type over up to `threads`
// threads. Where the sizes agree (every type but IQ1_S_R4) it rewrites t's bytes in place
// (gguf::Reader::writable: a mapped file's pages become private copies, so one copy of the
// weights stays in memory); IQ1_S_R4's rows grow as IQ1_S rows (2 bytes per 256 values, less the
// row's scale), so they go to fresh memory and the file's pages are only read. The caller
// converts each tensor once: a second in-place call would scramble it.
DeinterleavedTensor deinterleave_tensor(const gguf::Reader& file, const gguf::TensorInfo& t,
                                        int threads);

}  // namespace sy::llm
