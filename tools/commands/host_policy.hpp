// How a command uses the machine's cores and memory beyond what the backends decide: --numa
// (which NUMA nodes the threads run on and memory comes from) and --mlock (the weights kept in
// RAM), as llama.cpp's options of those names.
#pragma once

#include <cstdint>
#include <string>

#include "switchyard/llm/gguf.hpp"

namespace sy::tools {

// --numa distribute|isolate|numactl, before any backend starts its threads (they inherit the
// CPU set). With several nodes: distribute lets threads run on every node's CPUs and
// interleaves new memory over the nodes; isolate keeps threads on the CPUs of the node this
// command started on; numactl keeps the CPU set numactl gave. Returns the note saying what was
// done, or why nothing was (one node). Throws sy::Error when the CPU set cannot be changed.
std::string apply_numa(const std::string& mode);

// --mlock: locks the bytes of every tensor in memory (paging the file in). `warning` is empty on
// success; else it says why locking failed and what the limit is.
struct WeightLock {
    uint64_t bytes = 0;
    std::string warning;
};
WeightLock lock_weights(const gguf::Reader& file);

}  // namespace sy::tools
