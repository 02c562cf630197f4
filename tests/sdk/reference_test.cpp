// The reference pins down ops.h: each test computes a small case by hand (or from the formula
// in ops.h) and checks the reference agrees; the contract tests check that broken nodes throw.
#include "switchyard/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <vector>

#include "switchyard/conformance.hpp"
#include "switchyard/sdk.hpp"

namespace {

using sy::reference::evaluate;
using sy::sdk::make_node;
using sy::sdk::make_tensor;

// A packed host tensor holding `values` (logical order), converted to `type`.
struct Host {
    std::vector<unsigned char> bytes;
    sy_tensor t;
    Host(int32_t type, std::vector<int64_t> ne, const std::vector<double>& values = {}) {
        ne.resize(4, 1);
        t = make_tensor(type, ne[0], ne[1], ne[2], ne[3]);
        bytes.assign(size_t(sy::sdk::nbytes(t)) + 8, 0);
        t.data = bytes.data();
        for (size_t i = 0; i < values.size(); ++i) set(int64_t(i), values[i]);
    }
    void set(int64_t i, double v) {
        const int64_t i0 = i % t.ne[0], i1 = i / t.ne[0] % t.ne[1],
                      i2 = i / t.ne[0] / t.ne[1] % t.ne[2], i3 = i / t.ne[0] / t.ne[1] / t.ne[2];
        sy::reference::write_element(t, i0, i1, i2, i3, v);
    }
};

sy_node node_of(int32_t op, Host& dst, std::initializer_list<Host*> src) {
    sy_node n = make_node(op, &dst.t);
    for (Host* s : src) n.src[n.n_src++] = &s->t;
    return n;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Reference, AddBroadcastsSrc1) {
    Host a(SY_TYPE_F32, {2, 3}, {1, 2, 3, 4, 5, 6});
    Host b(SY_TYPE_F32, {2, 1}, {10, 20});
    Host d(SY_TYPE_F32, {2, 3});
    EXPECT_EQ(evaluate(node_of(SY_OP_ADD, d, {&a, &b})),
              (std::vector<double>{11, 22, 13, 24, 15, 26}));
}

TEST(Reference, MulReadsTransposedSourceThroughStrides) {
    // a is {2, 3} stored transposed: storage {3, 2} = rows (1 2 3) (4 5 6) -> a[i0, i1] = s[i1, i0]
    Host s(SY_TYPE_F32, {3, 2}, {1, 2, 3, 4, 5, 6});
    sy_tensor at = s.t;
    at.ne[0] = 2;
    at.ne[1] = 3;
    at.nb[0] = s.t.nb[1];
    at.nb[1] = s.t.nb[0];
    Host b(SY_TYPE_F32, {2, 3}, {1, 1, 1, 1, 1, 1});
    Host d(SY_TYPE_F32, {2, 3});
    sy_node n = node_of(SY_OP_MUL, d, {&b, &b});
    n.src[0] = &at;
    EXPECT_EQ(evaluate(n), (std::vector<double>{1, 4, 2, 5, 3, 6}));
}

TEST(Reference, ScaleAndActivations) {
    Host a(SY_TYPE_F32, {3}, {-1, 0, 2});
    Host d(SY_TYPE_F32, {3});
    sy_node n = node_of(SY_OP_SCALE, d, {&a});
    n.fparams[0] = 2;
    n.fparams[1] = 0.5f;
    EXPECT_EQ(evaluate(n), (std::vector<double>{-1.5, 0.5, 4.5}));
    n.op = SY_OP_SILU;
    expect_near(evaluate(n), {-1 / (1 + std::exp(1.0)), 0, 2 / (1 + std::exp(-2.0))}, 1e-7);
    n.op = SY_OP_SIGMOID;
    expect_near(evaluate(n), {1 / (1 + std::exp(1.0)), 0.5, 1 / (1 + std::exp(-2.0))}, 1e-7);
    n.op = SY_OP_GELU;
    expect_near(evaluate(n), {-0.158808, 0, 1.954598}, 1e-6);
}

TEST(Reference, RmsNorm) {
    Host a(SY_TYPE_F32, {2, 1}, {3, 4});
    Host d(SY_TYPE_F32, {2, 1});
    sy_node n = node_of(SY_OP_RMS_NORM, d, {&a});
    n.fparams[0] = 0.5f;  // mean(x^2) = 12.5, + eps = 13
    expect_near(evaluate(n), {3 / std::sqrt(13.0), 4 / std::sqrt(13.0)}, 1e-7);
    n.fparams[0] = 0;
    EXPECT_THROW(evaluate(n), std::invalid_argument);
}

TEST(Reference, SoftmaxWithMaskScaleAndCausal) {
    Host x(SY_TYPE_F32, {3, 2}, {1, 2, 3, 1, 2, 3});
    Host mask(SY_TYPE_F16, {3, 1}, {0, -INFINITY, 0});
    Host d(SY_TYPE_F32, {3, 2});
    sy_node n = node_of(SY_OP_SOFTMAX, d, {&x, &mask});
    n.fparams[0] = 2;
    const double e = std::exp(4.0);  // row: (2, -inf, 6) -> (1, 0, e^4) / (1 + e^4)
    expect_near(evaluate(n), {1 / (1 + e), 0, e / (1 + e), 1 / (1 + e), 0, e / (1 + e)}, 1e-7);
    // causal with offset -1: row 0 has everything masked (zeros), row 1 keeps element 0 only
    n.iparams[0] = 1;
    n.iparams[1] = -1;
    expect_near(evaluate(n), {0, 0, 0, 1, 0, 0}, 1e-7);
}

TEST(Reference, RopeNormalNeoxAndPartial) {
    // D = 4, n_dims = 2: pair (0, 1) rotates by p * base^0 = p, dims 2, 3 copy.
    Host x(SY_TYPE_F32, {4, 1, 1}, {1, 0, 7, 8});
    Host pos(SY_TYPE_I32, {1}, {1});
    Host d(SY_TYPE_F32, {4, 1, 1});
    sy_node n = node_of(SY_OP_ROPE, d, {&x, &pos});
    n.iparams[0] = 2;
    n.fparams[0] = 10000;
    n.fparams[1] = 1;
    n.fparams[3] = 1;
    expect_near(evaluate(n), {std::cos(1.0), std::sin(1.0), 7, 8}, 1e-7);
    // NeoX, n_dims = 4: pairs (0, 2) at theta = 1 and (1, 3) at theta = 10000^(-1/2) = 0.01
    n.iparams[0] = 4;
    n.iparams[1] = SY_ROPE_NEOX;
    const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
    expect_near(evaluate(n), {1 * c1 - 7 * s1, 0 * c2 - 8 * s2, 1 * s1 + 7 * c1, 0 * s2 + 8 * c2},
                1e-7);
    n.iparams[0] = 3;
    EXPECT_THROW(evaluate(n), std::invalid_argument);
}

TEST(Reference, RopeYarnFollowsTheFormulaOfOpsH) {
    Host x(SY_TYPE_F32, {64, 1, 1});
    for (int i = 0; i < 64; ++i) x.set(i, i % 2 == 0 ? 1.0 : 0.0);
    Host pos(SY_TYPE_I32, {1}, {100});
    Host d(SY_TYPE_F32, {64, 1, 1});
    sy_node n = node_of(SY_OP_ROPE, d, {&x, &pos});
    n.iparams[0] = 64;
    n.iparams[2] = 4096;
    n.fparams[0] = 10000;
    n.fparams[1] = 0.025f;
    n.fparams[2] = 1;
    n.fparams[3] = 1;
    n.fparams[4] = 32;
    n.fparams[5] = 1;
    const std::vector<double> out = evaluate(n);
    // corr(32) = 10.47 -> lo 10, corr(1) = 22.5 -> hi 23; pairs below lo extrapolate, above hi
    // interpolate; mscale = 1 + 0.1 ln 40.
    const double mscale = 1 + 0.1 * std::log(40.0);
    for (int i : {0, 5, 9, 16, 24, 31}) {
        const double extrap = 100 * std::pow(10000.0, -2.0 * i / 64);
        const double ramp = 1 - std::clamp((i - 10.0) / 13.0, 0.0, 1.0);
        const double theta = 0.025 * extrap * (1 - ramp) + extrap * ramp;
        EXPECT_NEAR(out[size_t(2 * i)], std::cos(theta) * mscale, 1e-6) << "pair " << i;
        EXPECT_NEAR(out[size_t(2 * i + 1)], std::sin(theta) * mscale, 1e-6) << "pair " << i;
    }
}

TEST(Reference, MulMatBroadcastsWeightsOverBatch) {
    // A {2, 2, 1}: rows (1 2) (3 4); B {2, 1, 2}: b2=0 (1 1), b2=1 (0 1)
    Host a(SY_TYPE_F16, {2, 2}, {1, 2, 3, 4});
    Host b(SY_TYPE_F32, {2, 1, 2}, {1, 1, 0, 1});
    Host d(SY_TYPE_F32, {2, 1, 2});
    EXPECT_EQ(evaluate(node_of(SY_OP_MUL_MAT, d, {&a, &b})), (std::vector<double>{3, 7, 2, 4}));
}

TEST(Reference, MulMatIdPicksExpertsAndChecksIds) {
    // W {1, 1, 3}: experts multiply by 10, 20, 30; X {1, 1, 2} (U1 = 1): 1, 2; ids {2, 2}
    Host w(SY_TYPE_F32, {1, 1, 3}, {10, 20, 30});
    Host x(SY_TYPE_F32, {1, 1, 2}, {1, 2});
    Host ids(SY_TYPE_I32, {2, 2}, {0, 2, 1, 1});
    Host d(SY_TYPE_F32, {1, 2, 2});
    sy_node n = node_of(SY_OP_MUL_MAT_ID, d, {&w, &x, &ids});
    EXPECT_EQ(evaluate(n), (std::vector<double>{10, 30, 40, 40}));
    ids.set(3, 3);
    try {
        evaluate(n);
        ADD_FAILURE() << "an expert id out of range must throw";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
}

TEST(Reference, MoeFusedUpGateIsActOfGateTimesUp) {
    Host up(SY_TYPE_F32, {1, 1, 2}, {2, 3});
    Host gate(SY_TYPE_F32, {1, 1, 2}, {1, -1});
    Host x(SY_TYPE_F32, {1, 1, 1}, {0.5});
    Host ids(SY_TYPE_I32, {2, 1}, {0, 1});
    Host d(SY_TYPE_F32, {1, 2, 1});
    sy_node n = node_of(SY_OP_NAMED, d, {&up, &gate, &x, &ids});
    n.named_op = SY_NAMED_MOE_FUSED_UP_GATE;
    n.named_op_version = SY_NAMED_MOE_FUSED_UP_GATE_VERSION;
    auto silu = [](double v) { return v / (1 + std::exp(-v)); };
    expect_near(evaluate(n), {silu(0.5) * 1.0, silu(-0.5) * 1.5}, 1e-7);
    n.named_op_version = 2;
    EXPECT_THROW(evaluate(n), std::invalid_argument);
}

TEST(Reference, ArgsortIsStableAndTopKPrefersLowerIndex) {
    Host x(SY_TYPE_F32, {5}, {3, 1, 3, 2, 1});
    Host d(SY_TYPE_I32, {5});
    sy_node n = node_of(SY_OP_ARGSORT, d, {&x});
    EXPECT_EQ(evaluate(n), (std::vector<double>{1, 4, 3, 0, 2}));
    n.iparams[0] = 1;
    EXPECT_EQ(evaluate(n), (std::vector<double>{0, 2, 3, 1, 4}));
    Host k(SY_TYPE_I32, {3});
    EXPECT_EQ(evaluate(node_of(SY_OP_TOP_K, k, {&x})), (std::vector<double>{0, 2, 3}));
}

// Smart expert reduction: ids after the first m whose value is not above t times the row's
// first become SY_ID_NONE; GET_ROWS gives a zero row and MUL_MAT_ID a zero slot for them, and
// any other negative id is still out of range.
TEST(Reference, DropIdsAndTheOpsThatSkipDroppedIds) {
    Host ids(SY_TYPE_I32, {4, 2}, {7, 3, 5, 1, 2, 0, 6, 4});
    Host v(SY_TYPE_F32, {4, 2}, {1.0, 0.6, 0.5, 0.2, 0.8, 0.1, 0.5, 0.4});
    Host d(SY_TYPE_I32, {4, 2});
    sy_node n = node_of(SY_OP_DROP_IDS, d, {&ids, &v});
    n.iparams[0] = 1;
    n.fparams[0] = 0.5f;  // row 0 keeps > 0.5, row 1 keeps > 0.4 (not 0.4 itself)
    EXPECT_EQ(evaluate(n), (std::vector<double>{7, 3, -1, -1, 2, -1, 6, -1}));
    n.iparams[0] = 3;
    EXPECT_EQ(evaluate(n), (std::vector<double>{7, 3, 5, -1, 2, 0, 6, -1}));
    n.iparams[0] = 0;
    EXPECT_THROW(evaluate(n), std::invalid_argument);

    Host src(SY_TYPE_F32, {2, 3}, {1, 2, 3, 4, 5, 6});
    Host rows_ids(SY_TYPE_I32, {2}, {-1, 1});
    Host rows(SY_TYPE_F32, {2, 2});
    EXPECT_EQ(evaluate(node_of(SY_OP_GET_ROWS, rows, {&src, &rows_ids})),
              (std::vector<double>{0, 0, 3, 4}));
    rows_ids.set(0, -2);
    EXPECT_THROW(evaluate(node_of(SY_OP_GET_ROWS, rows, {&src, &rows_ids})), std::invalid_argument);

    Host w(SY_TYPE_F32, {1, 1, 3}, {10, 20, 30});
    Host x(SY_TYPE_F32, {1, 1, 2}, {1, 2});
    Host experts(SY_TYPE_I32, {2, 2}, {0, -1, -1, 2});
    Host out(SY_TYPE_F32, {1, 2, 2});
    EXPECT_EQ(evaluate(node_of(SY_OP_MUL_MAT_ID, out, {&w, &x, &experts})),
              (std::vector<double>{10, 0, 0, 60}));
    experts.set(1, -2);
    EXPECT_THROW(evaluate(node_of(SY_OP_MUL_MAT_ID, out, {&w, &x, &experts})),
                 std::invalid_argument);
}

TEST(Reference, GetRowsConcatSumRows) {
    Host src(SY_TYPE_BF16, {2, 3}, {1, 2, 3, 4, 5, 6});
    Host ids(SY_TYPE_I32, {2}, {2, 0});
    Host rows(SY_TYPE_F32, {2, 2});
    EXPECT_EQ(evaluate(node_of(SY_OP_GET_ROWS, rows, {&src, &ids})),
              (std::vector<double>{5, 6, 1, 2}));
    ids.set(0, 3);
    EXPECT_THROW(evaluate(node_of(SY_OP_GET_ROWS, rows, {&src, &ids})), std::invalid_argument);

    Host a(SY_TYPE_I32, {1, 2}, {1, 2}), b(SY_TYPE_I32, {1, 1}, {9});
    Host cat(SY_TYPE_I32, {1, 3});
    sy_node n = node_of(SY_OP_CONCAT, cat, {&a, &b});
    n.iparams[0] = 1;
    EXPECT_EQ(evaluate(n), (std::vector<double>{1, 2, 9}));
    n.iparams[0] = 0;
    EXPECT_THROW(evaluate(n), std::invalid_argument);

    Host sum(SY_TYPE_F32, {1, 3});
    EXPECT_EQ(evaluate(node_of(SY_OP_SUM_ROWS, sum, {&src})), (std::vector<double>{3, 7, 11}));
}

TEST(Reference, CpyRoundsToNearestEven) {
    // 1 + 2^-11 is halfway between two f16 values: ties to even gives 1; 1 + 3 * 2^-11 -> 1 + 2^-9
    Host a(SY_TYPE_F32, {2}, {1 + std::ldexp(1.0, -11), 1 + 3 * std::ldexp(1.0, -11)});
    Host h(SY_TYPE_F16, {2});
    EXPECT_EQ(evaluate(node_of(SY_OP_CPY, h, {&a})),
              (std::vector<double>{1.0, 1 + std::ldexp(1.0, -9)}));
    Host bf(SY_TYPE_BF16, {2});
    EXPECT_EQ(evaluate(node_of(SY_OP_CPY, bf, {&a})), (std::vector<double>{1.0, 1.0}));
}

TEST(Reference, BrokenNodesThrowNamingTheOp) {
    Host a(SY_TYPE_F32, {4}), b(SY_TYPE_F32, {3}), d(SY_TYPE_F32, {4});
    try {
        evaluate(node_of(SY_OP_ADD, d, {&a, &b}));
        ADD_FAILURE() << "src1 {3} does not broadcast to {4}";
    } catch (const std::invalid_argument& e) {
        EXPECT_EQ(std::string(e.what()).rfind("add:", 0), 0u) << e.what();
    }
    EXPECT_THROW(evaluate(node_of(SY_OP_ADD, d, {&a})), std::invalid_argument);  // missing src1
    Host i(SY_TYPE_I32, {4});
    EXPECT_THROW(evaluate(node_of(SY_OP_SILU, i, {&a})), std::invalid_argument);  // int dst
    EXPECT_THROW(evaluate(node_of(999, d, {&a})), std::invalid_argument);
    Host q(SY_TYPE_Q4_0, {32});
    Host y(SY_TYPE_F32, {32, 1});
    Host x(SY_TYPE_F32, {32, 1});
    EXPECT_THROW(evaluate(node_of(SY_OP_MUL_MAT, y, {&q, &x})), std::invalid_argument);
}

// ---- the kit's case table
// ---------------------------------------------------------------------------

TEST(ConformanceCases, EveryBuiltinRowHasAContiguousBaseCaseAndUniqueNames) {
    for (int op = SY_OP_ADD; op < SY_OP_BUILTIN_COUNT; ++op) {
        sy_capability row{};
        row.struct_size = sizeof row;
        row.op = op;
        row.dst_type = SY_TYPE_ANY;
        for (int32_t& t : row.src_type) t = SY_TYPE_ANY;
        const auto cases = sy::conformance::cases_for(row);
        ASSERT_FALSE(cases.empty()) << sy::sdk::op_name(op);
        std::set<std::string> names;
        int bases = 0;
        for (const auto& c : cases) {
            EXPECT_TRUE(c.skip_reason.empty()) << c.name << ": " << c.skip_reason;
            EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
            if (!c.base) continue;
            ++bases;
            for (const auto& s : c.src) {
                EXPECT_EQ(s.tensor.row_padding, 0) << c.name;
                EXPECT_EQ(s.tensor.order[0], 0) << c.name;
                EXPECT_EQ(s.tensor.order[1], 1) << c.name;
            }
        }
        EXPECT_GE(bases, 1) << sy::sdk::op_name(op);
    }
}

TEST(ConformanceCases, NamedMoeRowHasCasesAndUnknownNamedOpsAreSkipped) {
    sy_capability row{sizeof(sy_capability),
                      SY_OP_NAMED,
                      SY_NAMED_MOE_FUSED_UP_GATE,
                      SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
                      SY_TYPE_F32,
                      {SY_TYPE_F16, SY_TYPE_F16, SY_TYPE_F32, SY_TYPE_I32}};
    const auto cases = sy::conformance::cases_for(row);
    ASSERT_GT(cases.size(), 4u);
    EXPECT_TRUE(cases[0].base);
    for (const auto& c : cases) EXPECT_TRUE(c.skip_reason.empty()) << c.name;
    row.named_op = "acme.unknown";
    const auto unknown = sy::conformance::cases_for(row);
    ASSERT_EQ(unknown.size(), 1u);
    EXPECT_FALSE(unknown[0].skip_reason.empty());
}

TEST(ConformanceCases, QuantizedRowsAreTestedOnQuantizedInputs) {
    sy_capability row{sizeof(sy_capability),
                      SY_OP_MUL_MAT,
                      nullptr,
                      0,
                      SY_TYPE_F32,
                      {SY_TYPE_Q4_0, SY_TYPE_F32, SY_TYPE_NONE, SY_TYPE_NONE}};
    const auto cases = sy::conformance::cases_for(row);
    ASSERT_GT(cases.size(), 1u);
    EXPECT_TRUE(cases[0].base);
    for (const auto& c : cases) EXPECT_TRUE(c.skip_reason.empty()) << c.name;
}

TEST(ConformanceCases, TolerancesFollowTheTable) {
    sy_capability row{sizeof(sy_capability),
                      SY_OP_MUL_MAT,
                      nullptr,
                      0,
                      SY_TYPE_F32,
                      {SY_TYPE_BF16, SY_TYPE_F32, SY_TYPE_NONE, SY_TYPE_NONE}};
    EXPECT_DOUBLE_EQ(sy::conformance::tolerance_for(sy::conformance::cases_for(row)[0]), 1e-2);
    row.src_type[0] = SY_TYPE_F32;
    EXPECT_DOUBLE_EQ(sy::conformance::tolerance_for(sy::conformance::cases_for(row)[0]), 1e-5);
    row = {sizeof(sy_capability),
           SY_OP_CPY,
           nullptr,
           0,
           SY_TYPE_F16,
           {SY_TYPE_F32, SY_TYPE_NONE, SY_TYPE_NONE, SY_TYPE_NONE}};
    EXPECT_EQ(sy::conformance::tolerance_for(sy::conformance::cases_for(row)[0]), 0.0);
}

}  // namespace
