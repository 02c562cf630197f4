// ik_llama.cpp's own quantization mixes (IQ2_K ... IQ6_K, the _KS/_KSS/_KL types, IQ3_KL, the
// trellis types, Q6_0 and the _R4 file types) and its repacked forms of llama.cpp's (Q4_0_R8 ...
// IQ1_M_R4, BF16_R16): the rules of ik's llama_tensor_get_type for those file types, as
// docs/ik-presets.md states them. They differ from mainline's in how a name is categorised: ik
// tests substrings in a fixed order (attn_v.weight, attn_k, attn_q, ffn_down,
// attn_output.weight, ffn_gate, ffn_up), so DeepSeek's attn_kv_a_mqa, attn_kv_b and attn_k_b are
// "attn_k" tensors, attn_q_a and attn_q_b "attn_q" ones, and attn_v_b keeps the base type.
//
// The rules here are for the models switchyard runs: the 70B/8B size classes and the Falcon and
// large-vocabulary exceptions never hold for deepseek2, so they are left out.
#include "quant_preset_ik.hpp"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <string>

#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/tensor_types.hpp"

namespace sy::llm::detail {
namespace {

using F = FileType;

// ik's interleaved type ids (sdk/quants interleaved.hpp), as its rules name them.
constexpr int32_t kQ8_0_R8 = 208, kQ2_K_R4 = 210, kQ4_K_R4 = 212, kQ5_K_R4 = 213, kQ6_K_R4 = 214,
                  kIQ4_NL_R4 = 220, kIQ2_K_R4 = 337, kIQ3_K_R4 = 338, kIQ4_K_R4 = 339,
                  kIQ5_K_R4 = 340;

// The branch IQ2_KT and the IQ1_S_R4/IQ1_M_R4 mixes share (docs/ik-presets.md 3.2, 3.3): the
// same tests in the same order, IQ2_KT naming plain types where the IQ1 mixes name interleaved
// ones (and IQ2_K_R4 for attn_qkv and a dense attn_output, where IQ2_KT has IQ3_K).
struct OwnBranch {
    int32_t v_wide, v_gqa2, v;  // attn_v: 4+ experts or n_gqa >= 4; n_gqa >= 2; else
    int32_t kq;                 // attn_k* and attn_q* with 8+ experts
    int32_t blk0;               // layer 0's ffn_down/gate/up with 8+ experts
    int32_t qkv, shexp, down;   // attn_qkv; the shared experts; ffn_down of the first eighth
    int32_t out_moe, out;       // attn_output with 4+ experts; else
};
constexpr OwnBranch kIQ2_KTBranch{SY_TYPE_IQ4_K, SY_TYPE_IQ3_K, SY_TYPE_Q2_K,  SY_TYPE_Q4_K,
                                  SY_TYPE_IQ3_K, SY_TYPE_IQ3_K, SY_TYPE_IQ4_K, SY_TYPE_IQ3_K,
                                  SY_TYPE_Q5_K,  SY_TYPE_IQ3_K};
constexpr OwnBranch kIQ1_R4Branch{kIQ4_K_R4, kIQ3_K_R4, kQ2_K_R4, kQ4_K_R4, kIQ3_K_R4,
                                  kIQ2_K_R4, kIQ4_K_R4, kQ2_K_R4, kQ5_K_R4, kIQ2_K_R4};

}  // namespace

int32_t ik_mix_tensor_type(const QuantPreset& preset, const MixModel& model, MixCounters& c,
                           std::string_view name, std::span<const int64_t> ne) {
    const F ft = preset.ftype;
    const int32_t base = preset.base_type;
    // BF16_R16's type is not a quantized one for ik, so ik runs no rule for it (not even the
    // output's): every tensor it quantizes gets it.
    if (ft == F::kMostlyBF16_R16) return base;
    const int E = int(model.n_expert), G = int(model.n_gqa), n = int(model.n_layer);
    const bool I = model.has_imatrix, T = model.has_output;
    const int64_t nx = ne.empty() ? 0 : ne[0];
    // The layer of a per-layer rule: with experts the block in the name, else the counter.
    const auto layer = [&](int counter) {
        if (std::max(1, E) <= 1) return counter;
        const int l = block_of(name);
        if (l < 0 || l >= n)
            throw Error("quantize mix " + std::string(preset.name) + ": tensor " +
                        std::string(name) + " has no layer number below " + std::to_string(n));
        return l;
    };
    const bool iq1_r4 = ft == F::kMostlyIQ1_S_R4 || ft == F::kMostlyIQ1_M_R4;
    // IQ2_M_R4 is the "IQ2_S or IQ2_M" case of the IQ2_XXS family's branch.
    const bool iq2_m = ft == F::kMostlyIQ2_M_R4;

    // The output (and a tied token_embd): Q8_0 unless its rows are whole 256-blocks.
    if (name == "output.weight" || (!T && name == "token_embd.weight")) {
        if (nx % 256 != 0) return SY_TYPE_Q8_0;
        if (any_of(ft, {F::kMostlyIQ2_K, F::kMostlyIQ3_K, F::kMostlyIQ2_KS, F::kMostlyIQ3_K_R4,
                        F::kMostlyIQ3_KS, F::kMostlyIQ2_K_R4, F::kMostlyIQ2_KL, F::kMostlyIQ2_KT,
                        F::kMostlyIQ3_KT, F::kMostlyIQ1_KT, F::kMostlyIQ3_XXS_R4,
                        F::kMostlyIQ2_M_R4, F::kMostlyIQ1_S_R4, F::kMostlyIQ1_M_R4}))
            return T ? SY_TYPE_Q5_K : SY_TYPE_IQ4_K;
        if (ft == F::kMostlyIQ2_XXS_R4 || ft == F::kMostlyIQ2_XS_R4)
            return T ? kQ5_K_R4 : kIQ4_K_R4;  // a tied token_embd is written plain: IQ4_K
        if (!T && any_of(ft, {F::kMostlyIQ3_KL, F::kMostlyIQ4_KS, F::kMostlyIQ4_KSS,
                              F::kMostlyIQ4_KS_R4, F::kMostlyIQ3_S_R4}))
            return SY_TYPE_IQ5_K;
        // The 6-8 bit bases keep theirs (Q8_0_R8's and Q6_K_R4's output stays interleaved).
        const bool keeps =
            base == SY_TYPE_Q8_0 || base == SY_TYPE_IQ6_K || base == kQ8_0_R8 || base == kQ6_K_R4;
        return keeps ? base : SY_TYPE_Q6_K;
    }
    if (name == "token_embd.weight") {  // an interleaved pick is written plain (requantize.cpp)
        if (any_of(ft, {F::kMostlyIQ2_XXS_R4, F::kMostlyIQ2_XS_R4, F::kMostlyIQ1_S_R4,
                        F::kMostlyIQ1_M_R4}))
            return SY_TYPE_Q2_K;
        if (ft == F::kMostlyIQ3_KT || iq2_m) return SY_TYPE_IQ3_S;
        if (ft == F::kMostlyIQ3_XXS_R4) return SY_TYPE_IQ3_K;
        return base;
    }

    if (ft == F::kMostlyIQ2_KT || iq1_r4) {  // their own branch
        const OwnBranch& b = iq1_r4 ? kIQ1_R4Branch : kIQ2_KTBranch;
        if (has(name, "attn_v.weight")) {
            ++c.i_attention_wv;
            return E >= 4 || G >= 4 ? b.v_wide : G >= 2 ? b.v_gqa2 : b.v;
        }
        if (E >= 8 && has(name, "attn_k")) return b.kq;
        if (E >= 8 && (has(name, "blk.0.ffn_down") || has(name, "blk.0.ffn_gate") ||
                       has(name, "blk.0.ffn_up")))
            return b.blk0;
        if (E >= 8 && has(name, "attn_q")) return b.kq;
        if (has(name, "attn_qkv.weight")) return b.qkv;
        if (has(name, "_shexp.weight")) return b.shexp;
        if (has(name, "ffn_down")) {
            const int i = layer(c.i_ffn_down);
            ++c.i_ffn_down;
            return i < n / 8 ? b.down : base;
        }
        if (has(name, "attn_output.weight")) return E >= 4 ? b.out_moe : b.out;
        return base;
    }
    if (any_of(ft, {F::kMostlyIQ2_KS, F::kMostlyIQ2_XXS_R4, F::kMostlyIQ2_XS_R4,
                    F::kMostlyIQ2_M_R4})) {  // the IQ2_XXS/IQ2_XS family's branch
        if (has(name, "attn_v.weight")) {
            ++c.i_attention_wv;
            return G >= 4 || E >= 4   ? SY_TYPE_IQ4_K
                   : G >= 2 || E >= 2 ? SY_TYPE_IQ3_K
                   : iq2_m            ? SY_TYPE_IQ3_S
                                      : SY_TYPE_Q2_K;
        }
        if (E >= 8 && (has(name, "attn_k") || has(name, "attn_q"))) return SY_TYPE_Q4_K;
        if (has(name, "attn_qkv.weight")) return iq2_m ? SY_TYPE_IQ3_XXS : SY_TYPE_IQ2_K;
        if (has(name, "ffn_down")) {  // the raw counter: the first n/8 ffn_down tensors in order
            const bool early = c.i_ffn_down < n / 8;
            ++c.i_ffn_down;
            return early ? (iq2_m ? SY_TYPE_IQ3_S : SY_TYPE_Q2_K) : base;
        }
        if (has(name, "attn_output.weight"))
            return E >= 4 ? SY_TYPE_Q5_K : iq2_m ? SY_TYPE_IQ3_S : base;
        return base;
    }

    if (has(name, "attn_v.weight")) {
        const int i_attention_wv = c.i_attention_wv++;
        if (E >= 4) return SY_TYPE_Q8_0;
        switch (ft) {
            case F::kMostlyIQ2_K: return G >= 2 ? SY_TYPE_IQ4_K : SY_TYPE_IQ3_K;
            case F::kMostlyIQ2_K_R4: return G >= 2 ? kIQ4_K_R4 : kIQ3_K_R4;
            case F::kMostlyIQ3_KT: return G >= 4 ? SY_TYPE_IQ4_K : SY_TYPE_IQ3_K;
            case F::kMostlyIQ4_KT: return G >= 4 ? SY_TYPE_IQ5_K : SY_TYPE_IQ4_K;
            case F::kMostlyIQ3_KL: return G >= 2 ? SY_TYPE_IQ5_K : SY_TYPE_IQ4_K;
            case F::kMostlyIQ3_XXS_R4: return G >= 4 ? kQ4_K_R4 : G >= 2 || !I ? kIQ3_K_R4 : base;
            // Q2_K_R4's rule and Q3_K_R4's n_gqa bump give the same.
            case F::kMostlyQ2_K_R4:
            case F::kMostlyQ3_K_R4: return G >= 4 ? kQ4_K_R4 : base;
            // The first four, plain; no n_gqa bump (unlike ik's Q4_K_S).
            case F::kMostlyQ4_K_R4: return i_attention_wv < 4 ? SY_TYPE_Q5_K : base;
            default: break;
        }
        if (G < 2) return base;
        switch (ft) {
            case F::kMostlyIQ3_K: return SY_TYPE_IQ4_K;
            case F::kMostlyIQ3_KS:
            case F::kMostlyIQ2_KL: return SY_TYPE_IQ4_KS;
            case F::kMostlyIQ3_K_R4:
            case F::kMostlyIQ3_S_R4: return kIQ4_K_R4;
            case F::kMostlyIQ4_KS:
            case F::kMostlyIQ4_KSS:
            case F::kMostlyIQ4_K:
            case F::kMostlyIQ4_K_R4:
            case F::kMostlyIQ4_NL_R4:
            case F::kMostlyIQ4_XS_R8: return SY_TYPE_IQ5_K;
            case F::kMostlyIQ4_KS_R4: return kIQ5_K_R4;
            default: return base;
        }
    }
    if (has(name, "attn_k")) {
        if (E >= 4) return SY_TYPE_Q8_0;
        return ft == F::kMostlyIQ3_XXS_R4 ? SY_TYPE_IQ2_S : base;
    }
    if (has(name, "attn_q")) return ft == F::kMostlyIQ3_XXS_R4 ? SY_TYPE_IQ2_S : base;
    if (has(name, "ffn_down")) {
        const int i = layer(c.i_ffn_down);
        ++c.i_ffn_down;
        const bool early = i < n / 8;
        if (ft == F::kMostlyQ2_K_R4) return early ? kQ4_K_R4 : base;
        if (ft == F::kMostlyIQ3_KT && !I) return early ? SY_TYPE_IQ4_K : SY_TYPE_IQ3_K;
        if (ft == F::kMostlyIQ3_XXS_R4 && !I) return early ? kQ4_K_R4 : kIQ3_K_R4;
        if (ft == F::kMostlyIQ3_KL) return use_more_bits(i, n) ? SY_TYPE_IQ4_KS : SY_TYPE_IQ3_K;
        if (early && !I &&
            any_of(ft,
                   {F::kMostlyIQ4_KS, F::kMostlyIQ4_KSS, F::kMostlyIQ4_NL_R4, F::kMostlyIQ4_XS_R8}))
            return SY_TYPE_Q5_K;
        if (early && !I && ft == F::kMostlyIQ4_KS_R4) return kQ5_K_R4;
        if (early && ft == F::kMostlyQ4_K_R4) return SY_TYPE_Q5_K;
        if (early && I && ft == F::kMostlyQ4_0_R8) return kIQ4_NL_R4;
        return base;
    }
    if (has(name, "attn_output.weight")) {
        if (E >= 4) {
            if (any_of(ft, {F::kMostlyIQ4_K,     F::kMostlyIQ4_KSS,    F::kMostlyIQ4_KS,
                            F::kMostlyIQ4_KS_R4, F::kMostlyIQ5_KS,     F::kMostlyIQ5_KS_R4,
                            F::kMostlyIQ2_K,     F::kMostlyIQ3_K,      F::kMostlyIQ3_KL,
                            F::kMostlyIQ3_KT,    F::kMostlyIQ3_KS,     F::kMostlyIQ4_K_R4,
                            F::kMostlyIQ3_K_R4,  F::kMostlyIQ2_K_R4,   F::kMostlyQ4_K_R4,
                            F::kMostlyIQ4_NL_R4, F::kMostlyIQ4_XS_R8,  F::kMostlyQ3_K_R4,
                            F::kMostlyQ2_K_R4,   F::kMostlyIQ3_XXS_R4, F::kMostlyIQ3_S_R4}))
                return SY_TYPE_Q5_K;
            return ft == F::kMostlyIQ2_KL ? SY_TYPE_IQ4_KS : base;
        }
        if (ft == F::kMostlyIQ3_KT && G >= 4) return SY_TYPE_IQ3_K;
        if (ft == F::kMostlyIQ2_K) return SY_TYPE_IQ3_K;
        if (ft == F::kMostlyIQ2_K_R4 || ft == F::kMostlyIQ3_XXS_R4) return kIQ3_K_R4;
        if (ft == F::kMostlyIQ3_KL) return SY_TYPE_IQ4_KS;
        return base;
    }
    const bool gate = has(name, "ffn_gate");
    if (gate || has(name, "ffn_up")) {
        int& counter = gate ? c.i_ffn_gate : c.i_ffn_up;
        const int i = layer(counter);
        ++counter;
        return ft == F::kMostlyIQ3_KL && use_more_bits(i, n) ? SY_TYPE_IQ4_KS : base;
    }
    return base;
}

int32_t ik_fit_block(int64_t ne0, int32_t type) {
    const int32_t block = sy_dtype_info(type).block_size;
    if (block <= 0 || ne0 % block == 0) return type;
    if (falls_back_to_iq4_nl(type)) return SY_TYPE_IQ4_NL;
    switch (type) {
        case SY_TYPE_IQ4_K:
        case SY_TYPE_IQ5_KS:
        case SY_TYPE_Q4_K: return SY_TYPE_Q5_0;
        case SY_TYPE_IQ5_K:
        case SY_TYPE_Q5_K: return SY_TYPE_Q6_0;
        case SY_TYPE_IQ6_K:
        case SY_TYPE_Q6_K: return SY_TYPE_Q8_0;
        default: return type;
    }
}

}  // namespace sy::llm::detail
