// `switchyard quantize`: ordered rules, the high-precision defaults, block fallback, metadata
// copied with general.file_type updated, values within the type's round-trip error, and rule
// errors that name the rule.
#include "switchyard/llm/requantize.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "llm_test_util.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/quants.hpp"

namespace sy::llm {
namespace {

using test::ScratchDir;

std::vector<float> dequantized(const gguf::TensorInfo& t) {
    std::vector<float> out(static_cast<size_t>(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]));
    const int64_t rows = static_cast<int64_t>(out.size()) / t.ne[0];
    const uint64_t row_bytes = t.nbytes / static_cast<uint64_t>(rows);
    for (int64_t r = 0; r < rows; ++r) {
        quants::dequantize_row(t.type, t.data + r * row_bytes, out.data() + r * t.ne[0], t.ne[0]);
    }
    return out;
}

class Requantize : public ::testing::Test {
  protected:
    void SetUp() override {
        write_synthetic_model(
            dir / "f32.gguf",
            plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, KvLayout::split), 1, 2);
    }
    ScratchDir dir;
};

TEST_F(Requantize, RulesThenDefaultsDecideEachType) {
    RequantizeOptions o;
    o.target = SY_TYPE_Q8_0;
    o.rules = {parse_quant_rule(R"(\.attn_(q|kv|output)=bf16)"), parse_quant_rule("attn_k_b=f16"),
               parse_quant_rule("ffn_down_exps=q4_K")};
    o.threads = 2;
    const RequantizeResult res = requantize(dir / "f32.gguf", dir / "q8.gguf", o);
    const gguf::Reader in = gguf::Reader::open(dir / "f32.gguf");
    const gguf::Reader out = gguf::Reader::open(dir / "q8.gguf");
    ASSERT_EQ(out.tensors().size(), in.tensors().size());
    EXPECT_EQ(res.tensors, in.tensors().size());
    EXPECT_TRUE(res.fallbacks.empty());
    for (const gguf::TensorInfo& t : out.tensors()) {
        const std::string& n = t.name;
        int32_t want = SY_TYPE_Q8_0;
        if (n.find("norm") != n.npos || n.find("ffn_gate_inp") != n.npos ||
            n.find("exp_probs_b") != n.npos) {
            want = SY_TYPE_F32;
        } else if (n.find(".attn_q") != n.npos || n.find(".attn_kv") != n.npos ||
                   n.find(".attn_output") != n.npos) {
            want = SY_TYPE_BF16;
        } else if (n.find("attn_k_b") != n.npos) {
            want = SY_TYPE_BF16;  // asked f16: never for k_b
        } else if (n.find("ffn_down_exps") != n.npos) {
            want = SY_TYPE_Q4_K;
        }
        EXPECT_EQ(t.type, want) << n;
        const gguf::TensorInfo* src = in.tensor(n);
        ASSERT_NE(src, nullptr) << n;
        EXPECT_EQ(std::vector<int64_t>(t.ne, t.ne + t.n_dims),
                  std::vector<int64_t>(src->ne, src->ne + src->n_dims));
        // Values survive within the type's stated error.
        const std::vector<float> a = dequantized(*src), b = dequantized(t);
        double err = 0, norm = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            err += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
            norm += double(a[i]) * a[i];
        }
        const double bound = t.type == SY_TYPE_F32 ? 0.0 : quants::expected_roundtrip_error(t.type);
        EXPECT_LE(std::sqrt(err / norm), bound * 1.5 + 1e-12) << n;
    }
}

TEST_F(Requantize, CopiesMetadataAndUpdatesFileType) {
    RequantizeOptions o;
    o.target = SY_TYPE_Q4_K;
    const RequantizeResult res = requantize(dir / "f32.gguf", dir / "q4k.gguf", o);
    const gguf::Reader in = gguf::Reader::open(dir / "f32.gguf");
    const gguf::Reader out = gguf::Reader::open(dir / "q4k.gguf");
    EXPECT_EQ(out.find("general.file_type")->as_u64(), 14u);
    ASSERT_EQ(out.metadata().size(), in.metadata().size());
    for (const gguf::KeyValue& kv : in.metadata()) {
        if (kv.key == "general.file_type") continue;
        const gguf::Value* v = out.find(kv.key);
        ASSERT_NE(v, nullptr) << kv.key;
        EXPECT_EQ(v->type(), kv.value.type()) << kv.key;
    }
    EXPECT_EQ(out.find("tokenizer.ggml.merges")->as_array().size(),
              in.find("tokenizer.ggml.merges")->as_array().size());
    // 128- and 32-wide rows cannot hold q4_K: reported and written as q5_0 (k_b: q8_0 default).
    EXPECT_FALSE(res.fallbacks.empty());
    EXPECT_EQ(out.tensor("blk.1.attn_output.weight")->type, SY_TYPE_Q5_0);
    EXPECT_EQ(out.tensor("blk.1.attn_k_b.weight")->type, SY_TYPE_Q8_0);
    EXPECT_EQ(out.tensor("blk.1.ffn_up_exps.weight")->type, SY_TYPE_Q4_K);
    for (const std::string& f : res.fallbacks) {
        EXPECT_NE(f.find("q4_K -> q5_0"), std::string::npos) << f;
    }
}

TEST_F(Requantize, SameTypeCopiesBytes) {
    RequantizeOptions o;
    o.target = SY_TYPE_F32;
    const RequantizeResult res = requantize(dir / "f32.gguf", dir / "same.gguf", o);
    EXPECT_EQ(res.converted, 0u);
    EXPECT_EQ(test::file_bytes(dir / "f32.gguf"), test::file_bytes(dir / "same.gguf"));
}

// A NaN in a source tensor has no block encoding: quantize refuses it, naming the tensor, the
// row and the column, instead of writing an undefined rounding of it.
TEST_F(Requantize, NonFiniteWeightIsRefusedNamingTensorRowAndColumn) {
    test::write_with_tensor_edit(dir / "f32.gguf", dir / "nan.gguf", "blk.1.ffn_up_exps.weight",
                                 [](uint8_t* data, const gguf::TensorInfo& t) {
                                     ASSERT_EQ(t.type, SY_TYPE_F32);
                                     const float nan = std::nanf("");
                                     std::memcpy(data + (3 * t.ne[0] + 5) * sizeof(float), &nan,
                                                 sizeof nan);
                                 });
    RequantizeOptions o;
    o.target = SY_TYPE_Q4_K;
    try {
        requantize(dir / "nan.gguf", dir / "out.gguf", o);
        ADD_FAILURE() << "a NaN weight was quantized";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("tensor blk.1.ffn_up_exps.weight, row 3, column 5 holds NaN"),
                  std::string::npos)
            << msg;
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "out.gguf"));
}

void expect_rule_error(const std::string& rule, const std::string& detail) {
    try {
        parse_quant_rule(rule);
        ADD_FAILURE() << rule << " parsed";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("rule '" + rule + "'"), std::string::npos) << msg;
        EXPECT_NE(msg.find(detail), std::string::npos) << msg;
    }
}

TEST(QuantRule, ErrorsNameTheRule) {
    expect_rule_error("attn=q9_9", "unknown type 'q9_9'");
    expect_rule_error("blk.(1=q8_0", "invalid regex 'blk.(1'");
    expect_rule_error("attn", "expected REGEX=TYPE");
    expect_rule_error("=q8_0", "empty regular expression");
}

TEST(QuantRule, FirstMatchWinsAndSearchesAnywhere) {
    const std::vector<QuantRule> rules = {parse_quant_rule("exps=Q4_K"),
                                          parse_quant_rule("ffn_=q8_0")};
    const int64_t ne[] = {256, 256, 8};
    EXPECT_EQ(decide_tensor_type("blk.1.ffn_up_exps.weight", ne, SY_TYPE_F16, rules).type,
              SY_TYPE_Q4_K);
    EXPECT_EQ(decide_tensor_type("blk.1.ffn_up_shexp.weight", ne, SY_TYPE_F16, rules).type,
              SY_TYPE_Q8_0);
    const std::vector<QuantRule> all = {parse_quant_rule(".=q8_0")};
    const int64_t norm_ne[] = {256};
    EXPECT_EQ(decide_tensor_type("blk.1.attn_norm.weight", norm_ne, SY_TYPE_F16, all).type,
              SY_TYPE_F32);
    const int64_t router_ne[] = {256, 8};
    EXPECT_EQ(decide_tensor_type("blk.1.ffn_gate_inp.weight", router_ne, SY_TYPE_F16, all).type,
              SY_TYPE_F32);
    const TensorDecision d = decide_tensor_type("blk.1.attn_q_b.weight", ne, SY_TYPE_F16, rules);
    EXPECT_EQ(d.type, SY_TYPE_F16);
    EXPECT_EQ(d.rule, nullptr);
}

}  // namespace
}  // namespace sy::llm
