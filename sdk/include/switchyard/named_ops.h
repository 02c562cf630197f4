/*
 * Named ops: fused operations that plugins provide and the core only describes. A model asks
 * the registry whether any loaded backend provides one (name + schema version); if none does, it
 * builds the decomposed graph instead. Third parties add their own the same way, with their own
 * namespace. Each schema below is the contract of its version; a new version gets a new number.
 */
#ifndef SWITCHYARD_NAMED_OPS_H
#define SWITCHYARD_NAMED_OPS_H

#include "switchyard/ops.h"

/* moe.fused_up_gate, schema 1: the routed experts' up and gate products and the activation in
   one op.
     src0 up   {K, N, E}, src1 gate {K, N, E} (same type), src2 X {K, U1, T} (F32),
     src3 ids  {U, T} (I32, in [0, E) or SY_ID_NONE), dst {N, U, T} (F32), U1 == 1 or U1 == U;
     g = MUL_MAT_ID(gate, X, ids), u = MUL_MAT_ID(up, X, ids),
     dst = act(g) * u, act = silu (iparams[0] = 0) or gelu (iparams[0] = 1); 0 for a
     SY_ID_NONE slot (nothing computed).
   Decomposition: two MUL_MAT_ID nodes, SILU/GELU, MUL. */
#define SY_NAMED_MOE_FUSED_UP_GATE "moe.fused_up_gate"
#define SY_NAMED_MOE_FUSED_UP_GATE_VERSION 1u

/* attn.flash, schema 1: attention with an online softmax, the K.Q matrix never materialized.
     src0 Q {D, T, H} (F32), src1 K {D, N, Hk}, src2 V {Dv, N, Hk} (K and V each F32, F16,
     BF16 or Q8_0, K also Q8_KV, as the backend's capability rows list them), dst {Dv, T, H}
     (F32), H a multiple of Hk: query head h reads kv head h / (H / Hk) (Hk = 1: every head
     shares one K and V, as latent attention does).
     fparams[0] = scale; iparams[0] = 1: causal, query t sees keys j <= iparams[1] + t only.
     dst[:, t, h] = sum_j p_j V[:, j, hk], p = softmax over the visible j of
     scale * (Q[:, t, h] . K[:, j, hk]); a query that sees no key gets zeros.
   Decomposition: MUL_MAT (K, Q), SOFTMAX (scale, causal), MUL_MAT (V transposed, scores). */
#define SY_NAMED_ATTN_FLASH "attn.flash"
#define SY_NAMED_ATTN_FLASH_VERSION 1u

/* attn.mla, schema 1: one layer's latent attention (DeepSeek MLA, absorbed form) for a ubatch
   against the latent cache.
     src0 Q {R + L, T, H} (F32): per head [q_rope (R) | W_UK^T q_nope (L)], in the order of the
     cache rows; src1 cache {R + L, N} (F32, F16, BF16, Q8_0 or Q8_KV; with Q8_0 blocks, R is a
     whole number of them; a Q8_KV row's one scale covers both parts): per token
     [k_rope | c_kv];
     dst {L, T, H} (F32); iparams[2] = R; fparams[0], iparams[0], iparams[1] as attn.flash.
   It is attn.flash with K = the cache rows and V = their last L elements (Hk = 1): the latent
   output, which the model multiplies by W_UV. */
#define SY_NAMED_ATTN_MLA "attn.mla"
#define SY_NAMED_ATTN_MLA_VERSION 1u

#endif /* SWITCHYARD_NAMED_OPS_H */
