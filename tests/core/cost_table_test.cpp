// The calibrated cost table: exact lookups, products interpolated by rows, the TOML round trip,
// errors that name the file, line and key, and placement taking a measured time before a hint.
#include "switchyard/core/cost_table.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "switchyard/core/config.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/placement.hpp"
#include "switchyard/sdk.hpp"

namespace sy {
namespace {

// A product {K, N} x {K, T} in `type`, as a plugin sees it.
struct Product {
    sy_tensor w, x, y;
    sy_node node;
    Product(int64_t K, int64_t N, int64_t T, int32_t type = SY_TYPE_BF16)
        : w(sdk::make_tensor(type, K, N)),
          x(sdk::make_tensor(SY_TYPE_F32, K, T)),
          y(sdk::make_tensor(SY_TYPE_F32, N, T)),
          node(sdk::make_node(SY_OP_MUL_MAT, &y)) {
        node.n_src = 2;
        node.src[0] = &w;
        node.src[1] = &x;
    }
};

CostTable::Entry measured(const std::string& backend, const sy_node& node, double ns) {
    CostTable::Entry e = CostTable::describe(backend, node);
    e.ns = ns;
    return e;
}

std::string table_error_of(const std::string& text) {
    try {
        CostTable::parse(text, "costs.toml");
    } catch (const ConfigError& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a ConfigError for:\n" << text;
    return "";
}

TEST(CostTable, ExactShapesAndTheirBackendOnly) {
    CostTable t;
    const Product p(256, 512, 16);
    t.add(measured("blas", p.node, 1000));
    EXPECT_EQ(t.ns("blas", p.node), 1000.0);
    EXPECT_FALSE(t.ns("cpu", p.node)) << "another backend's time is not this one's";
    const Product other_type(256, 512, 16, SY_TYPE_F16);
    EXPECT_FALSE(t.ns("blas", other_type.node)) << "other weight type";
    const Product other_weight(256, 1024, 16);
    EXPECT_FALSE(t.ns("blas", other_weight.node)) << "other weight shape";
    // A second measurement of one shape replaces the first.
    t.add(measured("blas", p.node, 800));
    EXPECT_EQ(t.size(), 1u);
    EXPECT_EQ(t.ns("blas", p.node), 800.0);
}

TEST(CostTable, ProductsAreInterpolatedByRowsBetweenMeasurements) {
    CostTable t;
    t.add(measured("cpu", Product(256, 512, 16).node, 1000));
    t.add(measured("cpu", Product(256, 512, 256).node, 16000));
    // log-log between the neighbours: 64 rows is halfway in log2 from 16 to 256.
    EXPECT_NEAR(*t.ns("cpu", Product(256, 512, 64).node), 4000.0, 1e-6);
    // Below the smallest: the smallest (a product's fixed cost); above the largest: by rows.
    EXPECT_NEAR(*t.ns("cpu", Product(256, 512, 1).node), 1000.0, 1e-9);
    EXPECT_NEAR(*t.ns("cpu", Product(256, 512, 512).node), 32000.0, 1e-6);

    // Anything else is exact only: an add of another length has no time.
    sy_tensor a = sdk::make_tensor(SY_TYPE_F32, 256, 16), b = a, c = a;
    sy_node add = sdk::make_node(SY_OP_ADD, &c);
    add.n_src = 2;
    add.src[0] = &a;
    add.src[1] = &b;
    t.add(measured("cpu", add, 50));
    EXPECT_EQ(t.ns("cpu", add), 50.0);
    sy_tensor a2 = sdk::make_tensor(SY_TYPE_F32, 256, 32), b2 = a2, c2 = a2;
    add.src[0] = &a2;
    add.src[1] = &b2;
    add.dst = &c2;
    EXPECT_FALSE(t.ns("cpu", add));
}

TEST(CostTable, TomlRoundTripKeepsEveryEntryAndLookup) {
    CostTable t;
    const Product p16(2048, 10944, 16), p512(2048, 10944, 512);
    t.add(measured("cpu", p16.node, 12345.5));
    t.add(measured("blas", p512.node, 2.5e6));
    CostTable::Entry named = measured("cpu", p16.node, 7);
    named.node = "blk.1.\"quoted\"\\name";
    named.op = "moe.fused_up_gate v1";
    t.add(named);
    const std::string text = t.to_toml({{"model", "mini \"q8_0\".gguf"}, {"batches", "16, 512"}});
    const CostTable back = CostTable::parse(text, "round.toml");
    ASSERT_EQ(back.size(), 3u) << text;
    EXPECT_EQ(back.ns("cpu", p16.node), 12345.5);
    EXPECT_EQ(back.ns("blas", p512.node), 2.5e6);
    EXPECT_EQ(back.entries()[2].node, named.node);
    EXPECT_EQ(back.entries()[2].op, "moe.fused_up_gate v1");
    EXPECT_EQ(back.entries()[0].types, (std::vector<std::string>{"bf16", "f32", "f32"}));
    EXPECT_EQ(back.entries()[0].shapes,
              (std::vector<std::vector<int64_t>>{{2048, 10944}, {2048, 16}, {10944, 16}}));
}

TEST(CostTable, BadFilesNameTheFileLineAndKey) {
    const std::string ok =
        "[[op]]\nbackend = \"cpu\"\nop = \"mul_mat\"\ntypes = [\"f32\", \"f32\", \"f32\"]\n"
        "shapes = [[4, 4], [4], [4]]\nns = 10\n";
    EXPECT_EQ(CostTable::parse(ok, "costs.toml").size(), 1u);
    std::string e = table_error_of(ok + "speed = 3\n");
    EXPECT_NE(e.find("costs.toml:7:9"), std::string::npos) << e;
    EXPECT_NE(e.find("unknown key 'op.speed'"), std::string::npos) << e;
    e = table_error_of(
        "[[op]]\nbackend = \"cpu\"\nop = \"mul_mat\"\ntypes = [\"f32\"]\nshapes = [[4]]\n"
        "ns = -5\n");
    EXPECT_NE(e.find("costs.toml:6:6"), std::string::npos) << e;
    EXPECT_NE(e.find("'op.ns' must be a time"), std::string::npos) << e;
    e = table_error_of(
        "[[op]]\nbackend = \"cpu\"\nop = \"mul_mat\"\ntypes = [\"f32\", \"f32\"]\n"
        "shapes = [[4]]\nns = 5\n");
    EXPECT_NE(e.find("'types' (2) and 'shapes' (1)"), std::string::npos) << e;
    e = table_error_of(
        "[[op]]\nbackend = \"cpu\"\nop = \"mul_mat\"\ntypes = [\"f32\"]\n"
        "shapes = [[0]]\nns = 5\n");
    EXPECT_NE(e.find("'op.shapes' must be an integer from 1"), std::string::npos) << e;
    e = table_error_of("[[op]]\nbackend = \"cpu\"\nns = 5\n");
    EXPECT_NE(e.find("needs 'backend', 'op', 'types', 'shapes' and 'ns'"), std::string::npos) << e;
    e = table_error_of("[placement]\ndefault = \"cpu\"\n");
    EXPECT_NE(e.find("unknown key 'placement' in a cost table"), std::string::npos) << e;
    e = table_error_of("[[op]\n");
    EXPECT_NE(e.find("costs.toml:1:"), std::string::npos) << e;

    const auto dir = std::filesystem::temp_directory_path() / "sy_cost_table_test";
    std::filesystem::create_directories(dir);
    try {
        CostTable::load(dir / "missing.toml");
        ADD_FAILURE() << "a missing table loaded";
    } catch (const ConfigError& x) {
        EXPECT_NE(std::string(x.what()).find("missing.toml: cost table not found"),
                  std::string::npos)
            << x.what();
    }
    std::filesystem::remove_all(dir);
}

TEST(CostTable, PlacementTakesTheMeasuredTimeBeforeTheHint) {
    Graph g;
    Tensor* x = g.input("inp", SY_TYPE_F32, {256, 64});
    Tensor* w = g.weight("blk.0.attn_q.weight", SY_TYPE_F32, {256, 256});
    g.mark_output(g.mul_mat(w, x));
    const auto backend = [](const std::string& name, double hint) {
        BackendInfo b;
        b.name = name;
        b.props.host_memory = 1;
        b.supports = [](const sy_node&) { return true; };
        b.estimate = [hint](const sy_node&) { return hint; };
        return b;
    };
    // The hints say fast is 10x faster than slow; the measurements say the opposite.
    std::vector<BackendInfo> backends{backend("slow", 1000), backend("fast", 100)};
    EXPECT_EQ(place_ops(g, backends, {}, {Phase::prompt, 64, {}}).nodes[0].backend, 1);
    CostTable table;
    table.add(
        {"fast", "mul_mat", {"f32", "f32", "f32"}, {{256, 256}, {256, 64}, {256, 64}}, {}, 5000});
    table.add(
        {"slow", "mul_mat", {"f32", "f32", "f32"}, {{256, 256}, {256, 64}, {256, 64}}, {}, 700});
    for (BackendInfo& b : backends)
        b.measured = [&table, name = b.name](const sy_node& n) { return table.ns(name, n); };
    const OpPlan plan = place_ops(g, backends, {}, {Phase::prompt, 64, {}});
    EXPECT_EQ(plan.nodes[0].backend, 0);
    ASSERT_EQ(plan.nodes[0].candidates.size(), 2u);
    for (const CandidateCost& c : plan.nodes[0].candidates)
        EXPECT_EQ(c.source, CostSource::measured);
    EXPECT_EQ(plan.nodes[0].candidates[1].compute_ns, 5000.0);
    // A backend the table does not know keeps its hint.
    backends[1].measured = [](const sy_node&) { return std::nullopt; };
    const OpPlan mixed = place_ops(g, backends, {}, {Phase::prompt, 64, {}});
    EXPECT_EQ(mixed.nodes[0].candidates[1].source, CostSource::hint);
    EXPECT_EQ(mixed.nodes[0].backend, 1);
}

}  // namespace
}  // namespace sy
