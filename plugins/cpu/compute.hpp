// Running a sequence of nodes: each is validated (with its data) and then computed, in order, so
// index tensors produced by earlier nodes are range-checked with their final values.
#pragma once

#include <cstddef>

#include "switchyard/plugin.h"

namespace sy::cpu {

class ThreadPool;
class InterleavedWeights;

// `interleaved`: where the matrix products keep interleaved copies of weights, or null (the
// option repack off).
sy_status compute_nodes(ThreadPool& pool, InterleavedWeights* interleaved,
                        const sy_node* const* nodes, size_t count);

}  // namespace sy::cpu
