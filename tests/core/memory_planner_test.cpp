// The memory planner: no two tensors alive at the same time may share bytes, memory is reused
// once a tensor's last reader has run, offsets are aligned.
#include "switchyard/core/memory_planner.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"

namespace sy {
namespace {

// Lifetimes computed from the graph independently of the planner: [producer step, last step
// that reads the tensor or a view of it], the end for outputs.
struct Lifetime {
    int32_t first = -1;
    int32_t last = -1;
};

std::vector<Lifetime> lifetimes(const Graph& g) {
    std::vector<Lifetime> life(g.tensors().size());
    const auto n = static_cast<int32_t>(g.nodes().size());
    for (int32_t i = 0; i < n; ++i) {
        const Node& node = g.nodes()[static_cast<size_t>(i)];
        life[static_cast<size_t>(node.dst->id())].first = i;
        life[static_cast<size_t>(node.dst->id())].last = i;
        for (const Tensor* s : node.src) {
            Lifetime& l = life[static_cast<size_t>(s->base()->id())];
            l.last = std::max(l.last, i);
        }
    }
    for (const Tensor* t : g.outputs()) life[static_cast<size_t>(t->base()->id())].last = n;
    return life;
}

// Checks every pair of planned tensors: overlapping lifetimes imply disjoint byte ranges.
void expect_no_live_overlap(const Graph& g, const MemoryPlan& plan) {
    const std::vector<Lifetime> life = lifetimes(g);
    for (const PlannedTensor& p : plan.tensors) {
        const Tensor& t = *g.tensors()[static_cast<size_t>(p.tensor)];
        EXPECT_EQ(t.kind(), TensorKind::intermediate);
        EXPECT_GE(p.size, static_cast<uint64_t>(t.bytes()));
        EXPECT_EQ(p.offset % kTensorAlignment, 0u);
        EXPECT_LE(p.offset + p.size, plan.peak_bytes);
        // The planner may not think a tensor dies earlier than it does.
        EXPECT_LE(p.first_step, life[static_cast<size_t>(p.tensor)].first);
        EXPECT_GE(p.last_step, life[static_cast<size_t>(p.tensor)].last) << t.describe();
    }
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
        for (size_t j = i + 1; j < plan.tensors.size(); ++j) {
            const PlannedTensor& a = plan.tensors[i];
            const PlannedTensor& b = plan.tensors[j];
            const bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
            const bool bytes_overlap = a.offset < b.offset + b.size && b.offset < a.offset + a.size;
            EXPECT_FALSE(live_together && bytes_overlap)
                << "tensors " << a.tensor << " [" << a.first_step << ", " << a.last_step << "] and "
                << b.tensor << " [" << b.first_step << ", " << b.last_step << "] share bytes";
        }
    }
}

TEST(MemoryPlanner, ChainReusesMemory) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {256, 4});
    Tensor* h = x;
    for (int i = 0; i < 10; ++i) h = g.scale(h, 0.5f);
    g.mark_output(h);
    const MemoryPlan plan = plan_memory(g);
    ASSERT_EQ(plan.tensors.size(), 10u);
    EXPECT_EQ(plan.naive_bytes, 10u * 4096u);
    // A chain needs two buffers in turn: the source and the result of each step.
    EXPECT_EQ(plan.peak_bytes, 2u * 4096u);
    EXPECT_LT(plan.peak_bytes, plan.naive_bytes);
    expect_no_live_overlap(g, plan);
}

TEST(MemoryPlanner, WeightsInputsAndViewsGetNoSlot) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {8, 4});
    Tensor* w = g.weight("w", SY_TYPE_F32, {8, 8});
    Tensor* y = g.mul_mat(w, x);
    Tensor* yt = g.transpose(y);
    Tensor* row = g.view(y, {8}, y->strides(), 64);
    g.mark_output(g.cont(yt));
    g.mark_output(g.silu(row));
    const MemoryPlan plan = plan_memory(g);
    EXPECT_FALSE(plan.offset_of(*x));
    EXPECT_FALSE(plan.offset_of(*w));
    ASSERT_TRUE(plan.offset_of(*y));
    EXPECT_EQ(*plan.offset_of(*yt), *plan.offset_of(*y));
    EXPECT_EQ(*plan.offset_of(*row), *plan.offset_of(*y) + 64);
    EXPECT_EQ(plan.tensors.size(), 3u);  // y, cont, silu
    expect_no_live_overlap(g, plan);
}

TEST(MemoryPlanner, AReadThroughAViewKeepsTheBaseAlive) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {64});
    Tensor* a = g.silu(x);  // step 0
    Tensor* a_view = g.reshape(a, {8, 8});
    Tensor* b = g.gelu(x);         // step 1
    Tensor* c = g.scale(b, 2.0f);  // step 2
    Tensor* d = g.silu(a_view);    // step 3: reads a through its view
    g.mark_output(c);
    g.mark_output(d);
    const MemoryPlan plan = plan_memory(g);
    const auto slot = std::find_if(plan.tensors.begin(), plan.tensors.end(),
                                   [&](const PlannedTensor& p) { return p.tensor == a->id(); });
    ASSERT_NE(slot, plan.tensors.end());
    EXPECT_EQ(slot->last_step, 3);
    expect_no_live_overlap(g, plan);
}

TEST(MemoryPlanner, OffsetsAreAlignedForOddSizes) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F16, {3});
    std::vector<Tensor*> live;
    for (int i = 0; i < 5; ++i) live.push_back(g.silu(x));  // 6 bytes each, all alive at the end
    for (Tensor* t : live) g.mark_output(t);
    const MemoryPlan plan = plan_memory(g);
    ASSERT_EQ(plan.tensors.size(), 5u);
    for (const PlannedTensor& p : plan.tensors) {
        EXPECT_EQ(p.offset % 64, 0u);
        EXPECT_EQ(p.size, 64u);
    }
    EXPECT_EQ(plan.peak_bytes, 5u * 64u);
    EXPECT_EQ(plan.peak_bytes, plan.naive_bytes);  // nothing dies, nothing to reuse
    expect_no_live_overlap(g, plan);
}

TEST(MemoryPlanner, BestFitPicksTheSmallestFreedRange) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {16});
    Tensor* big = g.input("big", SY_TYPE_F32, {64});
    Tensor* a = g.silu(big);     // 256 bytes at 0
    Tensor* keep1 = g.silu(x);   // 64 at 256
    Tensor* b = g.silu(x);       // 64 at 320
    Tensor* keep2 = g.silu(x);   // 64 at 384
    g.mark_output(g.add(a, a));  // frees a: [0, 256) free
    g.mark_output(g.add(b, b));  // frees b: [320, 384) free
    Tensor* small = g.silu(x);   // best fit: b's 64 bytes, not a's 256
    g.mark_output(keep1);
    g.mark_output(keep2);
    g.mark_output(small);
    const MemoryPlan plan = plan_memory(g);
    EXPECT_EQ(*plan.offset_of(*small), *plan.offset_of(*b));
    expect_no_live_overlap(g, plan);
}

TEST(MemoryPlanner, SubSequenceKeepsTensorsReadLaterAlive) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {32});
    Tensor* a = g.silu(x);       // node 0
    Tensor* b = g.scale(a, 2);   // node 1
    Tensor* c = g.silu(b);       // node 2
    g.mark_output(g.add(c, a));  // node 3 reads a: outside the first split
    const std::vector<int32_t> first_split{0, 1, 2};
    const MemoryPlan plan = plan_memory(g, first_split);
    ASSERT_EQ(plan.tensors.size(), 3u);
    EXPECT_EQ(plan.tensors[0].tensor, a->id());
    EXPECT_EQ(plan.tensors[0].last_step, 3);  // the end of the split
    EXPECT_NE(*plan.offset_of(*a), *plan.offset_of(*c));
    const std::vector<int32_t> unordered{1, 0};
    EXPECT_THROW(plan_memory(g, unordered), Error);
}

TEST(MemoryPlanner, RandomGraphsNeverOverlapLiveTensors) {
    std::mt19937 rng(1234);
    for (int trial = 0; trial < 200; ++trial) {
        Graph g;
        std::vector<Tensor*> pool;
        std::uniform_int_distribution<int> rows(1, 40);
        const int64_t ne0 = 1 + trial % 13;
        pool.push_back(g.input("x", SY_TYPE_F32, {ne0, rows(rng)}));
        const int n_nodes = 2 + trial % 30;
        for (int i = 0; i < n_nodes; ++i) {
            std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
            Tensor* a = pool[pick(rng)];
            Tensor* t = nullptr;
            switch (rng() % 5) {
                case 0: t = g.silu(a); break;
                case 1: t = g.add(a, pool[0]->shape() == a->shape() ? pool[0] : a); break;
                case 2: t = g.cont(g.transpose(a)); break;
                case 3: t = a->elements() < 2048 ? g.concat(a, a, 1) : g.silu(a); break;
                default: t = g.scale(g.reshape(a, {a->elements()}), 3.0f); break;
            }
            pool.push_back(t);
        }
        for (Tensor* t : pool) {
            if (t->kind() == TensorKind::intermediate && rng() % 6 == 0) g.mark_output(t);
        }
        g.mark_output(pool.back());
        const MemoryPlan plan = plan_memory(g);
        ASSERT_EQ(plan.tensors.size(), g.nodes().size());
        EXPECT_LE(plan.peak_bytes, plan.naive_bytes);
        expect_no_live_overlap(g, plan);
        if (HasFailure()) {
            ADD_FAILURE() << "trial " << trial;
            return;
        }
    }
}

}  // namespace
}  // namespace sy
