#include "switchyard/core/memory_planner.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"

namespace sy {

uint64_t RangeAllocator::allocate(uint64_t size) {
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
    }
    if (best == free_.end()) {
        const uint64_t offset = top_;
        top_ += size;
        peak_ = std::max(peak_, top_);
        return offset;
    }
    const uint64_t offset = best->first;
    const uint64_t rest = best->second - size;
    free_.erase(best);
    if (rest > 0) free_.emplace(offset + size, rest);
    return offset;
}

void RangeAllocator::release(uint64_t offset, uint64_t size) {
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && next->first == offset + size) {  // merge with the range after
        size += next->second;
        next = free_.erase(next);
    }
    if (next != free_.begin()) {  // merge with the range before
        auto prev = std::prev(next);
        if (prev->first + prev->second == offset) {
            offset = prev->first;
            size += prev->second;
            free_.erase(prev);
        }
    }
    if (offset + size == top_) {
        top_ = offset;  // the top shrinks, so growth reuses this range first
    } else {
        free_.emplace(offset, size);
    }
}

std::optional<uint64_t> MemoryPlan::offset_of(const Tensor& t) const {
    const auto base = static_cast<size_t>(t.base()->id());
    if (base >= offset_by_tensor.size() || offset_by_tensor[base] < 0) return std::nullopt;
    return static_cast<uint64_t>(offset_by_tensor[base]) + t.offset();
}

MemoryPlan plan_memory(const Graph& graph) {
    const std::vector<int32_t> order = graph.all_nodes();
    return plan_memory(graph, order);
}

MemoryPlan plan_memory(const Graph& graph, std::span<const int32_t> order,
                       std::span<const uint64_t> room) {
    const auto& nodes = graph.nodes();
    const size_t n_tensors = graph.tensors().size();
    const auto n_steps = static_cast<int32_t>(order.size());
    constexpr int32_t kUntouched = std::numeric_limits<int32_t>::max();

    std::vector<bool> in_order(nodes.size(), false);
    for (size_t i = 0; i < order.size(); ++i) {
        const int32_t node = order[i];
        if (node < 0 || static_cast<size_t>(node) >= nodes.size()) {
            throw Error("memory plan: node index " + std::to_string(node) +
                        " is outside the graph");
        }
        if (i > 0 && node <= order[i - 1]) {
            throw Error("memory plan: the node sequence must follow build order (node " +
                        std::to_string(node) + " after node " + std::to_string(order[i - 1]) + ")");
        }
        in_order[static_cast<size_t>(node)] = true;
    }

    // An intermediate gets memory here when the node writing it is in the sequence; its
    // lifetime spans every step that touches it or a view of it.
    auto planned_root = [&](const Tensor* t) -> const Tensor* {
        const Tensor* root = t->base();
        if (root->kind() != TensorKind::intermediate) return nullptr;
        if (!in_order[static_cast<size_t>(root->producer())]) return nullptr;
        return root;
    };
    std::vector<int32_t> first(n_tensors, kUntouched);
    std::vector<int32_t> last(n_tensors, -1);
    for (int32_t step = 0; step < n_steps; ++step) {
        const Node& node = nodes[static_cast<size_t>(order[static_cast<size_t>(step)])];
        auto touch = [&](const Tensor* t) {
            if (const Tensor* root = planned_root(t)) {
                const auto id = static_cast<size_t>(root->id());
                first[id] = std::min(first[id], step);
                last[id] = std::max(last[id], step);
            }
        };
        touch(node.dst);
        for (const Tensor* s : node.src) touch(s);
    }
    // Read after the sequence: by the caller (outputs) or by nodes of another sequence.
    auto keep_to_end = [&](const Tensor* t) {
        if (const Tensor* root = planned_root(t)) {
            if (first[static_cast<size_t>(root->id())] != kUntouched) {
                last[static_cast<size_t>(root->id())] = n_steps;
            }
        }
    };
    for (const Tensor* t : graph.outputs()) keep_to_end(t);
    for (size_t i = 0; i < nodes.size(); ++i) {
        if (in_order[i]) continue;
        for (const Tensor* s : nodes[i].src) keep_to_end(s);
        keep_to_end(nodes[i].dst);
    }

    std::vector<std::vector<int32_t>> starting(static_cast<size_t>(n_steps));
    std::vector<std::vector<int32_t>> ending(static_cast<size_t>(n_steps) + 1);
    for (size_t id = 0; id < n_tensors; ++id) {
        if (first[id] == kUntouched) continue;
        starting[static_cast<size_t>(first[id])].push_back(static_cast<int32_t>(id));
        ending[static_cast<size_t>(last[id])].push_back(static_cast<int32_t>(id));
    }

    MemoryPlan plan;
    plan.offset_by_tensor.assign(n_tensors, -1);
    RangeAllocator ranges;
    std::vector<size_t> slot_of(n_tensors, 0);
    for (int32_t step = 0; step < n_steps; ++step) {
        // Allocate before freeing: a node's result must not overlap its sources.
        for (int32_t id : starting[static_cast<size_t>(step)]) {
            const Tensor& t = *graph.tensors()[static_cast<size_t>(id)];
            PlannedTensor p;
            p.tensor = id;
            uint64_t bytes = std::max<uint64_t>(1, static_cast<uint64_t>(t.bytes()));
            if (size_t(id) < room.size()) bytes = std::max(bytes, room[size_t(id)]);
            p.size = aligned_size(bytes);
            p.offset = ranges.allocate(p.size);
            p.first_step = step;
            p.last_step = last[static_cast<size_t>(id)];
            plan.offset_by_tensor[static_cast<size_t>(id)] = static_cast<int64_t>(p.offset);
            plan.naive_bytes += p.size;
            slot_of[static_cast<size_t>(id)] = plan.tensors.size();
            plan.tensors.push_back(p);
        }
        for (int32_t id : ending[static_cast<size_t>(step)]) {
            const PlannedTensor& p = plan.tensors[slot_of[static_cast<size_t>(id)]];
            ranges.release(p.offset, p.size);
        }
    }
    plan.peak_bytes = ranges.peak();
    return plan;
}

}  // namespace sy
