// llama-quantize's mixes (llm/quant_preset.hpp): the per-tensor types of DeepSeek-V3's tensor
// list under several mixes, worked out by hand from llama.cpp's llama_tensor_get_type; names,
// the block fallback of the i-quants, the refusal without an importance matrix, and a mix
// applied to a file (types and general.file_type).
#include "switchyard/llm/quant_preset.hpp"

#include <gtest/gtest.h>

#include <map>

#include "llm_test_util.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/requantize.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/llm/tensor_types.hpp"

namespace sy::llm::test {
namespace {

// DeepSeek-V3's quantizable tensors (61 layers, 3 dense, 256 experts) with their shapes.
std::vector<std::pair<std::string, std::vector<int64_t>>> v3_tensors() {
    std::vector<std::pair<std::string, std::vector<int64_t>>> t = {
        {"token_embd.weight", {7168, 129280}}, {"output.weight", {7168, 129280}}};
    for (int il = 0; il < 61; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.push_back({p + "attn_q_a.weight", {7168, 1536}});
        t.push_back({p + "attn_q_b.weight", {1536, 24576}});
        t.push_back({p + "attn_kv_a_mqa.weight", {7168, 576}});
        t.push_back({p + "attn_kv_b.weight", {512, 32768}});
        t.push_back({p + "attn_output.weight", {16384, 7168}});
        if (il < 3) {
            t.push_back({p + "ffn_gate.weight", {7168, 18432}});
            t.push_back({p + "ffn_up.weight", {7168, 18432}});
            t.push_back({p + "ffn_down.weight", {18432, 7168}});
        } else {
            t.push_back({p + "ffn_gate_exps.weight", {7168, 2048, 256}});
            t.push_back({p + "ffn_up_exps.weight", {7168, 2048, 256}});
            t.push_back({p + "ffn_down_exps.weight", {2048, 7168, 256}});
            t.push_back({p + "ffn_gate_shexp.weight", {7168, 2048}});
            t.push_back({p + "ffn_up_shexp.weight", {7168, 2048}});
            t.push_back({p + "ffn_down_shexp.weight", {2048, 7168}});
        }
    }
    return t;
}

// The mix's type of every V3 tensor, decided in llama.cpp's order.
std::map<std::string, int32_t> v3_mix(std::string_view preset, bool imatrix, uint32_t gqa = 1) {
    const auto tensors = v3_tensors();
    MixModel model;
    model.n_layer = 61;
    model.n_expert = 256;
    model.n_gqa = gqa;
    model.has_imatrix = imatrix;
    model.n_attention_wv = 61;
    std::vector<std::string> names;
    for (const auto& [n, ne] : tensors) names.push_back(n);
    const QuantPreset* p = find_quant_preset(preset);
    EXPECT_NE(p, nullptr) << preset;
    MixCounters c;
    std::map<std::string, int32_t> out;
    std::vector<size_t> order = mix_order(names);
    if (p->ik)  // ik_llama.cpp visits the tensors in file order
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (size_t i : order)
        out[names[i]] = mix_tensor_type(*p, model, c, names[i], tensors[i].second);
    return out;
}

struct Expect {
    const char* tensor;
    int32_t type;
};

void check(std::string_view preset, bool imatrix, std::initializer_list<Expect> want,
           uint32_t gqa = 1) {
    const auto got = v3_mix(preset, imatrix, gqa);
    for (const Expect& e : want)
        EXPECT_EQ(type_name(got.at(e.tensor)), type_name(e.type))
            << preset << (imatrix ? " with imatrix" : "") << ": " << e.tensor;
}

TEST(QuantPreset, Q4_K_M) {
    check("Q4_K_M", false,
          {{"output.weight", SY_TYPE_Q6_K},
           {"token_embd.weight", SY_TYPE_Q4_K},
           {"blk.0.attn_kv_b.weight", SY_TYPE_Q6_K},   // first eighth
           {"blk.9.attn_kv_b.weight", SY_TYPE_Q6_K},   // (9 - 7) % 3 == 2
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q4_K},  //
           {"blk.60.attn_kv_b.weight", SY_TYPE_Q6_K},  // last eighth
           {"blk.5.ffn_down_exps.weight", SY_TYPE_Q6_K},
           {"blk.5.ffn_down_shexp.weight", SY_TYPE_Q6_K},
           {"blk.10.ffn_down_exps.weight", SY_TYPE_Q4_K},
           {"blk.12.ffn_down_exps.weight", SY_TYPE_Q6_K},
           {"blk.10.ffn_up_exps.weight", SY_TYPE_Q4_K},
           {"blk.10.attn_q_b.weight", SY_TYPE_Q4_K},
           {"blk.10.attn_output.weight", SY_TYPE_Q4_K}});
}

TEST(QuantPreset, KQuantMixes) {
    check("Q2_K", false,
          {{"blk.10.attn_kv_b.weight", SY_TYPE_Q3_K},
           {"blk.10.ffn_down_exps.weight", SY_TYPE_Q3_K},
           {"blk.10.attn_output.weight", SY_TYPE_Q3_K},
           {"blk.10.ffn_gate_exps.weight", SY_TYPE_Q2_K},
           {"output.weight", SY_TYPE_Q6_K}});
    // llama.cpp's MLA files say head_count_kv = 1: n_gqa 128 lifts attn_kv_b to Q4_K.
    check("Q2_K", false, {{"blk.10.attn_kv_b.weight", SY_TYPE_Q4_K}}, 128);
    check("Q3_K_M", false,
          {{"blk.0.attn_kv_b.weight", SY_TYPE_Q5_K},
           {"blk.1.attn_kv_b.weight", SY_TYPE_Q5_K},
           {"blk.2.attn_kv_b.weight", SY_TYPE_Q4_K},
           {"blk.2.ffn_down.weight", SY_TYPE_Q5_K},  // layer < 61 / 16
           {"blk.3.ffn_down_exps.weight", SY_TYPE_Q4_K},
           {"blk.3.attn_output.weight", SY_TYPE_Q4_K},
           {"blk.3.ffn_up_exps.weight", SY_TYPE_Q3_K}});
    check("Q4_K_S", false,
          {{"blk.3.attn_kv_b.weight", SY_TYPE_Q5_K},
           {"blk.4.attn_kv_b.weight", SY_TYPE_Q4_K},
           {"blk.6.ffn_down_exps.weight", SY_TYPE_Q5_K},
           {"blk.7.ffn_down_exps.weight", SY_TYPE_Q4_K}});
    check(
        "Q5_K_M", false,
        {{"blk.0.attn_kv_b.weight", SY_TYPE_Q6_K}, {"blk.10.ffn_down_exps.weight", SY_TYPE_Q5_K}});
    check("Q6_K", false,
          {{"output.weight", SY_TYPE_Q6_K}, {"blk.0.attn_kv_b.weight", SY_TYPE_Q6_K}});
}

TEST(QuantPreset, LowBitIQuantMixes) {
    // ffn_down: the first 61 / 8 = 7 ffn_down tensors in load order (dense, then each MoE
    // layer's _exps and _shexp) get Q2_K.
    check("IQ2_XXS", true,
          {{"output.weight", SY_TYPE_Q5_K},
           {"token_embd.weight", SY_TYPE_Q2_K},
           {"blk.30.attn_kv_b.weight", SY_TYPE_Q4_K},  // n_expert >= 4
           {"blk.2.ffn_down.weight", SY_TYPE_Q2_K},
           {"blk.4.ffn_down_shexp.weight", SY_TYPE_Q2_K},
           {"blk.5.ffn_down_exps.weight", SY_TYPE_IQ2_XXS},
           {"blk.30.attn_output.weight", SY_TYPE_IQ2_XXS},
           {"blk.30.ffn_gate_exps.weight", SY_TYPE_IQ2_XXS}});
    check("IQ1_S", true,
          {{"blk.30.attn_output.weight", SY_TYPE_IQ2_XXS},
           {"blk.30.ffn_up_exps.weight", SY_TYPE_IQ1_S}});
    check("IQ1_M", true, {{"blk.30.ffn_up_exps.weight", SY_TYPE_IQ1_M}});
    check("IQ2_XS", true, {{"blk.30.ffn_up_exps.weight", SY_TYPE_IQ2_XS}});
    check("IQ2_S", true, {{"blk.30.ffn_up_exps.weight", SY_TYPE_IQ2_XS}});
    check("IQ2_M", true,
          {{"token_embd.weight", SY_TYPE_IQ3_S},
           {"blk.0.ffn_down.weight", SY_TYPE_IQ3_S},
           {"blk.30.attn_output.weight", SY_TYPE_IQ3_S},
           {"blk.30.ffn_up_exps.weight", SY_TYPE_IQ2_S}});
}

TEST(QuantPreset, ThreeAndFourBitIQuantMixes) {
    check("IQ3_XXS", true,
          {{"blk.30.attn_kv_b.weight", SY_TYPE_IQ3_XXS},
           {"blk.30.attn_output.weight", SY_TYPE_IQ3_S},
           {"token_embd.weight", SY_TYPE_IQ3_S},
           {"blk.30.ffn_down_exps.weight", SY_TYPE_IQ3_XXS}});
    check("IQ3_XXS", false,
          {{"blk.30.attn_kv_b.weight", SY_TYPE_IQ3_S},
           {"blk.3.ffn_down_exps.weight", SY_TYPE_Q4_K},
           {"blk.30.ffn_down_exps.weight", SY_TYPE_Q3_K}});
    check("IQ3_XS", true,
          {{"blk.6.ffn_up_exps.weight", SY_TYPE_IQ3_S},
           {"blk.7.ffn_up_exps.weight", SY_TYPE_IQ3_XXS},
           {"blk.52.ffn_gate_exps.weight", SY_TYPE_IQ3_XXS},
           {"blk.53.ffn_gate_exps.weight", SY_TYPE_IQ3_S}});
    check("IQ3_M", true,
          {{"blk.30.attn_kv_b.weight", SY_TYPE_Q4_K},
           {"blk.6.ffn_down_exps.weight", SY_TYPE_Q4_K},
           {"blk.30.ffn_down_exps.weight", SY_TYPE_IQ3_S},
           {"blk.30.attn_output.weight", SY_TYPE_Q4_K}});
    check("IQ4_XS", false,
          {{"blk.6.ffn_down_exps.weight", SY_TYPE_Q5_K},
           {"blk.7.ffn_down_exps.weight", SY_TYPE_IQ4_XS},
           {"output.weight", SY_TYPE_Q6_K}});
    check("IQ4_XS", true, {{"blk.6.ffn_down_exps.weight", SY_TYPE_IQ4_XS}});
    check("IQ4_NL", false, {{"blk.30.ffn_up_exps.weight", SY_TYPE_IQ4_NL}});
}

TEST(QuantPreset, NamesAndFileTypes) {
    ASSERT_NE(find_quant_preset("q4_k_m"), nullptr);
    EXPECT_EQ(find_quant_preset("q4_k_m")->name, "Q4_K_M");
    EXPECT_EQ(static_cast<uint32_t>(find_quant_preset("Q4_K_M")->ftype), 15u);
    EXPECT_EQ(static_cast<uint32_t>(find_quant_preset("iq2_xxs")->ftype), 19u);
    EXPECT_EQ(find_quant_preset("Q4_K"), nullptr);  // a plain type here
    EXPECT_EQ(find_quant_preset("Q4_K_MM"), nullptr);
    for (const char* n : {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "Q2_K_S"})
        EXPECT_TRUE(find_quant_preset(n)->needs_imatrix) << n;
    for (const char* n : {"Q2_K", "IQ2_M", "IQ3_XXS", "Q4_K_M"})
        EXPECT_FALSE(find_quant_preset(n)->needs_imatrix) << n;
}

TEST(QuantPreset, IQuantsFallBackToIq4NlForShortRows) {
    for (int32_t t : {SY_TYPE_IQ1_S, SY_TYPE_IQ1_M, SY_TYPE_IQ2_XXS, SY_TYPE_IQ2_XS, SY_TYPE_IQ2_S,
                      SY_TYPE_IQ3_XXS, SY_TYPE_IQ3_S, SY_TYPE_IQ4_XS})
        EXPECT_EQ(fit_block("blk.0.attn_kv_b.weight", 512 + 32, t), SY_TYPE_IQ4_NL) << t;
    EXPECT_EQ(fit_block("x", 512, SY_TYPE_IQ2_XXS), SY_TYPE_IQ2_XXS);
    EXPECT_EQ(fit_block("x", 48, SY_TYPE_IQ2_XXS), SY_TYPE_F16);
}

// ik_llama.cpp's mixes (docs/ik-presets.md) on DeepSeek-V3 (256 experts, so the "attn_k"
// tensors attn_kv_a_mqa, attn_kv_b are Q8_0 in the generic rules and attn_output Q5_K).
TEST(QuantPreset, IkMixes) {
    check("IQ4_KS", false,
          {{"output.weight", SY_TYPE_Q6_K},
           {"token_embd.weight", SY_TYPE_IQ4_KS},
           {"blk.10.attn_kv_a_mqa.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_q_b.weight", SY_TYPE_IQ4_KS},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K},
           {"blk.3.ffn_down_exps.weight", SY_TYPE_Q5_K},  // layer < 61 / 8, no imatrix
           {"blk.10.ffn_down_exps.weight", SY_TYPE_IQ4_KS},
           {"blk.10.ffn_up_exps.weight", SY_TYPE_IQ4_KS}});
    check("IQ4_KS", true, {{"blk.3.ffn_down_exps.weight", SY_TYPE_IQ4_KS}});
    // IQ2_KT's own branch: 8+ experts put every attn_k/attn_q tensor at Q4_K, layer 0's FFN at
    // IQ3_K, the shared experts at IQ4_K, the first eighth's ffn_down at IQ3_K.
    check("IQ2_KT", false,
          {{"output.weight", SY_TYPE_Q5_K},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q4_K},
           {"blk.10.attn_q_a.weight", SY_TYPE_Q4_K},
           {"blk.0.ffn_up.weight", SY_TYPE_IQ3_K},
           {"blk.1.ffn_up.weight", SY_TYPE_IQ2_KT},
           {"blk.3.ffn_down_shexp.weight", SY_TYPE_IQ4_K},
           {"blk.5.ffn_down_exps.weight", SY_TYPE_IQ3_K},
           {"blk.10.ffn_down_exps.weight", SY_TYPE_IQ2_KT},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K}});
    // IQ2_KS (the IQ2_XXS family's branch): the first 61 / 8 = 7 ffn_down tensors in file order
    // (3 dense, then blk.3 and blk.4's routed and shared ones) get Q2_K.
    check("IQ2_KS", false,
          {{"blk.10.attn_kv_b.weight", SY_TYPE_Q4_K},
           {"blk.4.ffn_down_shexp.weight", SY_TYPE_Q2_K},
           {"blk.5.ffn_down_exps.weight", SY_TYPE_IQ2_KS},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K},
           {"output.weight", SY_TYPE_Q5_K}});
    // IQ3_KL: a mix of IQ3_K with IQ4_KS where llama.cpp's "more bits" layers are.
    check("IQ3_KL", false,
          {{"output.weight", SY_TYPE_Q6_K},
           {"token_embd.weight", SY_TYPE_IQ3_K},
           {"blk.9.ffn_down_exps.weight", SY_TYPE_IQ4_KS},  // (9 - 7) % 3 == 2
           {"blk.10.ffn_down_exps.weight", SY_TYPE_IQ3_K},
           {"blk.9.ffn_gate_exps.weight", SY_TYPE_IQ4_KS},
           {"blk.10.ffn_up_exps.weight", SY_TYPE_IQ3_K},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K}});
    check("IQ2_KL", false, {{"blk.10.attn_output.weight", SY_TYPE_IQ4_KS}});
    check("IQ3_KT", false,
          {{"token_embd.weight", SY_TYPE_IQ3_S},
           {"blk.3.ffn_down_exps.weight", SY_TYPE_IQ4_K},
           {"blk.10.ffn_down_exps.weight", SY_TYPE_IQ3_K}});
    check("IQ6_K", false, {{"output.weight", SY_TYPE_IQ6_K}});
    // An _R4 mix names interleaved types (ik's ids) where its rules do.
    check("IQ4_K_R4", false,
          {{"blk.10.ffn_up_exps.weight", 339},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K},
           {"output.weight", SY_TYPE_Q6_K}});
}

TEST(QuantPreset, IkNamesFileTypesAndFallback) {
    for (const auto& [name, ftype] : {std::pair{"iq2_k", 138u},
                                      {"IQ4_KS", 145u},
                                      {"iq3_kl", 146u},
                                      {"IQ2_KS", 147u},
                                      {"iq2_kt", 151u},
                                      {"IQ1_KT", 156u},
                                      {"iq4_k_r4", 340u},
                                      {"IQ5_KS_R4", 350u},
                                      {"q6_0", 135u}}) {
        const QuantPreset* p = find_quant_preset(name);
        ASSERT_NE(p, nullptr) << name;
        EXPECT_TRUE(p->ik) << name;
        EXPECT_EQ(static_cast<uint32_t>(p->ftype), ftype) << name;
        EXPECT_FALSE(known_file_type_name(ftype).empty()) << name;
    }
    EXPECT_EQ(file_type_name(340), "IQ4_K_R4 - 4.5 bpw");
    EXPECT_EQ(file_type_name(146), "IQ3_KL - 4 bpw");
    // ik's fallback for rows that are not whole 256-blocks (IQ4_K -> Q5_0, IQ6_K -> Q8_0), and
    // an interleaved pick quantized as its base and written interleaved, but never token_embd.
    const QuantPreset& r4 = *find_quant_preset("IQ4_K_R4");
    MixModel model;
    model.n_layer = 3;
    model.n_expert = 8;
    MixCounters c;
    const std::vector<int64_t> wide{512, 64, 8}, narrow{128, 64, 8};
    TensorDecision d = decide_tensor_type("blk.1.ffn_up_exps.weight", wide, r4, model, c, {});
    EXPECT_EQ(d.type, SY_TYPE_IQ4_K);
    EXPECT_EQ(d.interleave, 339);
    d = decide_tensor_type("blk.1.ffn_gate_exps.weight", narrow, r4, model, c, {});
    EXPECT_EQ(type_name(d.type), "q5_0");
    EXPECT_EQ(d.interleave, 0);
    d = decide_tensor_type("token_embd.weight", std::vector<int64_t>{512, 1000}, r4, model, c, {});
    EXPECT_EQ(d.type, SY_TYPE_IQ4_K);
    EXPECT_EQ(d.interleave, 0);
    d = decide_tensor_type("blk.1.ffn_down_exps.weight", narrow, *find_quant_preset("IQ6_K"), model,
                           c, {});
    EXPECT_EQ(type_name(d.type), "q8_0");
}

TEST(QuantPreset, AppliedToAFile) {
    ScratchDir dir;
    const auto in = dir / "tiny.gguf";
    write_synthetic_model(in, plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, KvLayout::kv_b),
                          3, 1);
    RequantizeOptions o;
    o.preset = find_quant_preset("Q4_K_M");
    o.rules.push_back(parse_quant_rule("attn_q_a=q8_0"));  // rules still come first
    const RequantizeResult r = requantize(in, dir / "out.gguf", o);
    const gguf::Reader f = gguf::Reader::open(dir / "out.gguf");
    EXPECT_EQ(f.get_u64("general.file_type"), 15u);
    const auto type_of = [&](const char* n) { return type_name(f.tensor(n)->type); };
    // The tiny model has 8 experts: llama.cpp's 8-expert rules apply (attn_kv_b Q8_0,
    // attn_output Q5_K).
    EXPECT_EQ(type_of("output.weight"), "q6_K");
    EXPECT_EQ(type_of("blk.0.attn_q_a.weight"), "q8_0");
    EXPECT_EQ(type_of("blk.1.attn_kv_b.weight"), "q8_0");
    EXPECT_EQ(type_of("blk.1.attn_output.weight"), "q5_1");  // q5_K, rows of 128: fallback
    EXPECT_EQ(type_of("blk.1.ffn_up_exps.weight"), "q4_K");
    EXPECT_EQ(type_of("blk.0.ffn_down.weight"), "q4_K");       // 3 layers: only the last gets
    EXPECT_EQ(type_of("blk.2.ffn_down_exps.weight"), "q6_K");  // more bits
    EXPECT_EQ(type_of("blk.1.ffn_gate_inp.weight"), "f32");
    EXPECT_FALSE(r.fallbacks.empty());
}

TEST(QuantPreset, RefusedWithoutImatrixWhereLlamaQuantizeRefuses) {
    ScratchDir dir;
    const auto in = dir / "tiny.gguf";
    write_synthetic_model(in, plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, KvLayout::kv_b),
                          3, 1);
    RequantizeOptions o;
    o.preset = find_quant_preset("Q2_K_S");  // Q2_K is writable today: the mix's own rule
    try {
        requantize(in, dir / "out.gguf", o);
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string s = e.what();
        EXPECT_NE(s.find("missing importance matrix for tensor"), std::string::npos) << s;
        EXPECT_NE(s.find("q2_K"), std::string::npos) << s;
        EXPECT_EQ(s.find("token_embd"), std::string::npos) << s;  // exempt, as llama.cpp
    }
}

}  // namespace
}  // namespace sy::llm::test
