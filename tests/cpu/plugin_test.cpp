// Plugin-level behaviour of the CPU backend that the op conformance cases do not reach: the
// entry points and ABI checks, the device description, the "threads" option and its pool,
// buffer bounds, copy_tensors, error messages and the cost model. Each test loads a variant
// with plain dlopen, initializes it, and shuts it down before dlclose, as the host does.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "switchyard/sdk.hpp"

namespace {

using sy::sdk::make_node;
using sy::sdk::make_tensor;

std::vector<std::string> runnable_variants() {
    std::vector<std::string> out;
    for (const char* variant : {"generic", "avx2", "avx512"}) {
        const std::string file =
            std::string(SWITCHYARD_PLUGIN_OUTPUT_DIR) + "/libswitchyard-cpu-" + variant + ".so";
        void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!lib) continue;
        auto probe = reinterpret_cast<sy_plugin_probe_fn>(dlsym(lib, SY_PLUGIN_PROBE_SYMBOL));
        sy_probe_info info{};
        info.struct_size = sizeof info;
        if (probe && probe(&info) > 0 && info.score > 0) out.push_back(variant);
        dlclose(lib);
    }
    return out;
}

sy_host_api host_api(uint32_t abi_major = SY_ABI_VERSION_MAJOR) {
    sy_host_api host{};
    host.struct_size = sizeof host;
    host.abi_major = abi_major;
    host.abi_minor = SY_ABI_VERSION_MINOR;
    host.host_version = "plugin_test";
    return host;
}

std::string text(const sy_status& s) {
    return s.message ? s.message : "(no message)";
}

class CpuPluginTest : public testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        const std::string file =
            std::string(SWITCHYARD_PLUGIN_OUTPUT_DIR) + "/libswitchyard-cpu-" + GetParam() + ".so";
        lib_ = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        ASSERT_NE(lib_, nullptr) << dlerror();
        init_ = reinterpret_cast<sy_plugin_init_fn>(dlsym(lib_, SY_PLUGIN_INIT_SYMBOL));
        ASSERT_NE(init_, nullptr);
        api_.struct_size = sizeof api_;
        const sy_host_api host = host_api();
        const sy_status s = init_(&host, &api_);
        ASSERT_EQ(s.code, SY_OK) << text(s);
        initialized_ = true;
    }
    void TearDown() override {
        if (initialized_) api_.shutdown(api_.ctx);
        if (lib_) dlclose(lib_);
    }

    int32_t supports(const sy_node& node) {
        int32_t yes = -1;
        EXPECT_EQ(api_.supports(api_.ctx, 0, &node, &yes).code, SY_OK);
        return yes;
    }
    sy_status compute(const sy_node& node) {
        const sy_node* nodes[] = {&node};
        return api_.compute(api_.ctx, 0, nodes, 1);
    }
    int32_t compute_units() {
        sy_device_props props{};
        props.struct_size = sizeof props;
        EXPECT_EQ(api_.device_props(api_.ctx, 0, &props).code, SY_OK);
        return props.compute_units;
    }

    void* lib_ = nullptr;
    sy_plugin_init_fn init_ = nullptr;
    sy_plugin_api api_{};
    bool initialized_ = false;
};

TEST_P(CpuPluginTest, ProbeNamesBackendAndVariant) {
    auto probe = reinterpret_cast<sy_plugin_probe_fn>(dlsym(lib_, SY_PLUGIN_PROBE_SYMBOL));
    ASSERT_NE(probe, nullptr);
    sy_probe_info info{};
    info.struct_size = sizeof info;
    const int32_t score = probe(&info);
    EXPECT_STREQ(info.name, "cpu");
    EXPECT_EQ(std::string(info.variant), GetParam());
    EXPECT_EQ(score, info.score);
    const int32_t expected = GetParam() == "avx512" ? 30 : GetParam() == "avx2" ? 20 : 10;
    EXPECT_EQ(info.score, expected);
    EXPECT_STREQ(api_.name, "cpu");
    EXPECT_EQ(api_.struct_size, sizeof(sy_plugin_api));
    EXPECT_NE(std::string(api_.build_info).find(GetParam()), std::string::npos) << api_.build_info;
}

TEST_P(CpuPluginTest, InitRefusesAnotherAbiMajor) {
    sy_plugin_api other{};
    other.struct_size = sizeof other;
    const sy_host_api host = host_api(SY_ABI_VERSION_MAJOR + 1);
    const sy_status s = init_(&host, &other);
    EXPECT_EQ(s.code, SY_ERR_ABI);
    EXPECT_NE(text(s).find("ABI"), std::string::npos) << text(s);
    EXPECT_EQ(other.ctx, nullptr);
}

TEST_P(CpuPluginTest, InitRefusesATableWithoutRoomForShutdown) {
    sy_plugin_api small{};
    small.struct_size = offsetof(sy_plugin_api, shutdown);
    const sy_host_api host = host_api();
    EXPECT_EQ(init_(&host, &small).code, SY_ERR_ABI);
}

TEST_P(CpuPluginTest, DevicePropsDescribeTheHost) {
    int32_t count = 0;
    ASSERT_EQ(api_.device_count(api_.ctx, &count).code, SY_OK);
    EXPECT_EQ(count, 1);
    sy_device_props p{};
    p.struct_size = sizeof p;
    ASSERT_EQ(api_.device_props(api_.ctx, 0, &p).code, SY_OK);
    EXPECT_EQ(p.kind, SY_DEVICE_CPU);
    EXPECT_EQ(p.host_memory, 1);
    EXPECT_GT(p.compute_units, 0);
    EXPECT_NE(std::string(p.name).find("threads"), std::string::npos) << p.name;
    EXPECT_GT(p.memory_total, 0u);
    EXPECT_LE(p.memory_free, p.memory_total);
    EXPECT_GT(p.peak_flops_f32, 1e9);
    EXPECT_GT(p.memory_bandwidth, 1e8);
    EXPECT_EQ(p.link_bandwidth, 0.0);
    EXPECT_GT(p.launch_overhead_ns, 0.0);
    EXPECT_EQ(api_.device_props(api_.ctx, 1, &p).code, SY_ERR_INVALID_ARGUMENT);

    const sy_cost_param* params = nullptr;
    size_t n = 0;
    ASSERT_EQ(api_.cost_params(api_.ctx, 0, &params, &n).code, SY_OK);
    bool has_bandwidth = false;
    for (size_t i = 0; i < n; ++i)
        if (std::string(params[i].key) == "memory_bandwidth") {
            has_bandwidth = true;
            EXPECT_DOUBLE_EQ(params[i].value, p.memory_bandwidth);
        }
    EXPECT_TRUE(has_bandwidth);
}

TEST_P(CpuPluginTest, ThreadsOptionResizesThePool) {
    const int32_t initial = compute_units();
    EXPECT_EQ(api_.set_option(api_.ctx, "threads", "3").code, SY_OK);
    EXPECT_EQ(compute_units(), 3);
    EXPECT_EQ(api_.set_option(api_.ctx, "threads", "1").code, SY_OK);
    EXPECT_EQ(compute_units(), 1);
    EXPECT_EQ(api_.set_option(api_.ctx, "threads", "0").code, SY_OK);  // back to the hardware's
    EXPECT_EQ(compute_units(), initial);
    for (const char* bad : {"", "two", "-1", "4x", "100000"}) {
        const sy_status s = api_.set_option(api_.ctx, "threads", bad);
        EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT) << "'" << bad << "'";
        EXPECT_NE(text(s).find("threads"), std::string::npos) << text(s);
    }
}

TEST_P(CpuPluginTest, UnknownOptionIsUnsupported) {
    const sy_status s = api_.set_option(api_.ctx, "no_such_option", "1");
    EXPECT_EQ(s.code, SY_ERR_UNSUPPORTED);
    EXPECT_NE(text(s).find("no_such_option"), std::string::npos) << text(s);
}

TEST_P(CpuPluginTest, BuffersAreAlignedAndBoundsChecked) {
    sy_buffer b{};
    b.struct_size = sizeof b;
    ASSERT_EQ(api_.buffer_alloc(api_.ctx, 0, 128, &b).code, SY_OK);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.base) % 64, 0u);
    EXPECT_EQ(b.size, 128u);
    EXPECT_EQ(b.host_visible, 1);
    std::vector<uint8_t> bytes(64, 7);
    EXPECT_EQ(api_.buffer_set(api_.ctx, &b, 64, bytes.data(), 64).code, SY_OK);
    const sy_status over = api_.buffer_set(api_.ctx, &b, 100, bytes.data(), 64);
    EXPECT_EQ(over.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(text(over).find("128"), std::string::npos) << text(over);
    EXPECT_EQ(api_.buffer_get(api_.ctx, &b, UINT64_MAX, bytes.data(), 2).code,
              SY_ERR_INVALID_ARGUMENT);
    std::vector<uint8_t> back(64, 0);
    ASSERT_EQ(api_.buffer_get(api_.ctx, &b, 64, back.data(), 64).code, SY_OK);
    EXPECT_EQ(back, bytes);
    EXPECT_EQ(api_.buffer_free(api_.ctx, &b).code, SY_OK);
    EXPECT_EQ(api_.buffer_free(api_.ctx, &b).code, SY_ERR_INVALID_ARGUMENT);  // not twice
    EXPECT_EQ(api_.buffer_alloc(api_.ctx, 1, 16, &b).code, SY_ERR_INVALID_ARGUMENT);
}

TEST_P(CpuPluginTest, CopyTensorsCopiesStridedViewsInOneCall) {
    // a {5, 3} F32 and its transpose as a view; two copies in one call.
    std::vector<float> a(15), packed_t(15, -1), plain(15, -1);
    for (int i = 0; i < 15; ++i) a[size_t(i)] = float(i);
    sy_tensor src = make_tensor(SY_TYPE_F32, 5, 3, 1, 1, a.data());
    sy_tensor src_t = make_tensor(SY_TYPE_F32, 3, 5, 1, 1, a.data());
    src_t.nb[0] = 20;
    src_t.nb[1] = 4;
    sy_tensor dst_t = make_tensor(SY_TYPE_F32, 3, 5, 1, 1, packed_t.data());
    sy_tensor dst = make_tensor(SY_TYPE_F32, 5, 3, 1, 1, plain.data());
    const sy_copy copies[] = {{sizeof(sy_copy), &src_t, &dst_t}, {sizeof(sy_copy), &src, &dst}};
    ASSERT_EQ(api_.copy_tensors(api_.ctx, copies, 2).code, SY_OK);
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 3; ++j) EXPECT_EQ(packed_t[size_t(i * 3 + j)], a[size_t(j * 5 + i)]);
    EXPECT_EQ(plain, a);

    sy_tensor wrong = make_tensor(SY_TYPE_F16, 5, 3, 1, 1, plain.data());
    const sy_copy bad[] = {{sizeof(sy_copy), &src, &wrong}};
    EXPECT_EQ(api_.copy_tensors(api_.ctx, bad, 1).code, SY_ERR_INVALID_ARGUMENT);
}

TEST_P(CpuPluginTest, ErrorsNameTheOpTheTensorAndTheProblem) {
    std::vector<float> x(12), y(8), out(12);
    sy_tensor a = make_tensor(SY_TYPE_F32, 4, 3, 1, 1, x.data(), "blk.0.ffn_in");
    sy_tensor b = make_tensor(SY_TYPE_F32, 4, 2, 1, 1, y.data(), "blk.0.bias");
    sy_tensor d = make_tensor(SY_TYPE_F32, 4, 3, 1, 1, out.data(), "blk.0.ffn_out");
    sy_node add = make_node(SY_OP_ADD, &d);
    add.n_src = 2;
    add.src[0] = &a;
    add.src[1] = &b;  // 2 rows do not divide 3
    EXPECT_EQ(supports(add), 0);
    const sy_status s = compute(add);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(text(s).find("add"), std::string::npos) << text(s);
    EXPECT_NE(text(s).find("blk.0.ffn_out"), std::string::npos) << text(s);
    EXPECT_NE(text(s).find("broadcast"), std::string::npos) << text(s);

    sy_node named = make_node(SY_OP_NAMED, &d);
    named.named_op = "vendor.magic";
    EXPECT_EQ(supports(named), 0);
    EXPECT_EQ(compute(named).code, SY_ERR_UNSUPPORTED);
}

TEST_P(CpuPluginTest, TensorReachingPastItsBufferIsRefused) {
    sy_buffer buf{};
    buf.struct_size = sizeof buf;
    ASSERT_EQ(api_.buffer_alloc(api_.ctx, 0, 64, &buf).code, SY_OK);
    sy_tensor src = make_tensor(SY_TYPE_F32, 16, 2, 1, 1, buf.base, "too_long");  // 128 bytes
    src.buffer = &buf;
    sy_tensor dst = src;
    dst.name = "dst";
    sy_node silu = make_node(SY_OP_SILU, &dst);
    silu.src[0] = &src;
    EXPECT_EQ(supports(silu), 1);  // descriptors are fine; where they point is checked at compute
    const sy_status s = compute(silu);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(text(s).find("64 bytes"), std::string::npos) << text(s);
    EXPECT_EQ(api_.buffer_free(api_.ctx, &buf).code, SY_OK);
}

TEST_P(CpuPluginTest, ExpertIdsOutOfRangeLeaveDstUntouched) {
    const int64_t K = 8, N = 4, E = 3;
    std::vector<float> w(size_t(K * N * E), 1.0f), x(size_t(K * 2), 1.0f),
        out(size_t(N * 2), -7.0f);
    std::vector<int32_t> ids = {1, 3};
    sy_tensor wt = make_tensor(SY_TYPE_F32, K, N, E, 1, w.data(), "ffn_up_exps");
    sy_tensor xt = make_tensor(SY_TYPE_F32, K, 1, 2, 1, x.data());
    sy_tensor it = make_tensor(SY_TYPE_I32, 1, 2, 1, 1, ids.data(), "expert_ids");
    sy_tensor dt = make_tensor(SY_TYPE_F32, N, 1, 2, 1, out.data());
    sy_node node = make_node(SY_OP_MUL_MAT_ID, &dt);
    node.src[0] = &wt;
    node.src[1] = &xt;
    node.src[2] = &it;
    EXPECT_EQ(supports(node), 1);
    const sy_status s = compute(node);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(text(s).find("expert_ids"), std::string::npos) << text(s);
    for (float v : out) EXPECT_EQ(v, -7.0f);
    ids[1] = 2;
    ASSERT_EQ(compute(node).code, SY_OK);
    for (float v : out) EXPECT_EQ(v, float(K));
}

// moe.fused_up_gate v1: provided, shapes and expert ids checked like MUL_MAT_ID's, and
// act(gate) * up computed.
TEST_P(CpuPluginTest, FusedUpGateIsCheckedAndComputed) {
    const int64_t K = 8, N = 4, E = 3;
    std::vector<float> up(size_t(K * N * E), 0.5f), gate(size_t(K * N * E), 0.25f),
        x(size_t(K * 2), 1.0f), out(size_t(N * 2), -7.0f);
    std::vector<int32_t> ids = {1, 3};
    sy_tensor ut = make_tensor(SY_TYPE_F32, K, N, E, 1, up.data(), "ffn_up_exps");
    sy_tensor gt = make_tensor(SY_TYPE_F32, K, N, E, 1, gate.data(), "ffn_gate_exps");
    sy_tensor xt = make_tensor(SY_TYPE_F32, K, 1, 2, 1, x.data());
    sy_tensor it = make_tensor(SY_TYPE_I32, 1, 2, 1, 1, ids.data(), "expert_ids");
    sy_tensor dt = make_tensor(SY_TYPE_F32, N, 1, 2, 1, out.data(), "ffn_par");
    sy_node node = make_node(SY_OP_NAMED, &dt);
    node.named_op = "moe.fused_up_gate";
    node.named_op_version = 1;
    node.src[0] = &ut;
    node.src[1] = &gt;
    node.src[2] = &xt;
    node.src[3] = &it;
    EXPECT_EQ(supports(node), 1);
    sy_status s = compute(node);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(text(s).find("expert_ids"), std::string::npos) << text(s);
    for (float v : out) EXPECT_EQ(v, -7.0f);
    ids[1] = 2;
    ASSERT_EQ(compute(node).code, SY_OK);
    const float g = 0.25f * K, u = 0.5f * K;
    for (float v : out) EXPECT_NEAR(v, g / (1 + std::exp(-g)) * u, 1e-4f);

    node.named_op_version = 2;  // a schema this plugin does not provide
    EXPECT_EQ(supports(node), 0);
    EXPECT_EQ(compute(node).code, SY_ERR_UNSUPPORTED);
    node.named_op_version = 1;
    gt.ne[1] = 2;  // gate of another shape than up
    EXPECT_EQ(supports(node), 0);
    s = compute(node);
    EXPECT_NE(text(s).find("gate experts"), std::string::npos) << text(s);
    gt.ne[1] = N;
    node.iparams[0] = 5;  // no such activation
    s = compute(node);
    EXPECT_NE(text(s).find("activation"), std::string::npos) << text(s);
}

// Reference for the thread-count test: dst[n, m] = sum_k A[k, n] * B[k, m], B read transposed.
std::vector<float> naive_mul_mat(const std::vector<float>& a, const std::vector<float>& b_t,
                                 int64_t K, int64_t N, int64_t M) {
    std::vector<float> out(size_t(N * M));
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k)
                s += double(a[size_t(n * K + k)]) * b_t[size_t(k * M + m)];
            out[size_t(m * N + n)] = float(s);
        }
    return out;
}

TEST_P(CpuPluginTest, MulMatIsTheSameForEveryThreadCount) {
    // Sizes off every vector width and tile size; B is a transposed view (strided rows).
    const int64_t K = 67, N = 37, M = 11;
    std::vector<float> a(size_t(K * N)), b_t(size_t(K * M));
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(float(i)) * 0.5f;
    for (size_t i = 0; i < b_t.size(); ++i) b_t[i] = std::cos(float(i) * 0.3f);
    const std::vector<float> expected = naive_mul_mat(a, b_t, K, N, M);
    sy_tensor at = make_tensor(SY_TYPE_F32, K, N, 1, 1, a.data());
    sy_tensor bt = make_tensor(SY_TYPE_F32, K, M, 1, 1, b_t.data());
    bt.nb[0] = M * 4;  // element k of row m at k * M + m
    bt.nb[1] = 4;
    for (const char* threads : {"1", "2", "3", "7"}) {
        ASSERT_EQ(api_.set_option(api_.ctx, "threads", threads).code, SY_OK);
        std::vector<float> out(size_t(N * M), NAN);
        sy_tensor dt = make_tensor(SY_TYPE_F32, N, M, 1, 1, out.data());
        sy_node node = make_node(SY_OP_MUL_MAT, &dt);
        node.src[0] = &at;
        node.src[1] = &bt;
        ASSERT_EQ(compute(node).code, SY_OK);
        for (size_t i = 0; i < out.size(); ++i)
            EXPECT_NEAR(out[i], expected[i], 1e-4) << "threads " << threads << ", element " << i;
    }
}

TEST_P(CpuPluginTest, EstimateFollowsTheRoofline) {
    auto mul_mat_ns = [&](int64_t K, int64_t N, int64_t M) {
        sy_tensor a = make_tensor(SY_TYPE_F16, K, N);
        sy_tensor b = make_tensor(SY_TYPE_F32, K, M);
        sy_tensor d = make_tensor(SY_TYPE_F32, N, M);
        sy_node node = make_node(SY_OP_MUL_MAT, &d);
        node.src[0] = &a;
        node.src[1] = &b;
        double ns = -1;
        EXPECT_EQ(api_.estimate(api_.ctx, 0, &node, &ns).code, SY_OK);
        return ns;
    };
    const double small = mul_mat_ns(64, 64, 1), big = mul_mat_ns(4096, 4096, 1);
    const double batch = mul_mat_ns(4096, 4096, 512);
    EXPECT_GT(small, 0.0);
    EXPECT_GT(big, small);
    EXPECT_GT(batch, big);

    // mul_mat_id counts only the experts the ids can reach: one token of 2 slots touches at
    // most 2 of 64 experts.
    auto moe_ns = [&](int64_t E) {
        sy_tensor w = make_tensor(SY_TYPE_F16, 1024, 512, E);
        sy_tensor x = make_tensor(SY_TYPE_F32, 1024, 1, 1);
        sy_tensor ids = make_tensor(SY_TYPE_I32, 2, 1);
        sy_tensor d = make_tensor(SY_TYPE_F32, 512, 2, 1);
        sy_node node = make_node(SY_OP_MUL_MAT_ID, &d);
        node.src[0] = &w;
        node.src[1] = &x;
        node.src[2] = &ids;
        double ns = -1;
        EXPECT_EQ(api_.estimate(api_.ctx, 0, &node, &ns).code, SY_OK);
        return ns;
    };
    EXPECT_NEAR(moe_ns(64), moe_ns(2), moe_ns(2) * 1e-9);
}

const std::vector<std::string> kVariants = runnable_variants();

INSTANTIATE_TEST_SUITE_P(Cpu, CpuPluginTest, testing::ValuesIn(kVariants),
                         [](const testing::TestParamInfo<std::string>& p) { return p.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CpuPluginTest);

TEST(CpuPluginVariants, AtLeastOneVariantRunsHere) {
    EXPECT_FALSE(kVariants.empty());
}

}  // namespace
