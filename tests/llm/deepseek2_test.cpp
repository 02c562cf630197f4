// The deepseek2 runtime (llm/deepseek2) on the CPU plugin against the naive double-precision
// reference (deepseek2_reference.hpp) on tiny synthetic models: every attention mode, both
// tensor layouts, q-LoRA on and off, softmax and sigmoid routing, group-limited routing, cache
// types and weight types; token-at-a-time decoding against the whole prompt at once; and the
// errors a user sees for broken files and options.
#include "switchyard/llm/models/deepseek2.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "deepseek2_reference.hpp"
#include "llm_test_util.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/memory_planner.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/benchmark.hpp"
#include "switchyard/llm/perplexity.hpp"
#include "switchyard/llm/session.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/quant_blocks.h"

namespace sy::llm::test {
namespace {

Plugin& cpu_plugin() {
    static std::unique_ptr<Plugin> plugin = Plugin::load(SWITCHYARD_CPU_PLUGIN);
    return *plugin;
}

// The CPU plugin without its named ops: models on it build the decomposed graphs.
Plugin& plain_plugin() {
    static std::unique_ptr<Plugin> plugin = Plugin::load(SWITCHYARD_PLAIN_PLUGIN);
    return *plugin;
}

struct ModelSpec {
    std::string name = "tiny";
    int32_t type = SY_TYPE_F32;
    KvLayout layout = KvLayout::kv_b;
    bool q_lora = true;
    uint32_t gating = 2;  // the tiny preset's V3-style routing
    uint32_t groups = 0, groups_used = 0;
    uint32_t rope = 0;  // qk_rope when not the preset's 16 (a q8_0 cache needs whole blocks)
};

std::filesystem::path make_model(const ScratchDir& dir, const ModelSpec& s) {
    Deepseek2Config cfg = deepseek2_preset("tiny");
    if (!s.q_lora) cfg.q_lora_rank = 0;
    if (s.rope > 0) cfg.qk_rope = s.rope;
    if (s.gating == 1) {
        cfg.gating_func = 1;
        cfg.expert_weights_norm = false;
        cfg.expert_weights_scale = 1.0f;
    }
    ModelPlan plan = plan_deepseek2(cfg, s.type, s.layout);
    if (s.groups > 0) {
        plan.metadata.push_back({"deepseek2.expert_group_count", gguf::Value::u32(s.groups)});
        plan.metadata.push_back(
            {"deepseek2.expert_group_used_count", gguf::Value::u32(s.groups_used)});
    }
    const auto path = dir / (s.name + ".gguf");
    write_synthetic_model(path, plan, 7, 1);
    return path;
}

std::vector<int32_t> prompt(size_t n, int32_t vocab) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = int32_t((i * 37 + 11) % size_t(vocab));
    return t;
}

// Per position: the largest |got - want| relative to the largest |reference logit| of the
// whole run.
std::vector<double> position_errors(const std::vector<float>& got,
                                    const std::vector<std::vector<double>>& want) {
    const size_t n_vocab = want[0].size();
    EXPECT_EQ(got.size(), want.size() * n_vocab);
    if (got.size() != want.size() * n_vocab) return {1e9};
    double max_ref = 0;
    for (const auto& row : want)
        for (double v : row) max_ref = std::max(max_ref, std::fabs(v));
    std::vector<double> err(want.size());
    for (size_t t = 0; t < want.size(); ++t)
        for (size_t i = 0; i < n_vocab; ++i)
            err[t] = std::max(err[t], std::fabs(double(got[t * n_vocab + i]) - want[t][i]));
    for (double& e : err) e /= max_ref;
    return err;
}

struct Case {
    int mla;
    ModelSpec model;
    int32_t cache = SY_TYPE_F32;
    size_t tokens = 9;
    double tolerance = 2e-4;
    // Share of positions that must be within the tolerance. With quantized weights the runtime
    // also rounds activations to 8-bit blocks, so an expert whose score nearly ties another's
    // can be chosen differently from the exact reference; that position (and, through the
    // cache, a few after it) then differ by a routing decision, not by rounding.
    double within = 1.0;
    bool fused = true;               // false: on the backend without named ops (decomposed MoE)
    int flash = -1;                  // --flash-attn: -1 auto (used on the CPU plugin), 0 off
    int32_t cache_v = SY_TYPE_NONE;  // -ctv when it differs from -ctk (`cache`)
    int ser_min = 0;                 // -ser Kmin,t
    float ser_t = 1.0f;
    int parts = 1;  // --expert-parallel: the experts in parts (all on the one backend here)
};

class Deepseek2Reference : public ::testing::TestWithParam<Case> {};

TEST_P(Deepseek2Reference, LogitsMatchTheNaiveForwardPass) {
    const Case& c = GetParam();
    ScratchDir dir;
    const auto path = make_model(dir, c.model);
    ContextOptions o;
    o.mla = c.mla;
    o.cache_type_k = o.cache_type_v = c.cache;
    if (c.cache_v != SY_TYPE_NONE) o.cache_type_v = c.cache_v;
    o.n_ctx = 256;
    o.flash_attn = c.flash;
    o.ser_min_experts = c.ser_min;
    o.ser_threshold = c.ser_t;
    o.expert_parallel = c.parts;
    Deepseek2Model model(gguf::Reader::open(path), o);
    const auto tokens = prompt(c.tokens, int32_t(model.hparams().n_vocab));

    const gguf::Reader ref_file = gguf::Reader::open(path);
    ReferenceDeepseek2 reference(ref_file);
    reference.ser_min = uint64_t(c.ser_min);
    reference.ser_threshold = c.ser_t;
    const auto want = reference.forward(tokens);
    if (c.ser_min > 0 && c.ser_t < 1.0f) {  // the threshold drops some experts, not all
        EXPECT_GT(reference.ser_dropped, 0u);
        EXPECT_LT(reference.ser_dropped, reference.ser_slots - reference.ser_slots / 2);
    }

    Session session(model, c.fused ? cpu_plugin() : plain_plugin());
    EXPECT_EQ(session.uses_fused_moe(), c.fused);
    EXPECT_EQ(session.uses_flash_attention(), c.fused && c.flash != 0);
    const auto got = session.eval(tokens, true);
    const std::vector<double> err = position_errors(got, want);
    size_t ok = 0;
    for (double e : err) ok += e < c.tolerance ? 1 : 0;
    EXPECT_GE(double(ok), c.within * double(err.size()))
        << ok << " of " << err.size() << " positions within " << c.tolerance << "; worst error "
        << *std::max_element(err.begin(), err.end());
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
    const Case& c = info.param;
    std::string n = "mla" + std::to_string(c.mla) + "_" + sy_dtype_info(c.model.type).name +
                    (c.model.layout == KvLayout::split ? "_split" : "_kvb") +
                    (c.model.q_lora ? "" : "_noqlora") + (c.model.gating == 1 ? "_softmax" : "") +
                    (c.model.groups ? "_grouped" : "") +
                    (c.model.rope ? "_rope" + std::to_string(c.model.rope) : "") + "_cache" +
                    sy_dtype_info(c.cache).name +
                    (c.cache_v != SY_TYPE_NONE ? std::string("_v") + sy_dtype_info(c.cache_v).name
                                               : std::string()) +
                    "_" + std::to_string(c.tokens) + "tok" + (c.fused ? "" : "_decomposed") +
                    (c.flash == 0 ? "_nofa" : "") +
                    (c.ser_min > 0 ? "_ser" + std::to_string(c.ser_min) + "_" +
                                         std::to_string(int(c.ser_t * 100)) + "pct"
                                   : "") +
                    (c.parts > 1 ? "_parts" + std::to_string(c.parts) : "");
    return n;
}

ModelSpec spec(int32_t type, KvLayout layout = KvLayout::kv_b) {
    ModelSpec s;
    s.type = type;
    s.layout = layout;
    return s;
}

INSTANTIATE_TEST_SUITE_P(Modes, Deepseek2Reference,
                         ::testing::Values(Case{0, spec(SY_TYPE_F32)}, Case{1, spec(SY_TYPE_F32)},
                                           Case{2, spec(SY_TYPE_F32)}, Case{3, spec(SY_TYPE_F32)},
                                           // mla 3 decompresses for ubatches of 128 tokens or more
                                           Case{3, spec(SY_TYPE_F32), SY_TYPE_F32, 130},
                                           Case{0, spec(SY_TYPE_F32, KvLayout::split)},
                                           Case{2, spec(SY_TYPE_F32, KvLayout::split)},
                                           Case{3, spec(SY_TYPE_F32, KvLayout::split), SY_TYPE_F32,
                                                130}),
                         case_name);

ModelSpec variant(bool q_lora, uint32_t gating, uint32_t groups = 0, uint32_t used = 0) {
    ModelSpec s;
    s.q_lora = q_lora;
    s.gating = gating;
    s.groups = groups;
    s.groups_used = used;
    return s;
}

INSTANTIATE_TEST_SUITE_P(Variants, Deepseek2Reference,
                         ::testing::Values(Case{2, variant(false, 2)}, Case{0, variant(false, 1)},
                                           Case{3, variant(true, 1)},
                                           Case{2, variant(true, 2, 4, 2)},
                                           Case{0, variant(true, 1, 2, 1)}),
                         case_name);

// Cache and weight types: the runtime rounds (cache to 16 bits, activations to Q8 blocks for
// quantized weights) where the reference does not, so the tolerance follows the precision.
INSTANTIATE_TEST_SUITE_P(
    Types, Deepseek2Reference,
    ::testing::Values(Case{0, spec(SY_TYPE_F32), SY_TYPE_F16, 9, 5e-3},
                      Case{2, spec(SY_TYPE_F32), SY_TYPE_BF16, 9, 2e-2},
                      Case{1, spec(SY_TYPE_F16), SY_TYPE_F16, 9, 5e-3},
                      Case{3, spec(SY_TYPE_BF16), SY_TYPE_F16, 9, 5e-3},
                      Case{2, spec(SY_TYPE_Q8_0), SY_TYPE_F16, 9, 2e-2, 0.85},
                      Case{0, spec(SY_TYPE_Q4_K, KvLayout::split), SY_TYPE_F16, 9, 5e-2, 0.85},
                      Case{3, spec(SY_TYPE_Q4_0), SY_TYPE_F16, 130, 5e-2, 0.85},
                      Case{0, spec(SY_TYPE_Q4_0), SY_TYPE_F16, 130, 5e-2, 0.85},
                      Case{3, spec(SY_TYPE_Q8_0), SY_TYPE_F16, 130, 2e-2, 0.85},
                      Case{0, spec(SY_TYPE_F32), SY_TYPE_F16, 130, 5e-3},
                      Case{3, spec(SY_TYPE_IQ2_XXS), SY_TYPE_F16, 9, 5e-2, 0.85},
                      Case{2, spec(SY_TYPE_IQ1_M), SY_TYPE_F16, 9, 5e-2, 0.85},
                      Case{0, spec(SY_TYPE_IQ3_S), SY_TYPE_F16, 130, 5e-2, 0.85}),
    case_name);

// Attention without attn.flash / attn.mla (-fa off): the K.Q scores materialized, softmax, V.
Case no_flash(Case c) {
    c.flash = 0;
    return c;
}

// A q8_0 KV cache (-ctk / -ctv q8_0) on the tiny model with 32 rope dimensions (whole blocks):
// quantized on the way in (CPY f32 -> q8_0), read in place by the flash kernel, as mul_mat
// weights without it, decoded for mla 3's decompression and mla 2's transposed latents.
// Softmax routing (V2-style): the cache's rounding (~0.4% per value, logits within ~1%) flips
// near-tied sigmoid expert choices of the tiny model at some positions, which then differ by
// a routing decision; with softmax routing that happens at 1-3 positions of 130.
Case q8_cache(int mla, size_t tokens, int32_t cache_v = SY_TYPE_Q8_0, int flash = -1) {
    ModelSpec s = spec(SY_TYPE_F32);
    s.rope = 32;
    s.gating = 1;
    Case c{mla, s, SY_TYPE_Q8_0, tokens, 2e-2, 0.95};
    c.cache_v = cache_v;
    c.flash = flash;
    return c;
}

INSTANTIATE_TEST_SUITE_P(
    CacheQ8, Deepseek2Reference,
    ::testing::Values(q8_cache(0, 9), q8_cache(0, 130), q8_cache(1, 9, SY_TYPE_F16), q8_cache(2, 9),
                      q8_cache(3, 9), q8_cache(3, 130), q8_cache(0, 9, SY_TYPE_F16, 0),
                      q8_cache(1, 9, SY_TYPE_F16, 0), q8_cache(2, 9, SY_TYPE_Q8_0, 0),
                      q8_cache(3, 130, SY_TYPE_Q8_0, 0)),
    case_name);

// ik_llama.cpp's q8_KV K cache (-ctk q8_KV, --mla 1-3): one f32 scale per latent row, so each
// row [k_pe | c] is quantized whole (CONCAT, then CPY f32 -> q8_KV), read whole by attn.mla
// (V from element R of the same rows) and, without it, by the scores' mul_mat against
// [q_rope | q_lat]; decoded whole to F32 for mla 3's decompression and the transposed latents.
Case q8kv_cache(int mla, size_t tokens, int flash = -1) {
    Case c = q8_cache(mla, tokens, SY_TYPE_F16, flash);
    c.cache = SY_TYPE_Q8_KV;
    return c;
}

INSTANTIATE_TEST_SUITE_P(CacheQ8KV, Deepseek2Reference,
                         ::testing::Values(q8kv_cache(1, 9), q8kv_cache(2, 9), q8kv_cache(3, 9),
                                           q8kv_cache(3, 130), q8kv_cache(1, 9, 0),
                                           q8kv_cache(2, 9, 0), q8kv_cache(3, 130, 0)),
                         case_name);

INSTANTIATE_TEST_SUITE_P(
    NoFlash, Deepseek2Reference,
    ::testing::Values(no_flash(Case{0, spec(SY_TYPE_F32)}), no_flash(Case{1, spec(SY_TYPE_F32)}),
                      no_flash(Case{2, spec(SY_TYPE_F32)}),
                      no_flash(Case{3, spec(SY_TYPE_F32), SY_TYPE_F32, 130}),
                      no_flash(Case{0, spec(SY_TYPE_F32, KvLayout::split)}),
                      no_flash(Case{0, spec(SY_TYPE_F32), SY_TYPE_F16, 130, 5e-3}),
                      no_flash(Case{2, spec(SY_TYPE_Q8_0), SY_TYPE_F16, 9, 2e-2, 0.85})),
    case_name);

// The same forward pass on a backend that provides no named ops: MoE as MUL_MAT_ID + SILU + MUL.
Case decomposed(Case c) {
    c.fused = false;
    return c;
}

INSTANTIATE_TEST_SUITE_P(
    NoNamedOps, Deepseek2Reference,
    ::testing::Values(decomposed(Case{0, spec(SY_TYPE_F32)}),
                      decomposed(Case{3, spec(SY_TYPE_F32), SY_TYPE_F32, 130}),
                      decomposed(Case{2, variant(true, 2, 4, 2)}),
                      decomposed(Case{2, spec(SY_TYPE_Q8_0), SY_TYPE_F16, 9, 2e-2, 0.85}),
                      decomposed(Case{3, spec(SY_TYPE_Q4_0), SY_TYPE_F16, 130, 5e-2, 0.85})),
    case_name);

// Smart expert reduction (-ser Kmin,t): after the Kmin best, an expert is used only when its
// selection score is above t times the best one's; the others are dropped (DROP_IDS) and not
// computed, with the remaining weights normalized over the kept experts. t >= 1 keeps exactly
// Kmin. The tiny model routes 2 of 8 experts.
Case ser(Case c, int kmin, float t) {
    c.ser_min = kmin;
    c.ser_t = t;
    return c;
}

INSTANTIATE_TEST_SUITE_P(Ser, Deepseek2Reference,
                         ::testing::Values(ser(Case{3, spec(SY_TYPE_F32)}, 1, 0.9f),
                                           ser(Case{3, spec(SY_TYPE_F32), SY_TYPE_F32, 130}, 1,
                                               0.9f),
                                           ser(Case{0, variant(true, 1)}, 1, 0.3f),
                                           ser(Case{2, variant(true, 2, 4, 2)}, 1, 0.9f),
                                           ser(decomposed(Case{2, spec(SY_TYPE_F32)}), 1, 0.9f),
                                           ser(decomposed(Case{0, variant(true, 1)}), 1, 0.3f),
                                           ser(Case{2, spec(SY_TYPE_F32)}, 1, 1.0f)),
                         case_name);

// --expert-parallel N: each layer's 8 experts in N parts (their own weights, ids in the part's
// numbering, the tokens routed elsewhere zeroed), the parts' sums added: the same forward pass.
// On one backend here; tests/mpi puts the parts on other ranks.
Case parts(Case c, int n) {
    c.parts = n;
    return c;
}

INSTANTIATE_TEST_SUITE_P(
    ExpertParallel, Deepseek2Reference,
    ::testing::Values(parts(Case{3, spec(SY_TYPE_F32)}, 2),
                      parts(Case{3, spec(SY_TYPE_F32), SY_TYPE_F32, 130}, 3),
                      parts(Case{2, variant(true, 2, 4, 2)}, 8),
                      parts(decomposed(Case{0, spec(SY_TYPE_F32)}), 3),
                      parts(ser(Case{0, variant(true, 1)}, 1, 0.3f), 2),
                      parts(ser(decomposed(Case{2, spec(SY_TYPE_F32)}), 1, 0.9f), 3),
                      parts(Case{3, spec(SY_TYPE_Q4_0), SY_TYPE_F16, 130, 5e-2, 0.85}, 3)),
    case_name);

// The tiny preset with the mini preset's routing: 64 experts, 6 per token, softmax gating.
std::filesystem::path experts64_model(const ScratchDir& dir, int32_t type) {
    Deepseek2Config cfg = deepseek2_preset("tiny");
    cfg.n_expert = 64;
    cfg.n_expert_used = 6;
    cfg.gating_func = 1;
    cfg.expert_weights_norm = false;
    cfg.expert_weights_scale = 1.0f;
    const auto path = dir / ("experts64-" + std::string(sy_dtype_info(type).name) + ".gguf");
    write_synthetic_model(path, plan_deepseek2(cfg, type, KvLayout::kv_b), 7, 1);
    return path;
}

// Against the whole layer's experts in one part, in one process: the same logits up to the
// order of the sum (64 experts, 6 per token, as the mini preset; softmax gating), with the fused
// op and without. F32 weights: with block-quantized weights, the partial sums' other order
// moves a few activations across a rounding step of their 8-bit quantization in the next layer,
// which then differs by whole steps (mini Q8_0: 0.6 % of the largest logit, as much as any other
// change in the order of a sum).
TEST(Deepseek2Runtime, ExpertPartsGiveTheLogitsOfOnePart) {
    ScratchDir dir;
    const auto path = experts64_model(dir, SY_TYPE_F32);
    for (const bool fused : {true, false}) {
        std::vector<float> want;
        for (int n : {1, 2, 3}) {
            SCOPED_TRACE(std::to_string(n) + (fused ? " parts, fused" : " parts, decomposed"));
            ContextOptions o;
            o.n_ctx = 256;
            o.expert_parallel = n;
            o.fused_moe = fused ? -1 : 0;
            Deepseek2Model model(gguf::Reader::open(path), o);
            Session session(model, cpu_plugin());
            const auto got = session.eval(prompt(160, int32_t(model.hparams().n_vocab)), true);
            if (n == 1) {
                want = got;
                continue;
            }
            ASSERT_EQ(got.size(), want.size());
            float scale = 0, worst = 0;
            for (size_t i = 0; i < got.size(); ++i) {
                scale = std::max(scale, std::fabs(want[i]));
                worst = std::max(worst, std::fabs(got[i] - want[i]));
            }
            EXPECT_LE(worst, 1e-4f * scale) << "largest difference " << worst << " of " << scale;
        }
    }
}

// --expert-parallel-exact: the parts' weighted outputs per slot, summed over the slots as one
// process does: the same logits, bit for bit, with block-quantized weights too.
TEST(Deepseek2Runtime, ExactExpertPartsGiveOnePartsLogitsBitForBit) {
    ScratchDir dir;
    const auto path = experts64_model(dir, SY_TYPE_Q8_0);
    std::vector<float> want;
    for (int n : {1, 2, 3}) {
        SCOPED_TRACE(n);
        ContextOptions o;
        o.n_ctx = 256;
        o.expert_parallel = n;
        o.expert_parallel_exact = n > 1;
        Deepseek2Model model(gguf::Reader::open(path), o);
        Session session(model, cpu_plugin());
        const auto got = session.eval(prompt(160, int32_t(model.hparams().n_vocab)), true);
        if (n == 1)
            want = got;
        else
            EXPECT_TRUE(got == want) << "other logits";
    }
}

TEST(Deepseek2Runtime, ExpertPartsAreBetweenOneAndTheExpertCount) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    for (int n : {0, -1, 9}) {
        ContextOptions o;
        o.expert_parallel = n;
        try {
            Deepseek2Model model(gguf::Reader::open(path), o);
            ADD_FAILURE() << "--expert-parallel " << n << " was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("--expert-parallel " + std::to_string(n) +
                                                 ": expected 1 to the model's 8 routed experts"),
                      std::string::npos)
                << e.what();
        }
    }
}

// Decoding one token at a time gives the logits of the whole prompt at once, in every mode.
TEST(Deepseek2Runtime, IncrementalDecodingMatchesTheWholePrompt) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    for (int mla : {0, 1, 2, 3})
        for (int flash : {0, 1}) {
            ContextOptions o;
            o.mla = mla;
            o.flash_attn = flash;
            o.cache_type_k = o.cache_type_v = SY_TYPE_F32;
            o.n_ctx = 64;
            Deepseek2Model model(gguf::Reader::open(path), o);
            const auto tokens = prompt(7, 512);
            Session whole(model, cpu_plugin());
            const auto all = whole.eval(tokens, true);
            Session step(model, cpu_plugin());
            std::vector<float> one_by_one;
            for (int32_t t : tokens) {
                const auto l = step.eval(std::span<const int32_t>(&t, 1));
                one_by_one.insert(one_by_one.end(), l.begin(), l.end());
            }
            ASSERT_EQ(all.size(), one_by_one.size());
            double max_diff = 0, max_ref = 0;
            for (size_t i = 0; i < all.size(); ++i) {
                max_diff = std::max(max_diff, double(std::fabs(all[i] - one_by_one[i])));
                max_ref = std::max(max_ref, double(std::fabs(all[i])));
            }
            EXPECT_LT(max_diff / max_ref, 1e-4) << "mla " << mla << " flash " << flash;
            EXPECT_EQ(step.n_past(), 7);
        }
}

// Decode steps run a graph kept from the step before, moved one token on, reading its keys
// rounded up to 256 (the ones past the causal window masked): one graph per rounded length,
// the logits of the whole prompt evaluated at once (unrounded), past the rounding's first
// boundary and after a rewind (the kept graph moved back: the same logits bit for bit).
TEST(Deepseek2Runtime, KeptDecodeGraphsMatchTheWholePrompt) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    const size_t n = 270;
    for (int mla : {0, 1, 3})
        for (int flash : {0, 1}) {
            ContextOptions o;
            o.mla = mla;
            o.flash_attn = flash;
            o.cache_type_k = o.cache_type_v = SY_TYPE_F32;
            o.n_ctx = 600;
            Deepseek2Model model(gguf::Reader::open(path), o);
            const auto tokens = prompt(n, 512);
            Session whole(model, cpu_plugin());
            const auto all = whole.eval(tokens, true);
            EXPECT_EQ(whole.stats().graphs_built, 1);
            Session step(model, cpu_plugin());
            std::vector<float> one_by_one;
            for (int32_t t : tokens) {
                const auto l = step.eval(std::span<const int32_t>(&t, 1));
                one_by_one.insert(one_by_one.end(), l.begin(), l.end());
            }
            const std::string mode =
                "mla " + std::to_string(mla) + " flash " + std::to_string(flash);
            // Keys 256, then 512 from the step at n_past 256.
            EXPECT_EQ(step.stats().graphs, int64_t(n)) << mode;
            EXPECT_EQ(step.stats().graphs_built, 2) << mode;
            ASSERT_EQ(all.size(), one_by_one.size());
            double max_diff = 0, max_ref = 0;
            for (size_t i = 0; i < all.size(); ++i) {
                max_diff = std::max(max_diff, double(std::fabs(all[i] - one_by_one[i])));
                max_ref = std::max(max_ref, double(std::fabs(all[i])));
            }
            EXPECT_LT(max_diff / max_ref, 1e-4) << mode;
            // Back to 260 (the kept graph of keys 512 moves back 10 tokens), the same tokens again.
            step.rewind(260);
            const size_t V = all.size() / n;
            for (size_t i = 260; i < n; ++i) {
                const auto l = step.eval(std::span<const int32_t>(&tokens[i], 1));
                ASSERT_EQ(l.size(), V);
                for (size_t j = 0; j < V; ++j)
                    ASSERT_EQ(l[j], one_by_one[i * V + j]) << mode << " token " << i;
            }
            EXPECT_EQ(step.stats().graphs_built, 2) << mode;
        }
}

// A kept graph moves only to parts it was built for: the same sequences and token counts, keys
// rounded to the same length, inside each sequence's cells; anything else is an error that names
// the part, and leaves the graph where it was.
TEST(Deepseek2Runtime, KeptGraphsMoveOnlyToPartsTheyFit) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    ContextOptions o;
    o.n_ctx = 600;
    Deepseek2Model model(gguf::Reader::open(path), o);
    Session s(model, cpu_plugin());
    s.set_sequences(2);
    const int64_t cells = 300;
    const std::vector<UbatchPart> parts = {{0, 1, 10}, {1, 1, 20}};
    UbatchGraph ug = s.build(parts, cells, false, true);
    ASSERT_EQ(ug.parts.size(), 2u);
    EXPECT_FALSE(ug.moves.views.empty());
    EXPECT_FALSE(ug.moves.params.empty());
    const auto moved = [&](std::vector<UbatchPart> to) -> std::string {
        try {
            move_to(ug, to, cells);
        } catch (const Error& e) {
            return e.what();
        }
        return "";
    };
    const auto contains = [](const std::string& text, const char* part) {
        return text.find(part) != std::string::npos;
    };
    EXPECT_EQ(moved({{0, 1, 200}, {1, 1, 0}}), "");  // keys 256 for both still
    EXPECT_EQ(ug.parts[0].n_past, 200);
    EXPECT_TRUE(contains(moved({{0, 1, 256}, {1, 1, 0}}), "does not fit the graph"));
    EXPECT_TRUE(contains(moved({{0, 1, 10}, {1, 1, 300}}), "does not fit the 300 cells"));
    EXPECT_TRUE(contains(moved({{0, 2, 10}, {1, 1, 0}}), "part 0"));
    EXPECT_TRUE(contains(moved({{0, 1, 10}, {0, 1, 0}}), "sequence 0 is in two parts"));
    EXPECT_TRUE(contains(moved({{0, 1, 10}}), "1 parts for a graph built for 2"));
    EXPECT_EQ(ug.parts[0].n_past, 200);
    EXPECT_EQ(ug.parts[1].n_past, 0);
}

// Sequences side by side in one graph (eval_sequences, perplexity's chunks per pass) give each
// sequence's logits as it alone gives them, in every mode, with and without flash attention,
// over ubatches that hold all or part of each sequence (mla 3 with 130 tokens per sequence
// decompresses the latents); the last-token logits of a prefix too. Mixing counts in one cache
// and overflowing a sequence's share of the context are errors.
TEST(Deepseek2Runtime, SequencesSideBySideMatchEachAlone) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    const int64_t S = 3;
    struct Run {
        int mla, flash;
        int64_t prefix, rest, ubatch;
    };
    for (const Run& r : {Run{0, 0, 6, 5, 512}, Run{0, 1, 6, 5, 8}, Run{1, 0, 6, 5, 512},
                         Run{1, 1, 6, 5, 7}, Run{2, 0, 6, 5, 9}, Run{2, 1, 6, 5, 512},
                         Run{3, 1, 6, 5, 512}, Run{3, 1, 10, 130, 512}, Run{3, 0, 10, 130, 400}}) {
        ContextOptions o;
        o.mla = r.mla;
        o.flash_attn = r.flash;
        o.cache_type_k = o.cache_type_v = SY_TYPE_F32;
        o.n_ctx = S * (r.prefix + r.rest);
        o.n_ubatch = r.ubatch;
        Deepseek2Model model(gguf::Reader::open(path), o);
        const std::string label = "mla " + std::to_string(r.mla) + " flash " +
                                  std::to_string(r.flash) + " ubatch " + std::to_string(r.ubatch);
        // Sequence s: tokens offset by 100 s, so that every sequence differs.
        std::vector<std::vector<int32_t>> seqs;
        std::vector<int32_t> prefixes, rests;
        for (int64_t s = 0; s < S; ++s) {
            std::vector<int32_t> t = prompt(size_t(r.prefix + r.rest), 512);
            for (int32_t& x : t) x = (x + int32_t(100 * s)) % 512;
            prefixes.insert(prefixes.end(), t.begin(), t.begin() + r.prefix);
            rests.insert(rests.end(), t.begin() + r.prefix, t.end());
            seqs.push_back(std::move(t));
        }
        Session together(model, cpu_plugin());
        const std::vector<float> last = together.eval_sequences(prefixes, S);
        const std::vector<float> all = together.eval_sequences(rests, S, true);
        EXPECT_EQ(together.n_past(), r.prefix + r.rest) << label;
        const size_t V = 512;
        ASSERT_EQ(last.size(), size_t(S) * V) << label;
        ASSERT_EQ(all.size(), size_t(S * r.rest) * V) << label;
        double max_diff = 0, max_ref = 0;
        const auto compare = [&](const float* got, const std::vector<float>& want) {
            for (size_t i = 0; i < want.size(); ++i) {
                max_diff = std::max(max_diff, double(std::fabs(got[i] - want[i])));
                max_ref = std::max(max_ref, double(std::fabs(want[i])));
            }
        };
        for (int64_t s = 0; s < S; ++s) {
            Session alone(model, cpu_plugin());
            const std::span<const int32_t> t(seqs[size_t(s)]);
            compare(last.data() + s * V, alone.eval(t.first(size_t(r.prefix))));
            compare(all.data() + size_t(s * r.rest) * V,
                    alone.eval(t.subspan(size_t(r.prefix)), true));
        }
        EXPECT_LT(max_diff / max_ref, 1e-5) << label << ": " << max_diff << " of " << max_ref;
        // 3 sequences in the cache: 2 now, or more than a third of the context each, refused.
        EXPECT_THROW(together.eval_sequences(std::vector<int32_t>(2, 1), 2), Error) << label;
        EXPECT_THROW(together.eval_sequences(std::vector<int32_t>(4, 1), 3), Error) << label;
        EXPECT_THROW(together.eval_sequences(std::vector<int32_t>(3, 1), 3), Error) << label;
        EXPECT_EQ(together.n_past(), r.prefix + r.rest) << label;
    }
}

namespace {

// Largest difference between two logit vectors, relative to the largest logit of `want`.
double relative_diff(std::span<const float> got, std::span<const float> want) {
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
        max_diff = std::max(max_diff, double(std::fabs(got[i] - want[i])));
        max_ref = std::max(max_ref, double(std::fabs(want[i])));
    }
    return max_ref > 0 ? max_diff / max_ref : max_diff;
}

struct SequenceRun {
    int mla, flash;
    int32_t cache_type;

    ContextOptions options(int64_t n_ctx) const {
        ContextOptions o;
        o.mla = mla;
        o.flash_attn = flash;
        o.cache_type_k = o.cache_type_v = cache_type;
        o.n_ctx = n_ctx;
        return o;
    }
    std::string label() const {
        return "mla " + std::to_string(mla) + " flash " + std::to_string(flash) + " " +
               sy_dtype_info(cache_type).name;
    }
};

// Every attention mode, the two V layouts of mla 0 (rows with flash, transposed without), and
// F16 caches.
constexpr SequenceRun kSequenceRuns[] = {
    {0, 0, SY_TYPE_F32}, {0, 1, SY_TYPE_F32}, {1, 0, SY_TYPE_F32},
    {1, 1, SY_TYPE_F32}, {2, 0, SY_TYPE_F32}, {2, 1, SY_TYPE_F32},
    {3, 1, SY_TYPE_F32}, {3, 0, SY_TYPE_F16}, {1, 0, SY_TYPE_F16}};

}  // namespace

// Sequences of different lengths run together (decode(): one batch, each sequence at its own
// position) give each sequence's logits as it alone gives them: prompts of 5, 9 and 140 tokens
// (mla 3 decompresses the long one's latents) in one call, then decode steps of one token per
// sequence in one batch, then a new prompt beside two decoding sequences. The batch of mixed
// lengths gathers each part's last row (output_rows).
TEST(Deepseek2Runtime, SequencesOfDifferentLengthsDecodeTogether) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    const size_t V = 512;
    for (const SequenceRun& r : kSequenceRuns) {
        ContextOptions o = r.options(4 * 160);
        o.n_ubatch = 96;  // the long prompt takes several ubatches beside the others
        Deepseek2Model model(gguf::Reader::open(path), o);
        const std::string label = r.label();
        const size_t lengths[] = {5, 9, 140, 7};
        std::vector<std::vector<int32_t>> seqs;
        for (size_t s = 0; s < 4; ++s) {
            std::vector<int32_t> t = prompt(lengths[s] + 3, 512);
            for (int32_t& x : t) x = (x + int32_t(37 * s)) % 512;
            seqs.push_back(std::move(t));
        }
        Session together(model, cpu_plugin());
        together.set_sequences(4);
        EXPECT_EQ(together.sequence_capacity(), 160) << label;
        // Each sequence alone, fed the same pieces in the same order.
        std::vector<std::unique_ptr<Session>> alone;
        for (size_t s = 0; s < 4; ++s)
            alone.push_back(std::make_unique<Session>(model, cpu_plugin()));
        const auto piece = [&](size_t s, size_t from, size_t n) {
            return std::span<const int32_t>(seqs[s]).subspan(from, n);
        };
        double worst = 0;
        // Prompts of sequences 0-2, all logits; then their last.
        {
            std::vector<Session::SequenceTokens> batch;
            for (size_t s = 0; s < 3; ++s) batch.push_back({int64_t(s), piece(s, 0, lengths[s])});
            const std::vector<float> got = together.decode(batch, true);
            size_t at = 0;
            for (size_t s = 0; s < 3; ++s) {
                const std::vector<float> want = alone[s]->eval(piece(s, 0, lengths[s]), true);
                ASSERT_LE(at + want.size(), got.size()) << label;
                worst =
                    std::max(worst, relative_diff(std::span(got).subspan(at, want.size()), want));
                at += want.size();
            }
            EXPECT_EQ(at, got.size()) << label;
        }
        // Three decode steps of one token each, sequences 0-2 together.
        for (size_t step = 0; step < 3; ++step) {
            std::vector<Session::SequenceTokens> batch;
            for (size_t s = 0; s < 3; ++s)
                batch.push_back({int64_t(s), piece(s, lengths[s] + step, 1)});
            const std::vector<float> got = together.decode(batch);
            ASSERT_EQ(got.size(), 3 * V) << label;
            for (size_t s = 0; s < 3; ++s)
                worst =
                    std::max(worst, relative_diff(std::span(got).subspan(s * V, V),
                                                  alone[s]->eval(piece(s, lengths[s] + step, 1))));
        }
        // Sequence 3's prompt beside sequences 0 and 2 decoding (given in that order).
        together.truncate(0, int64_t(lengths[0]) + 2);
        alone[0]->rewind(int64_t(lengths[0]) + 2);
        const std::vector<Session::SequenceTokens> mixed = {{0, piece(0, lengths[0] + 2, 1)},
                                                            {3, piece(3, 0, lengths[3])},
                                                            {2, piece(2, lengths[2], 2)}};
        const std::vector<float> got = together.decode(mixed);
        ASSERT_EQ(got.size(), 3 * V) << label;
        worst = std::max(worst, relative_diff(std::span(got).subspan(0, V),
                                              alone[0]->eval(piece(0, lengths[0] + 2, 1))));
        worst = std::max(worst, relative_diff(std::span(got).subspan(V, V),
                                              alone[3]->eval(piece(3, 0, lengths[3]))));
        // Sequence 2 continues after its three decoded tokens with two more.
        EXPECT_EQ(together.sequence_length(2), int64_t(lengths[2]) + 5) << label;
        worst = std::max(worst, relative_diff(std::span(got).subspan(2 * V, V),
                                              alone[2]->eval(piece(2, lengths[2], 2))));
        EXPECT_LT(worst, r.cache_type == SY_TYPE_F32 ? 1e-5 : 1e-3) << label;
        EXPECT_EQ(together.sequence_length(0), int64_t(lengths[0]) + 3) << label;
        EXPECT_EQ(together.sequence_length(1), int64_t(lengths[1]) + 3) << label;
        EXPECT_EQ(together.sequence_length(3), int64_t(lengths[3])) << label;
    }
}

// A prefix copied from one sequence to another continues exactly as the sequence it came from
// would: the same logits, bit for bit, as a session that evaluated the same ubatches and was
// rewound to the prefix; and within rounding of a fresh evaluation of prefix + continuation.
// Part of a prefix may be copied, over a sequence that held other tokens.
TEST(Deepseek2Runtime, CopiedPrefixContinuesExactly) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    for (const SequenceRun& r : kSequenceRuns) {
        Deepseek2Model model(gguf::Reader::open(path), r.options(3 * 48));
        const std::string label = r.label();
        const std::vector<int32_t> text = prompt(30, 512);
        const std::span<const int32_t> shared = std::span(text).first(20), kept = shared.first(14),
                                       rest = std::span(text).subspan(20);
        Session s(model, cpu_plugin());
        s.set_sequences(3);
        const std::vector<int32_t> other = prompt(9, 300);
        s.decode(std::vector<Session::SequenceTokens>{{0, shared}, {2, other}});
        s.copy_prefix(0, 1, 20);  // all of it
        s.copy_prefix(0, 2, 14);  // part of it, over sequence 2's own tokens
        EXPECT_EQ(s.sequence_length(1), 20) << label;
        EXPECT_EQ(s.sequence_length(2), 14) << label;
        const std::vector<float> got1 =
            s.decode(std::vector<Session::SequenceTokens>{{1, rest}}, true);
        const std::vector<float> got2 =
            s.decode(std::vector<Session::SequenceTokens>{{2, rest}}, true);

        Session same(model, cpu_plugin());
        same.eval(shared);
        EXPECT_EQ(same.eval(rest, true), got1) << label;
        same.rewind(14);
        EXPECT_EQ(same.eval(rest, true), got2) << label;

        Session fresh(model, cpu_plugin());
        std::vector<int32_t> whole(kept.begin(), kept.end());
        whole.insert(whole.end(), rest.begin(), rest.end());
        const std::vector<float> all = fresh.eval(whole, true);
        const size_t V = 512;
        EXPECT_LT(relative_diff(got2, std::span(all).subspan(14 * V)),
                  r.cache_type == SY_TYPE_F32 ? 1e-5 : 1e-3)
            << label;
        // Sequence 0 was not touched by the copies.
        EXPECT_EQ(s.sequence_length(0), 20) << label;
    }
}

// Bad batches are refused before anything runs: every sequence keeps its length.
TEST(Deepseek2Runtime, BadBatchesLeaveEverySequenceUnchanged) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    ContextOptions o;
    o.n_ctx = 2 * 16;
    Deepseek2Model model(gguf::Reader::open(path), o);
    Session s(model, cpu_plugin());
    s.set_sequences(2);
    const std::vector<int32_t> four = prompt(4, 512), bad = {1, 512}, many = prompt(13, 512);
    s.decode(std::vector<Session::SequenceTokens>{{0, four}, {1, four}});
    using B = std::vector<Session::SequenceTokens>;
    const B cases[] = {
        {{0, four}, {0, four}},  // a sequence twice
        {{0, four}, {2, four}},  // no sequence 2
        {{0, four}, {1, {}}},    // no tokens
        {{0, four}, {1, bad}},   // outside the vocabulary
        {{1, four}, {0, many}},  // past sequence 0's 16 cells
        {},                      // nothing
    };
    for (const B& b : cases) {
        EXPECT_THROW(s.decode(b), Error);
        EXPECT_EQ(s.sequence_length(0), 4);
        EXPECT_EQ(s.sequence_length(1), 4);
    }
    EXPECT_THROW(s.set_sequences(3), Error);  // not empty
    EXPECT_THROW(s.copy_prefix(0, 1, 5), Error);
    EXPECT_THROW(s.copy_prefix(0, 2, 1), Error);
    EXPECT_THROW(s.truncate(1, 5), Error);
    EXPECT_THROW(s.truncate(-1, 0), Error);
    EXPECT_THROW(s.sequence_length(2), Error);
    s.reset();
    EXPECT_THROW(s.set_sequences(0), Error);
    EXPECT_THROW(s.set_sequences(33), Error);
    s.set_sequences(4);
    EXPECT_EQ(s.sequence_capacity(), 8);
}

// Perplexity (llama.cpp's method) agrees across the attention modes, with F32 and Q8_0 weights
// and an F16 cache. With F32 weights the modes differ only by rounding order (0.1%). With Q8_0,
// modes 1 and 2 use attn_k_b derived in Q8_0 from the Q8_0 attn_kv_b (a second rounding), and
// this tiny random model's near-uniform predictions (perplexity ~850 over two 128-token chunks)
// magnify it: 1.4% here, against 0.1% on the mini preset (docs/commands.md: perplexity figures).
TEST(Deepseek2Runtime, PerplexityAgreesAcrossAttentionModes) {
    ScratchDir dir;
    for (int32_t type : {SY_TYPE_F32, SY_TYPE_Q8_0}) {
        const auto path = make_model(dir, spec(type));
        const auto text = prompt(264, 512);
        std::vector<double> ppl;
        for (int mla : {0, 1, 2, 3}) {
            ContextOptions o;
            o.mla = mla;
            o.n_ctx = 128;
            o.n_ubatch = 64;  // mla 3 decompresses ubatches this large
            Deepseek2Model model(gguf::Reader::open(path), o);
            Session session(model, cpu_plugin());
            const PerplexityModel pm = perplexity_model(session, 512);
            const PerplexityResult r = perplexity(pm, text, 128, 0, 1);
            EXPECT_EQ(r.chunks, 2);
            EXPECT_EQ(r.scored_tokens, 2 * 63);
            EXPECT_GT(r.ppl, 1.0);
            ppl.push_back(r.ppl);
        }
        const double tolerance = type == SY_TYPE_F32 ? 0.001 : 0.03;
        for (int mla = 1; mla < 4; ++mla)
            EXPECT_NEAR(ppl[size_t(mla)] / ppl[0], 1.0, tolerance)
                << "mla " << mla << " type " << type << ": " << ppl[size_t(mla)] << " vs "
                << ppl[0];
    }
}

// The whole model on a device with its own memory (cpu-offhost: the CPU's kernels behind a
// device that refuses tensors outside its buffers) gives the CPU's logits bit for bit, over a
// prompt and the decode steps after it: the weights and the KV cache live in device buffers,
// written in place, and a decode step uploads only its inputs (not the weights, not the cache).
TEST(Deepseek2Runtime, WholeModelOnADeviceWithItsOwnMemory) {
    static std::unique_ptr<Plugin> offhost = Plugin::load(SWITCHYARD_OFFHOST_PLUGIN);
    ASSERT_EQ(offhost->device_props(0).host_memory, 0);
    ScratchDir dir;
    struct Run {
        int mla;
        KvLayout layout;
        int32_t type, cache;
        size_t prompt;
        int64_t ubatch = 512;
    };
    // 130 tokens: mla 3 decompresses the cached latents for the prompt (128 or more); ubatch 4:
    // the prompt in three graphs, each reading what the one before wrote to the cache.
    for (const Run& r : {Run{0, KvLayout::kv_b, SY_TYPE_F32, SY_TYPE_F16, 9},
                         Run{1, KvLayout::kv_b, SY_TYPE_Q8_0, SY_TYPE_F32, 9, 4},
                         Run{2, KvLayout::split, SY_TYPE_F32, SY_TYPE_BF16, 9},
                         Run{3, KvLayout::kv_b, SY_TYPE_Q4_0, SY_TYPE_F16, 130},
                         Run{3, KvLayout::split, SY_TYPE_F32, SY_TYPE_F16, 9, 4}}) {
        SCOPED_TRACE(testing::Message() << "mla " << r.mla << " " << sy_dtype_info(r.type).name
                                        << " cache " << sy_dtype_info(r.cache).name);
        ModelSpec ms = spec(r.type, r.layout);
        ms.name = "offhost-" + std::to_string(r.mla) + sy_dtype_info(r.type).name;
        const auto path = make_model(dir, ms);
        ContextOptions o;
        o.mla = r.mla;
        o.cache_type_k = o.cache_type_v = r.cache;
        o.n_ctx = 256;
        o.n_ubatch = r.ubatch;
        Deepseek2Model model(gguf::Reader::open(path), o);
        Session host(model, plain_plugin()), device(model, *offhost);
        EXPECT_FALSE(host.on_device());
        ASSERT_TRUE(device.on_device());
        EXPECT_GT(device.device_weight_bytes(), 0u);
        EXPECT_LE(device.device_weight_bytes(), std::filesystem::file_size(path) * 2);

        const auto tokens = prompt(r.prompt, int32_t(model.hparams().n_vocab));
        const auto want = host.eval(tokens, true), got = device.eval(tokens, true);
        ASSERT_EQ(want.size(), got.size());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
        EXPECT_LT(device.stats().staged_bytes, 64u * 1024);  // the prompt's inputs only
        for (int32_t t : {5, 77, 300, 12}) {
            const uint64_t staged = device.stats().staged_bytes;
            const auto a = host.eval(std::span<const int32_t>(&t, 1));
            const auto b = device.eval(std::span<const int32_t>(&t, 1));
            ASSERT_EQ(a.size(), b.size());
            EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
                << "token " << t;
            // tokens, positions, the expert id table: bytes, not the weights or the cache
            EXPECT_LT(device.stats().staged_bytes - staged, 4096u) << "token " << t;
        }
    }
}

// Sequences on a device with its own memory: a batch of two sequences and a prefix copied
// between them (the cells read from the device buffers, moved, written back: K rows, mla 0's V
// and mla 1's latents transposed) give the host's logits bit for bit. (Neither test backend
// provides named ops, so V as rows is covered in host memory only, above.)
TEST(Deepseek2Runtime, SequencesAndCopiedPrefixesInDeviceMemory) {
    static std::unique_ptr<Plugin> offhost = Plugin::load(SWITCHYARD_OFFHOST_PLUGIN);
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    for (const SequenceRun& r : {SequenceRun{0, 0, SY_TYPE_F32}, SequenceRun{0, 0, SY_TYPE_F16},
                                 SequenceRun{1, 0, SY_TYPE_F16}, SequenceRun{3, 0, SY_TYPE_F32}}) {
        SCOPED_TRACE(r.label());
        Deepseek2Model model(gguf::Reader::open(path), r.options(3 * 32));
        Session host(model, plain_plugin()), device(model, *offhost);
        ASSERT_TRUE(device.on_device());
        const std::vector<int32_t> a = prompt(12, 512), b = prompt(7, 300), c = prompt(5, 200);
        std::vector<std::vector<float>> out(2);
        for (Session* s : {&host, &device}) {
            std::vector<float>& o = out[s == &device];
            s->set_sequences(3);
            const auto first = s->decode(std::vector<Session::SequenceTokens>{{0, a}, {1, b}});
            s->copy_prefix(0, 2, 9);
            const auto next = s->decode(std::vector<Session::SequenceTokens>{{2, c}, {1, c}}, true);
            o.insert(o.end(), first.begin(), first.end());
            o.insert(o.end(), next.begin(), next.end());
        }
        ASSERT_EQ(out[0].size(), out[1].size());
        EXPECT_EQ(std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)), 0);
    }
}

// Several backends: the simulated accelerator (the CPU's kernels behind memory the host cannot
// read) holds the KV cache and every weight but the routed experts, which stay in host memory
// and run on the CPU (the offload switches keep them there); the scheduler runs each graph in
// splits. The logits are the CPU's alone, bit for bit, over a prompt and the decode steps after
// it, and what crosses the link per decode step is activations, not weights or the cache.
TEST(Deepseek2Runtime, ExpertsOnTheHostTheRestOnASimulatedDevice) {
    static std::unique_ptr<Plugin> sim = Plugin::load(SWITCHYARD_SIM_PLUGIN);
    ScratchDir dir;
    for (int mla : {2, 3}) {
        SCOPED_TRACE(testing::Message() << "mla " << mla);
        ModelSpec ms = spec(SY_TYPE_Q8_0);
        ms.name = "hybrid-" + std::to_string(mla);
        const auto path = make_model(dir, ms);
        ContextOptions o;
        o.mla = mla;
        o.n_ctx = 256;
        Deepseek2Model model(gguf::Reader::open(path), o);
        SessionBackends hybrid;
        hybrid.backends = {{&cpu_plugin(), 0}, {sim.get(), 0}};
        hybrid.placement.default_backend = "sim";
        hybrid.placement.rules = {{R"(\.ffn_(up|gate|down)_exps\.)", "cpu", "-ot #1"}};
        hybrid.offload.ops = {{"moe.fused_up_gate", false, "test"}, {"mul_mat_id", false, "test"}};
        Session host(model, cpu_plugin()), split(model, hybrid);
        ASSERT_TRUE(split.multi_backend());
        EXPECT_TRUE(split.on_device()) << "the cache lives on the default backend";
        EXPECT_GT(split.device_weight_bytes(), 0u);
        // Every routed expert tensor is at home on the CPU, by the rule; the rest on sim.
        const WeightPlan& homes = split.weight_plan();
        size_t experts = 0;
        for (size_t i = 0; i < homes.homes.size(); ++i) {
            const bool expert = split.weights()[i].name.find("_exps.") != std::string::npos;
            experts += expert;
            EXPECT_EQ(homes.homes[i].backend, expert ? 0 : 1) << split.weights()[i].name;
        }
        EXPECT_EQ(experts, 3u * (model.hparams().n_layer - model.hparams().n_dense_lead));

        const auto tokens = prompt(9, int32_t(model.hparams().n_vocab));
        const auto want = host.eval(tokens, true), got = split.eval(tokens, true);
        ASSERT_EQ(want.size(), got.size());
        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
        for (int32_t t : {5, 77, 300}) {
            const uint64_t staged = split.stats().staged_bytes;
            const auto a = host.eval(std::span<const int32_t>(&t, 1));
            const auto b = split.eval(std::span<const int32_t>(&t, 1));
            ASSERT_EQ(a.size(), b.size());
            EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
                << "token " << t;
            const ScheduleReport& r = *split.last_schedule();
            EXPECT_TRUE(r.plans_reused || t == 5) << "the same decode shapes plan once";
            EXPECT_GT(r.splits, 2u);
            EXPECT_GT(r.link_bytes, 0u) << "activations to and from the experts";
            // What crossed the link is what the plan predicted (it places by those costs).
            UbatchGraph step = split.build(1, split.n_past() - 1, false);
            const OpPlan& step_plan = split.plan(step.graph, 1, split.n_past() - 1);
            EXPECT_EQ(split.stats().staged_bytes - staged, step_plan.copy_bytes()) << "token " << t;
            // Two splits per MoE layer: the routed experts and their weighted sum on the host,
            // the rest (the shared experts beside them) on the device. Four copies: in, the
            // normed hidden state and the router's two outputs that the host reads (this spec
            // gates by sigmoid with a selection bias, a weight that stays on the device, so the
            // biased scores and the probabilities cross); out, the sum. And the step's three
            // inputs (tokens, positions, the shared experts' zero ids).
            const size_t moe_layers =
                size_t(model.hparams().n_layer - model.hparams().n_dense_lead);
            EXPECT_EQ(step_plan.splits.size(), 2 * moe_layers + 1) << "token " << t;
            EXPECT_EQ(step_plan.copies.size(), 4 * moe_layers + 3) << "token " << t;
        }
        // The routed experts' products ran on the CPU in every graph.
        UbatchGraph ug = split.build(1, split.n_past(), false);
        const OpPlan& plan = split.plan(ug.graph, 1, split.n_past());
        int on_cpu = 0;
        for (size_t i = 0; i < plan.nodes.size(); ++i) {
            const Node& n = ug.graph.nodes()[i];
            const bool routed = n.src[0]->name().find("_exps.") != std::string::npos;
            if (routed && (n.op == SY_OP_MUL_MAT_ID || n.named_op == "moe.fused_up_gate")) {
                EXPECT_EQ(plan.nodes[i].backend, 0) << plan.nodes[i].reason;
                ++on_cpu;
            }
        }
        EXPECT_GT(on_cpu, 0);
    }
}

// A prompt split into ubatches gives the same last logits as one ubatch.
TEST(Deepseek2Runtime, UbatchesMatchOneBatch) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    ContextOptions o;
    o.cache_type_k = o.cache_type_v = SY_TYPE_F32;
    o.n_ctx = 64;
    Deepseek2Model one(gguf::Reader::open(path), o);
    o.n_ubatch = 3;
    Deepseek2Model split(gguf::Reader::open(path), o);
    const auto tokens = prompt(10, 512);
    Session a(one, cpu_plugin()), b(split, cpu_plugin());
    const auto la = a.eval(tokens), lb = b.eval(tokens);
    ASSERT_EQ(la.size(), lb.size());
    for (size_t i = 0; i < la.size(); ++i)
        ASSERT_NEAR(la[i], lb[i], 1e-3f * (1 + std::fabs(la[i])));
    EXPECT_EQ(b.stats().graphs, 4);
}

// -amb: attention split into steps of fewer heads gives the logits of one step, and the
// compute buffer of a long context shrinks, in every path that materializes per-head buffers
// (the K.Q scores without flash attention, mla 3's decompressed K and V with or without it).
TEST(Deepseek2Runtime, AttentionStepsMatchOneStepAndBoundTheBuffer) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    struct Mode {
        int mla, flash;
        size_t tokens;
    };
    for (Mode m :
         {Mode{0, 0, 12}, Mode{1, 0, 12}, Mode{2, 0, 12}, Mode{3, 0, 140}, Mode{3, -1, 140}}) {
        SCOPED_TRACE("mla " + std::to_string(m.mla) + " flash " + std::to_string(m.flash));
        ContextOptions o;
        o.mla = m.mla;
        o.flash_attn = m.flash;
        o.cache_type_k = o.cache_type_v = SY_TYPE_F32;
        o.n_ctx = 256;
        Deepseek2Model whole(gguf::Reader::open(path), o);
        o.attn_max_bytes = 1;  // one head per step
        Deepseek2Model split(gguf::Reader::open(path), o);
        Session a(whole, cpu_plugin()), b(split, cpu_plugin());
        const auto tokens = prompt(m.tokens, 512);
        const auto la = a.eval(tokens, true), lb = b.eval(tokens, true);
        ASSERT_EQ(la.size(), lb.size());
        for (size_t i = 0; i < la.size(); ++i)
            ASSERT_NEAR(la[i], lb[i], 1e-4f * (1 + std::fabs(la[i]))) << "logit " << i;
        // A full ubatch of 140 tokens at the end of a long context (planned, not allocated).
        o.n_ctx = 16384;
        o.attn_max_bytes = 0;
        Deepseek2Model long_whole(gguf::Reader::open(path), o);
        o.attn_max_bytes = 1;
        Deepseek2Model long_split(gguf::Reader::open(path), o);
        Session c(long_whole, cpu_plugin()), d(long_split, cpu_plugin());
        const uint64_t peak_whole = plan_memory(c.build(140, 16384 - 140, false).graph).peak_bytes;
        const uint64_t peak_split = plan_memory(d.build(140, 16384 - 140, false).graph).peak_bytes;
        EXPECT_LT(double(peak_split), 0.5 * double(peak_whole))
            << peak_split << " vs " << peak_whole;
        EXPECT_FALSE(c.cache().allocated());
    }
}

// make() must throw E with `part` in its message.
template <typename E, typename Make>
void expect_error(Make make, const std::string& part) {
    try {
        make();
        FAIL() << "accepted; expected an error with '" << part << "'";
    } catch (const E& e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

TEST(Deepseek2Runtime, KvBytesPerTokenFollowTheFormulas) {
    Deepseek2HParams hp;  // DeepSeek-V3's widths (DEEPSEEK2.md section 8)
    hp.n_layer = 61;
    hp.n_head = 128;
    hp.qk_nope = 128;
    hp.qk_rope = 64;
    hp.v_head = 128;
    hp.kv_lora_rank = 512;
    ContextOptions o;
    o.mla = 0;
    EXPECT_EQ(Deepseek2Cache::bytes_per_token(hp, o), 4997120u);
    o.mla = 1;
    EXPECT_EQ(Deepseek2Cache::bytes_per_token(hp, o), 61u * (576 + 512) * 2);
    for (int mla : {2, 3}) {
        o.mla = mla;
        EXPECT_EQ(Deepseek2Cache::bytes_per_token(hp, o), 61u * 576 * 2);  // 68.6 KiB
    }
    o.cache_type_k = SY_TYPE_F32;
    EXPECT_EQ(Deepseek2Cache::bytes_per_token(hp, o), 61u * 576 * 4);
    // q8_0: 34 bytes per 32 values (576 -> 612 B per layer: 36.5 KiB).
    o.cache_type_k = o.cache_type_v = SY_TYPE_Q8_0;
    EXPECT_EQ(Deepseek2Cache::bytes_per_token(hp, o), 61u * 612);
    o.mla = 0;
    EXPECT_EQ(Deepseek2Cache::bytes_per_token(hp, o), 61u * 128 * (192 + 128) / 32 * 34);
    // q8_KV (K only): an f32 scale and an int32 sum in front of each row of 576 int8.
    o.mla = 3;
    o.cache_type_k = SY_TYPE_Q8_KV;
    EXPECT_EQ(Deepseek2Cache::bytes_per_token(hp, o), 61u * (8 + 576));
}

// -ctk / -ctv q8_0 where blocks cannot hold the cache: each refused, naming the flag and why.
TEST(Deepseek2Runtime, Q8CacheIsRefusedWhereBlocksDoNotFit) {
    ScratchDir dir;
    const auto rope16 = make_model(dir, spec(SY_TYPE_F32));
    ContextOptions o;
    o.n_ctx = 16;
    o.cache_type_k = SY_TYPE_Q8_0;
    expect_error<Error>([&] { Deepseek2Model m(gguf::Reader::open(rope16), o); },
                        "qk_rope_head_dim (16)");
    ModelSpec s = spec(SY_TYPE_F32);
    s.name = "rope32";
    s.rope = 32;
    const auto rope32 = make_model(dir, s);
    o.cache_type_k = SY_TYPE_F16;
    o.cache_type_v = SY_TYPE_Q8_0;
    o.mla = 1;
    expect_error<Error>([&] { Deepseek2Model m(gguf::Reader::open(rope32), o); }, "-ctv q8_0");
    o.mla = 0;
    o.flash_attn = 0;
    Deepseek2Model no_flash(gguf::Reader::open(rope32), o);
    expect_error<Error>([&] { Session session(no_flash, cpu_plugin()); }, "needs flash attention");
    o.flash_attn = -1;
    Deepseek2Model plain(gguf::Reader::open(rope32), o);
    expect_error<Error>([&] { Session session(plain, plain_plugin()); }, "cpu-plain");
    // A backend that cannot write blocks (cpu-plain copies float types only, as the CUDA
    // plugin does): refused when the session is made, naming the node.
    o.cache_type_k = SY_TYPE_Q8_0;
    o.cache_type_v = SY_TYPE_F16;
    o.mla = 2;
    Deepseek2Model no_block_copy(gguf::Reader::open(rope32), o);
    expect_error<Error>([&] { Session session(no_block_copy, plain_plugin()); },
                        "does not support node");
    expect_error<Error>([&] { Session session(no_block_copy, plain_plugin()); }, "q8_0");
}

// -ctk q8_KV: a latent-row cache (mla 1-3) of rows whose width is a multiple of 32; as -ctv,
// with --mla 0, or on latent rows of 48 values, refused naming what is wrong.
TEST(Deepseek2Runtime, Q8KVCacheIsRefusedWhereItsRowsDoNotExist) {
    ScratchDir dir;
    const auto rope16 = make_model(dir, spec(SY_TYPE_F32));  // latent rows 32 + 16
    ContextOptions o;
    o.n_ctx = 16;
    o.mla = 2;
    o.cache_type_k = SY_TYPE_Q8_KV;
    expect_error<Error>([&] { Deepseek2Model m(gguf::Reader::open(rope16), o); },
                        "kv_lora_rank + qk_rope_head_dim = 48");
    ModelSpec s = spec(SY_TYPE_F32);
    s.name = "rope32";
    s.rope = 32;
    const auto rope32 = make_model(dir, s);
    o.mla = 0;
    expect_error<Error>([&] { Deepseek2Model m(gguf::Reader::open(rope32), o); },
                        "with --mla 0 use -ctk q8_0");
    o.mla = 1;
    o.cache_type_v = SY_TYPE_Q8_KV;
    expect_error<Error>([&] { Deepseek2Model m(gguf::Reader::open(rope32), o); },
                        "-ctv q8_kv: the KV cache holds");
    o.cache_type_v = SY_TYPE_F16;
    Deepseek2Model ok(gguf::Reader::open(rope32), o);
    // 8 bytes of scale and sum per latent row of 64 values, plus the f16 transposed latents.
    EXPECT_EQ(Deepseek2Cache::bytes_per_token(ok.hparams(), o),
              uint64_t(ok.hparams().n_layer) * (8 + 64 + 32 * 2));
}

TEST(Deepseek2Runtime, ContextOverflowAndBadTokensAreErrorsThatKeepTheCache) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    ContextOptions o;
    o.n_ctx = 8;
    Deepseek2Model model(gguf::Reader::open(path), o);
    Session s(model, cpu_plugin());
    s.eval(prompt(6, 512));
    try {
        s.eval(prompt(3, 512));
        FAIL() << "no error for a full context";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("-c"), std::string::npos) << e.what();
    }
    EXPECT_EQ(s.n_past(), 6);
    const std::vector<int32_t> bad{1, 512};
    EXPECT_THROW(s.eval(bad), Error);
    EXPECT_EQ(s.n_past(), 6);
}

TEST(Deepseek2Runtime, MissingKeysAndTensorsAreNamed) {
    ScratchDir dir;
    Deepseek2Config cfg = deepseek2_preset("tiny");
    ModelPlan plan = plan_deepseek2(cfg, SY_TYPE_F32, KvLayout::kv_b);
    std::erase_if(plan.metadata, [](const gguf::KeyValue& kv) {
        return kv.key == "deepseek2.attention.kv_lora_rank";
    });
    write_synthetic_model(dir / "nokey.gguf", plan, 1, 1);
    expect_error<gguf::FormatError>(
        [&] { Deepseek2Model m(gguf::Reader::open(dir / "nokey.gguf"), {}); },
        "deepseek2.attention.kv_lora_rank");
    plan = plan_deepseek2(cfg, SY_TYPE_F32, KvLayout::kv_b);
    std::erase_if(plan.tensors,
                  [](const PlannedTensor& t) { return t.name == "blk.1.attn_output.weight"; });
    write_synthetic_model(dir / "notensor.gguf", plan, 1, 1);
    expect_error<gguf::FormatError>(
        [&] { Deepseek2Model m(gguf::Reader::open(dir / "notensor.gguf"), {}); },
        "blk.1.attn_output.weight");
    const auto good = make_model(dir, spec(SY_TYPE_F32));
    ContextOptions bad;
    bad.mla = 4;
    EXPECT_THROW(Deepseek2Model(gguf::Reader::open(good), bad), Error);
    bad = {};
    bad.cache_type_k = SY_TYPE_Q4_0;
    EXPECT_THROW(Deepseek2Model(gguf::Reader::open(good), bad), Error);
}

// A NaN in attn_kv_b leaves no attn_k_b to derive (the q8_0 rounding of one is undefined): the
// load is refused naming both tensors; mla 0 (which uses attn_kv_b as it is) still loads.
TEST(Deepseek2Runtime, NonFiniteSourceOfADerivedTensorIsNamed) {
    ScratchDir dir;
    const auto good = make_model(dir, spec(SY_TYPE_Q8_0));
    test::write_with_tensor_edit(good, dir / "nan.gguf", "blk.1.attn_kv_b.weight",
                                 [](uint8_t* data, const gguf::TensorInfo& kv_b) {
                                     ASSERT_EQ(kv_b.type, SY_TYPE_Q8_0);
                                     // The f16 scale of the tensor's 3rd block: 0x7e00 is NaN.
                                     data[2 * sizeof(sy_block_q8_0)] = 0x00;
                                     data[2 * sizeof(sy_block_q8_0) + 1] = 0x7e;
                                 });
    ContextOptions mla3;
    mla3.mla = 3;
    try {
        Deepseek2Model m(gguf::Reader::open(dir / "nan.gguf"), mla3);
        ADD_FAILURE() << "a NaN in attn_kv_b was accepted";
    } catch (const gguf::FormatError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("blk.1.attn_kv_b.weight holds NaN"), std::string::npos) << msg;
        EXPECT_NE(msg.find("blk.1.attn_k_b.weight cannot be derived"), std::string::npos) << msg;
    }
    ContextOptions mla0;
    mla0.mla = 0;
    EXPECT_NO_THROW(Deepseek2Model(gguf::Reader::open(dir / "nan.gguf"), mla0));
}

// The CPU plugin provides no fused MoE op yet: --fused-moe 1 is refused with the op's name,
// auto falls back to the decomposed graph.
TEST(Deepseek2Runtime, FusedMoeFallsBackOrIsRefused) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    ContextOptions o;
    o.n_ctx = 16;
    ASSERT_TRUE(cpu_plugin().provides("moe.fused_up_gate", 1));
    ASSERT_FALSE(plain_plugin().provides("moe.fused_up_gate", 1));
    Deepseek2Model automatic(gguf::Reader::open(path), o);
    EXPECT_TRUE(Session(automatic, cpu_plugin()).uses_fused_moe());
    EXPECT_FALSE(Session(automatic, plain_plugin()).uses_fused_moe());
    o.fused_moe = 0;  // -fmoe 0: decomposed even where the op exists
    Deepseek2Model off(gguf::Reader::open(path), o);
    Session decomposed(off, cpu_plugin());
    EXPECT_FALSE(decomposed.uses_fused_moe());
    o.fused_moe = 1;  // -fmoe 1: required
    Deepseek2Model forced(gguf::Reader::open(path), o);
    EXPECT_TRUE(Session(forced, cpu_plugin()).uses_fused_moe());
    for (const char* part : {"moe.fused_up_gate", "cpu-plain"})
        expect_error<Error>([&] { Session f(forced, plain_plugin()); }, part);
    // -fa on needs attn.flash and attn.mla.
    o.fused_moe = -1;
    o.flash_attn = 1;
    Deepseek2Model flash(gguf::Reader::open(path), o);
    EXPECT_TRUE(Session(flash, cpu_plugin()).uses_flash_attention());
    expect_error<Error>([&] { Session f(flash, plain_plugin()); }, "attn.flash");
    // Fused and decomposed agree on the logits.
    const auto tokens = prompt(9, 512);
    Session fused(automatic, cpu_plugin());
    const auto a = fused.eval(tokens, true), b = decomposed.eval(tokens, true);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4f * (1 + std::fabs(a[i])));
}

// Rewinding drops the tokens after a point: evaluating other tokens from there gives the logits
// a fresh session gets for the same sequence (the dropped rows are overwritten, never read).
TEST(Deepseek2Runtime, RewindThenEvalMatchesAFreshSession) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    for (int mla : {0, 1, 3}) {
        ContextOptions o;
        o.mla = mla;
        o.cache_type_k = o.cache_type_v = SY_TYPE_F32;
        o.n_ctx = 32;
        Deepseek2Model model(gguf::Reader::open(path), o);
        const auto first = prompt(10, 512);
        std::vector<int32_t> other(first.begin(), first.begin() + 4);
        for (int32_t t : {7, 300, 41}) other.push_back(t);
        Session rewound(model, cpu_plugin());
        rewound.eval(first);
        rewound.rewind(4);
        EXPECT_EQ(rewound.n_past(), 4);
        const auto a = rewound.eval(std::span<const int32_t>(other.data() + 4, 3));
        Session fresh(model, cpu_plugin());
        const auto b = fresh.eval(other);
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << "mla " << mla;
        EXPECT_THROW(rewound.rewind(8), Error);
        EXPECT_THROW(rewound.rewind(-1), Error);
    }
}

// The benchmark loop (llama-bench's tests): every repetition is timed from the same cache
// contents (depth, and gp's prompt), the cache ends at what the last repetition added, and a
// sweep has a row per ubatch that fits.
TEST(Deepseek2Benchmark, TestsRunFromTheirPrefixAndSweepsFillTheContext) {
    ScratchDir dir;
    const auto path = make_model(dir, spec(SY_TYPE_F32));
    ContextOptions o;
    o.n_ctx = 64;
    o.n_ubatch = 8;
    Deepseek2Model model(gguf::Reader::open(path), o);
    Session s(model, cpu_plugin());
    BenchTokens tokens(model.hparams().n_vocab, 1);
    int reps = 0;
    const BenchTest pp{12, 0, 16, false};
    const BenchSamples a = run_bench_test(s, tokens, pp, 3, 5, true, [&](int) { ++reps; });
    EXPECT_EQ(reps, 3);
    ASSERT_EQ(a.ns.size(), 3u);
    ASSERT_EQ(a.ts.size(), 3u);
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(a.ts[i], 12e9 / double(a.ns[i]), 1e-6 * a.ts[i]);
    EXPECT_EQ(s.n_past(), 16 + 12);
    // The time shares are of the timed repetitions only (3 x 12 tokens in batches of 5: 9
    // graphs), and add up to all of it; one backend: nothing copied between backends.
    ASSERT_TRUE(a.shares.has_value());
    EXPECT_EQ(a.shares->graphs, 9);
    const EvalTimeShares& sa = *a.shares;
    EXPECT_NEAR(sa.ops + sa.sync + sa.copies + sa.staging + sa.host, 1.0, 1e-9);
    EXPECT_GT(sa.ops, 0.0);
    EXPECT_EQ(sa.copies, 0.0);
    EXPECT_DOUBLE_EQ(sa.overhead(), sa.sync + sa.copies + sa.host);
    const BenchTest gp{8, 4, 0, true};
    const BenchSamples b = run_bench_test(s, tokens, gp, 2, 64, false);
    ASSERT_TRUE(b.shares.has_value());
    EXPECT_EQ(b.shares->graphs, 2 * 4) << "the generated tokens' graphs, not the prompt's";
    EXPECT_EQ(s.n_past(), 8 + 4);
    EXPECT_NEAR(b.ts[0], 4e9 / double(b.ns[0]), 1e-6 * b.ts[0]);  // only the generated tokens
    EXPECT_THROW(run_bench_test(s, tokens, BenchTest{40, 0, 30, false}, 1, 64, false), Error);

    EXPECT_EQ(pp.label(), "pp12 @ d16");
    EXPECT_EQ(gp.label(), "tg4@pp8");
    EXPECT_EQ((BenchTest{8, 4, 0, false}.label()), "pp8+tg4");
    EXPECT_EQ((BenchTest{0, 128, 0, false}.label()), "tg128");

    std::vector<int64_t> depths;
    const auto rows =
        run_sweep(s, tokens, 16, 4, false, [&](const SweepRow& r) { depths.push_back(r.n_kv); });
    EXPECT_EQ(depths, (std::vector<int64_t>{0, 16, 32, 48}));
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[3].pp, 16);
    EXPECT_EQ(rows[3].tg, 4);
    EXPECT_GT(rows[3].speed_tg(), 0);
    EXPECT_EQ(s.n_past(), 64);
    EXPECT_EQ(sweep_row_count(64, 16, 4), 4);
    EXPECT_EQ(sweep_row_count(60, 16, 20), 3);  // 0, 16, 32: a 20-token generation fits at 32
    EXPECT_EQ(sweep_row_count(8, 16, 4), 0);
    EXPECT_THROW(run_sweep(s, tokens, 128, 4, false, {}), Error);
}

// Shares of two stretches of evaluation (bench --interleave's rounds) weigh each by its time.
TEST(EvalTimeShares, AddWeighsByTime) {
    EvalTimeShares a, b;
    a.ops = 0.9;
    a.host = 0.1;
    a.seconds = 3;
    a.graphs = 3;
    b.ops = 0.5;
    b.copies = 0.3;
    b.host = 0.2;
    b.seconds = 1;
    b.graphs = 1;
    b.overlapped_nodes = 4;
    a.add(b);
    EXPECT_DOUBLE_EQ(a.ops, 0.8);
    EXPECT_DOUBLE_EQ(a.copies, 0.075);
    EXPECT_DOUBLE_EQ(a.host, 0.125);
    EXPECT_DOUBLE_EQ(a.overhead(), 0.2);
    EXPECT_DOUBLE_EQ(a.seconds, 4);
    EXPECT_EQ(a.graphs, 4);
    EXPECT_DOUBLE_EQ(a.overlapped_nodes, 1.0);
}

TEST(BenchSamples, MeanAndSampleStandardDeviation) {
    BenchSamples s;
    s.ns = {1000, 3000};
    s.ts = {2.0, 4.0};
    EXPECT_DOUBLE_EQ(s.avg_ns(), 2000);
    EXPECT_NEAR(s.stddev_ns(), std::sqrt(2.0) * 1000, 1e-9);
    EXPECT_DOUBLE_EQ(s.avg_ts(), 3.0);
    EXPECT_NEAR(s.stddev_ts(), std::sqrt(2.0), 1e-12);
    s.ts = {5.0};
    EXPECT_EQ(s.stddev_ts(), 0.0);
}

}  // namespace
}  // namespace sy::llm::test
