/*
 * Built-in ops: ids and semantics, documented once, here. Every backend implements these
 * meanings; the reference implementation (sdk/reference) is the executable form of this page and
 * the oracle of the conformance kit.
 *
 * Notation. Shapes are written {ne0, ne1, ne2, ne3} (ne0 innermost). x[i0,i1,i2,i3] is the element
 * at byte offset i0*nb0 + i1*nb1 + i2*nb2 + i3*nb3 from data, so views, transposes and
 * permutations are just descriptors: every op reads its sources through their strides. Unless an
 * op says otherwise, dst may have any strides too, dst must not overlap a source (except where an
 * op says in-place is allowed), and arithmetic is at least float32 with a float32 accumulator.
 * "float types" means F32, F16, BF16. Broadcasting: where a source "broadcasts", each of its
 * dimensions equals the corresponding dst dimension or divides it, and index i of dst reads index
 * i % ne of the source.
 *
 * Errors. An op whose shapes, types or parameters break its contract returns
 * SY_ERR_INVALID_ARGUMENT from compute (and supports() says 0); index values read from tensors
 * (row ids, expert ids, positions) that are out of range also return SY_ERR_INVALID_ARGUMENT —
 * never a read out of bounds.
 */
#ifndef SWITCHYARD_OPS_H
#define SWITCHYARD_OPS_H

#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sy_op {
    SY_OP_NONE = 0,

    /* dst = src0 + src1. src0, dst: float types, same shape; src1: float type, broadcasts.
       In-place (dst == src0) allowed. */
    SY_OP_ADD = 1,

    /* dst = src0 * src1 (elementwise). As ADD. */
    SY_OP_MUL = 2,

    /* dst = src0 * fparams[0] + fparams[1]. src0, dst: float types, same shape. In-place allowed.
     */
    SY_OP_SCALE = 3,

    /* Per row (over ne0): dst = x / sqrt(mean(x^2) + eps), eps = fparams[0] (> 0).
       No weight: multiply by the norm weight with MUL. src0, dst: float types, same shape. */
    SY_OP_RMS_NORM = 4,

    /* Matrix product, "rows times rows":
         src0 A {K, N, A2, A3} (weights; float types here, more in later ABI minors),
         src1 B {K, M, B2, B3} (F32),  dst {N, M, B2, B3} (F32);
         dst[n, m, b2, b3] = sum_k A[k, n, b2 / (B2/A2), b3 / (B3/A3)] * B[k, m, b2, b3].
       A2 divides B2 and A3 divides B3 (broadcast of the weights over the batch dims, as for
       grouped-query attention). Rows of A must be contiguous (nb0 = element or block size). */
    SY_OP_MUL_MAT = 5,

    /* Expert matrix product:
         src0 W {K, N, E} (E experts), src1 X {K, U1, T} (F32), src2 ids {U, T} (I32, each in
         [0, E) or SY_ID_NONE), dst {N, U, T} (F32), with U1 == 1 or U1 == U;
         dst[n, u, t] = sum_k W[k, n, ids[u, t]] * X[k, u % U1, t], and 0 where ids[u, t] is
         SY_ID_NONE (an expert dropped by DROP_IDS: no product is computed for it). */
    SY_OP_MUL_MAT_ID = 6,

    /* Row gather: src0 {K, R, B2, B3}, src1 ids {n, B2, B3} (I32, in [0, R) or SY_ID_NONE),
       dst {K, n, B2, B3}: dst[k, i, b2, b3] = src0[k, ids[i, b2, b3], b2, b3], converted to
       dst's type (F32, or src0's type for a plain copy); a SY_ID_NONE id gives a row of zero
       bytes (0.0 for float types, zero-scale blocks). */
    SY_OP_GET_ROWS = 7,

    /* Rotary position embedding. src0 {D, H, T} (float types; D head size, H heads, T tokens),
       src1 positions {T} (I32), dst like src0.
         iparams[0] = n_dims (even, 0 < n_dims <= D): the first n_dims of each head rotate, the
           rest copy;
         iparams[1] = mode: 0 normal (pairs (2i, 2i+1)), 2 NeoX (pairs (i, i + n_dims/2));
         iparams[2] = n_ctx_orig (YaRN); fparams[0] = freq_base, [1] = freq_scale,
         [2] = ext_factor, [3] = attn_factor, [4] = beta_fast, [5] = beta_slow;
         freq_base > 0, freq_scale > 0, and with ext_factor != 0: beta_fast, beta_slow > 0 and
         n_ctx_orig > 0.
       For pair index i in [0, n_dims/2) at position p:
         theta_extrap = p * freq_base^(-2i/n_dims),  theta_interp = freq_scale * theta_extrap;
         if ext_factor != 0:
           corr(r) = n_dims * ln(n_ctx_orig / (r * 2*pi)) / (2 * ln(freq_base)),
           lo = max(0, floor(corr(beta_fast))), hi = min(n_dims - 1, ceil(corr(beta_slow))),
           ramp = 1 - clamp((i - lo) / max(0.001, hi - lo), 0, 1),
           mix = ramp * ext_factor,
           theta = theta_interp * (1 - mix) + theta_extrap * mix,
           mscale = attn_factor * (1 + 0.1 * ln(1 / freq_scale));
         else theta = theta_interp, mscale = attn_factor;
         (a, b) -> (a cos(theta) - b sin(theta), a sin(theta) + b cos(theta)) * mscale. */
    SY_OP_ROPE = 8,

    /* Softmax over ne0 of y = x * scale + mask (+ causal mask):
         src0 {n, R, B2, B3} float types, src1 optional mask {n, R1, ...} (F32 or F16) indexed
         [j, i1 % R1, i2 % ne2, i3 % ne3]; fparams[0] = scale;
         iparams[0] = causal (0/1): element j of row i1 is -inf when j > i1 + iparams[1];
         dst like src0. A row that is -inf everywhere yields zeros. */
    SY_OP_SOFTMAX = 9,

    /* Unary, elementwise, src0 and dst float types of the same shape; in-place allowed.
       silu(x) = x / (1 + e^-x); sigmoid(x) = 1 / (1 + e^-x);
       gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
    SY_OP_SILU = 10,
    SY_OP_GELU = 11,
    SY_OP_SIGMOID = 12,

    /* Per row: dst (I32) {n, R, ...} = the indices that sort src0 {n, R, ...} (F32);
       iparams[0] = 0 ascending, 1 descending; equal values keep index order (stable). */
    SY_OP_ARGSORT = 13,

    /* Per row: dst (I32) {k, R, ...} = indices of the k = dst.ne0 largest values of src0
       {n, R, ...} (F32, 1 <= k <= n), largest first; equal values: lower index first. */
    SY_OP_TOP_K = 14,

    /* dst {1, R, B2, B3} = sum over ne0 of src0 {n, R, B2, B3}; float types. */
    SY_OP_SUM_ROWS = 15,

    /* Concatenation along dimension d = iparams[0]: src0 and src1 agree on every other
       dimension; dst.ne[d] = src0.ne[d] + src1.ne[d]. Same type throughout (any type with
       element size >= 1 byte, not block-quantized). */
    SY_OP_CONCAT = 16,

    /* Copy with conversion: src0 and dst have the same shape, any strides, float types;
       dst[i] = convert(src0[i]). F32 -> F16/BF16 rounds to nearest even. Also F32 <-> a
       block-quantized type (rows of whole blocks, nb0 the block's bytes): F32 -> blocks
       quantizes each row as the type's reference quantizer does (bit-exact), blocks -> F32
       decodes; a backend's capability rows say which block types it converts. */
    SY_OP_CPY = 17,

    /* Make contiguous: as CPY with the same type on both sides and a packed dst; the usual
       way to materialize a transposed or permuted view ("transpose-copy"). */
    SY_OP_CONT = 18,

    /* dst = src0 / src1 (elementwise). As ADD; IEEE division (x / 0 is +-inf or NaN). */
    SY_OP_DIV = 19,

    /* Drops the weaker of each row's ranked ids (smart expert reduction): src0 ids {k, R, B2,
       B3} (I32), src1 values of the same shape (F32; usually the scores of the ids, largest
       first, as TOP_K orders them), dst I32 like src0; iparams[0] = m >= 1 ids always kept,
       fparams[0] = t >= 0:
         dst[j, r] = src0[j, r] if j < m or src1[j, r] > t * src1[0, r], else SY_ID_NONE,
       with t * src1[0, r] rounded to float32 before the comparison. */
    SY_OP_DROP_IDS = 20,

    /* A plugin-provided op named by sy_node.named_op / named_op_version (named_ops.h). */
    SY_OP_NAMED = 1000,
} sy_op;

/* Mode values of SY_OP_ROPE iparams[1]. */
#define SY_ROPE_NORMAL 0
#define SY_ROPE_NEOX 2

/* The id value of a dropped slot (DROP_IDS), which GET_ROWS and MUL_MAT_ID accept. */
#define SY_ID_NONE (-1)

/* Number of built-in op ids (one past the last, excluding SY_OP_NAMED). */
#define SY_OP_BUILTIN_COUNT 21

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_OPS_H */
