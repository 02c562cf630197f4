// The builder infers result shapes per ops.h and refuses broken contracts with a message that
// names the op, the tensors and their shapes.
#include <gtest/gtest.h>

#include <string>

#include "error_message.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/named_ops.h"

namespace sy {
namespace {

using test::contains;
using test::error_of;

TEST(GraphShapes, TransformerBlockReadsTopToBottom) {
    const int64_t n_embd = 64, n_tokens = 7, n_head = 4, head_dim = 16;
    Graph g;
    Tensor* x = g.input("inp_embd", SY_TYPE_F32, {n_embd, n_tokens});
    Tensor* pos = g.input("inp_pos", SY_TYPE_I32, {n_tokens});
    Tensor* norm_w = g.weight("blk.0.attn_norm.weight", SY_TYPE_F32, {n_embd});
    Tensor* wq = g.weight("blk.0.attn_q.weight", SY_TYPE_F16, {n_embd, n_head * head_dim});

    Tensor* h = g.mul(g.rms_norm(x, 1e-6f), norm_w);
    Tensor* q = g.mul_mat(wq, h);
    EXPECT_EQ(q->shape(), (Shape{n_head * head_dim, n_tokens}));
    EXPECT_EQ(q->type(), SY_TYPE_F32);
    q = g.reshape(q, {head_dim, n_head, n_tokens});
    q = g.rope(q, pos, {.n_dims = head_dim, .mode = SY_ROPE_NEOX});
    Tensor* kq = g.mul_mat(g.cont(g.permute(q, {0, 2, 1, 3})), g.permute(q, {0, 2, 1, 3}));
    EXPECT_EQ(kq->shape(), (Shape{n_tokens, n_tokens, n_head}));
    kq = g.softmax(kq, {.scale = 0.25f, .causal = true});
    g.mark_output(kq);

    ASSERT_EQ(g.nodes().size(), 7u);
    EXPECT_EQ(g.nodes()[0].op, SY_OP_RMS_NORM);
    EXPECT_FLOAT_EQ(g.nodes()[0].fparams[0], 1e-6f);
    EXPECT_EQ(g.nodes()[3].op, SY_OP_ROPE);
    EXPECT_EQ(g.nodes()[3].iparams[0], head_dim);
    EXPECT_EQ(g.nodes()[3].iparams[1], SY_ROPE_NEOX);
    EXPECT_EQ(g.nodes()[6].iparams[0], 1);
    EXPECT_FLOAT_EQ(g.nodes()[6].fparams[0], 0.25f);
    // Build order is topological: every source is a leaf, a view or an earlier node's result.
    for (size_t i = 0; i < g.nodes().size(); ++i) {
        for (const Tensor* s : g.nodes()[i].src) EXPECT_LT(s->base()->producer(), int(i));
        EXPECT_EQ(g.nodes()[i].dst->producer(), int(i));
    }
    ASSERT_EQ(g.outputs().size(), 1u);
    EXPECT_TRUE(kq->is_output());
}

TEST(GraphShapes, MulMatMismatchNamesBothTensorsAndShapes) {
    Graph g;
    Tensor* wq = g.weight("blk.0.attn_q.weight", SY_TYPE_F32, {64, 32});
    Tensor* h = g.input("attn_norm", SY_TYPE_F32, {48, 7});
    const std::string m = error_of([&] { g.mul_mat(wq, h); });
    EXPECT_TRUE(contains(m, "mul_mat(")) << m;
    EXPECT_TRUE(contains(m, "'blk.0.attn_q.weight' f32 {64, 32, 1, 1}")) << m;
    EXPECT_TRUE(contains(m, "'attn_norm' f32 {48, 7, 1, 1}")) << m;
    EXPECT_TRUE(contains(m, "64 vs 48")) << m;
}

TEST(GraphShapes, MulMatBroadcastsWeightsOverBatch) {
    Graph g;
    Tensor* k = g.input("k", SY_TYPE_F32, {16, 10, 2});
    Tensor* q = g.input("q", SY_TYPE_F32, {16, 7, 8});
    EXPECT_EQ(g.mul_mat(k, q)->shape(), (Shape{10, 7, 8}));
    Tensor* q3 = g.input("q3", SY_TYPE_F32, {16, 7, 3});
    EXPECT_TRUE(contains(error_of([&] { g.mul_mat(k, q3); }), "must divide"));
    Tensor* q16 = g.input("q16", SY_TYPE_F16, {16, 7, 8});
    EXPECT_TRUE(contains(error_of([&] { g.mul_mat(k, q16); }), "src1 (B) must be f32"));
    EXPECT_TRUE(contains(error_of([&] { g.mul_mat(g.transpose(k), q); }), "contiguous"));
}

TEST(GraphShapes, AddBroadcastsOnlyWhenDimensionsDivide) {
    Graph g;
    Tensor* a = g.input("a", SY_TYPE_F32, {4, 6});
    Tensor* bias = g.weight("bias", SY_TYPE_F32, {4});
    EXPECT_EQ(g.add(a, bias)->shape(), (Shape{4, 6}));
    EXPECT_EQ(g.mul(a, g.input("b", SY_TYPE_F16, {4, 3}))->type(), SY_TYPE_F32);
    Tensor* bad = g.input("bad_bias", SY_TYPE_F32, {3});
    const std::string m = error_of([&] { g.add(a, bad); });
    EXPECT_TRUE(contains(m, "add('a' f32 {4, 6, 1, 1}, 'bad_bias' f32 {3, 1, 1, 1})")) << m;
    EXPECT_TRUE(contains(m, "ne0 = 3 does not divide 4")) << m;
    Tensor* ids = g.input("ids", SY_TYPE_I32, {4, 6});
    EXPECT_TRUE(contains(error_of([&] { g.add(a, ids); }), "float"));
}

TEST(GraphShapes, UnaryOpsKeepShapeAndCheckParameters) {
    Graph g;
    Tensor* x = g.input("x", SY_TYPE_BF16, {8, 2});
    EXPECT_EQ(g.silu(x)->shape(), x->shape());
    EXPECT_EQ(g.gelu(x)->type(), SY_TYPE_BF16);
    EXPECT_EQ(g.sigmoid(x)->shape(), x->shape());
    Tensor* s = g.scale(x, 2.0f, 0.5f);
    EXPECT_FLOAT_EQ(g.nodes().back().fparams[0], 2.0f);
    EXPECT_FLOAT_EQ(g.nodes().back().fparams[1], 0.5f);
    EXPECT_EQ(s->shape(), x->shape());
    EXPECT_TRUE(contains(error_of([&] { g.rms_norm(x, 0.0f); }), "eps must be > 0"));
    EXPECT_TRUE(contains(error_of([&] { g.silu(g.input("i", SY_TYPE_I32, {3})); }), "'i' i32"));
}

TEST(GraphShapes, MulMatIdChecksExpertsTokensAndIds) {
    Graph g;
    Tensor* w = g.weight("ffn_up_exps", SY_TYPE_F32, {16, 32, 8});
    Tensor* x = g.input("x", SY_TYPE_F32, {16, 1, 5});
    Tensor* ids = g.input("ids", SY_TYPE_I32, {2, 5});
    EXPECT_EQ(g.mul_mat_id(w, x, ids)->shape(), (Shape{32, 2, 5}));
    Tensor* ids4 = g.input("ids4", SY_TYPE_I32, {2, 4});
    const std::string m = error_of([&] { g.mul_mat_id(w, x, ids4); });
    EXPECT_TRUE(contains(m, "'ids4' i32 {2, 4, 1, 1}")) << m;
    Tensor* x3 = g.input("x3", SY_TYPE_F32, {16, 3, 5});
    EXPECT_TRUE(contains(error_of([&] { g.mul_mat_id(w, x3, ids); }),
                         "src1 (X) ne1 must be 1 or ids.ne0 (U) 2, got 3"));
}

TEST(GraphShapes, GetRowsGathersAlongNe1) {
    Graph g;
    Tensor* emb = g.weight("token_embd.weight", SY_TYPE_Q8_0, {64, 100});
    Tensor* tok = g.input("tokens", SY_TYPE_I32, {7});
    Tensor* rows = g.get_rows(emb, tok);
    EXPECT_EQ(rows->shape(), (Shape{64, 7}));
    EXPECT_EQ(rows->type(), SY_TYPE_F32);
    EXPECT_TRUE(contains(error_of([&] { g.get_rows(emb, tok, SY_TYPE_F16); }), "result type f16"));
    Tensor* ftok = g.input("ftok", SY_TYPE_F32, {7});
    EXPECT_TRUE(
        contains(error_of([&] { g.get_rows(emb, ftok); }), "src1 (ids) must be i32, got f32"));
}

TEST(GraphShapes, RopeChecksPositionsAndDims) {
    Graph g;
    Tensor* q = g.input("Qcur", SY_TYPE_F32, {16, 4, 7});
    Tensor* pos = g.input("inp_pos", SY_TYPE_I32, {7});
    EXPECT_EQ(g.rope(q, pos, {.n_dims = 8})->shape(), q->shape());
    EXPECT_TRUE(contains(error_of([&] { g.rope(q, pos, {.n_dims = 7}); }), "n_dims 7"));
    EXPECT_TRUE(contains(error_of([&] { g.rope(q, pos, {.n_dims = 18}); }), "n_dims 18"));
    EXPECT_TRUE(contains(error_of([&] { g.rope(q, pos, {.n_dims = 8, .mode = 1}); }), "mode"));
    Tensor* pos6 = g.input("pos6", SY_TYPE_I32, {6});
    const std::string m = error_of([&] { g.rope(q, pos6, {.n_dims = 8}); });
    EXPECT_TRUE(contains(m, "'pos6' i32 {6, 1, 1, 1}")) << m;
    EXPECT_TRUE(contains(m, "'Qcur' f32 {16, 4, 7, 1}")) << m;
}

TEST(GraphShapes, SoftmaxMaskMustMatchRows) {
    Graph g;
    Tensor* kq = g.input("kq", SY_TYPE_F32, {10, 7, 4});
    Tensor* mask = g.input("kq_mask", SY_TYPE_F16, {10, 7});
    Tensor* s = g.softmax(kq, {.mask = mask, .scale = 0.125f});
    EXPECT_EQ(s->shape(), kq->shape());
    EXPECT_EQ(g.nodes().back().src.size(), 2u);
    Tensor* short_mask = g.input("short_mask", SY_TYPE_F32, {9, 7});
    const std::string m = error_of([&] { g.softmax(kq, {.mask = short_mask}); });
    EXPECT_TRUE(contains(m, "'short_mask'")) << m;
    EXPECT_TRUE(contains(m, "mask.ne0 9")) << m;
}

TEST(GraphShapes, RoutingOps) {
    Graph g;
    Tensor* logits = g.input("router_logits", SY_TYPE_F32, {64, 5});
    Tensor* top = g.top_k(logits, 6);
    EXPECT_EQ(top->shape(), (Shape{6, 5}));
    EXPECT_EQ(top->type(), SY_TYPE_I32);
    EXPECT_EQ(g.argsort(logits, true)->type(), SY_TYPE_I32);
    EXPECT_EQ(g.nodes().back().iparams[0], 1);
    EXPECT_EQ(g.sum_rows(logits)->shape(), (Shape{1, 5}));
    EXPECT_TRUE(contains(error_of([&] { g.top_k(logits, 65); }), "k = 65"));
}

TEST(GraphShapes, ConcatAndCopies) {
    Graph g;
    Tensor* a = g.input("k_nope", SY_TYPE_F32, {128, 4, 7});
    Tensor* b = g.input("k_rope", SY_TYPE_F32, {64, 4, 7});
    Tensor* k = g.concat(a, b, 0);
    EXPECT_EQ(k->shape(), (Shape{192, 4, 7}));
    EXPECT_EQ(g.nodes().back().iparams[0], 0);
    const std::string m = error_of([&] { g.concat(a, b, 1); });
    EXPECT_TRUE(contains(m, "ne0: 128 vs 64")) << m;
    Tensor* h = g.cpy(k, SY_TYPE_F16);
    EXPECT_EQ(h->type(), SY_TYPE_F16);
    EXPECT_TRUE(g.cont(g.transpose(k))->is_contiguous());
    Tensor* cache = g.weight("cache_k", SY_TYPE_F16, {192, 4, 16});
    Tensor* slot = g.view(cache, {192, 4, 7}, cache->strides(), 0);
    EXPECT_EQ(g.cpy(k, slot), slot);
    EXPECT_EQ(g.nodes().back().dst, slot);
    EXPECT_THROW(g.cpy(k, SY_TYPE_I32), Error);
}

TEST(GraphShapes, NamedOpCarriesNameVersionAndParams) {
    Graph g;
    Tensor* up = g.weight("up", SY_TYPE_F32, {16, 32, 8});
    Tensor* gate = g.weight("gate", SY_TYPE_F32, {16, 32, 8});
    Tensor* x = g.input("x", SY_TYPE_F32, {16, 1, 5});
    Tensor* ids = g.input("ids", SY_TYPE_I32, {2, 5});
    Tensor* y = g.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                        {up, gate, x, ids}, SY_TYPE_F32, {32, 2, 5}, {.iparams = {1}});
    const Node& n = g.nodes().back();
    EXPECT_EQ(n.op, SY_OP_NAMED);
    EXPECT_EQ(n.named_op, "moe.fused_up_gate");
    EXPECT_EQ(n.named_op_version, 1u);
    EXPECT_EQ(n.label(), "moe.fused_up_gate v1");
    EXPECT_EQ(n.src.size(), 4u);
    EXPECT_EQ(n.iparams[0], 1);
    EXPECT_EQ(y->shape(), (Shape{32, 2, 5}));
    EXPECT_THROW(g.named("moe.x", 1, {up}, SY_TYPE_F32, {0}), Error);
}

// The schemas of named_ops.h have rules (op_contract.hpp): a result that breaks them, or sources
// that do, are refused; a backend's own named op is its provider's to check.
TEST(GraphShapes, NamedOpsOfKnownSchemasAreChecked) {
    Graph g;
    Tensor* up = g.weight("up", SY_TYPE_F32, {16, 32, 8});
    Tensor* gate = g.weight("gate", SY_TYPE_F32, {16, 32, 8});
    Tensor* x = g.input("x", SY_TYPE_F32, {16, 1, 5});
    Tensor* ids = g.input("ids", SY_TYPE_I32, {2, 5});
    const std::string wrong_shape = error_of([&] {
        g.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION, {up, gate, x, ids},
                SY_TYPE_F32, {32, 5, 2});
    });
    EXPECT_TRUE(contains(wrong_shape, "moe.fused_up_gate v1(")) << wrong_shape;
    EXPECT_TRUE(
        contains(wrong_shape, "f32 {32, 5, 2, 1} differs from the schema's f32 {32, 2, 5, 1}"))
        << wrong_shape;
    Tensor* small_gate = g.weight("small_gate", SY_TYPE_F32, {16, 16, 8});
    const std::string wrong_gate = error_of([&] {
        g.named(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                {up, small_gate, x, ids}, SY_TYPE_F32, {32, 2, 5});
    });
    EXPECT_TRUE(contains(wrong_gate, "src1 (gate experts) {16, 16, 8, 1}")) << wrong_gate;
    Tensor* q = g.input("q", SY_TYPE_F32, {24, 5, 4});
    Tensor* cache = g.input("cache", SY_TYPE_F16, {24, 9});
    Tensor* latent = g.named(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, {q, cache}, SY_TYPE_F32,
                             {16, 5, 4}, {.iparams = {0, 0, 8}});
    EXPECT_EQ(latent->shape(), (Shape{16, 5, 4}));
    EXPECT_TRUE(contains(error_of([&] {
                             g.named(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, {q, cache},
                                     SY_TYPE_F32, {16, 5, 4}, {.iparams = {0, 0, 24}});
                         }),
                         "the rope width (iparams[2]) = 24 must lie in [0, 24)"));
    // Unknown to the SDK: any sources, the caller's result.
    EXPECT_EQ(g.named("vendor.op", 3, {q, ids}, SY_TYPE_F16, {7})->type(), SY_TYPE_F16);
}

TEST(GraphShapes, TensorsOfAnotherGraphAreRefused) {
    Graph g1, g2;
    Tensor* a = g1.input("a", SY_TYPE_F32, {4});
    Tensor* b = g2.input("b", SY_TYPE_F32, {4});
    EXPECT_TRUE(
        contains(error_of([&] { g1.add(a, b); }), "'b' f32 {4, 1, 1, 1} belongs to another graph"));
    EXPECT_THROW(g1.mark_output(b), Error);
    EXPECT_THROW(g1.input("zero", SY_TYPE_F32, {4, 0}), Error);
}

TEST(GraphShapes, ShapeSignatureTracksShapesNotData) {
    auto build = [](Graph& g, int64_t n_tokens) {
        Tensor* x = g.input("x", SY_TYPE_F32, {8, n_tokens});
        g.mark_output(g.silu(g.rms_norm(x, 1e-5f)));
    };
    Graph a, b, c;
    build(a, 3);
    build(b, 3);
    build(c, 4);
    EXPECT_EQ(a.shape_signature(a.all_nodes()), b.shape_signature(b.all_nodes()));
    EXPECT_NE(a.shape_signature(a.all_nodes()), c.shape_signature(c.all_nodes()));
    const std::vector<int32_t> first{0};
    EXPECT_NE(a.shape_signature(first), a.shape_signature(a.all_nodes()));
    EXPECT_NE(a.serial(), b.serial());
}

// A decode step reads one more cached row than the last: a view of an outside tensor that grows
// leaves the signature (and so the memory plan) alone; a planned intermediate that grows does not.
TEST(GraphShapes, ShapeSignatureIgnoresViewShapes) {
    auto build = [](Graph& g, int64_t n_kv, bool copy) {
        Tensor* cache = g.input("cache", SY_TYPE_F32, {64, 8});
        Tensor* rows = g.view(cache, {n_kv, 8}, {4, 256}, 0);
        if (copy) rows = g.cont(rows);  // a planned {n_kv, 8}
        Tensor* x = g.input("x", SY_TYPE_F32, {64});
        g.mark_output(g.mul_mat(rows, g.view(x, {n_kv}, {4, 256}, 0)));  // {8} whatever n_kv is
    };
    Graph a, b, c, d;
    build(a, 3, false);
    build(b, 4, false);
    build(c, 3, true);
    build(d, 4, true);
    EXPECT_EQ(a.shape_signature(a.all_nodes()), b.shape_signature(b.all_nodes()));
    EXPECT_NE(c.shape_signature(c.all_nodes()), d.shape_signature(d.all_nodes()));
}

// The structure signature leaves out every shape: decode steps whose planned intermediates grow
// with the cache share it (and so a placement), but not graphs with other ops, other types or
// other connections.
TEST(GraphShapes, StructureSignatureIgnoresShapesOnly) {
    auto build = [](Graph& g, int64_t n_kv, sy_dtype type, bool norm, bool swap) {
        Tensor* cache = g.input("cache", type, {64, 8});
        const int64_t es = type == SY_TYPE_F16 ? 2 : 4;
        Tensor* rows = g.cont(g.view(cache, {n_kv, 8}, {es, 64 * es}, 0));  // a planned {n_kv, 8}
        Tensor* x = g.input("x", SY_TYPE_F32, {64});
        Tensor* q = g.view(x, {n_kv}, {4, 256}, 0);
        if (norm) q = g.rms_norm(q, 1e-5f);
        g.mark_output(swap ? g.mul_mat(g.cont(q), rows) : g.mul_mat(rows, g.cont(q)));
    };
    Graph a, b, other_op, other_type, other_order;
    build(a, 3, SY_TYPE_F32, false, false);
    build(b, 40, SY_TYPE_F32, false, false);
    build(other_op, 3, SY_TYPE_F32, true, false);
    build(other_type, 3, SY_TYPE_F16, false, false);
    build(other_order, 3, SY_TYPE_F32, false, true);
    const auto sig = [](const Graph& g) { return g.structure_signature(g.all_nodes()); };
    EXPECT_NE(a.shape_signature(a.all_nodes()), b.shape_signature(b.all_nodes()));
    EXPECT_EQ(sig(a), sig(b));
    EXPECT_NE(sig(a), sig(other_op));
    EXPECT_NE(sig(a), sig(other_type));
    EXPECT_NE(sig(a), sig(other_order));
}

// A kept graph is moved between runs: a view along its base (within it, as view() checks) and a
// node's integer parameter; neither changes its signatures. The signatures computed before a
// node is added are not the ones after.
TEST(GraphShapes, MovedViewsAndParametersKeepTheSignatures) {
    Graph g;
    Tensor* cache = g.input("cache", SY_TYPE_F32, {8, 10});
    Tensor* x = g.input("x", SY_TYPE_F32, {8, 1});
    Tensor* slot = g.view(cache, {8, 1}, {4, 32}, 3 * 32);
    Tensor* written = g.cpy(x, slot);
    SoftmaxParams sp;
    sp.causal = true;
    sp.causal_offset = 3;
    Tensor* p = g.softmax(g.view(cache, {8, 4}, {4, 32}, 0), sp);
    g.mark_output(p);
    const std::string structure = g.structure_signature(g.all_nodes());
    const std::string shapes = g.shape_signature(g.all_nodes());
    g.move_view(written, 5 * 32);
    EXPECT_EQ(written->offset(), 8u * 32u);
    g.shift_iparam(p->producer(), 1, 5);
    EXPECT_EQ(g.nodes()[size_t(p->producer())].iparams[1], 8);
    EXPECT_EQ(g.structure_signature(g.all_nodes()), structure);
    EXPECT_EQ(g.shape_signature(g.all_nodes()), shapes);
    // Row 10 would be past the 10 rows; before row 0 too. The view stays where it was.
    EXPECT_TRUE(contains(error_of([&] { g.move_view(written, 2 * 32); }), "would span bytes"));
    EXPECT_TRUE(contains(error_of([&] { g.move_view(written, -9 * 32); }), "base of 320"));
    EXPECT_EQ(written->offset(), 8u * 32u);
    EXPECT_TRUE(contains(error_of([&] { g.move_view(cache, 32); }), "is not a view"));
    EXPECT_TRUE(contains(error_of([&] { g.shift_iparam(7, 1, 1); }), "no parameter 1 of node 7"));
    g.mark_output(g.scale(p, 2.0f));
    EXPECT_NE(g.structure_signature(g.all_nodes()), structure);
    EXPECT_NE(g.shape_signature(g.all_nodes()), shapes);
}

}  // namespace
}  // namespace sy
