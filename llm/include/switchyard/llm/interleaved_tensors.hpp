// Tensors stored in ik_llama.cpp's row-interleaved layouts (switchyard/interleaved.hpp): read by
// converting them once, in place, into the rows of their base type.
#pragma once

#include <cstdint>

#include "switchyard/llm/gguf.hpp"

namespace sy::llm {

// Rewrites t's bytes (one of the interleaved types) as packed rows of its base type, in place
// (gguf::Reader::writable: a mapped file's pages become private copies, so one copy of the
// weights stays in memory), over up to `threads` threads; returns the base type. The caller
// converts each tensor once: a second call would scramble it.
int32_t deinterleave_in_place(const gguf::Reader& file, const gguf::TensorInfo& t, int threads);

}  // namespace sy::llm
