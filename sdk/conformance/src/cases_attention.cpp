// Cases of the named ops attn.flash v1 and attn.mla v1 (named_ops.h): a prompt (causal from 0),
// a prompt after cached tokens (causal offset), generation of one token against many keys,
// shared kv heads, no causal mask, and K as a transposed view where its type allows one.
// Widths are whole 32-blocks so that block-quantized K/V (a Q8_0 cache) take every case.
#include <string>

#include "case_table.hpp"
#include "switchyard/dtype.h"

namespace sy::conformance::detail {

namespace {

Case named_case(const char* name, uint32_t version, const std::string& variant,
                std::vector<SourceSpec> src, TensorSpec dst) {
    Case c = make_case(SY_OP_NAMED, variant, std::move(src), dst);
    const std::string old_label = c.op_label;
    c.op_label = name;
    c.named_op = name;
    c.named_op_version = version;
    c.name.replace(0, old_label.size(), name);
    return c;
}

}  // namespace

std::vector<Case> attention_cases(const char* named_op, const Types& t) {
    const bool mla = std::string(named_op) == SY_NAMED_ATTN_MLA;
    const int32_t kt = t.src[1], vt = t.src[2];
    std::vector<Case> out;
    struct Shape {
        const char* variant;
        int64_t T, H, Hk, N;
        int causal, offset;
    };
    const Shape shapes[] = {
        {"prompt T 9 H 2", 9, 2, 2, 9, 1, 0},
        {"T 3 after 67 cached, H 4 (flash: on 2 kv heads)", 3, 4, 2, 70, 1, 67},
        {"generation T 1 N 300 H 4 on 1 kv head", 1, 4, 1, 300, 1, 299},
        {"generation T 1 N 100 H 1 (one query row per task)", 1, 1, 1, 100, 1, 99},
        {"not causal T 5 N 40", 5, 2, 1, 40, 0, 0},
    };
    const int64_t D = 64, Dv = 32, R = 32;  // attn.mla: rope 32 + latent 64 per cache row
    for (const Shape& s : shapes) {
        const int64_t Hk = mla ? 1 : s.Hk;
        std::vector<SourceSpec> src = {data(tensor(SY_TYPE_F32, {mla ? R + D : D, s.T, s.H}))};
        TensorSpec dst;
        if (mla) {
            src.push_back(data(tensor(kt, {R + D, s.N})));
            dst = tensor(SY_TYPE_F32, {D, s.T, s.H});
        } else {
            src.push_back(data(tensor(kt, {D, s.N, Hk})));
            src.push_back(data(tensor(vt, {Dv, s.N, Hk})));
            dst = tensor(SY_TYPE_F32, {Dv, s.T, s.H});
        }
        Case c = mla ? named_case(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, s.variant,
                                  std::move(src), dst)
                     : named_case(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION, s.variant,
                                  std::move(src), dst);
        c.fparams[0] = 0.5f;  // scores of a few units: a peaked softmax, not a flat average
        c.iparams[0] = s.causal;
        c.iparams[1] = s.offset;
        c.iparams[2] = mla ? int32_t(R) : 0;
        out.push_back(std::move(c));
    }
    if (sy_dtype_info(kt).block_size == 1 && (mla || sy_dtype_info(vt).block_size == 1)) {
        // Widths that are no multiple of 8 or 16 (attn.mla: rope 6 + latent 19), with several
        // rows per kv head that are no multiple of 4: the edges of kernels that tile rows, keys
        // and values. A prompt of 40 tokens after 5 cached (rows of one chunk see different
        // numbers of keys; early rows none of the second block) and a generation step against
        // 200 keys (split into key ranges that are merged).
        const int64_t D2 = 37, Dv2 = 19, R2 = 6;
        const struct {
            const char* variant;
            int64_t T, H, N;
        } odd[] = {{"odd widths, prompt T 40 H 3 after 5 cached", 40, 3, 45},
                   {"odd widths, generation N 200 H 6", 1, 6, 200}};
        for (const auto& o : odd) {
            const int64_t kv_heads = mla || o.T == 1 ? 1 : 3;
            std::vector<SourceSpec> src = {
                data(tensor(SY_TYPE_F32, {mla ? R2 + Dv2 : D2, o.T, o.H})),
                data(tensor(kt, {mla ? R2 + Dv2 : D2, o.N, kv_heads}))};
            if (!mla) src.push_back(data(tensor(vt, {Dv2, o.N, kv_heads})));
            const TensorSpec dst = tensor(SY_TYPE_F32, {Dv2, o.T, o.H});
            Case c = mla ? named_case(SY_NAMED_ATTN_MLA, SY_NAMED_ATTN_MLA_VERSION, o.variant,
                                      std::move(src), dst)
                         : named_case(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION, o.variant,
                                      std::move(src), dst);
            c.fparams[0] = 0.5f;
            c.iparams[0] = 1;
            c.iparams[1] = int32_t(o.N - o.T);
            c.iparams[2] = mla ? int32_t(R2) : 0;
            out.push_back(std::move(c));
        }
    }
    if (!mla && sy_dtype_info(kt).block_size == 1) {
        // K stored transposed (elements of a key not adjacent), padded dst rows.
        std::vector<SourceSpec> src = {data(tensor(SY_TYPE_F32, {D, 4, 2})),
                                       data(transposed(tensor(kt, {D, 50, 1}))),
                                       data(tensor(vt, {Dv, 50, 1}))};
        Case c =
            named_case(SY_NAMED_ATTN_FLASH, SY_NAMED_ATTN_FLASH_VERSION, "transposed K, padded dst",
                       std::move(src), padded(tensor(SY_TYPE_F32, {Dv, 4, 2})));
        c.fparams[0] = 0.125f;
        c.iparams[0] = 1;
        c.iparams[1] = 46;
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace sy::conformance::detail
