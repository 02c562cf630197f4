// make-model's deepseek2 files: llama.cpp's metadata keys with the right value types, every
// tensor with its shape and type, the tensor-count formula, determinism, well-scaled values and
// the kv_b / split layouts describing the same weights.
#include "switchyard/llm/synthetic_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "llm_test_util.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/models/deepseek2.hpp"
#include "switchyard/llm/session.hpp"
#include "switchyard/llm/gguf.hpp"

namespace sy::llm {
namespace {

using gguf::ValueType;
using test::ScratchDir;

gguf::Reader make_tiny(const std::filesystem::path& path, int32_t type,
                       KvLayout layout = KvLayout::kv_b, uint64_t seed = 42, int threads = 2) {
    write_synthetic_model(path, plan_deepseek2(deepseek2_preset("tiny"), type, layout), seed,
                          threads);
    return gguf::Reader::open(path);
}

std::vector<int64_t> shape(const gguf::TensorInfo& t) {
    return {t.ne, t.ne + t.n_dims};
}

// f32 values of a tensor stored as F32.
std::vector<float> values(const gguf::TensorInfo& t) {
    EXPECT_EQ(t.type, SY_TYPE_F32) << t.name;
    const auto* p = reinterpret_cast<const float*>(t.data);
    return {p, p + t.nbytes / 4};
}

TEST(SyntheticDeepseek2, TinyMetadataHasEveryKeyWithLlamaCppTypes) {
    ScratchDir dir;
    const gguf::Reader r = make_tiny(dir / "tiny.gguf", SY_TYPE_F32);
    const std::map<std::string, uint64_t> u32 = {
        {"general.file_type", 0},
        {"general.quantization_version", 2},
        {"deepseek2.block_count", 3},
        {"deepseek2.context_length", 163840},
        {"deepseek2.embedding_length", 256},
        {"deepseek2.feed_forward_length", 512},
        {"deepseek2.attention.head_count", 4},
        {"deepseek2.attention.head_count_kv", 4},
        {"deepseek2.attention.key_length", 48},
        {"deepseek2.attention.value_length", 32},
        {"deepseek2.attention.q_lora_rank", 128},
        {"deepseek2.attention.kv_lora_rank", 32},
        {"deepseek2.rope.dimension_count", 16},
        {"deepseek2.rope.scaling.original_context_length", 4096},
        {"deepseek2.leading_dense_block_count", 1},
        {"deepseek2.expert_count", 8},
        {"deepseek2.expert_used_count", 2},
        {"deepseek2.expert_shared_count", 1},
        {"deepseek2.expert_feed_forward_length", 256},
        {"deepseek2.expert_gating_func", 2},
        {"deepseek2.vocab_size", 512},
        {"tokenizer.ggml.bos_token_id", 510},
        {"tokenizer.ggml.eos_token_id", 511},
        {"tokenizer.ggml.padding_token_id", 511},
    };
    for (const auto& [key, value] : u32) {
        const gguf::Value* v = r.find(key);
        ASSERT_NE(v, nullptr) << key;
        EXPECT_EQ(v->type(), ValueType::U32) << key;
        EXPECT_EQ(v->as_u64(), value) << key;
    }
    const std::map<std::string, double> f32 = {
        {"deepseek2.attention.layer_norm_rms_epsilon", 1e-6},
        {"deepseek2.rope.freq_base", 10000.0},
        {"deepseek2.rope.scaling.factor", 40.0},
        {"deepseek2.rope.scaling.yarn_log_multiplier", 0.1},
        {"deepseek2.expert_weights_scale", 2.5},
    };
    for (const auto& [key, value] : f32) {
        const gguf::Value* v = r.find(key);
        ASSERT_NE(v, nullptr) << key;
        EXPECT_EQ(v->type(), ValueType::F32) << key;
        EXPECT_NEAR(v->as_f64(), value, value * 1e-6) << key;
    }
    const std::map<std::string, std::string> strings = {
        {"general.architecture", "deepseek2"},
        {"deepseek2.rope.scaling.type", "yarn"},
        {"tokenizer.ggml.model", "gpt2"},
        {"tokenizer.ggml.pre", "deepseek-v3"},
    };
    for (const auto& [key, value] : strings) EXPECT_EQ(r.get_string(key), value) << key;
    for (const char* key : {"deepseek2.expert_weights_norm", "tokenizer.ggml.add_bos_token"}) {
        ASSERT_NE(r.find(key), nullptr) << key;
        EXPECT_EQ(r.find(key)->type(), ValueType::BOOL) << key;
        EXPECT_TRUE(r.find(key)->as_bool()) << key;
    }
    EXPECT_FALSE(r.find("tokenizer.ggml.add_eos_token")->as_bool());
    EXPECT_EQ(r.find("tokenizer.ggml.tokens")->as_array().size(), 512u);
    EXPECT_EQ(r.find("tokenizer.ggml.token_type")->as_array().size(), 512u);
    EXPECT_EQ(r.find("tokenizer.ggml.merges")->as_array().size(), 512u - 260u);
}

// Every tensor of tiny (q LoRA, 1 dense + 2 MoE layers, sigmoid routing) with its shape.
std::map<std::string, std::vector<int64_t>> tiny_shapes(KvLayout layout) {
    std::map<std::string, std::vector<int64_t>> s = {
        {"token_embd.weight", {256, 512}},
        {"output_norm.weight", {256}},
        {"output.weight", {256, 512}},
    };
    for (int il = 0; il < 3; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        s[p + "attn_norm.weight"] = {256};
        s[p + "attn_q_a.weight"] = {256, 128};
        s[p + "attn_q_a_norm.weight"] = {128};
        s[p + "attn_q_b.weight"] = {128, 4 * 48};
        s[p + "attn_kv_a_mqa.weight"] = {256, 32 + 16};
        s[p + "attn_kv_a_norm.weight"] = {32};
        if (layout == KvLayout::kv_b) {
            s[p + "attn_kv_b.weight"] = {32, 4 * 64};
        } else {
            s[p + "attn_k_b.weight"] = {32, 4 * 32};
            s[p + "attn_v_b.weight"] = {32, 4 * 32};
        }
        s[p + "attn_output.weight"] = {128, 256};
        s[p + "ffn_norm.weight"] = {256};
        if (il == 0) {
            s[p + "ffn_gate.weight"] = {256, 512};
            s[p + "ffn_up.weight"] = {256, 512};
            s[p + "ffn_down.weight"] = {512, 256};
        } else {
            s[p + "ffn_gate_inp.weight"] = {256, 8};
            s[p + "exp_probs_b.bias"] = {8};
            s[p + "ffn_gate_exps.weight"] = {256, 256, 8};
            s[p + "ffn_up_exps.weight"] = {256, 256, 8};
            s[p + "ffn_down_exps.weight"] = {256, 256, 8};
            s[p + "ffn_gate_shexp.weight"] = {256, 256};
            s[p + "ffn_up_shexp.weight"] = {256, 256};
            s[p + "ffn_down_shexp.weight"] = {256, 256};
        }
    }
    return s;
}

bool high_precision(const std::string& name) {
    return name.find("norm") != std::string::npos ||
           name.find("ffn_gate_inp") != std::string::npos ||
           name.find("exp_probs_b") != std::string::npos;
}

TEST(SyntheticDeepseek2, TinyQ8_0HasEveryTensorWithShapeAndType) {
    for (KvLayout layout : {KvLayout::kv_b, KvLayout::split}) {
        ScratchDir dir;
        const gguf::Reader r = make_tiny(dir / "tiny.gguf", SY_TYPE_Q8_0, layout);
        const auto expected = tiny_shapes(layout);
        EXPECT_EQ(r.tensors().size(), expected.size());
        EXPECT_EQ(r.tensors().size(), deepseek2_tensor_count(deepseek2_preset("tiny"), layout));
        EXPECT_EQ(r.tensors().size(),
                  layout == KvLayout::kv_b ? 3u + 12 + 2 * 17 : 3u + 13 + 2 * 18);
        EXPECT_EQ(r.find("general.file_type")->as_u64(), 7u);
        for (const auto& [name, ne] : expected) {
            const gguf::TensorInfo* t = r.tensor(name);
            ASSERT_NE(t, nullptr) << name;
            EXPECT_EQ(shape(*t), ne) << name;
            EXPECT_EQ(t->type, high_precision(name) ? SY_TYPE_F32 : SY_TYPE_Q8_0) << name;
        }
    }
}

TEST(SyntheticDeepseek2, KQuantFallsBackPerTensorWhereRowsDoNotDivide) {
    ScratchDir dir;
    const gguf::Reader r = make_tiny(dir / "tiny.gguf", SY_TYPE_Q4_K);
    EXPECT_EQ(r.find("general.file_type")->as_u64(), 14u);
    for (const auto& [name, ne] : tiny_shapes(KvLayout::kv_b)) {
        const gguf::TensorInfo* t = r.tensor(name);
        ASSERT_NE(t, nullptr) << name;
        const int32_t want = high_precision(name) ? SY_TYPE_F32
                             : ne[0] % 256 != 0   ? SY_TYPE_Q5_0  // llama-quantize's fallback
                                                  : SY_TYPE_Q4_K;
        EXPECT_EQ(t->type, want) << name;
    }
}

TEST(SyntheticDeepseek2, AttnKbIsNeverF16) {
    ScratchDir dir;
    const gguf::Reader f16 = make_tiny(dir / "f16.gguf", SY_TYPE_F16, KvLayout::split);
    EXPECT_EQ(f16.tensor("blk.0.attn_k_b.weight")->type, SY_TYPE_BF16);
    EXPECT_EQ(f16.tensor("blk.0.attn_v_b.weight")->type, SY_TYPE_F16);
    const gguf::Reader q4 = make_tiny(dir / "q4.gguf", SY_TYPE_Q4_0, KvLayout::split);
    EXPECT_EQ(q4.tensor("blk.0.attn_k_b.weight")->type, SY_TYPE_Q8_0);
}

TEST(SyntheticDeepseek2, SameSeedSameBytesAnyThreadCount) {
    ScratchDir dir;
    make_tiny(dir / "a.gguf", SY_TYPE_Q4_K, KvLayout::kv_b, 7, 1);
    make_tiny(dir / "b.gguf", SY_TYPE_Q4_K, KvLayout::kv_b, 7, 3);
    make_tiny(dir / "c.gguf", SY_TYPE_Q4_K, KvLayout::kv_b, 8, 1);
    const auto a = test::file_bytes(dir / "a.gguf");
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, test::file_bytes(dir / "b.gguf"));
    const auto c = test::file_bytes(dir / "c.gguf");
    ASSERT_EQ(a.size(), c.size());
    EXPECT_NE(a, c);
}

TEST(SyntheticDeepseek2, ValuesAreWellScaled) {
    ScratchDir dir;
    const gguf::Reader r = make_tiny(dir / "tiny.gguf", SY_TYPE_F32);
    for (const gguf::TensorInfo& t : r.tensors()) {
        const std::vector<float> v = values(t);
        double sum = 0, sq = 0;
        for (float x : v) {
            ASSERT_TRUE(std::isfinite(x)) << t.name;
            sum += x;
            sq += double(x) * x;
        }
        const double mean = sum / v.size();
        const double sd = std::sqrt(sq / v.size() - mean * mean);
        if (t.name.find("norm") != std::string::npos) {
            EXPECT_NEAR(mean, 1.0, 0.02) << t.name;
            EXPECT_NEAR(sd, 0.05, 0.02) << t.name;
        } else if (t.name == "token_embd.weight") {
            EXPECT_NEAR(sd, 1.0, 0.05) << t.name;
        } else if (t.name.find("exp_probs_b") == std::string::npos) {
            const double want = 1.0 / std::sqrt(double(t.ne[0]));
            EXPECT_NEAR(mean, 0.0, 4 * want / std::sqrt(double(v.size()))) << t.name;
            EXPECT_NEAR(sd, want, 0.1 * want) << t.name;
        }
    }
}

// The split layout's k_b/v_b are kv_b's values rearranged (ik_llama.cpp's 2-D layout), so both
// files describe the same attention.
TEST(SyntheticDeepseek2, SplitLayoutIsKvbRearranged) {
    ScratchDir dir;
    const gguf::Reader kvb = make_tiny(dir / "kvb.gguf", SY_TYPE_F32, KvLayout::kv_b);
    const gguf::Reader split = make_tiny(dir / "split.gguf", SY_TYPE_F32, KvLayout::split);
    const int64_t heads = 4, nope = 32, vh = 32, kvl = 32;
    for (int il = 0; il < 3; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const auto kv = values(*kvb.tensor(p + "attn_kv_b.weight"));
        const auto kb = values(*split.tensor(p + "attn_k_b.weight"));
        const auto vb = values(*split.tensor(p + "attn_v_b.weight"));
        auto kv_at = [&](int64_t c, int64_t row) { return kv[row * kvl + c]; };
        for (int64_t h = 0; h < heads; ++h) {
            for (int64_t c = 0; c < kvl; ++c) {
                for (int64_t j = 0; j < nope; ++j) {
                    ASSERT_EQ(kb[(h * kvl + c) * nope + j], kv_at(c, h * (nope + vh) + j));
                }
                for (int64_t j = 0; j < vh; ++j) {
                    ASSERT_EQ(vb[(h * vh + j) * kvl + c], kv_at(c, h * (nope + vh) + nope + j));
                }
            }
        }
        EXPECT_EQ(values(*kvb.tensor(p + "attn_q_b.weight")),
                  values(*split.tensor(p + "attn_q_b.weight")));
    }
}

// mini is ~2 GB in q8_0 (1.86 B parameters), too big to write in a test: its plan is checked.
TEST(SyntheticDeepseek2, MiniPlanHasV2LiteLayerShapes) {
    const Deepseek2Config c = deepseek2_preset("mini");
    const ModelPlan plan = plan_deepseek2(c, SY_TYPE_Q8_0, KvLayout::kv_b);
    EXPECT_EQ(plan.tensors.size(), 3u + 12 + 3 * 16);
    EXPECT_EQ(plan.tensors.size(), deepseek2_tensor_count(c, KvLayout::kv_b));
    EXPECT_GT(plan.data_bytes(), 300u << 20);
    std::map<std::string, const PlannedTensor*> by_name;
    for (const PlannedTensor& t : plan.tensors) by_name[t.name] = &t;
    const std::map<std::string, std::vector<int64_t>> expected = {
        {"token_embd.weight", {2048, 4096}},
        {"blk.0.attn_q_a.weight", {2048, 1536}},
        {"blk.0.attn_q_b.weight", {1536, 16 * 192}},
        {"blk.0.attn_kv_a_mqa.weight", {2048, 576}},
        {"blk.0.attn_kv_b.weight", {512, 16 * 256}},
        {"blk.0.attn_output.weight", {2048, 2048}},
        {"blk.0.ffn_gate.weight", {2048, 10944}},
        {"blk.0.ffn_down.weight", {10944, 2048}},
        {"blk.3.ffn_gate_inp.weight", {2048, 64}},
        {"blk.3.ffn_gate_exps.weight", {2048, 1408, 64}},
        {"blk.3.ffn_down_exps.weight", {1408, 2048, 64}},
        {"blk.3.ffn_up_shexp.weight", {2048, 2816}},
        {"blk.3.ffn_down_shexp.weight", {2816, 2048}},
    };
    for (const auto& [name, ne] : expected) {
        ASSERT_TRUE(by_name.count(name)) << name;
        EXPECT_EQ(by_name[name]->ne, ne) << name;
    }
    EXPECT_FALSE(by_name.count("blk.3.exp_probs_b.bias"));  // softmax routing
    EXPECT_EQ(by_name["blk.3.ffn_gate_inp.weight"]->type, SY_TYPE_F32);
    EXPECT_EQ(by_name["blk.3.ffn_down_exps.weight"]->type, SY_TYPE_Q8_0);
}

TEST(SyntheticDeepseek2, LitePlanIsDeepSeekV2Lite) {
    const Deepseek2Config c = deepseek2_preset("lite");
    const ModelPlan plan = plan_deepseek2(c, SY_TYPE_Q4_K, KvLayout::kv_b);
    EXPECT_EQ(plan.tensors.size(), 377u);  // as in published V2-Lite GGUFs
    EXPECT_NEAR(double(plan.parameters()) / 1e9, 15.7, 0.1);
    bool has_q_lora_key = false;
    for (const auto& kv : plan.metadata)
        has_q_lora_key |= kv.key == "deepseek2.attention.q_lora_rank";
    EXPECT_FALSE(has_q_lora_key);
    for (const PlannedTensor& t : plan.tensors) {
        EXPECT_EQ(t.name.find("attn_q_a"), std::string::npos) << t.name;
        if (t.name == "blk.5.attn_q.weight") {
            EXPECT_EQ(t.ne, (std::vector<int64_t>{2048, 3072}));
        }
        // 1408-wide rows do not divide into 256-blocks: ffn_down_exps falls back.
        if (t.name == "blk.5.ffn_down_exps.weight") {
            EXPECT_EQ(t.type, SY_TYPE_Q5_0);
        }
        if (t.name == "blk.5.ffn_up_exps.weight") {
            EXPECT_EQ(t.type, SY_TYPE_Q4_K);
        }
    }
}

// MTP (NextN) blocks: counted in block_count, named by nextn_predict_layers, with their
// nextn.* tensors; the model reader leaves them out and runs the others.
TEST(SyntheticDeepseek2, NextnBlocksAreWrittenAndLeftOutWhenRead) {
    ScratchDir dir;
    Deepseek2Config c = deepseek2_preset("tiny");
    c.n_nextn = 1;
    const ModelPlan plan = plan_deepseek2(c, SY_TYPE_Q8_0, KvLayout::kv_b);
    EXPECT_EQ(plan.tensors.size(), deepseek2_tensor_count(c, KvLayout::kv_b));
    write_synthetic_model(dir / "mtp.gguf", plan, 42, 2);
    const gguf::Reader r = gguf::Reader::open(dir / "mtp.gguf");
    const std::string last = "blk." + std::to_string(c.n_layer) + ".";
    EXPECT_EQ(r.get_u64("deepseek2.block_count"), c.n_layer + 1);
    EXPECT_EQ(r.get_u64("deepseek2.nextn_predict_layers"), 1u);
    ASSERT_NE(r.tensor(last + "nextn.eh_proj.weight"), nullptr);
    EXPECT_EQ(shape(*r.tensor(last + "nextn.eh_proj.weight")),
              (std::vector<int64_t>{2 * int64_t(c.n_embd), c.n_embd}));
    EXPECT_NE(r.tensor(last + "ffn_gate_exps.weight"), nullptr);
    const Deepseek2HParams hp = Deepseek2HParams::from_gguf(r);
    EXPECT_EQ(hp.n_layer, c.n_layer);
    EXPECT_EQ(hp.n_nextn, 1u);
}

TEST(SyntheticDeepseek2, NextnLayersThatLeaveNoBlockAreRefused) {
    ScratchDir dir;
    Deepseek2Config c = deepseek2_preset("tiny");
    c.n_nextn = 1;
    ModelPlan plan = plan_deepseek2(c, SY_TYPE_Q8_0, KvLayout::kv_b);
    for (gguf::KeyValue& kv : plan.metadata)
        if (kv.key == "deepseek2.nextn_predict_layers") kv.value = gguf::Value::u32(c.n_layer + 1);
    write_synthetic_model(dir / "bad.gguf", plan, 42, 2);
    const gguf::Reader r = gguf::Reader::open(dir / "bad.gguf");
    try {
        Deepseek2HParams::from_gguf(r);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("deepseek2.nextn_predict_layers"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("leaves none of the"), std::string::npos) << e.what();
    }
}

TEST(SyntheticDeepseek2, UnknownPresetIsAnError) {
    EXPECT_THROW(deepseek2_preset("huge"), std::invalid_argument);
}

}  // namespace
}  // namespace sy::llm
