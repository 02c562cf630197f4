// Placement decisions with made-up backends: a host CPU and a device with its own memory behind
// a link, each described by its properties only (roofline costs), so every figure below follows
// from the numbers set here.
#include "switchyard/core/placement.hpp"

#include <gtest/gtest.h>

#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"
#include "error_message.hpp"

namespace sy {
namespace {

using test::contains;
using test::error_of;

BackendInfo host_cpu() {
    BackendInfo b;
    b.name = "cpu";
    b.props.host_memory = 1;
    b.props.peak_flops_f32 = b.props.peak_flops_f16 = b.props.peak_flops_int8 = 1e12;
    b.props.memory_bandwidth = 50e9;
    b.supports = [](const sy_node&) { return true; };
    return b;
}

// 40x the CPU's memory bandwidth, 100x its flops, `link` bytes/s to host memory.
BackendInfo device(double link, bool argsort = true) {
    BackendInfo b;
    b.name = "dev";
    b.props.memory_total = b.props.memory_free = uint64_t(8) << 30;
    b.props.peak_flops_f32 = b.props.peak_flops_f16 = b.props.peak_flops_int8 = 100e12;
    b.props.memory_bandwidth = 2e12;
    b.props.link_bandwidth = link;
    b.props.link_latency_ns = 10e3;
    b.props.launch_overhead_ns = 5e3;
    b.supports = [argsort](const sy_node& n) { return argsort || n.op != SY_OP_ARGSORT; };
    return b;
}

// One MoE block: a dense projection, the router, and the routed experts' product.
// E experts of {K, N} in F16, `tokens` tokens, `used` experts per token.
struct MoeGraph {
    Graph g;
    Tensor *x, *proj, *experts, *ids, *dense, *moe;
    MoeGraph(int64_t tokens, int64_t E = 64, int64_t used = 6, int64_t K = 2048, int64_t N = 1408) {
        x = g.input("inp", SY_TYPE_F32, {K, tokens});
        proj = g.weight("blk.0.attn_q.weight", SY_TYPE_F16, {K, K});
        experts = g.weight("blk.0.ffn_up_exps.weight", SY_TYPE_F16, {K, N, E});
        ids = g.input("ids", SY_TYPE_I32, {used, tokens});
        dense = g.mul_mat(proj, x);
        moe = g.mul_mat_id(experts, g.reshape(dense, {K, 1, tokens}), ids);
        g.mark_output(moe);
    }
    // Inputs in host memory; expert weights on the host, the other weights on the device.
    std::function<int32_t(const Tensor&)> homes() const {
        return [](const Tensor& t) {
            if (t.kind() == TensorKind::input) return kHostInput;
            return contains(t.name(), "_exps") ? 0 : 1;
        };
    }
};

OpPlan plan_for(const MoeGraph& m, double link, int64_t batch, const OffloadPolicy& policy = {}) {
    const std::vector<BackendInfo> backends{host_cpu(), device(link)};
    OpPlacementRequest request{batch > 1 ? Phase::prompt : Phase::decode, batch, m.homes()};
    return place_ops(m.g, backends, policy, request);
}

// The MoE node is the last one.
int32_t moe_backend(const OpPlan& plan) {
    return plan.nodes.back().backend;
}

TEST(WeightPlacement, FirstMatchingRuleWinsThenTheDefault) {
    const std::vector<BackendInfo> backends{host_cpu(), device(25e9)};
    const std::vector<WeightInfo> weights{{"blk.0.attn_q.weight", 100},
                                          {"blk.0.ffn_up_exps.weight", 1000},
                                          {"blk.1.ffn_down_exps.weight", 1000},
                                          {"output.weight", 10}};
    PlacementPolicy policy;
    policy.default_backend = "dev";
    policy.rules = {{R"(blk\.1\.)", "dev", "a.toml:3:1"},
                    {R"(\.ffn_.*_exps\.)", "cpu", "a.toml:6:1"}};
    const WeightPlan plan = place_weights(weights, policy, backends, "cpu");
    ASSERT_EQ(plan.homes.size(), 4u);
    EXPECT_EQ(plan.homes[0].backend, 1);
    EXPECT_EQ(plan.homes[0].rule, -1);
    EXPECT_EQ(plan.homes[1].backend, 0);
    EXPECT_EQ(plan.homes[1].rule, 1);
    EXPECT_EQ(plan.homes[2].backend, 1) << "rule 1 comes first";
    EXPECT_EQ(plan.homes[3].backend, 1);
    EXPECT_EQ(plan.bytes_per_backend[0], 1000u);
    EXPECT_EQ(plan.bytes_per_backend[1], 1110u);
    EXPECT_EQ(plan.reason(1, policy), R"(rule 2 '\.ffn_.*_exps\.' (a.toml:6:1))");
    EXPECT_EQ(plan.reason(0, policy), "default backend");
    EXPECT_TRUE(plan.warnings.empty());
}

TEST(WeightPlacement, WarnsAboutRulesThatMatchNothingOrAreShadowed) {
    const std::vector<BackendInfo> backends{host_cpu(), device(25e9)};
    const std::vector<WeightInfo> weights{{"blk.0.ffn_up_exps.weight", 1},
                                          {"blk.0.ffn_gate_exps.weight", 1}};
    PlacementPolicy policy;
    policy.rules = {{"_exps", "cpu", "-ot #1"},
                    {"ffn_up_exps", "dev", "-ot #2"},
                    {"attn_kv_b", "dev", "-ot #3"}};
    const WeightPlan plan = place_weights(weights, policy, backends, "dev");
    ASSERT_EQ(plan.warnings.size(), 2u);
    EXPECT_TRUE(contains(plan.warnings[0], "rule 2 'ffn_up_exps' (-ot #2) is shadowed"))
        << plan.warnings[0];
    EXPECT_TRUE(contains(plan.warnings[1], "rule 3 'attn_kv_b' (-ot #3) matches no tensor"))
        << plan.warnings[1];
}

TEST(WeightPlacement, BackendNamesAreMatchedInLlamaCppsSpellings) {
    BackendInfo cuda1 = device(25e9);
    cuda1.name = "cuda:1";
    BackendInfo cuda0 = device(25e9);
    cuda0.name = "cuda";
    const std::vector<BackendInfo> backends{host_cpu(), cuda0, cuda1};
    EXPECT_EQ(find_backend(backends, "CPU", "-ot #1"), 0);
    EXPECT_EQ(find_backend(backends, "CUDA0", "-ot #1"), 1);
    EXPECT_EQ(find_backend(backends, "cuda:0", "-ot #1"), 1);
    EXPECT_EQ(find_backend(backends, "CUDA1", "-ot #1"), 2);
    EXPECT_TRUE(contains(error_of([&] { find_backend(backends, "CUDA2", "-ot #1"); }),
                         "-ot #1: backend 'CUDA2' is not loaded (loaded: cpu, cuda, cuda:1)"));
}

TEST(WeightPlacement, RefusesUnknownBackendsBadRegexesAndOverfullDevices) {
    const std::vector<BackendInfo> backends{host_cpu(), device(25e9)};
    const std::vector<WeightInfo> weights{{"blk.0.ffn_up_exps.weight", uint64_t(9) << 30}};
    PlacementPolicy unknown;
    unknown.rules = {{"exps", "cuda", "p.toml:4:1"}};
    const std::string e1 = error_of([&] { place_weights(weights, unknown, backends, "cpu"); });
    EXPECT_TRUE(contains(e1,
                         "placement rule 1 (p.toml:4:1): backend 'cuda' is not loaded "
                         "(loaded: cpu, dev)"))
        << e1;
    PlacementPolicy bad_regex;
    bad_regex.rules = {{"ffn_(up", "cpu", "-ot #1"}};
    const std::string e2 = error_of([&] { place_weights(weights, bad_regex, backends, "cpu"); });
    EXPECT_TRUE(contains(e2, "placement rule 1 (-ot #1): invalid regex 'ffn_(up'")) << e2;
    PlacementPolicy on_device;
    on_device.default_backend = "dev";
    const std::string e3 = error_of([&] { place_weights(weights, on_device, backends, "cpu"); });
    EXPECT_TRUE(contains(e3, "the weights placed on 'dev' (9216 MiB) do not fit in its 8192 MiB"))
        << e3;
    on_device.rules = {{"exps", "cpu", "-ot #1"}};  // on the host they stay mapped: no limit
    EXPECT_NO_THROW(place_weights(weights, on_device, backends, "cpu"));
}

// --fit: what no rule places fills the devices, fastest first, non-experts before the routed
// experts, each device keeping the margin and the caller's reserve free; the rest goes to the
// host. Weights a rule puts on a device count against its room.
TEST(WeightPlacement, FitFillsTheFastestDeviceFirstAndTheExpertsLast) {
    BackendInfo slow = device(25e9), fast = device(25e9);
    slow.name = "slow";
    slow.props.memory_bandwidth = 1e12;
    slow.props.memory_free = 1000;
    fast.name = "fast";
    fast.props.memory_free = 1500;
    const std::vector<BackendInfo> backends{host_cpu(), slow, fast};
    const std::vector<WeightInfo> weights{{"blk.0.ffn_up_exps.weight", 400},
                                          {"blk.0.attn_q.weight", 300},
                                          {"blk.1.ffn_up_exps.weight", 400},
                                          {"blk.1.attn_q.weight", 300},
                                          {"blk.2.ffn_up_exps.weight", 400},
                                          {"output.weight", 500},
                                          {"blk.3.ffn_up_exps.weight", 400}};
    PlacementPolicy policy;
    policy.default_backend = "slow";
    policy.rules = {{"^output", "fast", "-ot #1"}};
    policy.fit = true;
    policy.fit_where = "--fit";
    policy.fit_margin = 100;
    const std::vector<uint64_t> reserved{0, 0, 200};  // fast: 1500 - 100 - 200 - 500 = 700 left
    const WeightPlan plan = place_weights(weights, policy, backends, "cpu", reserved);
    // fast (700): attn_q 0 and 1 (600); slow (900): expert 0, 1 (800); experts 2 and 3 spill.
    const std::vector<int32_t> want{1, 2, 1, 2, 0, 2, 0};
    for (size_t i = 0; i < weights.size(); ++i)
        EXPECT_EQ(plan.homes[i].backend, want[i]) << weights[i].name;
    EXPECT_EQ(plan.homes[5].rule, 0) << "the rule's home stands";
    EXPECT_EQ(plan.reason(1, policy), "--fit");
    EXPECT_EQ(plan.reason(4, policy), "--fit: no device had room");
    EXPECT_EQ(plan.bytes_per_backend, (std::vector<uint64_t>{800, 800, 1100}));
    policy.fit_where = "a.toml:2:1";
    EXPECT_EQ(plan.reason(1, policy), "placement.fit (a.toml:2:1)");

    // Without a host backend nothing can spill: the default device's limit is reported.
    const std::vector<BackendInfo> devices_only{slow, fast};
    const std::vector<uint64_t> reserve_fast{0, 200};
    const std::string e =
        error_of([&] { place_weights(weights, policy, devices_only, "slow", reserve_fast); });
    EXPECT_TRUE(contains(e, "the weights placed on 'slow'")) << e;
}

TEST(WeightPlacement, TensorSplitDividesTheDeviceLayersInProportion) {
    BackendInfo d0 = device(25e9), d1 = device(25e9), d2 = device(25e9);
    d1.name = "dev:1";
    d2.name = "dev:2";
    const std::vector<BackendInfo> backends{host_cpu(), d0, d1, d2};
    std::vector<WeightInfo> weights{{"token_embd.weight", 10}, {"output.weight", 10}};
    for (int l = 0; l < 8; ++l)
        for (const char* w : {"attn_q", "ffn_up_exps"})
            weights.push_back({"blk." + std::to_string(l) + "." + w + ".weight", 10});
    PlacementPolicy policy;
    policy.default_backend = "cpu";
    // -ngl 6 of 8: layers 2-7 on dev (a splitting rule); a user rule sends layer 7's experts to
    // the cpu, and the split leaves that home alone.
    policy.rules = {{"^blk\\.7\\.ffn_up_exps", "cpu", "-ot #1"},
                    {"^blk\\.([2-7])\\.", "dev", "-ngl 6", true}};
    policy.tensor_split = {1, 0, 2};  // dev:1 gets nothing; dev 1/3, dev:2 2/3 of the 6 layers
    policy.tensor_split_where = "--tensor-split";
    const WeightPlan plan = place_weights(weights, policy, backends, "cpu");
    const auto home = [&](const std::string& name) {
        for (size_t i = 0; i < weights.size(); ++i)
            if (weights[i].name == name) return backends[size_t(plan.homes[i].backend)].name;
        return std::string("?");
    };
    EXPECT_EQ(home("token_embd.weight"), "cpu");
    EXPECT_EQ(home("blk.1.attn_q.weight"), "cpu") << "not offloaded";
    EXPECT_EQ(home("blk.2.attn_q.weight"), "dev");
    EXPECT_EQ(home("blk.3.ffn_up_exps.weight"), "dev");
    for (int l = 4; l < 8; ++l) EXPECT_EQ(home("blk." + std::to_string(l) + ".attn_q.weight"), "dev:2");
    EXPECT_EQ(home("blk.7.ffn_up_exps.weight"), "cpu") << "the user's rule stands";
    size_t split_index = 0;
    while (weights[split_index].name != "blk.4.attn_q.weight") ++split_index;
    EXPECT_EQ(plan.homes[split_index].rule, WeightPlan::kSplit);
    EXPECT_EQ(plan.reason(split_index, policy), "rule 2 (-ngl 6), --tensor-split");

    // More proportions than devices; a bad list.
    policy.tensor_split = {1, 1, 1, 1};
    EXPECT_TRUE(contains(error_of([&] { place_weights(weights, policy, backends, "cpu"); }),
                         "--tensor-split: 4 proportions for 3 device backends loaded"));
    EXPECT_EQ(parse_tensor_split("3,1", "-ts"), (std::vector<double>{3, 1}));
    EXPECT_TRUE(contains(error_of([] { parse_tensor_split("3,x", "-ts"); }),
                         "-ts '3,x': 'x' is not a proportion"));
    EXPECT_TRUE(contains(error_of([] { parse_tensor_split("0,0", "-ts"); }),
                         "every proportion is 0"));
    EXPECT_TRUE(contains(error_of([] { parse_tensor_split("1,,2", "-ts"); }), "'' is not"));
}

TEST(OpPlacement, HostExpertsStayOnTheHostForOneTokenAndTheRestRunsWhereItsWeightsAre) {
    const MoeGraph m(1);
    const OpPlan plan = plan_for(m, 25e9, 1);
    ASSERT_EQ(plan.nodes.size(), 2u);
    EXPECT_EQ(plan.nodes[0].backend, 1) << "the projection's weights are on the device";
    EXPECT_EQ(moe_backend(plan), 0);
    EXPECT_EQ(plan.nodes.back().reason, "cheapest of 2");
    ASSERT_EQ(plan.splits.size(), 2u);
    EXPECT_EQ(plan.splits[0].backend, 1);
    EXPECT_EQ(plan.splits[1].first, 1);
    // The input goes up to the device; the projection's result comes back for the experts.
    ASSERT_EQ(plan.copies.size(), 2u);
    EXPECT_EQ(plan.copies[0].tensor, m.x->id());
    EXPECT_EQ(plan.copies[0].from, kHostInput);
    EXPECT_EQ(plan.copies[0].to, 1);
    EXPECT_EQ(plan.copies[1].tensor, m.dense->id());
    EXPECT_EQ(plan.copies[1].from, 1);
    EXPECT_EQ(plan.copies[1].to, 0);
    EXPECT_EQ(plan.copy_bytes(), uint64_t(2 * 2048 * 4));
    // On the device the experts would cost 6 of 64 experts' bytes over the link (and the ids).
    const CandidateCost& dev = plan.nodes.back().candidates[1];
    EXPECT_EQ(dev.transfer_bytes, uint64_t(m.experts->bytes()) / 64 * 6 + 6 * 4);
    EXPECT_EQ(dev.source, CostSource::roofline);
}

// The batch from which the experts' product moves to the device, or -1 up to 4096.
int64_t crossover(double link) {
    for (int64_t batch = 1; batch <= 4096; batch *= 2) {
        const MoeGraph m(batch);
        if (moe_backend(plan_for(m, link, batch)) == 1) return batch;
    }
    return -1;
}

TEST(OpPlacement, OffloadCrossoverMovesWithTheLinkBandwidth) {
    const int64_t slow = crossover(8e9), fast = crossover(32e9);
    EXPECT_GT(slow, 1);
    EXPECT_GT(fast, 1);
    EXPECT_LT(fast, slow) << "a faster link pays off at smaller batches";
}

TEST(OpPlacement, PolicyKnobs) {
    const MoeGraph big(512);
    EXPECT_EQ(moe_backend(plan_for(big, 25e9, 512)), 1) << "by cost, 512 tokens offload";

    OffloadPolicy never;
    never.mode = OffloadMode::never;
    OpPlan p = plan_for(big, 25e9, 512, never);
    EXPECT_EQ(moe_backend(p), 0);
    EXPECT_EQ(p.nodes.back().candidates[1].excluded, "offload.mode = never");
    EXPECT_EQ(p.nodes[0].backend, 1) << "only ops on host weights are held back";

    OffloadPolicy off_switch;
    off_switch.ops = {{"mul_mat_id", false, "--offload-policy"}};
    p = plan_for(big, 25e9, 512, off_switch);
    EXPECT_EQ(moe_backend(p), 0);
    EXPECT_EQ(p.nodes.back().candidates[1].excluded,
              "offload.ops.mul_mat_id = false (--offload-policy)");

    OffloadPolicy min_batch;
    min_batch.min_batch = 1024;
    p = plan_for(big, 25e9, 512, min_batch);
    EXPECT_EQ(moe_backend(p), 0);
    EXPECT_EQ(p.nodes.back().candidates[1].excluded, "batch 512 < offload.min_batch 1024");

    const MoeGraph one(1);
    OffloadPolicy always;
    always.mode = OffloadMode::always;
    p = plan_for(one, 25e9, 1, always);
    EXPECT_EQ(moe_backend(p), 1) << "always: even one token";
    EXPECT_EQ(p.nodes.back().candidates[0].excluded, "offload.mode = always");

    OffloadPolicy pinned;
    pinned.pins = {{"mul_mat_id", "", "dev", Phase::decode, "p.toml:9:1"}};
    p = plan_for(one, 25e9, 1, pinned);
    EXPECT_EQ(moe_backend(p), 1);
    EXPECT_EQ(p.nodes.back().reason, "pin (p.toml:9:1)");
    p = plan_for(big, 8e9, 512, pinned);
    EXPECT_EQ(p.nodes.back().reason, "cheapest of 2") << "a decode pin does not hold for prompts";
}

TEST(OpPlacement, PinErrors) {
    const MoeGraph m(1);
    OffloadPolicy unknown;
    unknown.pins = {{"mul_mat", "", "cuda", Phase::any, "p.toml:2:1"}};
    const std::string e1 = error_of([&] { plan_for(m, 25e9, 1, unknown); });
    EXPECT_TRUE(contains(e1, "offload pin 1 (p.toml:2:1): backend 'cuda' is not loaded")) << e1;
    OffloadPolicy contradictory;
    contradictory.pins = {{"mul_mat", "", "cpu", Phase::any, "p.toml:2:1"},
                          {"mul_mat", "", "dev", Phase::any, "p.toml:6:1"}};
    const std::string e2 = error_of([&] { plan_for(m, 25e9, 1, contradictory); });
    EXPECT_TRUE(contains(e2, "contradicts the pin at p.toml:2:1")) << e2;
    OffloadPolicy bad_regex;
    bad_regex.pins = {{"mul_mat", "[", "cpu", Phase::any, "p.toml:2:1"}};
    EXPECT_TRUE(contains(error_of([&] { plan_for(m, 25e9, 1, bad_regex); }), "invalid regex '['"));
}

TEST(OpPlacement, NodesWithoutABackendAreNamed) {
    Graph g;
    Tensor* scores = g.input("scores", SY_TYPE_F32, {64, 1});
    g.mark_output(g.argsort(scores));
    const std::vector<BackendInfo> device_only{device(25e9, false)};
    const std::string e = error_of([&] {
        place_ops(g, device_only, {}, {Phase::decode, 1, nullptr});
    });
    EXPECT_TRUE(contains(e, "no loaded backend supports node 0 argsort")) << e;

    // Host experts, device that lacks nothing, but the policy keeps them home and the host
    // backend cannot run the op: nothing is left.
    BackendInfo picky = host_cpu();
    picky.supports = [](const sy_node& n) { return n.op != SY_OP_MUL_MAT_ID; };
    const MoeGraph m(1);
    const std::vector<BackendInfo> backends{picky, device(25e9)};
    OffloadPolicy never;
    never.mode = OffloadMode::never;
    const std::string e2 = error_of([&] {
        place_ops(m.g, backends, never, {Phase::decode, 1, m.homes()});
    });
    EXPECT_TRUE(contains(e2, "the offload policy leaves no backend for node 1 mul_mat_id")) << e2;
    EXPECT_TRUE(contains(e2, "dev: offload.mode = never")) << e2;
}

TEST(OpPlacement, ThePluginsEstimateReplacesTheRoofline) {
    const MoeGraph m(1);
    std::vector<BackendInfo> backends{host_cpu(), device(25e9)};
    backends[0].estimate = [](const sy_node& n) -> std::optional<double> {
        if (n.op == SY_OP_MUL_MAT_ID) return 123.0;
        return std::nullopt;
    };
    const OpPlan plan = place_ops(m.g, backends, {}, {Phase::decode, 1, m.homes()});
    const CandidateCost& moe = plan.nodes.back().candidates[0];
    EXPECT_EQ(moe.source, CostSource::hint);
    EXPECT_DOUBLE_EQ(moe.compute_ns, 123.0);
    EXPECT_EQ(plan.nodes[0].candidates[0].source, CostSource::roofline) << "nullopt: the roofline";
}

TEST(OpPlacement, RefusesAWeightHomeThatIsNoBackend) {
    const MoeGraph m(1);
    const std::vector<BackendInfo> backends{host_cpu(), device(25e9)};
    const std::string e = error_of([&] {
        place_ops(m.g, backends, {}, {Phase::decode, 1, [](const Tensor&) { return 2; }});
    });
    EXPECT_TRUE(contains(e, "has home 2, not a backend index")) << e;
}

TEST(OpPlacement, CopiesAreReusedWithinAGraph) {
    Graph g;
    Tensor* x = g.input("inp", SY_TYPE_F32, {256, 4});
    Tensor* w1 = g.weight("a.weight", SY_TYPE_F32, {256, 256});
    Tensor* w2 = g.weight("b.weight", SY_TYPE_F32, {256, 256});
    g.mark_output(g.add(g.mul_mat(w1, x), g.mul_mat(w2, x)));
    const std::vector<BackendInfo> backends{host_cpu(), device(25e9)};
    OffloadPolicy always;
    always.mode = OffloadMode::always;
    const OpPlan plan = place_ops(g, backends, always,
                                  {Phase::prompt, 4, [](const Tensor&) { return kHostInput; }});
    ASSERT_EQ(plan.nodes.size(), 3u);
    for (const NodePlacement& n : plan.nodes) EXPECT_EQ(n.backend, 1);
    // x once, each weight once (they live on the host).
    EXPECT_EQ(plan.copies.size(), 3u);
    EXPECT_EQ(plan.splits.size(), 1u);
}

// A small op between two device products that reads a small host input: alone it is cheaper on
// the host (the host input's copy costs a transfer's latency, as does fetching its operand), but
// its result must then go back to the device for the next product. Counting that copy, it stays
// on the device: one split, and only the host inputs cross the link.
TEST(OpPlacement, CountsTheCopyOfAResultBackToItsReaders) {
    Graph g;
    const int64_t K = 256;
    Tensor* x = g.input("inp", SY_TYPE_F32, {K, 1});
    Tensor* p = g.input("bias", SY_TYPE_F32, {K, 1});
    Tensor* w1 = g.weight("blk.0.attn_q.weight", SY_TYPE_F32, {K, K});
    Tensor* w2 = g.weight("blk.0.attn_output.weight", SY_TYPE_F32, {K, K});
    Tensor* a = g.mul_mat(w1, x);
    Tensor* b = g.add(a, p);
    g.mark_output(g.mul_mat(w2, b));
    const std::vector<BackendInfo> backends{host_cpu(), device(25e9)};
    const auto homes = [](const Tensor& t) {
        return t.kind() == TensorKind::weight ? 1 : kHostInput;
    };
    const OpPlan plan = place_ops(g, backends, {}, {Phase::decode, 1, homes});
    ASSERT_EQ(plan.nodes.size(), 3u);
    EXPECT_EQ(plan.nodes[1].backend, 1) << plan.nodes[1].reason;
    EXPECT_TRUE(contains(
        plan.nodes[1].reason,
        "dev for the whole graph's copies and splits (its own cheapest: cpu; greedy chose cpu)"))
        << plan.nodes[1].reason;
    // Alone, the host was cheaper for it: its candidates say so.
    ASSERT_EQ(plan.nodes[1].candidates.size(), 2u);
    EXPECT_LT(plan.nodes[1].candidates[0].total_ns(), plan.nodes[1].candidates[1].total_ns());
    ASSERT_EQ(plan.splits.size(), 1u);
    EXPECT_EQ(plan.splits[0].backend, 1);
    EXPECT_EQ(plan.copy_bytes(), uint64_t(2 * K * 4)) << "inp and bias, nothing else";
}

// Every stretch of nodes on a device ends in a synchronization (a round trip over its link), so
// a cheap op on the host in front of the device's nodes costs more than its copies: here the
// activation of a host input first, which alone is cheaper on the host (no launch; its result's
// copy costs what copying the input would). Counting the extra split, everything runs on the
// device in one split; the copies are the same either way.
TEST(OpPlacement, CountsTheSynchronizationOfEverySplit) {
    Graph g;
    const int64_t K = 256;
    Tensor* h = g.input("gate", SY_TYPE_F32, {K, 1});
    Tensor* x = g.input("inp", SY_TYPE_F32, {K, 1});
    Tensor* w1 = g.weight("blk.0.attn_q.weight", SY_TYPE_F32, {K, K});
    Tensor* w2 = g.weight("blk.0.attn_output.weight", SY_TYPE_F32, {K, K});
    Tensor* act = g.silu(h);
    Tensor* a = g.mul_mat(w1, x);
    g.mark_output(g.mul_mat(w2, g.add(a, act)));
    BackendInfo dev = device(25e9);
    dev.props.launch_overhead_ns = 2e3;  // an op there costs less than a split's round trip
    const std::vector<BackendInfo> backends{host_cpu(), dev};
    const auto homes = [](const Tensor& t) {
        return t.kind() == TensorKind::weight ? 1 : kHostInput;
    };
    const OpPlan plan = place_ops(g, backends, {}, {Phase::decode, 1, homes});
    ASSERT_EQ(plan.nodes.size(), 4u);
    // Alone, the host was cheaper for the activation.
    ASSERT_EQ(plan.nodes[0].candidates.size(), 2u);
    EXPECT_LT(plan.nodes[0].candidates[0].total_ns(), plan.nodes[0].candidates[1].total_ns());
    ASSERT_EQ(plan.splits.size(), 1u) << plan.nodes[0].reason;
    EXPECT_EQ(plan.splits[0].backend, 1);
    EXPECT_EQ(plan.copy_bytes(), uint64_t(2 * K * 4)) << "gate and inp, nothing else";
}

}  // namespace
}  // namespace sy
