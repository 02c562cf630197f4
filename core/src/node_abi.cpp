#include "node_abi.hpp"

#include <algorithm>

namespace sy {

std::vector<sy_tensor> tensor_descriptors(const Graph& graph) {
    std::vector<sy_tensor> descriptors(graph.tensors().size());
    for (size_t i = 0; i < descriptors.size(); ++i)
        descriptors[i] = graph.tensors()[i]->descriptor();
    return descriptors;
}

sy_node raw_node(const Node& node, const std::vector<sy_tensor>& tensors) {
    sy_node raw{};
    raw.struct_size = sizeof(sy_node);
    raw.op = node.op;
    raw.named_op = node.op == SY_OP_NAMED ? node.named_op.c_str() : nullptr;
    raw.named_op_version = node.named_op_version;
    raw.n_src = static_cast<int32_t>(node.src.size());
    for (size_t i = 0; i < node.src.size(); ++i)
        raw.src[i] = &tensors[static_cast<size_t>(node.src[i]->id())];
    raw.dst = &tensors[static_cast<size_t>(node.dst->id())];
    std::copy(node.iparams.begin(), node.iparams.end(), raw.iparams);
    std::copy(node.fparams.begin(), node.fparams.end(), raw.fparams);
    return raw;
}

std::string node_text(const Graph& graph, int32_t index) {
    const Node& n = graph.nodes()[static_cast<size_t>(index)];
    std::string s = "node " + std::to_string(index) + " " + n.label() + "(";
    for (size_t i = 0; i < n.src.size(); ++i) s += (i ? ", " : "") + n.src[i]->describe();
    return s + ") -> " + n.dst->describe();
}

}  // namespace sy
