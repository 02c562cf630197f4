// The CUDA plugin through its C ABI: loading anywhere, and on a machine with a GPU every
// conformance case plus buffers, copies and the errors a caller can provoke.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "switchyard/conformance.hpp"
#include "switchyard/ops.h"
#include "switchyard/sdk.hpp"

namespace {

using sy::conformance::Plugin;

// SWITCHYARD_CUDA_PLUGIN in the environment overrides the build tree's plugin (for a test binary
// copied to a GPU machine beside the plugin).
Plugin& cuda() {
    static std::unique_ptr<Plugin> plugin = [] {
        const char* env = std::getenv("SWITCHYARD_CUDA_PLUGIN");
        return Plugin::load(env && env[0] ? env : SWITCHYARD_CUDA_PLUGIN);
    }();
    return *plugin;
}

#define REQUIRE_GPU()                                                                 \
    do {                                                                              \
        if (cuda().device_count() == 0)                                               \
            GTEST_SKIP() << "no CUDA device on this machine (the plugin reports 0); " \
                            "run on a GPU machine to check the device code";          \
    } while (0)

// A device buffer freed at scope end.
struct DeviceBuffer {
    sy_buffer b{};
    explicit DeviceBuffer(uint64_t size) {
        b.struct_size = sizeof b;
        const sy_status s = cuda().api().buffer_alloc(cuda().api().ctx, 0, size, &b);
        EXPECT_EQ(s.code, SY_OK) << (s.message ? s.message : "");
    }
    ~DeviceBuffer() {
        if (b.handle) cuda().api().buffer_free(cuda().api().ctx, &b);
    }
};

sy_tensor on(const DeviceBuffer& buf, int32_t type, int64_t ne0, int64_t ne1 = 1,
             uint64_t offset = 0) {
    sy_tensor t =
        sy::sdk::make_tensor(type, ne0, ne1, 1, 1, static_cast<char*>(buf.b.base) + offset);
    t.buffer = &buf.b;
    return t;
}

std::string message(const sy_status& s) {
    return s.message ? s.message : "";
}

// A node writing dst from the sources, in order.
sy_node node_of(int32_t op, const sy_tensor* dst, std::initializer_list<const sy_tensor*> srcs) {
    sy_node n = sy::sdk::make_node(op, dst);
    n.n_src = int32_t(srcs.size());
    int32_t i = 0;
    for (const sy_tensor* s : srcs) n.src[i++] = s;
    return n;
}

// compute(), then synchronize() when compute() queued the nodes: a bad index a kernel finds is
// reported by one or the other (launched one by one, compute() returns before the kernels end).
sy_status compute_and_wait(const sy_node* const* nodes, size_t count) {
    const sy_plugin_api& api = cuda().api();
    const sy_status s = api.compute(api.ctx, 0, nodes, count);
    return s.code != SY_OK ? s : api.synchronize(api.ctx, 0);
}

TEST(CudaPlugin, LoadsAnywhereAndDescribesItself) {
    Plugin& p = cuda();
    EXPECT_EQ(p.name(), "cuda");
    EXPECT_GE(p.device_count(), 0);
    EXPECT_NE(std::string(p.api().build_info).find("CUDA runtime"), std::string::npos);
    EXPECT_GT(p.capabilities().size(), 100u);
}

// The option `graphs` (CUDA graphs for node lists that repeat) takes on or off, with or without
// a GPU; anything else is refused naming the option, and other keys are not the plugin's.
TEST(CudaPlugin, GraphsOptionTakesOnOrOff) {
    const sy_plugin_api& api = cuda().api();
    EXPECT_EQ(api.set_option(api.ctx, "graphs", "on").code, SY_OK);
    EXPECT_EQ(api.set_option(api.ctx, "graphs", "off").code, SY_OK);
    const sy_status bad = api.set_option(api.ctx, "graphs", "yes");
    EXPECT_EQ(bad.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message(bad).find("'graphs' takes on or off, not 'yes'"), std::string::npos)
        << message(bad);
    EXPECT_EQ(api.set_option(api.ctx, "streams", "2").code, SY_ERR_UNSUPPORTED);
}

TEST(CudaPlugin, RefusesDevicesItDoesNotHave) {
    Plugin& p = cuda();
    const int32_t n = p.device_count();
    sy_buffer b{};
    b.struct_size = sizeof b;
    const sy_status s = p.api().buffer_alloc(p.api().ctx, n, 64, &b);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message(s).find("device " + std::to_string(n) + " does not exist"), std::string::npos)
        << message(s);
    sy_device_props props{};
    props.struct_size = sizeof props;
    EXPECT_EQ(p.api().device_props(p.api().ctx, n, &props).code, SY_ERR_INVALID_ARGUMENT);
}

TEST(CudaPlugin, ReportsRealDeviceProperties) {
    REQUIRE_GPU();
    sy_device_props props{};
    props.struct_size = sizeof props;
    ASSERT_EQ(cuda().api().device_props(cuda().api().ctx, 0, &props).code, SY_OK);
    EXPECT_EQ(props.kind, SY_DEVICE_GPU);
    EXPECT_GT(props.compute_units, 0);
    EXPECT_GT(props.memory_total, props.memory_free / 2);
    EXPECT_GT(props.memory_bandwidth, 1e11);  // every GPU it is built for has > 100 GB/s
    EXPECT_GT(props.peak_flops_f16, props.peak_flops_f32);
    EXPECT_GT(props.link_bandwidth, 1e9);
    EXPECT_GT(props.link_latency_ns, 0);
    EXPECT_GT(props.launch_overhead_ns, 0);
}

TEST(CudaPlugin, BuffersRoundTripAndRefuseOutOfBounds) {
    REQUIRE_GPU();
    DeviceBuffer buf(1000);
    std::vector<uint8_t> in(1000), out(1000, 0);
    std::iota(in.begin(), in.end(), uint8_t(7));
    const sy_plugin_api& api = cuda().api();
    ASSERT_EQ(api.buffer_set(api.ctx, &buf.b, 0, in.data(), 1000).code, SY_OK);
    ASSERT_EQ(api.buffer_get(api.ctx, &buf.b, 0, out.data(), 1000).code, SY_OK);
    EXPECT_EQ(in, out);
    const sy_status s = api.buffer_set(api.ctx, &buf.b, 900, in.data(), 200);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message(s).find("outside the buffer"), std::string::npos) << message(s);
}

// Host memory registered with the plugin (pinned) carries copies both ways like any other; it is
// registered once, and unregistered once.
TEST(CudaPlugin, RegisteredHostMemoryCopiesBothWays) {
    REQUIRE_GPU();
    const sy_plugin_api& api = cuda().api();
    ASSERT_NE(api.host_register, nullptr);
    DeviceBuffer buf(1 << 20);
    constexpr size_t kPage = 4096, kBytes = 1 << 20;
    auto* in = static_cast<uint8_t*>(std::aligned_alloc(kPage, kBytes));
    auto* out = static_cast<uint8_t*>(std::aligned_alloc(kPage, kBytes));
    for (size_t i = 0; i < kBytes; ++i) in[i] = uint8_t(i * 7 + 3);
    std::memset(out, 0, kBytes);
    ASSERT_EQ(api.host_register(api.ctx, in, kBytes).code, SY_OK) << "in";
    ASSERT_EQ(api.host_register(api.ctx, out, kBytes).code, SY_OK) << "out";
    const sy_status again = api.host_register(api.ctx, in, kBytes);
    EXPECT_EQ(again.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message(again).find("registered already"), std::string::npos) << message(again);
    ASSERT_EQ(api.buffer_set(api.ctx, &buf.b, 0, in, kBytes).code, SY_OK);
    ASSERT_EQ(api.buffer_get(api.ctx, &buf.b, 0, out, kBytes).code, SY_OK);
    EXPECT_EQ(std::memcmp(in, out, kBytes), 0);
    EXPECT_EQ(api.host_unregister(api.ctx, in).code, SY_OK);
    EXPECT_EQ(api.host_unregister(api.ctx, out).code, SY_OK);
    const sy_status twice = api.host_unregister(api.ctx, in);
    EXPECT_EQ(twice.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message(twice).find("not registered"), std::string::npos) << message(twice);
    std::free(in);
    std::free(out);
}

TEST(CudaPlugin, CopiesStridedTensorsBothWays) {
    REQUIRE_GPU();
    // A 5 x 3 F32 host matrix, transposed on the way in (dst strides swapped), read back packed.
    std::vector<float> host(15);
    std::iota(host.begin(), host.end(), 1.0f);
    DeviceBuffer buf(15 * 4);
    sy_tensor src = sy::sdk::make_tensor(SY_TYPE_F32, 5, 3, 1, 1, host.data());
    sy_tensor dst = on(buf, SY_TYPE_F32, 5, 3);
    dst.nb[0] = 3 * 4;  // element (i0, i1) at i0 * 3 + i1
    dst.nb[1] = 4;
    const sy_copy in{sizeof(sy_copy), &src, &dst};
    const sy_plugin_api& api = cuda().api();
    sy_status s = api.copy_tensors(api.ctx, &in, 1);
    ASSERT_EQ(s.code, SY_OK) << message(s);
    std::vector<float> raw(15);
    ASSERT_EQ(api.buffer_get(api.ctx, &buf.b, 0, raw.data(), 60).code, SY_OK);
    for (int i0 = 0; i0 < 5; ++i0)
        for (int i1 = 0; i1 < 3; ++i1)
            EXPECT_EQ(raw[size_t(i0 * 3 + i1)], host[size_t(i1 * 5 + i0)]);
    std::vector<float> back(15, -1.0f);
    sy_tensor host_back = sy::sdk::make_tensor(SY_TYPE_F32, 5, 3, 1, 1, back.data());
    const sy_copy out{sizeof(sy_copy), &dst, &host_back};
    s = api.copy_tensors(api.ctx, &out, 1);
    ASSERT_EQ(s.code, SY_OK) << message(s);
    EXPECT_EQ(back, host);
}

TEST(CudaPlugin, RefusesTensorsOutsideItsBuffers) {
    REQUIRE_GPU();
    std::vector<float> host(8, 1.0f);
    DeviceBuffer buf(32);
    sy_tensor x = sy::sdk::make_tensor(SY_TYPE_F32, 8, 1, 1, 1, host.data());
    sy_tensor y = on(buf, SY_TYPE_F32, 8);
    sy_node node = sy::sdk::make_node(SY_OP_SILU, &y);
    node.n_src = 1;
    node.src[0] = &x;
    const sy_node* nodes[] = {&node};
    const sy_status s = cuda().api().compute(cuda().api().ctx, 0, nodes, 1);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message(s).find("src0 is in host memory"), std::string::npos) << message(s);
}

// A row id or expert id out of range is an error of the compute() call or the synchronize()
// after it, never a wild read.
TEST(CudaPlugin, OutOfRangeIndicesAreErrors) {
    REQUIRE_GPU();
    const sy_plugin_api& api = cuda().api();
    DeviceBuffer table(4 * 8 * 4), ids(2 * 4), rows(4 * 2 * 4);
    std::vector<float> values(32, 0.5f);
    ASSERT_EQ(api.buffer_set(api.ctx, &table.b, 0, values.data(), 128).code, SY_OK);
    const int32_t bad[2] = {1, 8};
    ASSERT_EQ(api.buffer_set(api.ctx, &ids.b, 0, bad, 8).code, SY_OK);
    sy_tensor src = on(table, SY_TYPE_F32, 4, 8);
    sy_tensor id = on(ids, SY_TYPE_I32, 2);
    sy_tensor dst = on(rows, SY_TYPE_F32, 4, 2);
    sy_node get = sy::sdk::make_node(SY_OP_GET_ROWS, &dst);
    get.n_src = 2;
    get.src[0] = &src;
    get.src[1] = &id;
    const sy_node* nodes[] = {&get};
    sy_status s = compute_and_wait(nodes, 1);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message(s).find("out of range"), std::string::npos) << message(s);

    // Experts: W {32, 4, 2}, X {32, 1, 1}, ids {1, 1} = 2 (E = 2).
    DeviceBuffer w(32 * 4 * 2 * 4), x(32 * 4), e(4), out(4 * 4);
    std::vector<float> ones(256, 1.0f);
    ASSERT_EQ(api.buffer_set(api.ctx, &w.b, 0, ones.data(), 1024).code, SY_OK);
    ASSERT_EQ(api.buffer_set(api.ctx, &x.b, 0, ones.data(), 128).code, SY_OK);
    const int32_t expert = 2;
    ASSERT_EQ(api.buffer_set(api.ctx, &e.b, 0, &expert, 4).code, SY_OK);
    sy_tensor tw = sy::sdk::make_tensor(SY_TYPE_F32, 32, 4, 2, 1, w.b.base);
    tw.buffer = &w.b;
    sy_tensor tx = on(x, SY_TYPE_F32, 32);
    sy_tensor te = on(e, SY_TYPE_I32, 1);
    sy_tensor tout = on(out, SY_TYPE_F32, 4);
    sy_node mm = sy::sdk::make_node(SY_OP_MUL_MAT_ID, &tout);
    mm.n_src = 3;
    mm.src[0] = &tw;
    mm.src[1] = &tx;
    mm.src[2] = &te;
    const sy_node* mm_nodes[] = {&mm};
    s = compute_and_wait(mm_nodes, 1);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(message(s).find("expert ids"), std::string::npos) << message(s);

    // The error is cleared: a valid call afterwards succeeds.
    const int32_t good = 1;
    ASSERT_EQ(api.buffer_set(api.ctx, &e.b, 0, &good, 4).code, SY_OK);
    s = compute_and_wait(mm_nodes, 1);
    ASSERT_EQ(s.code, SY_OK) << message(s);
    float result[4];
    ASSERT_EQ(api.buffer_get(api.ctx, &out.b, 0, result, 16).code, SY_OK);
    for (float r : result) EXPECT_EQ(r, 32.0f);
}

// A list of several nodes that comes again unchanged (same tensors, addresses and sizes; other
// data) is captured into a CUDA graph the second time and replayed from then on. Every run,
// launched one by one, captured or replayed, computes the formula on its own data, and the
// replay gives what the nodes compute one by one (the option graphs = off); an out-of-range
// index inside a captured list is still the call's error.
TEST(CudaPlugin, GraphsGiveTheResultsOfLaunchesOneByOne) {
    REQUIRE_GPU();
    const sy_plugin_api& api = cuda().api();
    constexpr int64_t kMax = 4096;
    DeviceBuffer xb(kMax * 4), yb(kMax * 4), ab(kMax * 4), bb(kMax * 4), cb(kMax * 4);
    // c = (silu(x) + y) * x, over the first n values.
    const auto run = [&](int64_t n, float scale, std::vector<float>& out) {
        std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
            x[size_t(i)] = scale * float((i * 37) % 101 - 50) / 25.0f;
            y[size_t(i)] = float((i * 13) % 17) / 8.0f - 1.0f;
        }
        EXPECT_EQ(api.buffer_set(api.ctx, &xb.b, 0, x.data(), uint64_t(n) * 4).code, SY_OK);
        EXPECT_EQ(api.buffer_set(api.ctx, &yb.b, 0, y.data(), uint64_t(n) * 4).code, SY_OK);
        sy_tensor tx = on(xb, SY_TYPE_F32, n), ty = on(yb, SY_TYPE_F32, n);
        sy_tensor ta = on(ab, SY_TYPE_F32, n), tb = on(bb, SY_TYPE_F32, n);
        sy_tensor tc = on(cb, SY_TYPE_F32, n);
        const sy_node silu = node_of(SY_OP_SILU, &ta, {&tx});
        const sy_node add = node_of(SY_OP_ADD, &tb, {&ta, &ty});
        const sy_node mul = node_of(SY_OP_MUL, &tc, {&tb, &tx});
        const sy_node* nodes[] = {&silu, &add, &mul};
        const sy_status s = compute_and_wait(nodes, 3);  // the nodes live until synchronize
        ASSERT_EQ(s.code, SY_OK) << message(s);
        out.assign(size_t(n), -1.0f);
        ASSERT_EQ(api.buffer_get(api.ctx, &cb.b, 0, out.data(), uint64_t(n) * 4).code, SY_OK);
        for (int64_t i = 0; i < n; ++i) {
            const double xi = x[size_t(i)];
            const double want = (xi / (1.0 + std::exp(-xi)) + y[size_t(i)]) * xi;
            ASSERT_NEAR(out[size_t(i)], want, 1e-5 * (1.0 + std::abs(want)))
                << "n " << n << " at " << i;
        }
    };
    std::vector<float> small, first, captured, replayed, direct;
    ASSERT_EQ(api.set_option(api.ctx, "graphs", "on").code, SY_OK);
    run(1000, 1.0f, small);      // a new list: launched one by one
    run(kMax, 0.5f, first);      // other sizes: one by one again
    run(kMax, 0.25f, captured);  // unchanged but for the data: captured
    run(kMax, 2.0f, replayed);   // replayed, on new data
    ASSERT_EQ(api.set_option(api.ctx, "graphs", "off").code, SY_OK);
    run(kMax, 2.0f, direct);
    ASSERT_EQ(api.set_option(api.ctx, "graphs", "on").code, SY_OK);
    EXPECT_EQ(replayed, direct);
    EXPECT_NE(captured, replayed);
    EXPECT_EQ(api.set_option(api.ctx, "graphs", "maybe").code, SY_ERR_INVALID_ARGUMENT);

    // A bad row id in a two-node list (a graph): reported by this call (or the synchronize
    // after it, launched one by one), then cleared.
    DeviceBuffer table(4 * 8 * 4), ids(2 * 4), rows(4 * 2 * 4), act(4 * 2 * 4);
    std::vector<float> values(32, 0.5f);
    ASSERT_EQ(api.buffer_set(api.ctx, &table.b, 0, values.data(), 128).code, SY_OK);
    const int32_t bad[2] = {1, 8}, good[2] = {1, 7};
    ASSERT_EQ(api.buffer_set(api.ctx, &ids.b, 0, bad, 8).code, SY_OK);
    sy_tensor src = on(table, SY_TYPE_F32, 4, 8), id = on(ids, SY_TYPE_I32, 2);
    sy_tensor got = on(rows, SY_TYPE_F32, 4, 2), out = on(act, SY_TYPE_F32, 4, 2);
    const sy_node get = node_of(SY_OP_GET_ROWS, &got, {&src, &id});
    const sy_node silu = node_of(SY_OP_SILU, &out, {&got});
    const sy_node* nodes[] = {&get, &silu};
    sy_status s = sy_status{};
    for (int time = 0; time < 3; ++time) {  // one by one, captured, replayed
        s = compute_and_wait(nodes, 2);
        EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT) << "time " << time;
        EXPECT_NE(message(s).find("out of range"), std::string::npos) << message(s);
    }
    ASSERT_EQ(api.buffer_set(api.ctx, &ids.b, 0, good, 8).code, SY_OK);
    s = compute_and_wait(nodes, 2);
    ASSERT_EQ(s.code, SY_OK) << message(s);
    float result[8];
    ASSERT_EQ(api.buffer_get(api.ctx, &act.b, 0, result, 32).code, SY_OK);
    for (float r : result) EXPECT_NEAR(r, 0.5f / (1.0f + std::exp(-0.5f)), 1e-6f);
    ASSERT_EQ(api.set_option(api.ctx, "graphs", "off").code, SY_OK);  // the default
}

// Every case of every capability row, against the reference (the conformance kit).
TEST(CudaConformance, EveryCaseOfEveryRowPasses) {
    REQUIRE_GPU();
    int passed = 0, skipped = 0;
    for (const sy_capability& row : cuda().capabilities())
        for (const sy::conformance::Case& c : sy::conformance::cases_for(row)) {
            const sy::conformance::CaseResult r = sy::conformance::run_case(cuda(), 0, c);
            if (r.status == sy::conformance::Status::Skip) {
                ++skipped;
                continue;
            }
            EXPECT_EQ(r.status, sy::conformance::Status::Pass)
                << sy::conformance::format_result(c, r);
            passed += r.status == sy::conformance::Status::Pass;
        }
    std::printf("cuda conformance: %d passed, %d skipped\n", passed, skipped);
    EXPECT_GT(passed, 2000);
}

}  // namespace
