// Graph nodes in their ABI form (what plugins see) and as error messages name them; shared by
// the executor and placement.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/core/graph.hpp"
#include "switchyard/plugin.h"

namespace sy {

// The descriptors of every tensor of `graph`, indexed by tensor id (data and buffer unset).
std::vector<sy_tensor> tensor_descriptors(const Graph& graph);

// The ABI form of a node whose tensors are `tensors[id]` (they must outlive the result).
sy_node raw_node(const Node& node, const std::vector<sy_tensor>& tensors);

// "node 12 mul_mat('blk.0.attn_q.weight' q8_0 {...}, ...) -> 'q-0' f32 {...}"
std::string node_text(const Graph& graph, int32_t index);

}  // namespace sy
