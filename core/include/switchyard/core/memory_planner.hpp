// Places every intermediate tensor of a node sequence in one compute buffer, reusing the memory
// of tensors whose last reader has run. Weights and inputs have external memory; a view aliases
// its base and keeps it alive; outputs (and tensors read by nodes outside the sequence) live to
// the end. Offsets are 64-byte aligned; a freed range is reused best-fit (the smallest range that
// fits), so peak_bytes is usually far below naive_bytes, the sum without reuse.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace sy {

class Graph;
class Tensor;

inline constexpr uint64_t kTensorAlignment = 64;

// `bytes` rounded up to the alignment: the room a tensor takes in a planned buffer.
inline constexpr uint64_t aligned_size(uint64_t bytes) {
    return (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

// Ranges of one growing buffer: best-fit reuse of released ranges (the smallest free range that
// fits), otherwise growth at the top; peak() is the buffer size the ranges needed.
class RangeAllocator {
  public:
    uint64_t allocate(uint64_t size);
    void release(uint64_t offset, uint64_t size);
    uint64_t peak() const { return peak_; }

  private:
    std::map<uint64_t, uint64_t> free_;  // offset -> size, never touching each other or the top
    uint64_t top_ = 0;
    uint64_t peak_ = 0;
};

struct PlannedTensor {
    int32_t tensor = -1;  // id of an intermediate (never a view) in the graph
    uint64_t offset = 0;  // in the compute buffer
    uint64_t size = 0;    // bytes reserved (the tensor's bytes rounded up to the alignment)
    // Positions in the node sequence: written (or first touched) at first_step, free after
    // last_step; last_step == the sequence length for tensors that live to the end.
    int32_t first_step = 0;
    int32_t last_step = 0;
};

struct MemoryPlan {
    std::vector<PlannedTensor> tensors;  // in allocation order
    uint64_t peak_bytes = 0;             // the compute buffer size the plan needs
    uint64_t naive_bytes = 0;            // sum of all sizes: what no reuse would need

    // Offset in the compute buffer of t's element (0,0,0,0): its own slot, or its base's slot
    // plus the view offset. nullopt for tensors with external memory or not in the sequence.
    std::optional<uint64_t> offset_of(const Tensor& t) const;

    std::vector<int64_t> offset_by_tensor;  // per tensor id: slot offset, -1 when not planned
};

// `order`: node indices of `graph` in execution order (ascending build order, or a part of it).
// `room`, when given (per tensor id), reserves at least that many bytes for an intermediate, so
// that the plan also holds graphs of the same structure whose intermediates grow up to it.
MemoryPlan plan_memory(const Graph& graph, std::span<const int32_t> order,
                       std::span<const uint64_t> room = {});
MemoryPlan plan_memory(const Graph& graph);

}  // namespace sy
