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
     src3 ids  {U, T} (I32, in [0, E)), dst {N, U, T} (F32), U1 == 1 or U1 == U;
     g = MUL_MAT_ID(gate, X, ids), u = MUL_MAT_ID(up, X, ids),
     dst = act(g) * u, act = silu (iparams[0] = 0) or gelu (iparams[0] = 1).
   Decomposition: two MUL_MAT_ID nodes, SILU/GELU, MUL. */
#define SY_NAMED_MOE_FUSED_UP_GATE "moe.fused_up_gate"
#define SY_NAMED_MOE_FUSED_UP_GATE_VERSION 1u

#endif /* SWITCHYARD_NAMED_OPS_H */
