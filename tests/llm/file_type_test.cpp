// general.file_type ids and names as llama.cpp has them (llama-bench's model column).
#include "switchyard/llm/file_type.hpp"

#include <gtest/gtest.h>

#include "switchyard/dtype.h"

namespace sy::llm {
namespace {

TEST(FileType, NamesMatchLlamaCpp) {
    EXPECT_EQ(file_type_name(0), "all F32");
    EXPECT_EQ(file_type_name(1), "F16");
    EXPECT_EQ(file_type_name(2), "Q4_0");
    EXPECT_EQ(file_type_name(7), "Q8_0");
    EXPECT_EQ(file_type_name(10), "Q2_K - Medium");
    EXPECT_EQ(file_type_name(15), "Q4_K - Medium");
    EXPECT_EQ(file_type_name(19), "IQ2_XXS - 2.0625 bpw");
    EXPECT_EQ(file_type_name(21), "Q2_K - Small");
    EXPECT_EQ(file_type_name(27), "IQ3_S mix - 3.66 bpw");
    EXPECT_EQ(file_type_name(30), "IQ4_XS - 4.25 bpw");
    EXPECT_EQ(file_type_name(31), "IQ1_M - 1.75 bpw");
    EXPECT_EQ(file_type_name(32), "BF16");
}

TEST(FileType, EveryEnumeratorHasAName) {
    for (uint32_t id : {0u,  1u,  2u,  3u,  7u,  8u,  9u,   10u,  11u,  12u,  13u,  14u,
                        15u, 16u, 17u, 18u, 19u, 20u, 21u,  22u,  23u,  24u,  25u,  26u,
                        27u, 28u, 29u, 30u, 31u, 32u, 135u, 138u, 139u, 140u, 141u, 142u}) {
        EXPECT_FALSE(known_file_type_name(id).empty()) << id;
    }
}

// ik_llama.cpp's ids and names for its types (llama-bench's model column of such a file).
TEST(FileType, IkLlamaTypesHaveItsIdsAndNames) {
    EXPECT_EQ(file_type_of(SY_TYPE_IQ2_K), 138u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ6_K), 142u);
    EXPECT_EQ(file_type_of(SY_TYPE_Q6_0), 135u);
    EXPECT_EQ(file_type_name(file_type_of(SY_TYPE_IQ4_K)), "IQ4_K - 4.5 bpw");
    EXPECT_EQ(file_type_name(file_type_of(SY_TYPE_IQ3_K)), "IQ3_K - 3.4325 bpw");
    // The row-scaled types: ik's ids do not follow its type ids.
    EXPECT_EQ(file_type_of(SY_TYPE_IQ4_KS), 145u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ2_KS), 147u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ4_KSS), 148u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ5_KS), 150u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ3_KS), 154u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ2_KL), 155u);
    EXPECT_EQ(file_type_name(file_type_of(SY_TYPE_IQ2_KL)), "IQ2_KL - 2.6875 bpw");
}

TEST(FileType, GuessedAndUnknown) {
    EXPECT_EQ(file_type_name(15 | kFileTypeGuessed), "Q4_K - Medium (guessed)");
    EXPECT_EQ(file_type_name(5), "unknown, may not work");
    EXPECT_EQ(file_type_name(999), "unknown, may not work");
    EXPECT_TRUE(known_file_type_name(4).empty());
}

TEST(FileType, OfTensorType) {
    EXPECT_EQ(file_type_of(SY_TYPE_Q8_0), 7u);
    EXPECT_EQ(file_type_of(SY_TYPE_Q4_K), static_cast<uint32_t>(FileType::kMostlyQ4_K_S));
    EXPECT_EQ(file_type_of(SY_TYPE_BF16), 32u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ4_XS), 30u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ2_XXS), 19u);  // a file all of one i-quant: its mix id
    EXPECT_EQ(file_type_of(SY_TYPE_IQ2_XS), 20u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ3_XXS), 23u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ1_S), 24u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ3_S), 26u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ2_S), 28u);
    EXPECT_EQ(file_type_of(SY_TYPE_IQ1_M), 31u);
    EXPECT_EQ(file_type_of(SY_TYPE_I32), 0u);
}

}  // namespace
}  // namespace sy::llm
