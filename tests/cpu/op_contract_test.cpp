// Contract cases the conformance table does not cover, run directly on every runnable CPU
// variant: invalid nodes are refused with SY_ERR_INVALID_ARGUMENT and a message (never a read out
// of bounds), and in-place add/scale (dst == src0) compute the right values.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "cpu_plugins.hpp"
#include "switchyard/reference.hpp"
#include "switchyard/sdk.hpp"

namespace {

using sy::sdk::make_node;
using sy::sdk::make_tensor;

// A packed tensor in a buffer of the plugin, with a host mirror for upload and download.
class DeviceTensor {
  public:
    DeviceTensor(const sy_plugin_api& api, int32_t type, int64_t ne0, int64_t ne1 = 1,
                 int64_t ne2 = 1)
        : api_(api) {
        host_ = make_tensor(type, ne0, ne1, ne2);
        bytes_.assign(size_t(sy::sdk::nbytes(host_)), 0);
        host_.data = bytes_.data();
        buffer_.struct_size = sizeof buffer_;
        const sy_status st = api_.buffer_alloc(api_.ctx, 0, bytes_.size(), &buffer_);
        EXPECT_EQ(st.code, SY_OK) << (st.message ? st.message : "");
        device_ = host_;
        device_.data = buffer_.base;
        device_.buffer = &buffer_;
    }
    ~DeviceTensor() { api_.buffer_free(api_.ctx, &buffer_); }
    DeviceTensor(const DeviceTensor&) = delete;
    DeviceTensor& operator=(const DeviceTensor&) = delete;

    void set(const std::vector<double>& values) {
        for (size_t i = 0; i < values.size(); ++i) {
            const int64_t i0 = int64_t(i) % host_.ne[0], r = int64_t(i) / host_.ne[0];
            sy::reference::write_element(host_, i0, r % host_.ne[1], r / host_.ne[1], 0, values[i]);
        }
        EXPECT_EQ(api_.buffer_set(api_.ctx, &buffer_, 0, bytes_.data(), bytes_.size()).code, SY_OK);
    }
    std::vector<double> get() {
        EXPECT_EQ(api_.buffer_get(api_.ctx, &buffer_, 0, bytes_.data(), bytes_.size()).code, SY_OK);
        std::vector<double> out;
        for (int64_t i2 = 0; i2 < host_.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < host_.ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < host_.ne[0]; ++i0)
                    out.push_back(sy::reference::read_element(host_, i0, i1, i2, 0));
        return out;
    }
    const sy_tensor* t() const { return &device_; }

  private:
    const sy_plugin_api& api_;
    sy_buffer buffer_{};
    sy_tensor host_{}, device_{};
    std::vector<unsigned char> bytes_;
};

class CpuContract : public testing::TestWithParam<size_t> {
  protected:
    const sy::test::CpuPlugin& cpu() const { return sy::test::cpu_plugins()[GetParam()]; }
    const sy_plugin_api& api() const { return cpu().plugin->api(); }

    sy_status compute(const sy_node& node) {
        const sy_node* nodes[] = {&node};
        sy_status st = api().compute(api().ctx, 0, nodes, 1);
        if (st.code == SY_OK) st = api().synchronize(api().ctx, 0);
        return st;
    }
    // The node is refused: supports() says 0 and compute() returns INVALID_ARGUMENT with a message.
    void expect_invalid(const sy_node& node, const char* what) {
        int32_t supported = -1;
        const sy_status s = api().supports(api().ctx, 0, &node, &supported);
        EXPECT_EQ(s.code, SY_OK) << what;
        EXPECT_EQ(supported, 0) << what << ": supports() accepts an invalid node";
        const sy_status st = compute(node);
        EXPECT_EQ(st.code, SY_ERR_INVALID_ARGUMENT)
            << what << ": " << (st.message ? st.message : "(no message)");
        EXPECT_TRUE(st.message && *st.message) << what << ": an error needs a message";
    }
};

TEST_P(CpuContract, AddWithShapesThatDoNotBroadcastIsInvalid) {
    DeviceTensor a(api(), SY_TYPE_F32, 8, 3), b(api(), SY_TYPE_F32, 5, 3),
        d(api(), SY_TYPE_F32, 8, 3);
    sy_node n = make_node(SY_OP_ADD, d.t());
    n.n_src = 2;
    n.src[0] = a.t();
    n.src[1] = b.t();
    expect_invalid(n, "add {8, 3} + {5, 3}");
}

TEST_P(CpuContract, GetRowsWithRowIdsOutOfRangeIsInvalid) {
    DeviceTensor src(api(), SY_TYPE_F32, 16, 4), ids(api(), SY_TYPE_I32, 2),
        d(api(), SY_TYPE_F32, 16, 2);
    src.set(std::vector<double>(64, 1.0));
    sy_node n = make_node(SY_OP_GET_ROWS, d.t());
    n.n_src = 2;
    n.src[0] = src.t();
    n.src[1] = ids.t();
    for (double bad : {4.0, -2.0, 1e6}) {  // -1 is SY_ID_NONE: a zero row
        ids.set({0, bad});
        const sy_status st = compute(n);
        EXPECT_EQ(st.code, SY_ERR_INVALID_ARGUMENT) << "row id " << bad;
        EXPECT_TRUE(st.message && *st.message) << "row id " << bad;
    }
}

TEST_P(CpuContract, MulMatIdWithExpertIdOutOfRangeIsInvalid) {
    DeviceTensor w(api(), SY_TYPE_F32, 32, 8, 4), x(api(), SY_TYPE_F32, 32, 1, 3),
        ids(api(), SY_TYPE_I32, 2, 3), d(api(), SY_TYPE_F32, 8, 2, 3);
    w.set(std::vector<double>(32 * 8 * 4, 0.5));
    x.set(std::vector<double>(32 * 3, 1.0));
    ids.set({0, 1, 2, 3, 4, 0});  // 4 is out of [0, 4)
    sy_node n = make_node(SY_OP_MUL_MAT_ID, d.t());
    n.n_src = 3;
    n.src[0] = w.t();
    n.src[1] = x.t();
    n.src[2] = ids.t();
    const sy_status st = compute(n);
    EXPECT_EQ(st.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(st.message && *st.message);
}

TEST_P(CpuContract, RopeWithOddDimsOrUnknownModeIsInvalid) {
    DeviceTensor x(api(), SY_TYPE_F32, 8, 2, 3), pos(api(), SY_TYPE_I32, 3),
        d(api(), SY_TYPE_F32, 8, 2, 3);
    sy_node n = make_node(SY_OP_ROPE, d.t());
    n.n_src = 2;
    n.src[0] = x.t();
    n.src[1] = pos.t();
    n.fparams[0] = 10000;
    n.fparams[1] = 1;
    n.fparams[3] = 1;
    n.iparams[0] = 7;
    expect_invalid(n, "rope n_dims 7");
    n.iparams[0] = 8;
    n.iparams[1] = 5;
    expect_invalid(n, "rope mode 5");
}

TEST_P(CpuContract, UnaryIntoIntegerDstIsInvalid) {
    DeviceTensor a(api(), SY_TYPE_F32, 8), d(api(), SY_TYPE_I32, 8);
    sy_node n = make_node(SY_OP_SILU, d.t());
    n.n_src = 1;
    n.src[0] = a.t();
    expect_invalid(n, "silu f32 -> i32");
}

TEST_P(CpuContract, InPlaceAddAndScale) {
    DeviceTensor a(api(), SY_TYPE_F32, 37, 3), b(api(), SY_TYPE_F32, 37, 1);
    std::vector<double> av, bv;
    for (int i = 0; i < 37 * 3; ++i) av.push_back(i * 0.25 - 3);
    for (int i = 0; i < 37; ++i) bv.push_back(1.0 / (i + 1));
    a.set(av);
    b.set(bv);
    sy_node add = make_node(SY_OP_ADD, a.t());
    add.n_src = 2;
    add.src[0] = a.t();
    add.src[1] = b.t();
    int32_t supported = 0;
    ASSERT_EQ(api().supports(api().ctx, 0, &add, &supported).code, SY_OK);
    if (!supported) GTEST_SKIP() << "in-place add not supported";
    ASSERT_EQ(compute(add).code, SY_OK);
    sy_node scale = make_node(SY_OP_SCALE, a.t());
    scale.n_src = 1;
    scale.src[0] = a.t();
    scale.fparams[0] = 2;
    scale.fparams[1] = -1;
    ASSERT_EQ(compute(scale).code, SY_OK);
    const std::vector<double> out = a.get();
    for (size_t i = 0; i < av.size(); ++i)
        EXPECT_NEAR(out[i], float((av[i] + bv[i % 37]) * 2 - 1), 1e-5) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(Cpu, CpuContract,
                         testing::Range(size_t(0), sy::test::cpu_plugins().size()),
                         [](const testing::TestParamInfo<size_t>& p) {
                             return sy::test::cpu_plugins()[p.param].variant;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CpuContract);

}  // namespace
