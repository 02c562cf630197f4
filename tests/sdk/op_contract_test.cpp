// The op contract is written once (op_contract.hpp) and applied by everyone who checks a node:
// a node that breaks it is refused by validate_node (every plugin's supports() and compute())
// and by the reference with the contract's own words, and a node that keeps it is accepted by
// both. (The graph builder's use is tested in tests/core/graph_shape_test.cpp.)
#include "switchyard/op_contract.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "switchyard/named_ops.h"
#include "switchyard/op_work.hpp"
#include "switchyard/reference.hpp"
#include "switchyard/sdk.hpp"
#include "switchyard/validation.hpp"

namespace sy {
namespace {

// Tensors with zeroed storage that lives as long as the builder.
class Tensors {
  public:
    sy_tensor* make(int32_t type, int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1, int64_t ne3 = 1) {
        sy_tensor t = sdk::make_tensor(type, ne0, ne1, ne2, ne3);
        const int64_t bytes = std::max<int64_t>(sdk::nbytes(t), 1);
        storage_.emplace_back(size_t(bytes), 0);
        t.data = storage_.back().data();
        tensors_.push_back(t);
        return &tensors_.back();
    }

  private:
    std::deque<std::vector<char>> storage_;
    std::deque<sy_tensor> tensors_;
};

sy_node node_of(int32_t op, std::vector<sy_tensor*> src, sy_tensor* dst,
                const char* named = nullptr, uint32_t version = 0) {
    sy_node n{};
    n.struct_size = sizeof(sy_node);
    n.op = op;
    n.named_op = named;
    n.named_op_version = version;
    n.n_src = int32_t(src.size());
    for (size_t i = 0; i < src.size(); ++i) n.src[i] = src[i];
    n.dst = dst;
    return n;
}

// A backend whose capability rows take any source types, one to four sources and the usual
// result types for every op, so that only the contract decides.
const validation::Backend& any_types() {
    static const std::vector<sy_capability> rows = [] {
        std::vector<sy_capability> r;
        const auto row = [&](int32_t op, const char* named, uint32_t version) {
            sy_capability c{};
            c.op = op;
            c.named_op = named;
            c.named_op_version = version;
            for (int32_t dst : {SY_TYPE_F32, SY_TYPE_F16, SY_TYPE_BF16, SY_TYPE_I32}) {
                c.dst_type = dst;
                for (int n_src = 1; n_src <= 4; ++n_src) {
                    for (int i = 0; i < 4; ++i)
                        c.src_type[i] = i < n_src ? SY_TYPE_ANY : SY_TYPE_NONE;
                    r.push_back(c);
                }
            }
        };
        for (int32_t op = SY_OP_ADD; op < SY_OP_BUILTIN_COUNT; ++op) row(op, nullptr, 0);
        row(SY_OP_NAMED, SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION);
        row(SY_OP_NAMED, SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION);
        row(SY_OP_NAMED, SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION);
        return r;
    }();
    static const validation::Backend backend{"test", rows.data(), rows.size(), true};
    return backend;
}

std::string validation_error(const sy_node& n) {
    const sy_status s = validation::validate_node(&n, validation::DataChecks::kFull, any_types());
    return s.code == SY_OK ? std::string() : std::string(s.message ? s.message : "(no message)");
}

std::string reference_error(const sy_node& n) {
    try {
        reference::evaluate(n);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return {};
}

struct Broken {
    const char* what;
    sy_node node;
    const char* says;  // part of the contract's message
};

TEST(OpContract, BrokenNodesAreRefusedEverywhereInTheContractsWords) {
    Tensors t;
    std::vector<Broken> cases;
    cases.push_back({"mul_mat K",
                     node_of(SY_OP_MUL_MAT, {t.make(SY_TYPE_F32, 8, 4), t.make(SY_TYPE_F32, 6, 3)},
                             t.make(SY_TYPE_F32, 4, 3)),
                     "ne0 (K) must agree: 8 vs 6"});
    cases.push_back({"mul_mat dst",
                     node_of(SY_OP_MUL_MAT, {t.make(SY_TYPE_F32, 8, 4), t.make(SY_TYPE_F32, 8, 3)},
                             t.make(SY_TYPE_F32, 3, 4)),
                     "dst shape {3, 4, 1, 1}, expected {4, 3, 1, 1}"});
    cases.push_back({"add broadcast",
                     node_of(SY_OP_ADD, {t.make(SY_TYPE_F32, 4, 6), t.make(SY_TYPE_F32, 3)},
                             t.make(SY_TYPE_F32, 4, 6)),
                     "ne0 = 3 does not divide 4"});
    cases.push_back({"silu of i32",
                     node_of(SY_OP_SILU, {t.make(SY_TYPE_I32, 4)}, t.make(SY_TYPE_I32, 4)),
                     "src0 needs a float type (f32, f16, bf16), got i32"});
    cases.push_back({"mul_mat_id U1",
                     node_of(SY_OP_MUL_MAT_ID,
                             {t.make(SY_TYPE_F32, 8, 4, 3), t.make(SY_TYPE_F32, 8, 3, 5),
                              t.make(SY_TYPE_I32, 2, 5)},
                             t.make(SY_TYPE_F32, 4, 2, 5)),
                     "src1 (X) ne1 must be 1 or ids.ne0 (U) 2, got 3"});
    cases.push_back({"get_rows ids",
                     node_of(SY_OP_GET_ROWS, {t.make(SY_TYPE_F32, 8, 10), t.make(SY_TYPE_F32, 3)},
                             t.make(SY_TYPE_F32, 8, 3)),
                     "src1 (ids) must be i32, got f32"});
    cases.push_back({"top_k k",
                     node_of(SY_OP_TOP_K, {t.make(SY_TYPE_F32, 4, 2)}, t.make(SY_TYPE_I32, 5, 2)),
                     "k = 5 must be in [1, 4]"});
    cases.push_back({"concat dims",
                     node_of(SY_OP_CONCAT, {t.make(SY_TYPE_F32, 4, 2), t.make(SY_TYPE_F32, 4, 3)},
                             t.make(SY_TYPE_F32, 8, 2)),
                     "sources must agree on ne1: 2 vs 3"});
    cases.push_back({"cpy i32 -> f32",
                     node_of(SY_OP_CPY, {t.make(SY_TYPE_I32, 4)}, t.make(SY_TYPE_F32, 4)),
                     "i32 -> f32 is neither"});
    cases.push_back({"moe gate",
                     node_of(SY_OP_NAMED,
                             {t.make(SY_TYPE_F32, 8, 4, 3), t.make(SY_TYPE_F32, 8, 2, 3),
                              t.make(SY_TYPE_F32, 8, 1, 5), t.make(SY_TYPE_I32, 2, 5)},
                             t.make(SY_TYPE_F32, 4, 2, 5), SY_NAMED_MOE_FUSED_UP_GATE,
                             SY_NAMED_MOE_FUSED_UP_GATE_VERSION),
                     "src1 (gate experts) {8, 2, 3, 1}, expected src0's = {8, 4, 3, 1}"});
    {
        sy_node mla =
            node_of(SY_OP_NAMED, {t.make(SY_TYPE_F32, 24, 5, 4), t.make(SY_TYPE_F16, 24, 9)},
                    t.make(SY_TYPE_F32, 16, 5, 4), SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION);
        mla.iparams[2] = 24;
        cases.push_back(
            {"mla rope width", mla, "the rope width (iparams[2]) = 24 must lie in [0, 24)"});
    }
    {
        sy_node rope = node_of(SY_OP_ROPE, {t.make(SY_TYPE_F32, 16, 4, 7), t.make(SY_TYPE_I32, 7)},
                               t.make(SY_TYPE_F32, 16, 4, 7));
        rope.iparams[0] = 7;
        rope.fparams[0] = 10000.0f;
        rope.fparams[1] = 1.0f;
        cases.push_back({"rope n_dims", rope, "n_dims 7 (iparams[0]) must be even"});
    }
    for (const Broken& c : cases) {
        SCOPED_TRACE(c.what);
        const std::string contract = sdk::check_op(c.node);
        EXPECT_NE(contract.find(c.says), std::string::npos) << contract;
        const std::string v = validation_error(c.node), r = reference_error(c.node);
        EXPECT_NE(v.find(contract), std::string::npos) << v;
        EXPECT_NE(r.find(contract), std::string::npos) << r;
    }
}

TEST(OpContract, WellFormedNodesInferTheirResultAndPassEverywhere) {
    Tensors t;
    const sy_node mm =
        node_of(SY_OP_MUL_MAT, {t.make(SY_TYPE_Q8_0, 64, 4, 2), t.make(SY_TYPE_F32, 64, 3, 6)},
                t.make(SY_TYPE_F32, 4, 3, 6));
    sy_node fused = node_of(SY_OP_NAMED,
                            {t.make(SY_TYPE_F16, 8, 4, 3), t.make(SY_TYPE_F16, 8, 4, 3),
                             t.make(SY_TYPE_F32, 8, 1, 5), t.make(SY_TYPE_I32, 2, 5)},
                            t.make(SY_TYPE_F32, 4, 2, 5), SY_NAMED_MOE_FUSED_UP_GATE,
                            SY_NAMED_MOE_FUSED_UP_GATE_VERSION);
    sy_node top = node_of(SY_OP_TOP_K, {t.make(SY_TYPE_F32, 6, 2)}, t.make(SY_TYPE_I32, 3, 2));
    sy_node rows = node_of(SY_OP_GET_ROWS, {t.make(SY_TYPE_Q4_0, 32, 10), t.make(SY_TYPE_I32, 3)},
                           t.make(SY_TYPE_F32, 32, 3));
    const struct {
        const char* what;
        const sy_node& node;
        int32_t type;
        int64_t ne[4];
    } cases[] = {{"mul_mat", mm, SY_TYPE_F32, {4, 3, 6, 1}},
                 {"moe.fused_up_gate", fused, SY_TYPE_F32, {4, 2, 5, 1}},
                 {"top_k", top, SY_TYPE_I32, {3, 2, 1, 1}},
                 {"get_rows", rows, SY_TYPE_F32, {32, 3, 1, 1}}};
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        const sdk::OpResult r = sdk::op_result(c.node);
        ASSERT_TRUE(r.ok()) << r.error;
        EXPECT_TRUE(r.known);
        EXPECT_EQ(r.type, c.type);
        for (int d = 0; d < 4; ++d) EXPECT_EQ(r.ne[d], c.ne[d]) << "ne" << d;
        EXPECT_EQ(sdk::check_op(c.node), "");
        EXPECT_EQ(validation_error(c.node), "");
        EXPECT_EQ(reference_error(c.node), "");
    }
}

// Without a dst, the result is inferred in the type the op makes; a named op outside
// named_ops.h has no rules here.
TEST(OpContract, ResultsWithoutADstAndUnknownNamedOps) {
    Tensors t;
    sy_node norm = node_of(SY_OP_RMS_NORM, {t.make(SY_TYPE_BF16, 8, 3)}, nullptr);
    norm.fparams[0] = 1e-6f;
    const sdk::OpResult r = sdk::op_result(norm);
    ASSERT_TRUE(r.ok()) << r.error;
    EXPECT_EQ(r.type, SY_TYPE_BF16);
    EXPECT_EQ(r.ne[1], 3);
    norm.fparams[0] = 0.0f;
    EXPECT_NE(sdk::op_result(norm).error.find("eps must be > 0"), std::string::npos);
    EXPECT_EQ(sdk::check_op(norm), "dst is missing");

    const sy_node vendor =
        node_of(SY_OP_NAMED, {t.make(SY_TYPE_F32, 4)}, t.make(SY_TYPE_F16, 2), "vendor.op", 1);
    const sdk::OpResult v = sdk::op_result(vendor);
    EXPECT_TRUE(v.ok());
    EXPECT_FALSE(v.known);
    EXPECT_EQ(v.type, SY_TYPE_F16);
}

// The work every cost model starts from: a product's 2 K flops per result, the bytes of the
// experts a batch can touch (not of all of them), the gathered rows of get_rows.
TEST(OpWork, CountsWhatTheOpReadsAndComputes) {
    Tensors t;
    const int64_t K = 64, N = 32, E = 16;
    sy_tensor* w = t.make(SY_TYPE_Q8_0, K, N, E);
    sy_tensor* x = t.make(SY_TYPE_F32, K, 1, 2);
    sy_tensor* ids = t.make(SY_TYPE_I32, 3, 2);  // 3 experts for each of 2 tokens: 6 of 16
    sy_tensor* y = t.make(SY_TYPE_F32, N, 3, 2);
    const double expert_bytes = sdk::element_bytes(w) / double(E);
    const double small = sdk::element_bytes(x) + sdk::element_bytes(ids) + sdk::element_bytes(y);
    const sdk::OpWork mm_id = sdk::op_work(node_of(SY_OP_MUL_MAT_ID, {w, x, ids}, y));
    EXPECT_DOUBLE_EQ(mm_id.flops, 2.0 * K * N * 3 * 2);
    EXPECT_DOUBLE_EQ(mm_id.bytes, 6 * expert_bytes + small);

    sy_tensor* many = t.make(SY_TYPE_I32, 3, 40);  // 120 choices: every expert can be touched
    const sdk::OpWork all = sdk::op_work(node_of(
        SY_OP_MUL_MAT_ID, {w, t.make(SY_TYPE_F32, K, 1, 40), many}, t.make(SY_TYPE_F32, N, 3, 40)));
    EXPECT_GE(all.bytes, sdk::element_bytes(w));

    const sdk::OpWork fused =
        sdk::op_work(node_of(SY_OP_NAMED, {w, w, x, ids}, y, SY_NAMED_MOE_FUSED_UP_GATE,
                             SY_NAMED_MOE_FUSED_UP_GATE_VERSION));
    EXPECT_DOUBLE_EQ(fused.flops, 2.0 * mm_id.flops);
    EXPECT_DOUBLE_EQ(fused.bytes, 12 * expert_bytes + small);

    sy_tensor* table = t.make(SY_TYPE_F16, 128, 1000);
    sy_tensor* rows = t.make(SY_TYPE_I32, 4);
    sy_tensor* out = t.make(SY_TYPE_F32, 128, 4);
    const sdk::OpWork gather = sdk::op_work(node_of(SY_OP_GET_ROWS, {table, rows}, out));
    EXPECT_DOUBLE_EQ(gather.bytes, 4 * 128 * 2 + sdk::element_bytes(rows) + 4 * 128 * 4);
}

}  // namespace
}  // namespace sy
