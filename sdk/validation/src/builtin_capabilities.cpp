// The capability table of a backend that implements every built-in op (validation.hpp).
#include <array>

#include "switchyard/named_ops.h"
#include "switchyard/ops.h"
#include "switchyard/validation.hpp"

namespace sy::validation {
namespace {

constexpr int32_t kNone = SY_TYPE_NONE;
constexpr std::array<int32_t, 3> kFloatTypes = {SY_TYPE_F32, SY_TYPE_F16, SY_TYPE_BF16};
// Types CONCAT, CONT and same-type GET_ROWS move as bytes: whole-byte elements, no blocks.
constexpr std::array<int32_t, 8> kPlainTypes = {SY_TYPE_F32, SY_TYPE_F16, SY_TYPE_BF16,
                                                SY_TYPE_F64, SY_TYPE_I8,  SY_TYPE_I16,
                                                SY_TYPE_I32, SY_TYPE_I64};
// GET_ROWS also copies rows of block-quantized types unchanged (dst type == src0 type).
constexpr std::array<int32_t, 39> kBlockTypes = {
    SY_TYPE_Q4_0,    SY_TYPE_Q4_1,   SY_TYPE_Q5_0,          SY_TYPE_Q5_1,   SY_TYPE_Q8_0,
    SY_TYPE_Q8_1,    SY_TYPE_Q2_K,   SY_TYPE_Q3_K,          SY_TYPE_Q4_K,   SY_TYPE_Q5_K,
    SY_TYPE_Q6_K,    SY_TYPE_Q8_K,   SY_TYPE_IQ4_NL,        SY_TYPE_IQ4_XS, SY_TYPE_IQ2_XXS,
    SY_TYPE_IQ2_XS,  SY_TYPE_IQ2_S,  SY_TYPE_IQ3_XXS,       SY_TYPE_IQ3_S,  SY_TYPE_IQ1_S,
    SY_TYPE_IQ1_M,   SY_TYPE_Q6_0,   SY_TYPE_IQ2_K,         SY_TYPE_IQ3_K,  SY_TYPE_IQ4_K,
    SY_TYPE_IQ5_K,   SY_TYPE_IQ6_K,  SY_TYPE_IQ2_KS,        SY_TYPE_IQ3_KS, SY_TYPE_IQ4_KS,
    SY_TYPE_IQ4_KSS, SY_TYPE_IQ5_KS, SY_TYPE_IQ2_KL,        SY_TYPE_IQ1_KT, SY_TYPE_IQ2_KT,
    SY_TYPE_IQ3_KT,  SY_TYPE_IQ4_KT, SY_TYPE_IQ1_M_R4_ROWS, SY_TYPE_Q8_KV};

// Weight types MUL_MAT / MUL_MAT_ID compute on and GET_ROWS converts to F32.
constexpr std::array<int32_t, 37> kComputeBlockTypes = {
    SY_TYPE_Q4_0,          SY_TYPE_Q4_1,   SY_TYPE_Q5_0,    SY_TYPE_Q5_1,    SY_TYPE_Q8_0,
    SY_TYPE_Q2_K,          SY_TYPE_Q3_K,   SY_TYPE_Q4_K,    SY_TYPE_Q5_K,    SY_TYPE_Q6_K,
    SY_TYPE_IQ4_NL,        SY_TYPE_IQ4_XS, SY_TYPE_IQ2_XXS, SY_TYPE_IQ2_XS,  SY_TYPE_IQ2_S,
    SY_TYPE_IQ3_XXS,       SY_TYPE_IQ3_S,  SY_TYPE_IQ1_S,   SY_TYPE_IQ1_M,   SY_TYPE_Q6_0,
    SY_TYPE_IQ2_K,         SY_TYPE_IQ3_K,  SY_TYPE_IQ4_K,   SY_TYPE_IQ5_K,   SY_TYPE_IQ6_K,
    SY_TYPE_IQ2_KS,        SY_TYPE_IQ3_KS, SY_TYPE_IQ4_KS,  SY_TYPE_IQ4_KSS, SY_TYPE_IQ5_KS,
    SY_TYPE_IQ2_KL,        SY_TYPE_IQ1_KT, SY_TYPE_IQ2_KT,  SY_TYPE_IQ3_KT,  SY_TYPE_IQ4_KT,
    SY_TYPE_IQ1_M_R4_ROWS, SY_TYPE_Q8_KV};

constexpr size_t kMaxRows = 420;

struct TableBuilder {
    std::array<sy_capability, kMaxRows> rows{};
    size_t count = 0;

    constexpr void add(int32_t op, int32_t dst, int32_t s0, int32_t s1 = kNone, int32_t s2 = kNone,
                       int32_t s3 = kNone) {
        rows[count++] = sy_capability{sizeof(sy_capability), op, nullptr, 0, dst, {s0, s1, s2, s3}};
    }
};

constexpr TableBuilder build_table() {
    TableBuilder t;
    // dst and every float source independently any float type.
    for (int32_t op : {SY_OP_ADD, SY_OP_MUL, SY_OP_DIV})
        for (int32_t d : kFloatTypes)
            for (int32_t a : kFloatTypes)
                for (int32_t b : kFloatTypes) t.add(op, d, a, b);
    for (int32_t op : {SY_OP_SCALE, SY_OP_RMS_NORM, SY_OP_SILU, SY_OP_GELU, SY_OP_SIGMOID,
                       SY_OP_SUM_ROWS, SY_OP_CPY})
        for (int32_t d : kFloatTypes)
            for (int32_t a : kFloatTypes) t.add(op, d, a);
    for (int32_t w : kFloatTypes) {
        t.add(SY_OP_MUL_MAT, SY_TYPE_F32, w, SY_TYPE_F32);
        t.add(SY_OP_MUL_MAT_ID, SY_TYPE_F32, w, SY_TYPE_F32, SY_TYPE_I32);
    }
    for (int32_t a : kFloatTypes) {
        if (a != SY_TYPE_F32) t.add(SY_OP_GET_ROWS, SY_TYPE_F32, a, SY_TYPE_I32);
        t.add(SY_OP_ROPE, a, a, SY_TYPE_I32);
        for (int32_t mask : {kNone, int32_t(SY_TYPE_F32), int32_t(SY_TYPE_F16)})
            t.add(SY_OP_SOFTMAX, a, a, mask);
    }
    for (int32_t a : kPlainTypes) {
        t.add(SY_OP_GET_ROWS, a, a, SY_TYPE_I32);
        t.add(SY_OP_CONCAT, a, a, a);
        t.add(SY_OP_CONT, a, a);
    }
    for (int32_t a : kBlockTypes) t.add(SY_OP_GET_ROWS, a, a, SY_TYPE_I32);
    // The KV cache's block type: quantized on the way in, decoded on the way out.
    t.add(SY_OP_CPY, SY_TYPE_Q8_0, SY_TYPE_F32);
    t.add(SY_OP_CPY, SY_TYPE_F32, SY_TYPE_Q8_0);
    // ik_llama.cpp's K cache type (-ctk q8_KV): one scale per whole row, written a row at a time.
    t.add(SY_OP_CPY, SY_TYPE_Q8_KV, SY_TYPE_F32);
    t.add(SY_OP_CPY, SY_TYPE_F32, SY_TYPE_Q8_KV);
    for (int32_t w : kComputeBlockTypes) {
        t.add(SY_OP_MUL_MAT, SY_TYPE_F32, w, SY_TYPE_F32);
        t.add(SY_OP_MUL_MAT_ID, SY_TYPE_F32, w, SY_TYPE_F32, SY_TYPE_I32);
        t.add(SY_OP_GET_ROWS, SY_TYPE_F32, w, SY_TYPE_I32);
    }
    t.add(SY_OP_ARGSORT, SY_TYPE_I32, SY_TYPE_F32);
    t.add(SY_OP_TOP_K, SY_TYPE_I32, SY_TYPE_F32);
    t.add(SY_OP_DROP_IDS, SY_TYPE_I32, SY_TYPE_I32, SY_TYPE_F32);
    return t;
}

constexpr TableBuilder kTable = build_table();
static_assert(kTable.count <= kMaxRows);

// The named ops of named_ops.h: moe.fused_up_gate v1 with up and gate of one type (every
// MUL_MAT_ID weight type), X F32, ids I32; attn.flash v1 with K and V each a KV cache type;
// attn.mla v1 on a cache of one of them. Queries and results are F32. Q8_KV (ik_llama.cpp's
// row-scaled type) is a K cache type only: attn.flash's K with any V above, attn.mla's cache.
constexpr std::array<int32_t, 4> kCacheTypes = {SY_TYPE_F32, SY_TYPE_F16, SY_TYPE_BF16,
                                                SY_TYPE_Q8_0};

constexpr auto build_named_table() {
    std::array<sy_capability, kFloatTypes.size() + kComputeBlockTypes.size() +
                                  kCacheTypes.size() * (kCacheTypes.size() + 1) +
                                  kCacheTypes.size() + 1>
        rows{};
    size_t i = 0;
    auto add = [&](const char* name, uint32_t version, int32_t s0, int32_t s1, int32_t s2,
                   int32_t s3) {
        rows[i++] = sy_capability{sizeof(sy_capability), SY_OP_NAMED,     name, version,
                                  SY_TYPE_F32,           {s0, s1, s2, s3}};
    };
    auto moe = [&](int32_t w) {
        add(SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION, w, w, SY_TYPE_F32,
            SY_TYPE_I32);
    };
    for (int32_t w : kFloatTypes) moe(w);
    for (int32_t w : kComputeBlockTypes) moe(w);
    for (int32_t k : kCacheTypes) {
        for (int32_t v : kCacheTypes)
            add(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION, SY_TYPE_F32, k, v, kNone);
        add(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, SY_TYPE_F32, k, kNone, kNone);
    }
    for (int32_t v : kCacheTypes)
        add(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION, SY_TYPE_F32, SY_TYPE_Q8_KV, v, kNone);
    add(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, SY_TYPE_F32, SY_TYPE_Q8_KV, kNone, kNone);
    if (i != rows.size()) throw "named capability table: rows filled differ from its size";
    return rows;
}

constexpr auto kNamedTable = build_named_table();

}  // namespace

CapabilityTable builtin_capabilities() {
    return {kTable.rows.data(), kTable.count};
}

CapabilityTable named_capabilities() {
    return {kNamedTable.data(), kNamedTable.size()};
}

}  // namespace sy::validation
