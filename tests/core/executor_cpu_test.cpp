// The executor end to end on the real CPU plugin: a small attention-like block
// (rms_norm -> mul -> mul_mat -> rope -> mul_mat -> softmax -> silu of a transposed view -> add)
// against a naive computation written here, then again to take the cached-plan path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <tuple>

#include "switchyard/core/error.hpp"
#include "switchyard/core/executor.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/plugin_host.hpp"

namespace sy {
namespace {

constexpr int64_t kHeadDim = 4, kHeads = 2, kEmbd = kHeadDim * kHeads, kTokens = 5;
constexpr float kEps = 1e-5f, kScale = 0.5f, kFreqBase = 10000.0f;

// Row-major helpers over packed ggml-order data: element (i0, i1) of a {ne0, ne1} tensor is
// data[i1 * ne0 + i0].
struct Block {
    std::vector<float> x = std::vector<float>(kEmbd * kTokens);
    std::vector<float> norm_w = std::vector<float>(kEmbd);
    std::vector<float> wq = std::vector<float>(kEmbd * kEmbd);  // {K = kEmbd, N = kEmbd}
    std::vector<float> bias = std::vector<float>(kTokens);
    std::vector<int32_t> pos = std::vector<int32_t>(kTokens);
};

Block random_block(uint32_t seed) {
    Block b;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& v : b.x) v = u(rng);
    for (float& v : b.norm_w) v = 0.5f + u(rng) * 0.25f;
    for (float& v : b.wq) v = u(rng) * 0.5f;
    for (float& v : b.bias) v = u(rng);
    for (size_t t = 0; t < b.pos.size(); ++t) b.pos[t] = static_cast<int32_t>(3 + 2 * t);
    return b;
}

// The naive forward pass, following ops.h literally. Returns {q (after the matmul), out}.
std::pair<std::vector<float>, std::vector<float>> reference(const Block& b) {
    std::vector<float> h(kEmbd * kTokens);
    for (int64_t t = 0; t < kTokens; ++t) {
        double ss = 0;
        for (int64_t i = 0; i < kEmbd; ++i) ss += double(b.x[t * kEmbd + i]) * b.x[t * kEmbd + i];
        const double inv = 1.0 / std::sqrt(ss / kEmbd + kEps);
        for (int64_t i = 0; i < kEmbd; ++i)
            h[t * kEmbd + i] = float(b.x[t * kEmbd + i] * inv) * b.norm_w[i];
    }
    std::vector<float> q(kEmbd * kTokens);  // q[n, t] = sum_k wq[k, n] h[k, t]
    for (int64_t t = 0; t < kTokens; ++t)
        for (int64_t n = 0; n < kEmbd; ++n) {
            double acc = 0;
            for (int64_t k = 0; k < kEmbd; ++k)
                acc += double(b.wq[n * kEmbd + k]) * h[t * kEmbd + k];
            q[t * kEmbd + n] = float(acc);
        }
    std::vector<float> r = q;  // rope, normal mode, all dims of each head rotate
    for (int64_t t = 0; t < kTokens; ++t)
        for (int64_t head = 0; head < kHeads; ++head)
            for (int64_t i = 0; i < kHeadDim / 2; ++i) {
                const double theta = b.pos[t] * std::pow(kFreqBase, -2.0 * i / kHeadDim);
                const int64_t at = t * kEmbd + head * kHeadDim + 2 * i;
                const double a = q[at], c = q[at + 1];
                r[at] = float(a * std::cos(theta) - c * std::sin(theta));
                r[at + 1] = float(a * std::sin(theta) + c * std::cos(theta));
            }
    std::vector<float> sm(kTokens * kTokens);  // att[n, m] = sum_k r[k, n] r[k, m]; causal softmax
    for (int64_t m = 0; m < kTokens; ++m) {
        std::vector<double> row(kTokens);
        double mx = -INFINITY;
        for (int64_t n = 0; n < kTokens; ++n) {
            double acc = 0;
            for (int64_t k = 0; k < kEmbd; ++k) acc += double(r[n * kEmbd + k]) * r[m * kEmbd + k];
            row[n] = n > m ? -INFINITY : acc * kScale;
            mx = std::max(mx, row[n]);
        }
        double sum = 0;
        for (double& v : row) sum += (v = std::exp(v - mx));
        for (int64_t n = 0; n < kTokens; ++n) sm[m * kTokens + n] = float(row[n] / sum);
    }
    std::vector<float> out(kTokens * kTokens);  // out[i, j] = silu(sm[j, i]) + bias[i]
    for (int64_t j = 0; j < kTokens; ++j)
        for (int64_t i = 0; i < kTokens; ++i) {
            const double v = sm[i * kTokens + j];
            out[j * kTokens + i] = float(v / (1 + std::exp(-v))) + b.bias[i];
        }
    return {q, out};
}

struct BlockGraph {
    Graph g;
    Tensor* x;
    Tensor* pos;
    Tensor* q;
    Tensor* out;
};

std::unique_ptr<BlockGraph> build(Block& b) {
    auto bg = std::make_unique<BlockGraph>();
    Graph& g = bg->g;
    bg->x = g.input("inp_embd", SY_TYPE_F32, {kEmbd, kTokens});
    bg->pos = g.input("inp_pos", SY_TYPE_I32, {kTokens});
    Tensor* norm_w = g.weight("attn_norm.weight", SY_TYPE_F32, {kEmbd});
    Tensor* wq = g.weight("attn_q.weight", SY_TYPE_F32, {kEmbd, kEmbd});
    Tensor* bias = g.weight("bias", SY_TYPE_F32, {kTokens});
    bg->x->set_data(b.x.data());
    bg->pos->set_data(b.pos.data());
    norm_w->set_data(b.norm_w.data());
    wq->set_data(b.wq.data());
    bias->set_data(b.bias.data());

    Tensor* h = g.mul(g.rms_norm(bg->x, kEps), norm_w);
    bg->q = g.mul_mat(wq, h)->set_name("Qcur");
    Tensor* r = g.rope(g.reshape(bg->q, {kHeadDim, kHeads, kTokens}), bg->pos,
                       {.n_dims = kHeadDim, .freq_base = kFreqBase});
    Tensor* r2 = g.reshape(r, {kEmbd, kTokens});
    Tensor* att = g.softmax(g.mul_mat(r2, r2), {.scale = kScale, .causal = true});
    bg->out = g.add(g.silu(g.transpose(att)), bias)->set_name("out");
    g.mark_output(bg->q);
    g.mark_output(bg->out);
    return bg;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f) << "element " << i;
}

class ExecutorOnCpu : public ::testing::Test {
  protected:
    void SetUp() override {
#ifndef SWITCHYARD_CPU_PLUGIN_REQUIRED
        // Only while the tree has no CPU plugin target; once it has one, a missing file fails.
        if (!std::filesystem::exists(SWITCHYARD_CPU_PLUGIN)) {
            GTEST_SKIP() << "CPU plugin not built: " << SWITCHYARD_CPU_PLUGIN;
        }
#endif
        plugin_ = Plugin::load(SWITCHYARD_CPU_PLUGIN);
    }
    std::unique_ptr<Plugin> plugin_;
};

TEST_F(ExecutorOnCpu, BlockMatchesNaiveComputationAndReusesThePlan) {
    Block b = random_block(7);
    auto bg = build(b);
    Executor exec(*plugin_, 0);
    ASSERT_TRUE(exec.computes_on_host_memory());

    const RunReport first = exec.run(bg->g);
    EXPECT_FALSE(first.plan_reused);
    EXPECT_EQ(first.nodes, bg->g.nodes().size());
    EXPECT_GT(first.compute_buffer_bytes, 0u);
    EXPECT_LT(first.planned_peak_bytes, first.naive_bytes);
    EXPECT_EQ(first.staged_bytes, 0u) << "a host-memory device uses inputs in place";
    auto [q, out] = reference(b);
    expect_near(exec.read<float>(*bg->q), q);
    expect_near(exec.read<float>(*bg->out), out);
    const void* direct = exec.host_data(*bg->out);
    ASSERT_NE(direct, nullptr);
    EXPECT_EQ(std::memcmp(direct, exec.read<float>(*bg->out).data(), out.size() * 4), 0);

    // Same graph, new input values: the cached plan and buffer, new results.
    Block b2 = random_block(8);
    std::copy(b2.x.begin(), b2.x.end(), b.x.begin());  // same storage the graph points at
    const RunReport second = exec.run(bg->g);
    EXPECT_TRUE(second.plan_reused);
    EXPECT_EQ(second.compute_buffer_bytes, first.compute_buffer_bytes);
    std::tie(q, out) = reference(b);
    expect_near(exec.read<float>(*bg->out), out);

    // A graph rebuilt the same way (every decode step does this) reuses the plan too.
    auto rebuilt = build(b);
    EXPECT_TRUE(exec.run(rebuilt->g).plan_reused);
    EXPECT_EQ(exec.cached_plans(), 1u);
    expect_near(exec.read<float>(*rebuilt->q), q);
    EXPECT_THROW(exec.read<float>(*bg->q), Error) << "bg is not the graph run last";
}

// Decode steps read a cache view one row longer each time and write their row at a new offset:
// the plan is reused (views are bound per run, whatever their shape and offset, of outside and
// of planned tensors alike) and every step still reads and writes exactly its rows.
TEST_F(ExecutorOnCpu, GrowingCacheViewsReuseThePlan) {
    constexpr int64_t kRows = 4, kCapacity = 16;
    std::vector<float> cache(kRows * kCapacity), x(kCapacity), written(kRows * kCapacity, 0.0f);
    for (size_t i = 0; i < cache.size(); ++i) cache[i] = 0.01f * float(i % 37) - 0.15f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(i) - 0.5f;
    Executor exec(*plugin_, 0);
    for (int64_t n_kv = 3; n_kv <= 6; ++n_kv) {
        Graph g;
        Tensor* c = g.input("cache", SY_TYPE_F32, {kCapacity, kRows});
        c->set_data(cache.data());
        Tensor* x_all = g.input("x", SY_TYPE_F32, {kCapacity, 1});
        x_all->set_data(x.data());
        Tensor* log = g.input("written", SY_TYPE_F32, {kRows * kCapacity});
        log->set_data(written.data());
        Tensor* xs = g.view(x_all, {n_kv, 1}, {4, 4 * kCapacity}, 0);
        Tensor* rows = g.view(c, {n_kv, kRows}, {4, 4 * kCapacity}, 0);
        Tensor* out = g.silu(g.mul_mat(rows, xs));  // {kRows, 1} whatever n_kv is
        g.mark_output(out);
        // This step's row of `written`, and one element of the planned `out`, both at offsets
        // that move with the step.
        g.cpy(out, g.view(log, {kRows}, {4, 4 * kRows}, uint64_t(n_kv * kRows * 4)));
        Tensor* picked = g.cont(g.view(out, {1}, {4, 4}, uint64_t(n_kv % kRows) * 4));
        g.mark_output(picked);
        EXPECT_EQ(exec.run(g).plan_reused, n_kv > 3) << "n_kv " << n_kv;
        std::vector<float> want(kRows);
        for (int64_t r = 0; r < kRows; ++r) {
            double dot = 0;
            for (int64_t j = 0; j < n_kv; ++j) dot += double(cache[r * kCapacity + j]) * x[j];
            want[r] = float(dot / (1 + std::exp(-dot)));
        }
        expect_near(exec.read<float>(*out), want);
        expect_near(exec.read<float>(*picked), {want[size_t(n_kv % kRows)]});
        expect_near(std::vector<float>(written.begin() + n_kv * kRows,
                                       written.begin() + (n_kv + 1) * kRows),
                    want);
    }
    for (int64_t i = 0; i < 3 * kRows; ++i) EXPECT_EQ(written[size_t(i)], 0.0f) << i;
    for (int64_t i = 7 * kRows; i < kRows * kCapacity; ++i)
        EXPECT_EQ(written[size_t(i)], 0.0f) << i;
    EXPECT_EQ(exec.cached_plans(), 1u);
}

// One graph kept and run again (a decode graph moved a step on): its write moved along the
// cache and a causal offset shifted, the plan is reused and each run writes and reads where the
// graph now says.
TEST_F(ExecutorOnCpu, KeptGraphMovedBetweenRuns) {
    constexpr int64_t kRows = 4, kCapacity = 8;
    std::vector<float> x(kRows), log(kRows * kCapacity, 0.0f);
    Executor exec(*plugin_, 0);
    Graph g;
    Tensor* in = g.input("x", SY_TYPE_F32, {kRows});
    in->set_data(x.data());
    Tensor* cache = g.input("log", SY_TYPE_F32, {kRows, kCapacity});
    cache->set_data(log.data());
    Tensor* slot = g.cpy(g.scale(in, 2.0f), g.view(cache, {kRows}, {4, 4 * kRows}, 0));
    SoftmaxParams sp;
    sp.causal = true;  // row 0 sees elements 0 .. offset
    Tensor* p = g.softmax(g.view(in, {kRows, 1}, {4, 4 * kRows}, 0), sp);
    g.mark_output(p);
    for (int64_t step = 0; step < 3; ++step) {
        for (int64_t i = 0; i < kRows; ++i) x[size_t(i)] = float(step * 10 + i);
        if (step > 0) {
            g.move_view(slot, 4 * kRows);
            g.shift_iparam(p->producer(), 1, 1);
        }
        EXPECT_EQ(exec.run(g).plan_reused, step > 0) << "step " << step;
        for (int64_t i = 0; i < kRows; ++i)
            EXPECT_EQ(log[size_t(step * kRows + i)], 2.0f * x[size_t(i)]) << "step " << step;
        // Softmax over x[0 .. step]: the visible elements differ by 1 each.
        const std::vector<float> out = exec.read<float>(*p);
        double sum = 0;
        for (int64_t i = 0; i <= step; ++i) sum += std::exp(double(i - step));
        for (int64_t i = 0; i < kRows; ++i)
            EXPECT_NEAR(out[size_t(i)], i <= step ? std::exp(double(i - step)) / sum : 0.0, 1e-6)
                << "step " << step << " element " << i;
    }
    for (int64_t i = 3 * kRows; i < kRows * kCapacity; ++i) EXPECT_EQ(log[size_t(i)], 0.0f) << i;
}

// A planned intermediate that grows with the cache (the attention scores of a decode step): the
// first step that outgrows the plan makes it again with room to spare, and the steps after it
// reuse that plan until they outgrow it in turn; every step computes its own rows.
TEST_F(ExecutorOnCpu, GrowingIntermediatesReuseAPlanWithRoom) {
    constexpr int64_t kRows = 64, kCapacity = 32;
    std::vector<float> cache(kRows * kCapacity), x(kCapacity);
    for (size_t i = 0; i < cache.size(); ++i) cache[i] = 0.01f * float(i % 37) - 0.15f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * float(i % 11) - 0.5f;
    Executor exec(*plugin_, 0);
    int reused = 0;
    uint64_t largest = 0;
    for (int64_t n_kv = 4; n_kv <= kCapacity; ++n_kv) {
        Graph g;
        Tensor* c = g.input("cache", SY_TYPE_F32, {kCapacity, kRows});
        c->set_data(cache.data());
        Tensor* x_all = g.input("x", SY_TYPE_F32, {kCapacity, 1});
        x_all->set_data(x.data());
        Tensor* xs = g.view(x_all, {n_kv, 1}, {4, 4 * kCapacity}, 0);
        // {n_kv, kRows}: planned, n_kv * 256 bytes, so every step needs more than the last.
        Tensor* rows = g.cont(g.view(c, {n_kv, kRows}, {4, 4 * kCapacity}, 0));
        Tensor* out = g.mul_mat(rows, xs);
        g.mark_output(out);
        const RunReport& r = exec.run(g);
        reused += r.plan_reused ? 1 : 0;
        largest = std::max(largest, r.compute_buffer_bytes);
        std::vector<float> want(kRows);
        for (int64_t row = 0; row < kRows; ++row) {
            double dot = 0;
            for (int64_t j = 0; j < n_kv; ++j) dot += double(cache[row * kCapacity + j]) * x[j];
            want[size_t(row)] = float(dot);
        }
        expect_near(exec.read<float>(*out), want);
    }
    // 29 steps: planned again about every quarter of growth (at 5, 7, 9, 12, 16, 21, 27 here).
    EXPECT_GE(reused, 20);
    EXPECT_EQ(exec.cached_plans(), 1u);
    // The room costs at most a quarter more than the largest step needs.
    EXPECT_LE(largest, uint64_t(kCapacity * kRows * 4 * 5 / 4 + kRows * 4 + 1024));
}

TEST_F(ExecutorOnCpu, MissingInputDataIsNamed) {
    Graph g;
    Tensor* x = g.input("inp_embd", SY_TYPE_F32, {8});
    g.mark_output(g.silu(x));
    Executor exec(*plugin_, 0);
    try {
        exec.run(g);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'inp_embd'"), std::string::npos) << e.what();
    }
}

TEST_F(ExecutorOnCpu, SubSequenceNeedsItsSourcesInside) {
    std::vector<float> data(16, 1.0f);
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {16});
    x->set_data(data.data());
    Tensor* a = g.scale(x, 2.0f);
    Tensor* b = g.scale(a, 3.0f);
    g.mark_output(b);
    Executor exec(*plugin_, 0);
    const std::vector<int32_t> second_only{1};
    EXPECT_THROW(exec.run(g, second_only), Error);
    const std::vector<int32_t> first_only{0};
    exec.run(g, first_only);
    EXPECT_EQ(exec.read<float>(*a), std::vector<float>(16, 2.0f));
}

}  // namespace
}  // namespace sy
