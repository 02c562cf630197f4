// One function per built-in op, each in ops/<op>.cpp. They run a node that validate_node has
// accepted (types from the capability table, shapes, parameters and index ranges all checked),
// so they only compute; parallel work goes through the pool. dst is never empty, but a source
// with zero elements may have NULL data and must not be addressed.
#pragma once

#include "switchyard/plugin.h"

namespace sy::cpu {

class ThreadPool;
class InterleavedWeights;

// Arithmetic kernels, built once per instruction-set variant (simd.hpp).
void compute_add(ThreadPool& pool, const sy_node& node);
void compute_mul(ThreadPool& pool, const sy_node& node);
void compute_div(ThreadPool& pool, const sy_node& node);
void compute_scale(ThreadPool& pool, const sy_node& node);
void compute_rms_norm(ThreadPool& pool, const sy_node& node);
// The matrix products read a weight's interleaved copy where `interleaved` (the option repack; null
// when off) keeps or makes one (interleaved_weights.hpp).
void compute_mul_mat(ThreadPool& pool, const sy_node& node, InterleavedWeights* interleaved);
void compute_mul_mat_id(ThreadPool& pool, const sy_node& node, InterleavedWeights* interleaved);
// The named op moe.fused_up_gate v1 (named_ops.h), beside MUL_MAT_ID in ops/mul_mat_id.cpp.
void compute_moe_fused_up_gate(ThreadPool& pool, const sy_node& node,
                               InterleavedWeights* interleaved);
// The named ops attn.flash v1 and attn.mla v1 (ops/flash_attn.cpp).
void compute_attention(ThreadPool& pool, const sy_node& node);
void compute_softmax(ThreadPool& pool, const sy_node& node);
void compute_silu(ThreadPool& pool, const sy_node& node);
void compute_gelu(ThreadPool& pool, const sy_node& node);
void compute_sigmoid(ThreadPool& pool, const sy_node& node);
void compute_sum_rows(ThreadPool& pool, const sy_node& node);

// Data movement and index ops, built once.
void compute_get_rows(ThreadPool& pool, const sy_node& node);
void compute_rope(ThreadPool& pool, const sy_node& node);
void compute_argsort(ThreadPool& pool, const sy_node& node);
void compute_top_k(ThreadPool& pool, const sy_node& node);
void compute_drop_ids(ThreadPool& pool, const sy_node& node);
void compute_concat(ThreadPool& pool, const sy_node& node);
void compute_cpy(ThreadPool& pool, const sy_node& node);
void compute_cont(ThreadPool& pool, const sy_node& node);

}  // namespace sy::cpu
