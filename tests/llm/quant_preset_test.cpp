// llama-quantize's mixes (llm/quant_preset.hpp): the per-tensor types of DeepSeek-V3's tensor
// list under several mixes, worked out by hand from llama.cpp's llama_tensor_get_type; names,
// the block fallback of the i-quants, the refusal without an importance matrix, and a mix
// applied to a file (types and general.file_type).
#include "switchyard/llm/quant_preset.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "llm_test_util.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/interleaved.hpp"
#include "switchyard/llm/requantize.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/llm/tensor_types.hpp"

namespace sy::llm::test {
namespace {

// DeepSeek-V3's quantizable tensors (61 layers, 3 dense, 256 experts) with their shapes; both
// MLA layouts' tensors (attn_kv_b, and llama.cpp's attn_k_b/attn_v_b), which no rule counts.
std::vector<std::pair<std::string, std::vector<int64_t>>> v3_tensors() {
    std::vector<std::pair<std::string, std::vector<int64_t>>> t = {
        {"token_embd.weight", {7168, 129280}}, {"output.weight", {7168, 129280}}};
    for (int il = 0; il < 61; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.push_back({p + "attn_q_a.weight", {7168, 1536}});
        t.push_back({p + "attn_q_b.weight", {1536, 24576}});
        t.push_back({p + "attn_kv_a_mqa.weight", {7168, 576}});
        t.push_back({p + "attn_kv_b.weight", {512, 32768}});
        t.push_back({p + "attn_k_b.weight", {128, 512, 128}});
        t.push_back({p + "attn_v_b.weight", {512, 128, 128}});
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

// ik's repacked forms of llama.cpp's mixes (docs/ik-presets.md, "repacked mainline mixes"), on
// DeepSeek-V3: ik's ids for the interleaved types (q4_0_r8 202, q8_0_r8 208, q2_k_r4 210, q4_k_r4
// 212, q5_k_r4 213, q6_k_r4 214, iq2_xxs_r4 216, iq3_xxs_r4 218, iq1_s_r4 219, iq4_nl_r4 220,
// iq2_s_r4 222, iq4_xs_r8 223, iq1_m_r4 229, bf16_r16 230, iq3_k_r4 338, iq4_k_r4 339). The
// mix's type, before the block fallback, the attn_k_b rule and token_embd's de-interleaving.
TEST(QuantPreset, IkRepackedMainlineMixes) {
    // Q4_K_S's rules, not Q4_K_M's: ffn_down of the first 61 / 8 = 7 layers plain Q5_K, the
    // "attn_k" tensors Q8_0 and attn_output Q5_K (4+ experts), the rest interleaved.
    check("Q4_K_R4", false,
          {{"output.weight", SY_TYPE_Q6_K},
           {"token_embd.weight", 212},  // written as q4_K
           {"blk.10.attn_kv_a_mqa.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_k_b.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_v_b.weight", 212},
           {"blk.10.attn_q_a.weight", 212},
           {"blk.10.attn_q_b.weight", 212},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K},
           {"blk.0.ffn_down.weight", SY_TYPE_Q5_K},
           {"blk.6.ffn_down_exps.weight", SY_TYPE_Q5_K},
           {"blk.6.ffn_down_shexp.weight", SY_TYPE_Q5_K},
           {"blk.7.ffn_down_exps.weight", 212},
           {"blk.0.ffn_gate.weight", 212},
           {"blk.10.ffn_up_exps.weight", 212},
           {"blk.10.ffn_gate_shexp.weight", 212}});
    // Q4_0_R8: attn_output is not lifted; with an imatrix the first eighth's ffn_down is
    // IQ4_NL_R4 (llama.cpp's Q4_0 gives Q4_1 there).
    check("Q4_0_R8", false,
          {{"output.weight", SY_TYPE_Q6_K},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_q_b.weight", 202},
           {"blk.10.attn_output.weight", 202},
           {"blk.3.ffn_down_exps.weight", 202},
           {"blk.10.ffn_up_exps.weight", 202}});
    check("Q4_0_R8", true,
          {{"blk.0.ffn_down.weight", 220},
           {"blk.6.ffn_down_shexp.weight", 220},
           {"blk.7.ffn_down_exps.weight", 202}});
    // The IQ2_XXS family's branch: an interleaved output (Q5_K_R4), every attn_k*/attn_q* Q4_K
    // with 8+ experts, the first 7 ffn_down tensors in file order (3 dense, then blk.3 and
    // blk.4's routed and shared ones) Q2_K.
    check("IQ2_XXS_R4", true,
          {{"output.weight", 213},
           {"token_embd.weight", SY_TYPE_Q2_K},
           {"blk.10.attn_kv_a_mqa.weight", SY_TYPE_Q4_K},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q4_K},
           {"blk.10.attn_k_b.weight", SY_TYPE_Q4_K},
           {"blk.10.attn_q_a.weight", SY_TYPE_Q4_K},
           {"blk.10.attn_q_b.weight", SY_TYPE_Q4_K},
           {"blk.10.attn_v_b.weight", 216},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K},
           {"blk.2.ffn_down.weight", SY_TYPE_Q2_K},
           {"blk.4.ffn_down_shexp.weight", SY_TYPE_Q2_K},
           {"blk.5.ffn_down_exps.weight", 216},
           {"blk.10.ffn_up_exps.weight", 216}});
    check("IQ2_M_R4", true,
          {{"output.weight", SY_TYPE_Q5_K},
           {"token_embd.weight", SY_TYPE_IQ3_S},
           {"blk.4.ffn_down_shexp.weight", SY_TYPE_IQ3_S},
           {"blk.5.ffn_down_exps.weight", 222},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K},
           {"blk.10.ffn_gate_exps.weight", 222}});
    // The IQ1 branch, its types interleaved: attn_k*/attn_q* Q4_K_R4, layer 0's FFN IQ3_K_R4, the
    // shared experts IQ4_K_R4, ffn_down of the first 7 layers Q2_K_R4, attn_output Q5_K_R4.
    check("IQ1_S_R4", true,
          {{"output.weight", SY_TYPE_Q5_K},
           {"token_embd.weight", SY_TYPE_Q2_K},
           {"blk.10.attn_kv_a_mqa.weight", 212},
           {"blk.10.attn_kv_b.weight", 212},
           {"blk.10.attn_k_b.weight", 212},
           {"blk.10.attn_q_a.weight", 212},
           {"blk.10.attn_q_b.weight", 212},
           {"blk.10.attn_v_b.weight", 219},
           {"blk.10.attn_output.weight", 213},
           {"blk.0.ffn_gate.weight", 338},
           {"blk.0.ffn_down.weight", 338},
           {"blk.1.ffn_down.weight", 210},
           {"blk.1.ffn_up.weight", 219},
           {"blk.3.ffn_down_shexp.weight", 339},
           {"blk.3.ffn_up_shexp.weight", 339},
           {"blk.6.ffn_down_exps.weight", 210},
           {"blk.7.ffn_down_exps.weight", 219},
           {"blk.10.ffn_up_exps.weight", 219}});
    check("IQ1_M_R4", true,
          {{"blk.10.attn_q_b.weight", 212},
           {"blk.10.attn_output.weight", 213},
           {"blk.6.ffn_down_exps.weight", 210},
           {"blk.10.ffn_gate_exps.weight", 229},
           {"blk.10.ffn_down_exps.weight", 229}});
    // BF16_R16 runs no rule: every tensor, the output included, gets it.
    check("BF16_R16", false,
          {{"output.weight", 230},
           {"token_embd.weight", 230},  // written as bf16
           {"blk.10.attn_kv_b.weight", 230},
           {"blk.10.attn_k_b.weight", 230},
           {"blk.10.attn_output.weight", 230},
           {"blk.3.ffn_down_exps.weight", 230}});
    // The outputs that stay interleaved, and the mixes with few rules.
    check("Q8_0_R8", false,
          {{"output.weight", 208},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_output.weight", 208},
           {"blk.3.ffn_down_exps.weight", 208}});
    check("Q6_K_R4", false, {{"output.weight", 214}, {"blk.10.attn_output.weight", 214}});
    check("Q5_0_R4", false, {{"output.weight", SY_TYPE_Q6_K}, {"blk.3.ffn_down_exps.weight", 206}});
    // Q2_K_R4 follows Q2_K_S (no imatrix needed): the first eighth's ffn_down Q4_K_R4.
    check("Q2_K_R4", false,
          {{"blk.6.ffn_down_exps.weight", 212},
           {"blk.7.ffn_down_exps.weight", 210},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q8_0}});
    // IQ3_XXS_R4: attn_q* plain IQ2_S; without an imatrix ffn_down Q4_K_R4 / IQ3_K_R4.
    check("IQ3_XXS_R4", false,
          {{"output.weight", SY_TYPE_Q5_K},
           {"token_embd.weight", SY_TYPE_IQ3_K},
           {"blk.10.attn_kv_b.weight", SY_TYPE_Q8_0},
           {"blk.10.attn_q_a.weight", SY_TYPE_IQ2_S},
           {"blk.10.attn_v_b.weight", 218},
           {"blk.3.ffn_down_exps.weight", 212},
           {"blk.10.ffn_down_exps.weight", 338},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K}});
    check("IQ3_XXS_R4", true, {{"blk.10.ffn_down_exps.weight", 218}});
    check("IQ4_XS_R8", false,
          {{"blk.6.ffn_down_exps.weight", SY_TYPE_Q5_K},
           {"blk.7.ffn_down_exps.weight", 223},
           {"blk.10.attn_output.weight", SY_TYPE_Q5_K}});
    check("IQ4_XS_R8", true, {{"blk.6.ffn_down_exps.weight", 223}});
}

// The attn_v rules of the generic chain and the IQ1 branch, on a dense model (the layer is the
// counter), and a tied token_embd.
TEST(QuantPreset, IkRepackedMainlineMixesDense) {
    const auto attn_v = [](std::string_view mix, uint32_t gqa, int count) {
        MixModel model;
        model.n_layer = 8;
        model.n_gqa = gqa;
        MixCounters c;
        std::vector<std::string> got;
        const std::vector<int64_t> ne{4096, 1024};
        for (int i = 0; i < count; ++i)
            got.push_back(
                type_name(mix_tensor_type(*find_quant_preset(mix), model, c,
                                          "blk." + std::to_string(i) + ".attn_v.weight", ne)));
        return got;
    };
    using V = std::vector<std::string>;
    const std::string q4_k_r4 = type_name(212);
    // Q4_K_R4: the first four plain Q5_K, then the base whatever n_gqa (no bump).
    EXPECT_EQ(attn_v("Q4_K_R4", 8, 5), (V{"q5_K", "q5_K", "q5_K", "q5_K", q4_k_r4}));
    EXPECT_EQ(attn_v("Q3_K_R4", 4, 1), V{q4_k_r4});
    EXPECT_EQ(attn_v("Q3_K_R4", 2, 1), V{type_name(211)});
    EXPECT_EQ(attn_v("Q2_K_R4", 4, 1), V{q4_k_r4});
    EXPECT_EQ(attn_v("IQ4_NL_R4", 2, 1), V{"iq5_k"});
    EXPECT_EQ(attn_v("IQ4_NL_R4", 1, 1), V{type_name(220)});
    EXPECT_EQ(attn_v("IQ3_S_R4", 2, 1), V{type_name(339)});
    EXPECT_EQ(attn_v("IQ1_S_R4", 1, 1), V{type_name(210)});
    EXPECT_EQ(attn_v("IQ1_M_R4", 2, 1), V{type_name(338)});
    EXPECT_EQ(attn_v("IQ2_XS_R4", 1, 1), V{"q2_K"});
    EXPECT_EQ(attn_v("IQ2_M_R4", 1, 1), V{"iq3_s"});
    // Without output.weight: IQ2_XXS_R4's token_embd takes the output rule's IQ4_K_R4, which
    // is then written plain; IQ3_S_R4's IQ5_K.
    MixModel tied;
    tied.n_layer = 8;
    tied.has_output = false;
    MixCounters c;
    const std::vector<int64_t> emb{4096, 32000};
    TensorDecision d =
        decide_tensor_type("token_embd.weight", emb, *find_quant_preset("IQ2_XXS_R4"), tied, c, {});
    EXPECT_EQ(d.type, SY_TYPE_IQ4_K);
    EXPECT_EQ(d.interleave, 0);
    EXPECT_EQ(mix_tensor_type(*find_quant_preset("IQ3_S_R4"), tied, c, "token_embd.weight", emb),
              SY_TYPE_IQ5_K);
}

TEST(QuantPreset, IkRepackedMainlineNamesFileTypesAndFallback) {
    for (const auto& [name, ftype] : {std::pair{"Q4_0_R8", 202u},
                                      {"q8_0_r8", 207u},
                                      {"Q5_0_R4", 208u},
                                      {"Q2_K_R4", 210u},
                                      {"Q3_K_R4", 211u},
                                      {"q4_k_r4", 214u},
                                      {"Q5_K_R4", 216u},
                                      {"Q6_K_R4", 218u},
                                      {"IQ2_XXS_R4", 219u},
                                      {"IQ2_XS_R4", 220u},
                                      {"IQ3_XXS_R4", 223u},
                                      {"iq1_s_r4", 224u},
                                      {"IQ4_NL_R4", 225u},
                                      {"IQ3_S_R4", 226u},
                                      {"IQ2_M_R4", 229u},
                                      {"IQ4_XS_R8", 230u},
                                      {"iq1_m_r4", 231u},
                                      {"bf16_r16", 232u}}) {
        const QuantPreset* p = find_quant_preset(name);
        ASSERT_NE(p, nullptr) << name;
        EXPECT_TRUE(p->ik) << name;
        EXPECT_EQ(static_cast<uint32_t>(p->ftype), ftype) << name;
        EXPECT_FALSE(known_file_type_name(ftype).empty()) << name;
        EXPECT_NE(quants::interleaved_type(p->base_type), nullptr) << name;  // an interleaved base
        EXPECT_EQ(p->needs_imatrix, std::string_view(name).starts_with("IQ2_X") ||
                                        std::string_view(name).starts_with("iq1_"))
            << name;
    }
    EXPECT_EQ(find_quant_preset("q4_k_r4")->name, "Q4_K_R4");
    EXPECT_EQ(find_quant_preset("q4_k_r4")->base_type, 212);
    EXPECT_EQ(find_quant_preset("IQ2_M_R4")->base_type, 222);  // iq2_s_r4
    EXPECT_EQ(file_type_name(214), "Q4_K_R4");
    EXPECT_EQ(file_type_name(202), "Q4_0_R8 - 4.5 bpw");
    EXPECT_NE(quant_preset_names().find("IQ4_XS_R8"), std::string::npos);
    EXPECT_EQ(find_quant_preset("IQ2_S_R4"), nullptr);  // ik has no such file type

    // Decisions: an interleaved pick is quantized as its base and written interleaved, never
    // token_embd; ik's fallbacks for rows that are not whole 256-blocks give plain types.
    MixModel model;
    model.n_layer = 61;
    model.n_expert = 256;
    model.has_imatrix = true;
    MixCounters c;
    const auto decide = [&](std::string_view mix, const char* name, std::vector<int64_t> ne) {
        return decide_tensor_type(name, ne, *find_quant_preset(mix), model, c, {});
    };
    const std::vector<int64_t> exps{7168, 2048, 256}, emb{7168, 129280}, k_b{128, 512, 128},
        narrow{1152, 2048, 256};  // 4.5 blocks of 256
    TensorDecision d = decide("Q4_K_R4", "blk.10.ffn_up_exps.weight", exps);
    EXPECT_EQ(d.type, SY_TYPE_Q4_K);
    EXPECT_EQ(d.interleave, 212);
    d = decide("Q4_K_R4", "token_embd.weight", emb);
    EXPECT_EQ(d.type, SY_TYPE_Q4_K);
    EXPECT_EQ(d.interleave, 0);
    d = decide("Q4_K_R4", "blk.10.attn_k_b.weight", k_b);  // ik's Q8_0 (attn_k, 4+ experts)
    EXPECT_EQ(d.type, SY_TYPE_Q8_0);
    EXPECT_EQ(d.interleave, 0);
    d = decide("Q4_K_R4", "blk.10.ffn_gate_exps.weight", narrow);  // q4_K -> q5_0
    EXPECT_EQ(type_name(d.type), "q5_0");
    EXPECT_EQ(d.interleave, 0);
    d = decide("Q6_K_R4", "blk.10.ffn_gate_exps.weight", narrow);  // q6_K -> q8_0
    EXPECT_EQ(type_name(d.type), "q8_0");
    d = decide("IQ4_XS_R8", "blk.10.ffn_gate_exps.weight", narrow);  // iq4_xs -> iq4_nl
    EXPECT_EQ(type_name(d.type), "iq4_nl");
    d = decide("IQ1_S_R4", "blk.10.ffn_up_exps.weight", exps);
    EXPECT_EQ(d.type, SY_TYPE_IQ1_S);
    EXPECT_EQ(d.interleave, 219);
    d = decide("IQ1_S_R4", "blk.10.attn_output.weight", {16384, 7168});
    EXPECT_EQ(d.type, SY_TYPE_Q5_K);
    EXPECT_EQ(d.interleave, 213);
    d = decide("IQ1_M_R4", "blk.10.ffn_up_exps.weight", exps);
    EXPECT_EQ(d.type, SY_TYPE_IQ1_M_R4_ROWS);
    EXPECT_EQ(d.interleave, 229);
    // ik checks no row length for IQ1_S_R4/IQ1_M_R4; here they are read as 256-value blocks, so
    // a short row falls back as IQ1_S/IQ1_M do.
    d = decide("IQ1_M_R4", "blk.10.ffn_gate_exps.weight", narrow);
    EXPECT_EQ(type_name(d.type), "iq4_nl");
    EXPECT_EQ(d.interleave, 0);
    d = decide("BF16_R16", "output.weight", emb);
    EXPECT_EQ(d.type, SY_TYPE_BF16);
    EXPECT_EQ(d.interleave, 230);
    d = decide("BF16_R16", "token_embd.weight", emb);
    EXPECT_EQ(d.type, SY_TYPE_BF16);
    EXPECT_EQ(d.interleave, 0);
}

// A small dense file through requantize: a tensor is written interleaved where its rows make
// whole groups (8 for Q4_0_R8, 4 for the IQ1 types, 16 for BF16_R16), else in the plain base;
// IQ1_S_R4 is quantized with a scale a row, IQ1_M_R4 falls back to IQ1_M with a note, and both
// need an importance matrix entry for every tensor of theirs.
TEST(QuantPreset, IkRepackedMainlineMixesAppliedToAFile) {
    ScratchDir dir;
    const auto in = dir / "dense.gguf";
    const std::vector<std::pair<std::string, std::vector<int64_t>>> tensors = {
        {"token_embd.weight", {256, 16}},
        {"output.weight", {256, 16}},
        {"blk.0.ffn_up.weight", {256, 16}},
        {"blk.0.ffn_gate.weight", {256, 12}},
        {"blk.0.ffn_down.weight", {256, 6}}};
    {
        gguf::Writer w(in);
        w.add("general.architecture", gguf::Value::string("deepseek2"));
        w.add("deepseek2.block_count", gguf::Value::u32(1));
        for (const auto& [name, ne] : tensors) w.declare_tensor(name, SY_TYPE_F32, ne);
        w.write_header();
        for (const auto& [name, ne] : tensors) {
            std::vector<float> v(size_t(ne[0] * ne[1]));
            for (size_t i = 0; i < v.size(); ++i)
                v[i] = float(std::sin(0.37 * double(i)) + 0.25 * std::cos(0.011 * double(i)));
            w.write_tensor(std::span(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
        }
        w.finish();
    }
    Imatrix imatrix;
    imatrix.source = "test.imatrix";
    for (const auto& [name, ne] : tensors)
        if (name.starts_with("blk."))
            imatrix.entries[name] = {std::vector<float>(size_t(ne[0]), 1.0f), {1.0f}};

    const auto apply = [&](const char* mix, bool with_imatrix, RequantizeResult* result) {
        RequantizeOptions o;
        o.preset = find_quant_preset(mix);
        o.imatrix = with_imatrix ? &imatrix : nullptr;
        o.threads = 2;
        const auto out = dir / (std::string(mix) + ".gguf");
        const RequantizeResult r = requantize(in, out, o);
        if (result) *result = r;
        const gguf::Reader f = gguf::Reader::open(out);
        std::map<std::string, int32_t> types;
        for (const gguf::TensorInfo& t : f.tensors()) types[t.name] = t.type;
        types["general.file_type"] = int32_t(f.get_u64("general.file_type"));
        return types;
    };
    auto t = apply("Q4_0_R8", false, nullptr);
    EXPECT_EQ(t["general.file_type"], 202);
    EXPECT_EQ(t["token_embd.weight"], SY_TYPE_Q4_0);
    EXPECT_EQ(t["output.weight"], SY_TYPE_Q6_K);
    EXPECT_EQ(t["blk.0.ffn_up.weight"], 202);             // 16 rows: two groups of 8
    EXPECT_EQ(t["blk.0.ffn_gate.weight"], SY_TYPE_Q4_0);  // 12 rows
    EXPECT_EQ(t["blk.0.ffn_down.weight"], SY_TYPE_Q4_0);

    t = apply("IQ1_S_R4", true, nullptr);
    EXPECT_EQ(t["general.file_type"], 224);
    EXPECT_EQ(t["token_embd.weight"], SY_TYPE_Q2_K);
    EXPECT_EQ(t["output.weight"], SY_TYPE_Q5_K);
    EXPECT_EQ(t["blk.0.ffn_up.weight"], 219);
    EXPECT_EQ(t["blk.0.ffn_gate.weight"], 219);            // 12 rows: three groups of 4
    EXPECT_EQ(t["blk.0.ffn_down.weight"], SY_TYPE_IQ1_S);  // 6 rows

    RequantizeResult r;
    t = apply("IQ1_M_R4", true, &r);
    EXPECT_EQ(t["general.file_type"], 231);
    EXPECT_EQ(t["blk.0.ffn_up.weight"], 229);
    EXPECT_EQ(t["blk.0.ffn_gate.weight"], 229);
    EXPECT_EQ(t["blk.0.ffn_down.weight"], SY_TYPE_IQ1_M);
    ASSERT_EQ(r.fallbacks.size(), 1u);  // reported once, as what it is
    EXPECT_EQ(r.fallbacks[0],
              "blk.0.ffn_down.weight: iq1_m_r4 -> iq1_m (its 6 rows are not groups of 4)");
    try {
        apply("IQ1_M_R4", false, nullptr);
        FAIL() << "IQ1_M_R4 without an importance matrix";
    } catch (const Error& e) {
        const std::string s = e.what();
        EXPECT_NE(s.find("missing importance matrix for tensor blk.0.ffn_up.weight"),
                  std::string::npos)
            << s;
        EXPECT_NE(s.find("(iq1_m_r4)"), std::string::npos) << s;
    }

    t = apply("BF16_R16", false, nullptr);
    EXPECT_EQ(t["general.file_type"], 232);
    EXPECT_EQ(t["token_embd.weight"], SY_TYPE_BF16);
    EXPECT_EQ(t["output.weight"], 230);
    EXPECT_EQ(t["blk.0.ffn_up.weight"], 230);
    EXPECT_EQ(t["blk.0.ffn_gate.weight"], SY_TYPE_BF16);
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
