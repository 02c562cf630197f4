// The executor on a device that cannot compute on host memory (the test-offhost plugin): weights
// and inputs must be uploaded into a buffer of the plugin, results read back through it.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "switchyard/core/error.hpp"
#include "switchyard/core/executor.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/named_ops.h"

namespace sy {
namespace {

float silu(float x) {
    return x / (1.0f + std::exp(-x));
}

TEST(ExecutorOffHost, UploadsInputsEveryRunAndWeightsOnce) {
    auto plugin = Plugin::load(SWITCHYARD_OFFHOST_PLUGIN);
    Executor exec(*plugin, 0);
    ASSERT_FALSE(exec.computes_on_host_memory());

    std::vector<float> x(12), w(4);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 5.0f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + float(i);
    Graph g;
    Tensor* in = g.input("x", SY_TYPE_F32, {4, 3});
    Tensor* weight = g.weight("w", SY_TYPE_F32, {4});
    in->set_data(x.data());
    weight->set_data(w.data());
    // silu(x * w) + 1, then a transposed view of it scaled: exercises views of device tensors.
    Tensor* y = g.scale(g.silu(g.mul(in, weight)), 1.0f, 1.0f);
    Tensor* yt = g.scale(g.transpose(y), 2.0f);
    g.mark_output(y);
    g.mark_output(yt);

    auto expected = [&] {
        std::vector<float> out(12);
        for (size_t i = 0; i < 12; ++i) out[i] = silu(x[i] * w[i % 4]) + 1.0f;
        return out;
    };
    const RunReport first = exec.run(g);
    EXPECT_EQ(first.staged_bytes, 12u * 4 + 4u * 4);
    EXPECT_EQ(exec.host_data(*y), nullptr) << "device memory is not host-visible";
    std::vector<float> want = expected();
    std::vector<float> got = exec.read<float>(*y);
    for (size_t i = 0; i < 12; ++i) EXPECT_NEAR(got[i], want[i], 1e-6f);
    const std::vector<float> got_t = exec.read<float>(*yt);
    for (int64_t r = 0; r < 4; ++r)
        for (int64_t c = 0; c < 3; ++c)
            EXPECT_NEAR(got_t[size_t(r * 3 + c)], 2 * want[size_t(c * 4 + r)], 1e-5f);

    for (float& v : x) v = -v;
    const RunReport second = exec.run(g);
    EXPECT_TRUE(second.plan_reused);
    EXPECT_EQ(second.staged_bytes, 12u * 4) << "only the input is uploaded again";
    want = expected();
    got = exec.read<float>(*y);
    for (size_t i = 0; i < 12; ++i) EXPECT_NEAR(got[i], want[i], 1e-6f);
    EXPECT_THROW(exec.read<float>(*g.transpose(y)), Error) << "not contiguous, not run";
}

TEST(ExecutorOffHost, UnsupportedNodeIsNamed) {
    auto plugin = Plugin::load(SWITCHYARD_OFFHOST_PLUGIN);
    Executor exec(*plugin, 0);
    std::vector<float> x(8, 1.0f);
    Graph g;
    Tensor* in = g.input("x", SY_TYPE_F32, {8});
    in->set_data(x.data());
    g.mark_output(g.gelu(in)->set_name("ffn_act"));
    try {
        exec.run(g);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("does not support node 0 gelu"), std::string::npos) << m;
        EXPECT_NE(m.find("'ffn_act'"), std::string::npos) << m;
    }
}

TEST(ExecutorOffHost, NamedOpThePluginProvidesRunsAsOneNode) {
    auto plugin = Plugin::load(SWITCHYARD_OFFHOST_PLUGIN);
    EXPECT_FALSE(plugin->provides(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION));
    EXPECT_FALSE(plugin->provides("test.twice", 2));
    ASSERT_TRUE(plugin->provides("test.twice", 1));
    const std::vector<sy_named_op_info> ops = plugin->named_ops();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_STREQ(ops[0].summary, "dst = 2 * src0");

    std::vector<float> x{1, -2, 3, -4};
    Graph g;
    Tensor* in = g.input("x", SY_TYPE_F32, {4});
    in->set_data(x.data());
    Tensor* y = g.named("test.twice", 1, {in}, SY_TYPE_F32, {4});
    g.mark_output(y);
    Executor exec(*plugin, 0);
    exec.run(g);
    EXPECT_EQ(exec.read<float>(*y), (std::vector<float>{2, -4, 6, -8}));
}

}  // namespace
}  // namespace sy
