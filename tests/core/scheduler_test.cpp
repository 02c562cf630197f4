// The scheduler (scheduler.hpp) running plans of place_ops across the CPU plugin and the
// simulated accelerator (sim_accelerator_plugin.cpp: the CPU's kernels behind memory the host
// cannot read): results equal to the CPU alone, bit for bit; the bytes that cross the link equal
// what the plan predicted and what the device counted; results stay in place between backends
// that share host memory; each policy knob changes where nodes run.
#include "switchyard/core/scheduler.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <memory>
#include <numeric>
#include <regex>
#include <sstream>
#include <vector>

#include "switchyard/core/error.hpp"
#include "switchyard/core/executor.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/placement.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/profile.hpp"
#include "switchyard/named_ops.h"

namespace sy {
namespace {

Plugin& cpu() {
    static std::unique_ptr<Plugin> plugin = Plugin::load(SWITCHYARD_CPU_PLUGIN);
    return *plugin;
}

Plugin& sim() {
    static std::unique_ptr<Plugin> plugin = Plugin::load(SWITCHYARD_SIM_PLUGIN);
    return *plugin;
}

// A function the sim plugin exports for tests (its counters), found in the loaded plugin; it
// stays valid while sim() is loaded.
template <typename Fn>
Fn sim_export(const char* name) {
    sim();
    void* lib = dlopen(SWITCHYARD_SIM_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    EXPECT_NE(lib, nullptr);
    auto fn = lib ? reinterpret_cast<Fn>(dlsym(lib, name)) : nullptr;
    EXPECT_NE(fn, nullptr) << name;
    if (lib) dlclose(lib);
    return fn;
}

using ThreeCounters = void (*)(uint64_t*, uint64_t*, uint64_t*, int);

struct SimCounters {
    uint64_t to_device = 0, to_host = 0, nodes = 0;
};

// Reads (and zeroes) the simulated device's counters.
SimCounters take_counters() {
    SimCounters c;
    if (auto fn = sim_export<ThreeCounters>("sy_sim_counters"))
        fn(&c.to_device, &c.to_host, &c.nodes, 1);
    return c;
}

struct SimHostMemory {
    uint64_t registered = 0, pinned_transfers = 0, transfers = 0;
};

// Reads the simulated device's registered host memory (and zeroes its transfer counts).
SimHostMemory take_host_memory() {
    SimHostMemory h;
    if (auto fn = sim_export<ThreeCounters>("sy_sim_host_memory"))
        fn(&h.registered, &h.pinned_transfers, &h.transfers, 1);
    return h;
}

// v[i] = ((i * mul) % mod - offset) / scale: small, varied test values.
void fill(std::vector<float>& v, int64_t mul, int64_t mod, int64_t offset, float scale) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(int64_t(i) * mul % mod - offset) / scale;
}

// A small two-layer MLP over a batch: y = W2 silu(W1 x + b) * 0.5, then a sum of rows.
struct Mlp {
    static constexpr int64_t K = 64, H = 96, N = 32, T = 8;
    std::vector<float> x, w1, b, w2;
    Graph g;
    Tensor* y = nullptr;
    Tensor* s = nullptr;

    Mlp() : x(K * T), w1(K * H), b(H), w2(H * N) {
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 23) - 11) / 8.0f;
        for (size_t i = 0; i < w1.size(); ++i) w1[i] = float(int(i * 5 % 19) - 9) / 32.0f;
        for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 5) - 2) / 4.0f;
        for (size_t i = 0; i < w2.size(); ++i) w2[i] = float(int(i * 3 % 17) - 8) / 32.0f;
        Tensor* in = g.input("x", SY_TYPE_F32, {K, T});
        Tensor* tw1 = g.weight("blk.0.ffn_up.weight", SY_TYPE_F32, {K, H});
        Tensor* tb = g.weight("blk.0.ffn_up.bias", SY_TYPE_F32, {H});
        Tensor* tw2 = g.weight("blk.0.ffn_down.weight", SY_TYPE_F32, {H, N});
        in->set_data(x.data());
        tw1->set_data(w1.data());
        tb->set_data(b.data());
        tw2->set_data(w2.data());
        Tensor* h = g.silu(g.add(g.mul_mat(tw1, in)->set_name("up"), tb)->set_name("biased"));
        y = g.scale(g.mul_mat(tw2, h->set_name("act"))->set_name("down"), 0.5f)->set_name("y");
        s = g.sum_rows(y)->set_name("sums");
        g.mark_output(y);
        g.mark_output(s);
    }
};

std::vector<BackendInfo> infos() {
    return {backend_info(cpu(), 0), backend_info(sim(), 0)};
}

Scheduler scheduler() {
    return Scheduler({{&cpu(), 0}, {&sim(), 0}});
}

OffloadPolicy pin(const char* op, const char* backend) {
    OffloadPolicy p;
    p.pins.push_back({op, "", backend, Phase::any, "test"});
    return p;
}

// The Mlp's two matrix products pinned to sim, its other ops to the cpu: 4 splits.
OffloadPolicy products_on_sim() {
    OffloadPolicy policy = pin("mul_mat", "sim");
    for (const char* op : {"add", "silu", "scale", "sum_rows"})
        policy.pins.push_back({op, "", "cpu", Phase::any, "test"});
    return policy;
}

// The node indices placed on `backend`.
std::vector<int32_t> nodes_on(const OpPlan& plan, int32_t backend) {
    std::vector<int32_t> out;
    for (size_t i = 0; i < plan.nodes.size(); ++i)
        if (plan.nodes[i].backend == backend) out.push_back(int32_t(i));
    return out;
}

struct CpuResult {
    std::vector<float> y, s;
};

CpuResult on_cpu_alone() {
    Mlp m;
    Executor exec(cpu(), 0);
    exec.run(m.g);
    return {exec.read<float>(*m.y), exec.read<float>(*m.s)};
}

TEST(Scheduler, MatrixProductsOnTheDeviceTheRestOnTheCpu) {
    const CpuResult want = on_cpu_alone();
    Mlp m;
    const auto backends = infos();
    const OpPlan plan = place_ops(m.g, backends, products_on_sim(), {Phase::prompt, Mlp::T});
    EXPECT_EQ(nodes_on(plan, 1), (std::vector<int32_t>{0, 3})) << "the two mul_mat nodes";
    ASSERT_EQ(plan.splits.size(), 4u);  // sim, cpu, sim, cpu

    Scheduler s = scheduler();
    take_counters();
    const ScheduleReport& r = s.run(m.g, plan);
    const SimCounters moved = take_counters();
    EXPECT_EQ(r.splits, 4u);
    EXPECT_EQ(r.overlapped, 0u) << "each split reads the one before";
    EXPECT_EQ(s.read<float>(*m.y), want.y) << "bit for bit the CPU's result";
    EXPECT_EQ(s.read<float>(*m.s), want.s);

    // What crossed the link: x, W1, W2 up (staged); up down; act up; down back.
    const uint64_t f = 4;
    EXPECT_EQ(r.staged_bytes, f * (Mlp::K * Mlp::T + Mlp::K * Mlp::H + Mlp::H * Mlp::N));
    EXPECT_EQ(r.link_bytes, f * (Mlp::H * Mlp::T * 2 + Mlp::N * Mlp::T));
    ASSERT_EQ(r.moves.size(), 3u);
    EXPECT_EQ(r.moves[0].from, 1);
    EXPECT_EQ(r.moves[0].to, 0);
    EXPECT_EQ(r.moves[1].from, 0);
    EXPECT_EQ(r.moves[1].to, 1);
    // The plan predicted exactly these bytes, and the device counted them.
    EXPECT_EQ(plan.copy_bytes(), r.staged_bytes + r.link_bytes);
    EXPECT_EQ(moved.to_device + moved.to_host, r.staged_bytes + r.link_bytes);
    EXPECT_EQ(moved.nodes, 2u);

    // The same shapes again (a decode step): plans reused, only the input goes up again.
    const ScheduleReport& again = s.run(m.g, plan);
    EXPECT_TRUE(again.plans_reused);
    EXPECT_EQ(again.staged_bytes, f * Mlp::K * Mlp::T);
    EXPECT_EQ(s.read<float>(*m.y), want.y);
}

// The same split plan over a staging limit of 1 byte: W2 is staged in W1's room, in another
// split (another compute call) than W1's reader, and both are uploaded again every run; the
// results stay the CPU's.
TEST(Scheduler, WeightsStagedPerUseAcrossSplits) {
    const CpuResult want = on_cpu_alone();
    Mlp m;
    const OpPlan plan = place_ops(m.g, infos(), products_on_sim(), {Phase::prompt, Mlp::T});
    ASSERT_EQ(plan.splits.size(), 4u);  // sim, cpu, sim, cpu
    Scheduler s = scheduler();
    s.set_staging_limit(1);
    const uint64_t f = 4, x = f * Mlp::K * Mlp::T, w1 = f * Mlp::K * Mlp::H,
                   w2 = f * Mlp::H * Mlp::N;
    for (int run = 0; run < 2; ++run) {
        SCOPED_TRACE(run);
        const ScheduleReport& r = s.run(m.g, plan);
        EXPECT_EQ(s.read<float>(*m.y), want.y) << "bit for bit the CPU's result";
        EXPECT_EQ(s.read<float>(*m.s), want.s);
        EXPECT_EQ(r.staged_bytes, x + w1 + w2) << "both weights again: they share their room";
        // x's slot, then one room for W1 and later W2 (the sim lane also imports `act`).
        const uint64_t act = f * Mlp::H * Mlp::T;
        EXPECT_EQ(r.staging_buffer_bytes[1], x + act + w1) << "not x + act + w1 + w2";
    }
}

TEST(Scheduler, EverythingOnTheDevice) {
    const CpuResult want = on_cpu_alone();
    Mlp m;
    OffloadPolicy policy;
    policy.mode = OffloadMode::always;
    for (const char* op : {"mul_mat", "add", "silu", "scale", "sum_rows"})
        policy.pins.push_back({op, "", "sim", Phase::any, "test"});
    const OpPlan plan = place_ops(m.g, infos(), policy, {Phase::prompt, Mlp::T});
    ASSERT_EQ(plan.splits.size(), 1u);
    Scheduler s = scheduler();
    const ScheduleReport& r = s.run(m.g, plan);
    EXPECT_TRUE(r.moves.empty());
    EXPECT_EQ(r.compute_buffer_bytes[0], 0u) << "the CPU ran nothing";
    EXPECT_EQ(s.read<float>(*m.y), want.y);
    EXPECT_EQ(s.read<float>(*m.s), want.s);
}

// Two backends on host memory (two instances of the CPU plugin): a result crosses without a
// copy, the reader binds the writer's bytes in place.
TEST(Scheduler, HostMemoryBackendsShareResultsInPlace) {
    const CpuResult want = on_cpu_alone();
    static std::unique_ptr<Plugin> second = Plugin::load(SWITCHYARD_CPU_PLUGIN);
    Mlp m;
    std::vector<BackendInfo> backends = {backend_info(cpu(), 0), backend_info(*second, 0)};
    backends[1].name = "cpu2";
    // Two instances' estimates differ a little (each measures the machine): pin every op.
    OffloadPolicy policy = pin("silu", "cpu2");
    for (const char* op : {"mul_mat", "add", "scale", "sum_rows"})
        policy.pins.push_back({op, "", "cpu", Phase::any, "test"});
    const OpPlan plan = place_ops(m.g, backends, policy, {Phase::prompt, Mlp::T});
    EXPECT_EQ(nodes_on(plan, 1), (std::vector<int32_t>{2}));
    EXPECT_EQ(plan.copy_bytes(), 0u);
    Scheduler s({{&cpu(), 0}, {second.get(), 0}});
    const ScheduleReport& r = s.run(m.g, plan);
    ASSERT_EQ(r.moves.size(), 2u);  // biased into cpu2, act back
    for (const MovedTensor& mv : r.moves) EXPECT_EQ(mv.bytes, 0u);
    EXPECT_EQ(r.link_bytes + r.staged_bytes, 0u);
    EXPECT_EQ(s.read<float>(*m.y), want.y);
}

// Two branches: a = Wa x on the cpu, then on sim b = 0.5 Wb x (which does not need a), c = a + b
// and its row sums. With overlap the scheduler runs b's two nodes beside a's split; the
// results are the CPU's, bit for bit, with overlap on and off, run after run.
TEST(Scheduler, IndependentNodesOfTheNextSplitRunBesideIt) {
    constexpr int64_t K = 64, N = 48, T = 4;
    std::vector<float> x(K * T), wa(K * N), wb(K * N);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 23) - 11) / 8.0f;
    for (size_t i = 0; i < wa.size(); ++i) wa[i] = float(int(i * 5 % 19) - 9) / 32.0f;
    for (size_t i = 0; i < wb.size(); ++i) wb[i] = float(int(i * 3 % 17) - 8) / 32.0f;
    struct Branches {
        Graph g;
        Tensor *c = nullptr, *s = nullptr;
    };
    auto build = [&](Branches& m) {
        Tensor* in = m.g.input("x", SY_TYPE_F32, {K, T});
        Tensor* ta = m.g.weight("blk.0.a.weight", SY_TYPE_F32, {K, N});
        Tensor* tb = m.g.weight("blk.0.b.weight", SY_TYPE_F32, {K, N});
        in->set_data(x.data());
        ta->set_data(wa.data());
        tb->set_data(wb.data());
        Tensor* a = m.g.mul_mat(ta, in)->set_name("a");
        Tensor* b = m.g.scale(m.g.mul_mat(tb, in)->set_name("b"), 0.5f)->set_name("half_b");
        m.c = m.g.add(a, b)->set_name("c");
        m.s = m.g.sum_rows(m.c)->set_name("sums");
        m.g.mark_output(m.c);
        m.g.mark_output(m.s);
    };
    Branches alone;
    build(alone);
    Executor exec(cpu(), 0);
    exec.run(alone.g);
    const std::vector<float> want_c = exec.read<float>(*alone.c),
                             want_s = exec.read<float>(*alone.s);

    Branches m;
    build(m);
    OffloadPolicy policy;
    policy.pins.push_back({"mul_mat", "^a$", "cpu", Phase::any, "test"});
    for (const char* op : {"mul_mat", "scale", "add", "sum_rows"})
        policy.pins.push_back({op, "", "sim", Phase::any, "test"});
    const OpPlan plan = place_ops(m.g, infos(), policy, {Phase::prompt, T});
    ASSERT_EQ(nodes_on(plan, 0), (std::vector<int32_t>{0})) << "a on the cpu";
    ASSERT_EQ(plan.splits.size(), 2u);  // cpu [a], sim [b, half_b, c, sums]
    for (const bool overlap : {true, false, true}) {
        SCOPED_TRACE(overlap);
        Scheduler s = scheduler();
        s.set_overlap(overlap);
        for (int run = 0; run < 3; ++run) {
            const ScheduleReport& r = s.run(m.g, plan);
            EXPECT_EQ(r.overlapped, overlap ? 2u : 0u) << "b and half_b beside a";
            EXPECT_EQ(r.splits, 2u);
            EXPECT_EQ(s.read<float>(*m.c), want_c) << "bit for bit the CPU's result";
            EXPECT_EQ(s.read<float>(*m.s), want_s);
        }
    }
    // A profile times every node on its own: nothing overlaps.
    Scheduler s = scheduler();
    Profile profile;
    s.set_profile(&profile);
    EXPECT_EQ(s.run(m.g, plan).overlapped, 0u);
    EXPECT_EQ(s.read<float>(*m.c), want_c);
}

// A split on a device returns once its nodes are sent: the next splits run meanwhile (another
// device's, the cpu's), and whoever reads a device's result waits for it then. Two simulated
// devices, each busy for a while after its product: together they take that while once, not
// twice.
TEST(Scheduler, DeviceSplitsRunWhileTheNextSplitsDo) {
    constexpr int64_t K = 64, N = 48, T = 4;
    constexpr double kDelayMs = 200;
    std::vector<float> x(K * T), wa(K * N), wb(K * N), wc(K * N);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i * 7 % 23) - 11) / 8.0f;
    for (size_t i = 0; i < wa.size(); ++i) wa[i] = float(int(i * 5 % 19) - 9) / 32.0f;
    for (size_t i = 0; i < wb.size(); ++i) wb[i] = float(int(i * 3 % 17) - 8) / 32.0f;
    for (size_t i = 0; i < wc.size(); ++i) wc[i] = float(int(i * 11 % 13) - 6) / 32.0f;
    struct Parts {
        Graph g;
        Tensor* sum = nullptr;
    };
    auto build = [&](Parts& m) {
        Tensor* in = m.g.input("x", SY_TYPE_F32, {K, T});
        in->set_data(x.data());
        Tensor* product[3];
        const char* names[3] = {"a", "b", "c"};
        std::vector<float>* data[3] = {&wa, &wb, &wc};
        for (int i = 0; i < 3; ++i) {
            Tensor* w =
                m.g.weight(std::string("blk.0.") + names[i] + ".weight", SY_TYPE_F32, {K, N});
            w->set_data(data[i]->data());
            product[i] = m.g.mul_mat(w, in)->set_name(names[i]);
        }
        // b and c (the devices') first, then a (the cpu's), then the sum.
        m.sum = m.g.add(m.g.add(product[0], product[1]), product[2])->set_name("sum");
        m.g.mark_output(m.sum);
    };
    Parts alone;
    build(alone);
    Executor exec(cpu(), 0);
    exec.run(alone.g);
    const std::vector<float> want = exec.read<float>(*alone.sum);

    ASSERT_TRUE(sim().set_option("devices", "2"));
    ASSERT_TRUE(sim().set_option("product_delay_us", std::to_string(kDelayMs * 1000)));
    Parts m;
    build(m);
    OffloadPolicy policy;
    policy.pins.push_back({"mul_mat", "^b$", "sim", Phase::any, "test"});
    policy.pins.push_back({"mul_mat", "^c$", "sim:1", Phase::any, "test"});
    for (const char* op : {"mul_mat", "add"})
        policy.pins.push_back({op, "", "cpu", Phase::any, "test"});
    const std::vector<BackendInfo> three = {backend_info(cpu(), 0), backend_info(sim(), 0),
                                            backend_info(sim(), 1)};
    const OpPlan plan = place_ops(m.g, three, policy, {Phase::prompt, T});
    ASSERT_EQ(plan.splits.size(), 4u);  // cpu [a], sim [b], sim:1 [c], cpu [sums] in node order
    for (const bool overlap : {true, false}) {
        SCOPED_TRACE(overlap);
        Scheduler s({{&cpu(), 0}, {&sim(), 0}, {&sim(), 1}});
        s.set_overlap(overlap);
        s.run(m.g, plan);  // staging and plans
        const auto start = std::chrono::steady_clock::now();
        s.run(m.g, plan);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        EXPECT_EQ(s.read<float>(*m.sum), want) << "bit for bit the CPU's result";
        if (overlap)
            EXPECT_LT(ms, 1.5 * kDelayMs) << "the two devices' products at the same time";
        else
            EXPECT_GE(ms, 2 * kDelayMs) << "one device after the other";
    }
    EXPECT_TRUE(sim().set_option("product_delay_us", "0"));
    EXPECT_TRUE(sim().set_option("devices", "1"));
}

// The policy decides: never offload, a minimum batch, a per-op switch.
TEST(Scheduler, PolicyKnobsMoveTheMatrixProducts) {
    const CpuResult want = on_cpu_alone();
    Mlp m;
    const auto backends = infos();
    OffloadPolicy always;
    always.mode = OffloadMode::always;
    const OpPlan offloaded = place_ops(m.g, backends, always, {Phase::prompt, Mlp::T});
    EXPECT_EQ(offloaded.nodes[0].backend, 1) << offloaded.nodes[0].reason;
    EXPECT_EQ(offloaded.nodes[3].backend, 1);

    OffloadPolicy never = always;
    never.mode = OffloadMode::never;
    const OpPlan kept = place_ops(m.g, backends, never, {Phase::prompt, Mlp::T});
    EXPECT_EQ(kept.nodes[0].backend, 0);
    EXPECT_EQ(kept.nodes[0].candidates[1].excluded, "offload.mode = never");

    OffloadPolicy batch = always;
    batch.min_batch = 32;
    const OpPlan small = place_ops(m.g, backends, batch, {Phase::prompt, Mlp::T});
    EXPECT_EQ(small.nodes[0].backend, 0);
    EXPECT_EQ(small.nodes[0].candidates[1].excluded, "batch 8 < offload.min_batch 32");

    OffloadPolicy switched = always;
    switched.ops.push_back({"mul_mat", false, "test"});
    const OpPlan off = place_ops(m.g, backends, switched, {Phase::prompt, Mlp::T});
    EXPECT_EQ(off.nodes[3].backend, 0);

    for (const OpPlan* plan : {&offloaded, &kept, &small, &off}) {
        Scheduler s = scheduler();
        s.run(m.g, *plan);
        EXPECT_EQ(s.read<float>(*m.y), want.y);
    }
}

// One graph run again and again by one scheduler (a kept decode graph): placed another way the
// lanes are collected and planned anew, placed the same way they are reused; an input given new
// data between runs is read from it. Every result is the cpu's.
TEST(Scheduler, OneGraphRunAgainUnderOtherPlacementsAndInputs) {
    const CpuResult want = on_cpu_alone();
    Mlp m;
    const auto backends = infos();
    OffloadPolicy always;
    always.mode = OffloadMode::always;
    OffloadPolicy never = always;
    never.mode = OffloadMode::never;
    const OpPlan offloaded = place_ops(m.g, backends, always, {Phase::prompt, Mlp::T});
    const OpPlan kept = place_ops(m.g, backends, never, {Phase::prompt, Mlp::T});
    const OpPlan split = place_ops(m.g, backends, products_on_sim(), {Phase::prompt, Mlp::T});
    Scheduler s = scheduler();
    for (const OpPlan* plan : {&offloaded, &offloaded, &kept, &split, &split, &offloaded}) {
        s.run(m.g, *plan);
        EXPECT_EQ(s.read<float>(*m.y), want.y);
        EXPECT_EQ(s.read<float>(*m.s), want.s);
    }
    // x negated, at another address: y = W2 silu(-W1 x + b) / 2 is another result, the cpu's.
    std::vector<float> negated(m.x.size());
    for (size_t i = 0; i < negated.size(); ++i) negated[i] = -m.x[i];
    Mlp other;
    other.x = negated;
    other.g.tensors()[0]->set_data(other.x.data());
    Executor exec(cpu(), 0);
    exec.run(other.g);
    const std::vector<float> want_negated = exec.read<float>(*other.y);
    ASSERT_NE(want_negated, want.y);
    m.g.tensors()[0]->set_data(negated.data());
    for (const OpPlan* plan : {&offloaded, &split}) {  // first as the run before: bound again
        s.run(m.g, *plan);
        EXPECT_EQ(s.read<float>(*m.y), want_negated);
    }
}

// A host split between two device splits, the device's next nodes independent of it (the shared
// experts beside the routed ones): the host's inputs are fetched before those nodes are sent, so
// the host starts at once instead of after them (sim counts its compute calls before each get).
TEST(Scheduler, HostSplitFetchesItsInputsBeforeTheDeviceRunsBesideIt) {
    constexpr int64_t K = 32, N = 32, T = 4;
    std::vector<float> x(K * T), wp(K * N), wq(N * N), wr(K * N);
    fill(x, 7, 23, 11, 8.0f);
    fill(wp, 5, 19, 9, 32.0f);
    fill(wq, 3, 17, 8, 32.0f);
    fill(wr, 11, 13, 6, 32.0f);
    struct Chain {  // p = P x; q = Q p; the sum of q and r = R x
        Graph g;
        Tensor* sum = nullptr;
    };
    auto build = [&](Chain& m) {
        Tensor* in = m.g.input("x", SY_TYPE_F32, {K, T});
        in->set_data(x.data());
        const auto weight = [&](const char* name, std::vector<float>& w, int64_t k) {
            Tensor* t = m.g.weight(std::string("blk.0.") + name + ".weight", SY_TYPE_F32, {k, N});
            t->set_data(w.data());
            return t;
        };
        Tensor* pv = m.g.mul_mat(weight("p", wp, K), in)->set_name("p");
        Tensor* q = m.g.mul_mat(weight("q", wq, N), pv)->set_name("q");
        Tensor* r = m.g.mul_mat(weight("r", wr, K), in)->set_name("r");
        m.sum = m.g.add(q, r)->set_name("sum");
        m.g.mark_output(m.sum);
    };
    Chain alone;
    build(alone);
    Executor exec(cpu(), 0);
    exec.run(alone.g);
    const std::vector<float> want = exec.read<float>(*alone.sum);

    Chain m;
    build(m);
    OffloadPolicy policy;
    policy.pins.push_back({"mul_mat", "^q$", "cpu", Phase::any, "test"});
    for (const char* op : {"mul_mat", "add"})
        policy.pins.push_back({op, "", "sim", Phase::any, "test"});
    const OpPlan plan = place_ops(m.g, infos(), policy, {Phase::prompt, T});
    ASSERT_EQ(plan.splits.size(), 3u);  // sim [p], cpu [q], sim [r, sum]
    const auto order = sim_export<void (*)(uint64_t*, uint64_t*, int)>("sy_sim_order");
    ASSERT_NE(order, nullptr);
    Scheduler s = scheduler();
    for (int run = 0; run < 2; ++run) {
        order(nullptr, nullptr, 1);
        const ScheduleReport& r = s.run(m.g, plan);
        uint64_t computes = 0, at_get = 0;
        order(&computes, &at_get, 0);
        EXPECT_EQ(r.overlapped, 1u) << "r beside q";
        EXPECT_EQ(at_get, 1u) << "p fetched after sim's first compute call, before r was sent";
        EXPECT_GE(computes, 2u);
        EXPECT_EQ(s.read<float>(*m.sum), want) << "bit for bit the CPU's result";
    }
}

// What crosses between the cpu and the device every run has its host side in memory offered to
// the device's plugin for direct transfers (ABI 1.2 host_register): the cpu lane's compute
// buffer, which the device's inputs are uploaded from, and the host copies the device's results
// are fetched into; staged weights and inputs stay the caller's. All of it is given back with the
// scheduler.
TEST(Scheduler, HostMemoryThatCrossesIsRegisteredWithTheDevice) {
    const CpuResult want = on_cpu_alone();
    Mlp m;
    const OpPlan plan = place_ops(m.g, infos(), products_on_sim(), {Phase::prompt, Mlp::T});
    const SimHostMemory before = take_host_memory();
    {
        Scheduler s = scheduler();
        for (int run = 0; run < 2; ++run) {
            const ScheduleReport& r = s.run(m.g, plan);
            const SimHostMemory h = take_host_memory();
            EXPECT_EQ(h.registered, before.registered + 3)
                << "the cpu's compute buffer, the host copies of up and down";
            ASSERT_EQ(r.moves.size(), 3u);
            EXPECT_EQ(h.pinned_transfers, 3u) << "up, act and down, each one transfer";
            EXPECT_EQ(h.transfers, run == 0 ? 6u : 4u) << "and x, W1, W2 staged (then x only)";
            EXPECT_EQ(s.read<float>(*m.y), want.y);
            take_host_memory();
        }
    }
    EXPECT_EQ(take_host_memory().registered, before.registered);
}

// A node that writes into external memory (a cache view) runs where that memory is.
TEST(Scheduler, CacheWritesStayWithTheCache) {
    std::vector<float> x(16, 1.5f), cache(32, 0.0f);
    Graph g;
    Tensor* in = g.input("x", SY_TYPE_F32, {16});
    Tensor* kv = g.input("cache_k", SY_TYPE_F32, {32});
    in->set_data(x.data());
    kv->set_data(cache.data());
    Tensor* y = g.scale(in, 2.0f)->set_name("k");
    g.cpy(y, g.view(kv, {16}, {4, 64, 64, 64}, 16 * 4));
    const auto backends = infos();
    OffloadPolicy policy;
    policy.pins.push_back({"scale", "", "sim", Phase::any, "test"});
    const OpPlan plan = place_ops(g, backends, policy, {Phase::decode, 1});
    EXPECT_EQ(plan.nodes[1].backend, 0) << plan.nodes[1].reason;
    ASSERT_EQ(plan.nodes[1].candidates.size(), 2u);
    EXPECT_NE(plan.nodes[1].candidates[1].excluded.find("writes into 'cache_k'"), std::string::npos)
        << plan.nodes[1].candidates[1].excluded;
    Scheduler s = scheduler();
    s.run(g, plan);
    for (size_t i = 0; i < 32; ++i) EXPECT_EQ(cache[i], i < 16 ? 0.0f : 3.0f) << i;

    OffloadPolicy wrong;
    wrong.pins.push_back({"cpy", "", "sim", Phase::any, "policy.toml:3:1"});
    try {
        place_ops(g, backends, wrong, {Phase::decode, 1});
        FAIL() << "a pin that would write a host cache on the device must be refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("policy.toml:3:1"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("writes into"), std::string::npos) << e.what();
    }
}

TEST(Profile, KindsDropLayersAndSuffixes) {
    EXPECT_EQ(Profile::kind_of("blk.12.ffn_down_exps.weight"), "ffn_down_exps");
    EXPECT_EQ(Profile::kind_of("blk.0.attn_k_b.weight (derived)"), "attn_k_b (derived)");
    EXPECT_EQ(Profile::kind_of("kq-3"), "kq");
    EXPECT_EQ(Profile::kind_of("l_out-"), "l_out-");
    EXPECT_EQ(Profile::kind_of("output.weight"), "output");
    EXPECT_EQ(Profile::kind_of(""), "");
}

// Every node run once per graph is counted once, on the backend that ran it; products are
// grouped by weight; the copies are the report's.
TEST(Profile, CountsEveryNodeWhereItRanAndTheCopies) {
    const CpuResult want = on_cpu_alone();
    Mlp m;
    const OpPlan plan = place_ops(m.g, infos(), products_on_sim(), {Phase::prompt, Mlp::T});
    Scheduler s = scheduler();
    Profile profile;
    s.set_profile(&profile);
    uint64_t link = 0;
    for (int run = 0; run < 3; ++run) {
        profile.begin_graph(Profile::Phase::prompt, Mlp::T);
        link += s.run(m.g, plan).link_bytes;
        profile.end_graph(0.0, 1.0);
    }
    EXPECT_EQ(s.read<float>(*m.y), want.y) << "one node at a time gives the same bits";
    const std::string text = profile.format();
    EXPECT_NE(text.find("profile, prompt batches: 3 graphs, 24 tokens"), std::string::npos) << text;
    EXPECT_EQ(text.find("decode steps"), std::string::npos) << text;
    // The table rows: name, calls, ...
    const auto calls = [&](const std::string& section, const std::string& row) {
        const size_t at = text.find(section);
        if (at == std::string::npos) return std::string("no section");
        size_t end = text.find("\n  ", at);  // the next line indented by two: next section
        while (end != std::string::npos && text.compare(end, 5, "\n    ") == 0)
            end = text.find("\n  ", end + 1);
        const std::string body = text.substr(at, end - at);
        const size_t line = body.find("\n    " + row + " ");
        if (line == std::string::npos) return std::string("no row");
        std::istringstream in(body.substr(line + 5 + row.size()));
        std::string count;
        in >> count;
        return count;
    };
    EXPECT_EQ(calls("backend sim:", "mul_mat"), "6") << text;
    EXPECT_EQ(calls("backend sim:", "ffn_up"), "3") << text;
    EXPECT_EQ(calls("backend sim:", "ffn_down"), "3") << text;
    EXPECT_EQ(calls("backend cpu:", "silu"), "3") << text;
    EXPECT_EQ(calls("backend cpu:", "mul_mat"), "no row") << text;
    // Each backend's line says how much of its time was spent in synchronize().
    for (const char* backend : {"cpu", "sim"}) {
        const std::regex line(
            std::string("\n  backend ") + backend +
            ": [0-9.]+ ms in ops \\([0-9.]+%\\), [0-9.]+ ms of it in synchronize\n");
        EXPECT_TRUE(std::regex_search(text, line)) << backend << "\n" << text;
    }
    EXPECT_GT(link, 0u);
    std::ostringstream kib;
    kib << std::fixed << std::setprecision(1) << double(link) / 1024 << " KiB";
    EXPECT_NE(text.find("copies between backends: "), std::string::npos) << text;
    EXPECT_NE(text.find(kib.str()), std::string::npos) << "the copies' bytes: " << link << "\n"
                                                       << text;
}

// A MoE block on the simulated device whose expert weights live in host memory: the fused up/gate
// product and the down product over ids that the device computes (top_k of router logits). The
// executor uploads only the experts the ids name, and later batches only the experts it has not
// uploaded yet; results equal the CPU's, bit for bit.
struct RoutedMoe {
    static constexpr int64_t K = 32, N = 16, E = 8, U = 2, T = 3;
    static constexpr uint64_t kExpertBytes = K * N * sizeof(float);
    std::vector<float> up, gate, down, x, logits;
    Graph g;
    Tensor *up_w, *y;
    RoutedMoe()
        : up(size_t(K * N * E)),
          gate(up.size()),
          down(up.size()),
          x(size_t(K * T)),
          logits(size_t(E * T), 0.0f) {
        for (size_t i = 0; i < up.size(); ++i) {
            up[i] = float(int(i * 7 % 13) - 6) / 8.0f;
            gate[i] = float(int(i * 5 % 11) - 5) / 8.0f;
            down[i] = float(int(i * 3 % 17) - 8) / 16.0f;
        }
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 9) - 4) / 4.0f;
        up_w = g.weight("blk.1.ffn_up_exps.weight", SY_TYPE_F32, {K, N, E});
        Tensor* gate_w = g.weight("blk.1.ffn_gate_exps.weight", SY_TYPE_F32, {K, N, E});
        Tensor* down_w = g.weight("blk.1.ffn_down_exps.weight", SY_TYPE_F32, {N, K, E});
        Tensor* in = g.input("x", SY_TYPE_F32, {K, 1, T});
        Tensor* router = g.input("logits", SY_TYPE_F32, {E, T});
        up_w->set_data(up.data());
        gate_w->set_data(gate.data());
        down_w->set_data(down.data());
        in->set_data(x.data());
        router->set_data(logits.data());
        Tensor* ids = g.top_k(router, U);
        Tensor* h = g.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                            {up_w, gate_w, in, ids}, SY_TYPE_F32, {N, U, T}, {{0}, {}});
        y = g.mul_mat_id(down_w, h, ids);
        g.mark_output(y);
    }
    // Token t routes to experts a and b.
    void route(std::initializer_list<std::pair<int, int>> pairs) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        int t = 0;
        for (auto [a, b] : pairs) {
            logits[size_t(t * E + a)] = 2.0f;
            logits[size_t(t * E + b)] = 1.0f;
            ++t;
        }
    }
};

TEST(Scheduler, DeviceUploadsOnlyTheRoutedExperts) {
    RoutedMoe m;
    Executor device(sim(), 0), host(cpu(), 0);
    ASSERT_FALSE(device.computes_on_host_memory());
    const uint64_t inputs = (RoutedMoe::K + RoutedMoe::E) * RoutedMoe::T * sizeof(float);
    auto check = [&](uint64_t experts_uploaded, const char* what) {
        SCOPED_TRACE(what);
        take_counters();
        const RunReport& r = device.run(m.g);
        EXPECT_EQ(r.staged_bytes, inputs + 3 * experts_uploaded * RoutedMoe::kExpertBytes)
            << "up, gate and down of " << experts_uploaded << " experts, and the inputs";
        EXPECT_EQ(take_counters().to_device, r.staged_bytes) << "what the device received";
        host.run(m.g);
        const auto want = host.read<float>(*m.y), got = device.read<float>(*m.y);
        ASSERT_EQ(want.size(), got.size());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
    };
    m.route({{1, 4}, {4, 6}, {6, 1}});
    check(3, "experts 1, 4, 6 of 8");
    m.route({{1, 2}, {2, 4}, {4, 1}});
    check(1, "expert 2 is new");
    m.route({{6, 2}, {1, 4}, {2, 6}});
    check(0, "all already on the device");
    // Weights at another host address are uploaded anew, again by the experts routed to.
    std::vector<float> other = m.up;
    for (float& v : other) v = -v;
    m.up_w->set_data(other.data());
    take_counters();
    const RunReport& r = device.run(m.g);
    EXPECT_EQ(r.staged_bytes, inputs + 4 * RoutedMoe::kExpertBytes) << "up's experts 1, 2, 4, 6";
    host.run(m.g);
    const auto want = host.read<float>(*m.y), got = device.read<float>(*m.y);
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
}

// Over the staging limit, weights read at different times share the staging buffer: up and gate
// (read by the fused product), then down in the room of one of them. The buffer holds two
// expert tensors instead of three; experts are uploaded again where their room was reused, and
// only there (the other of up and gate keeps its experts); results stay the CPU's, bit for bit.
TEST(Scheduler, OverTheStagingLimitWeightsShareTheirRoom) {
    RoutedMoe m;
    Executor device(sim(), 0), host(cpu(), 0);
    constexpr uint64_t kTensor = RoutedMoe::E * RoutedMoe::kExpertBytes;
    device.set_staging_limit(2 * kTensor);
    const uint64_t inputs = (RoutedMoe::K + RoutedMoe::E) * RoutedMoe::T * sizeof(float);
    auto check = [&](uint64_t experts_uploaded, const char* what) {
        SCOPED_TRACE(what);
        take_counters();
        const RunReport& r = device.run(m.g);
        EXPECT_TRUE(r.staged_per_use);
        EXPECT_EQ(r.staged_bytes, inputs + experts_uploaded * RoutedMoe::kExpertBytes);
        EXPECT_EQ(take_counters().to_device, r.staged_bytes) << "what the device received";
        EXPECT_LT(r.staging_buffer_bytes, inputs + 2 * kTensor + 1024) << "not three tensors";
        EXPECT_GE(r.staging_buffer_bytes, inputs + 2 * kTensor);
        host.run(m.g);
        const auto want = host.read<float>(*m.y), got = device.read<float>(*m.y);
        ASSERT_EQ(want.size(), got.size());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
    };
    m.route({{1, 4}, {4, 6}, {6, 1}});
    check(3 * 3, "experts 1, 4, 6 of up, gate and down");
    check(2 * 3, "down's room again, and down; the other kept");
    m.route({{1, 2}, {2, 4}, {4, 1}});
    check(2 * 3 + 1, "the same, and the kept one's new expert 2");

    // Under the limit nothing shares: the second run uploads only the inputs.
    Executor roomy(sim(), 0);
    roomy.set_staging_limit(3 * kTensor);
    EXPECT_FALSE(roomy.run(m.g).staged_per_use);
    EXPECT_GE(roomy.last_run().staging_buffer_bytes, inputs + 3 * kTensor);
    EXPECT_EQ(roomy.run(m.g).staged_bytes, inputs);
}

// A prompt's last, shorter ubatch is a graph of another shape: its plan puts the staged weights
// at the same offsets (weights first, inputs after), so it finds them there and uploads only its
// input; then the longer graph again finds everything but its input.
TEST(Scheduler, GraphsOfAnotherSizeFindTheStagedWeights) {
    constexpr int64_t K = 64, N = 48;
    std::vector<float> w(K * N), x(K * 8);
    for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 7 % 23) - 11) / 16.0f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 9) - 4) / 4.0f;
    struct Built {
        Graph g;
        Tensor* y = nullptr;
    };
    auto build = [&](int64_t tokens) {
        auto b = std::make_unique<Built>();
        Tensor* in = b->g.input("x", SY_TYPE_F32, {K, tokens});
        Tensor* weight = b->g.weight("blk.0.ffn_up.weight", SY_TYPE_F32, {K, N});
        in->set_data(x.data());
        weight->set_data(w.data());
        b->y = b->g.scale(b->g.mul_mat(weight, in), 0.5f);
        b->g.mark_output(b->y);
        return b;
    };
    Executor device(sim(), 0), host(cpu(), 0);
    const uint64_t weight_bytes = K * N * sizeof(float);
    for (int64_t tokens : {8, 5, 8}) {
        SCOPED_TRACE(tokens);
        const auto b = build(tokens);
        const bool first = device.cached_plans() == 0;
        const RunReport& r = device.run(b->g);
        const uint64_t input = uint64_t(K * tokens) * sizeof(float);
        EXPECT_EQ(r.staged_bytes, input + (first ? weight_bytes : 0));
        host.run(b->g);
        EXPECT_EQ(device.read<float>(*b->y), host.read<float>(*b->y));
    }
}

// One MoE layer's routed-expert product over a batch: E experts of {K, N} in F16 homed on the
// host; its activations come from a node that runs on the device.
struct ExpertBatch {
    static constexpr int64_t K = 1024, N = 704, E = 64, U = 6;
    Graph g;
    explicit ExpertBatch(int64_t tokens) {
        Tensor* w = g.weight("blk.1.ffn_down_exps.weight", SY_TYPE_F16, {K, N, E});
        Tensor* x = g.input("x", SY_TYPE_F32, {K, 1, tokens});
        Tensor* ids = g.input("ids", SY_TYPE_I32, {U, tokens});
        g.mark_output(g.mul_mat_id(w, g.scale(x, 1.0f)->set_name("act"), ids));
    }
};

// The smallest batch (a power of two) whose expert product the plan puts on sim, with the
// plugin's own cost hints at a link of `gbps`: the offload pays once the batch's compute on the
// host outweighs copying the experts it touches. The cpu side is a fixed roofline (100 GB/s,
// 0.25 TFLOP/s) instead of the CPU plugin's hints, which come from the bandwidth it measures at
// load and so move with the machine's load.
int64_t sim_crossover(double gbps) {
    EXPECT_TRUE(sim().set_option("link_gbps", std::to_string(gbps)));
    auto backends = infos();
    backends[0].estimate = nullptr;
    backends[0].props.memory_bandwidth = 100e9;
    backends[0].props.peak_flops_f32 = backends[0].props.peak_flops_f16 =
        backends[0].props.peak_flops_int8 = 0.25e12;
    backends[0].props.launch_overhead_ns = 0;
    OffloadPolicy pin_act = pin("scale", "sim");
    int64_t found = -1;
    for (int64_t batch = 1; batch <= 4096 && found < 0; batch *= 2) {
        const ExpertBatch m(batch);
        const OpPlan plan = place_ops(m.g, backends, pin_act, {Phase::prompt, batch, {}});
        const NodePlacement& moe = plan.nodes.back();
        if (moe.candidates.size() != 2) {
            ADD_FAILURE() << "expected 2 candidates, got " << moe.candidates.size();
            break;
        }
        EXPECT_EQ(moe.candidates[1].source, CostSource::hint) << "sim's own hint";
        if (moe.backend == 1) {
            EXPECT_EQ(moe.reason, "cheapest of 2");
            found = batch;
        }
    }
    EXPECT_TRUE(sim().set_option("link_gbps", "25"));
    return found;
}

TEST(Scheduler, ExpertOffloadCrossoverMovesWithTheSimulatedLink) {
    const int64_t slow = sim_crossover(4), medium = sim_crossover(16), fast = sim_crossover(64);
    std::printf("expert offload pays from batch %lld at 4 GB/s, %lld at 16, %lld at 64\n",
                static_cast<long long>(slow), static_cast<long long>(medium),
                static_cast<long long>(fast));
    EXPECT_GT(fast, 1) << "one token never pays for copying experts";
    EXPECT_LT(fast, medium);
    EXPECT_LT(medium, slow);
}

TEST(Scheduler, RefusesAPlanOfAnotherGraph) {
    Mlp m;
    const OpPlan plan = place_ops(m.g, infos(), {}, {Phase::prompt, Mlp::T});
    Graph other;
    Tensor* a = other.input("a", SY_TYPE_F32, {4});
    other.scale(a, 2.0f);
    Scheduler s = scheduler();
    EXPECT_THROW(s.run(other, plan), Error);
    OpPlan bad = plan;
    bad.nodes[0].backend = 7;
    EXPECT_THROW(s.run(m.g, bad), Error);
}

}  // namespace
}  // namespace sy
