// Views are descriptors over the same bytes: shape, strides and offset must come out exactly as
// ggml would compute them, and reshape must refuse what it cannot do without a copy.
#include <gtest/gtest.h>

#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"

namespace sy {
namespace {

Strides strides(int64_t a, int64_t b, int64_t c, int64_t d) {
    return {a, b, c, d};
}

TEST(TensorView, InputsArePackedWithUnusedDimensionsOne) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {4, 3, 2});
    EXPECT_EQ(x->shape(), (Shape{4, 3, 2, 1}));
    EXPECT_EQ(x->strides(), strides(4, 16, 48, 96));
    EXPECT_EQ(x->bytes(), 96);
    EXPECT_TRUE(x->is_contiguous());
    EXPECT_EQ(x->kind(), TensorKind::input);
    EXPECT_EQ(x->base(), x);
}

TEST(TensorView, QuantizedStridesCountBlocks) {
    Graph g;
    Tensor* w = g.weight("w", SY_TYPE_Q8_0, {64, 3});
    EXPECT_EQ(w->strides(), strides(34, 68, 204, 204));
    EXPECT_THROW(g.weight("odd", SY_TYPE_Q8_0, {48, 3}), Error);
}

TEST(TensorView, TransposeSwapsShapeAndStrides) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {4, 3, 2});
    Tensor* t = g.transpose(x);
    EXPECT_EQ(t->shape(), (Shape{3, 4, 2, 1}));
    EXPECT_EQ(t->strides(), strides(16, 4, 48, 96));
    EXPECT_EQ(t->offset(), 0u);
    EXPECT_TRUE(t->is_view());
    EXPECT_EQ(t->base(), x);
    EXPECT_FALSE(t->is_contiguous());
    EXPECT_EQ(t->producer(), -1);
    EXPECT_TRUE(g.nodes().empty()) << "a view is not a node";
}

TEST(TensorView, PermuteMovesDimensionIToAxesI) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {4, 3, 2});
    Tensor* p = g.permute(x, {2, 0, 1, 3});
    EXPECT_EQ(p->shape(), (Shape{3, 2, 4, 1}));
    EXPECT_EQ(p->strides(), strides(16, 48, 4, 96));
    EXPECT_THROW(g.permute(x, {0, 0, 1, 2}), Error);
}

TEST(TensorView, ViewOfViewAccumulatesOffsetOnTheRootBase) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {4, 3, 2});
    Tensor* plane1 = g.view(x, {4, 3}, strides(4, 16, 48, 48), 48);
    Tensor* row2 = g.view(plane1, {4}, strides(4, 16, 16, 16), 32);
    EXPECT_EQ(plane1->offset(), 48u);
    EXPECT_EQ(row2->offset(), 80u);
    EXPECT_EQ(row2->base(), x);
    EXPECT_EQ(row2->bytes(), 16);
    const sy_tensor d = row2->descriptor();
    EXPECT_EQ(d.struct_size, sizeof(sy_tensor));
    EXPECT_EQ(d.ne[0], 4);
    EXPECT_EQ(d.nb[1], 16);
    EXPECT_EQ(d.data, nullptr);
    EXPECT_STREQ(d.name, row2->name().c_str());
}

TEST(TensorView, WeightsCarryTheirConstantIdIntoViewsAndDescriptors) {
    const uint64_t a = new_constant_id(), b = new_constant_id();
    EXPECT_NE(a, 0u);
    EXPECT_NE(a, b);
    Graph g;
    Tensor* w = g.weight("w", SY_TYPE_F32, {4, 3});
    EXPECT_EQ(w->descriptor().constant_id, 0u);  // not constant until said
    w->set_constant_id(b);
    Tensor* row = g.view(w, {4}, strides(4, 16, 16, 16), 16);
    EXPECT_EQ(row->constant_id(), b);
    EXPECT_EQ(row->descriptor().constant_id, b);
    EXPECT_EQ(w->descriptor().constant_id, b);
    // Inputs and intermediates change between runs: never constant.
    Tensor* x = g.input("x", SY_TYPE_F32, {4, 3});
    EXPECT_THROW(x->set_constant_id(a), Error);
    EXPECT_EQ(x->descriptor().constant_id, 0u);
}

TEST(TensorView, ViewPastTheBaseIsRefusedNamingTheBase) {
    Graph g;
    Tensor* x = g.input("tokens", SY_TYPE_F32, {4, 3});
    try {
        g.view(x, {4, 2}, strides(4, 16, 32, 32), 32);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'tokens'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("past the 48 bytes"), std::string::npos) << e.what();
    }
}

TEST(TensorView, ReshapeOfContiguousIsPacked) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F16, {4, 3, 2});
    Tensor* r = g.reshape(x, {12, 2});
    EXPECT_EQ(r->shape(), (Shape{12, 2, 1, 1}));
    EXPECT_EQ(r->strides(), strides(2, 24, 48, 48));
    EXPECT_EQ(r->base(), x);
    EXPECT_EQ(r->type(), SY_TYPE_F16);
}

TEST(TensorView, ReshapeOfTransposedViewNamesTheTensorAndSaysWhy) {
    Graph g;
    Tensor* x = g.input("kq", SY_TYPE_F32, {4, 3});
    Tensor* t = g.transpose(x);
    try {
        g.reshape(t, {12});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("reshape("), std::string::npos) << m;
        EXPECT_NE(m.find("'kq (transposed)' f32 {3, 4, 1, 1}"), std::string::npos) << m;
        EXPECT_NE(m.find("contiguous"), std::string::npos) << m;
    }
}

TEST(TensorView, ReshapeMustKeepTheElementCount) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {4, 3});
    EXPECT_THROW(g.reshape(x, {5, 2}), Error);
}

TEST(TensorView, OnlyExternalTensorsTakeData) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_F32, {4});
    float data[4] = {};
    x->set_data(data);
    EXPECT_EQ(x->host_data(), data);
    Tensor* y = g.silu(x);
    EXPECT_THROW(y->set_data(data), Error);
    EXPECT_THROW(g.transpose(x)->set_data(data), Error);
}

}  // namespace
}  // namespace sy
