// The built-in op table and the registry of plugin-provided named ops.
#include "switchyard/core/op_catalog.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/sdk.hpp"

namespace sy {
namespace {

TEST(OpCatalog, ListsEveryBuiltinOpOnceInIdOrder) {
    const auto ops = builtin_ops();
    ASSERT_EQ(ops.size(), size_t(SY_OP_BUILTIN_COUNT - 1));
    std::set<std::string> names;
    for (size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(ops[i].op, static_cast<sy_op>(i + 1));
        ASSERT_NE(ops[i].name(), nullptr);
        EXPECT_STREQ(ops[i].name(), sdk::op_name(ops[i].op));
        EXPECT_TRUE(names.insert(ops[i].name()).second) << ops[i].name();
        EXPECT_GE(ops[i].min_sources, 1);
        EXPECT_LE(ops[i].min_sources, ops[i].max_sources);
        EXPECT_GT(std::string(ops[i].summary).size(), 5u);
    }
}

TEST(OpCatalog, SourceCountsFollowOpsH) {
    EXPECT_EQ(builtin_op(SY_OP_MUL_MAT_ID).max_sources, 3);
    EXPECT_EQ(builtin_op(SY_OP_SOFTMAX).min_sources, 1);
    EXPECT_EQ(builtin_op(SY_OP_SOFTMAX).max_sources, 2);
    EXPECT_EQ(builtin_op(SY_OP_SILU).max_sources, 1);
    EXPECT_EQ(builtin_op(SY_OP_CONCAT).min_sources, 2);
}

TEST(OpCatalog, NamesRoundTrip) {
    for (const BuiltinOp& op : builtin_ops()) EXPECT_EQ(builtin_op_by_name(op.name()), op.op);
    EXPECT_FALSE(builtin_op_by_name("flash_attn"));
    EXPECT_THROW(builtin_op(SY_OP_NAMED), Error);
    EXPECT_THROW(builtin_op(SY_OP_NONE), Error);
}

}  // namespace
}  // namespace sy
