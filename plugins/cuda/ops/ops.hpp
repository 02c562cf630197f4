// One launcher per built-in op, each in ops/<op>.cu (binary.cu holds add, mul and div, unary.cu
// scale, silu, gelu and sigmoid, copy.cu cpy, cont and concat, argsort.cu argsort, top_k and
// drop_ids). Each
// enqueues its kernels on ctx.stream for a node that the op-contract checks accepted and whose
// tensors all live in this device's buffers, and throws LaunchError when CUDA or cuBLAS refuses.
#pragma once

#include <stdexcept>
#include <string>

#include "ops/op_context.hpp"
#include "ops/tensor_desc.hpp"
#include "switchyard/plugin.h"

namespace sy::cuda {

struct LaunchError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Throws LaunchError naming `what` if the last launch (or an earlier asynchronous error) failed.
void check_launch(const char* what);
void check_cublas(int status, const char* what);

using OpLauncher = void (*)(const OpContext&, const sy_node&);

void launch_add(const OpContext& ctx, const sy_node& node);
void launch_mul(const OpContext& ctx, const sy_node& node);
void launch_div(const OpContext& ctx, const sy_node& node);
void launch_scale(const OpContext& ctx, const sy_node& node);
void launch_silu(const OpContext& ctx, const sy_node& node);
void launch_gelu(const OpContext& ctx, const sy_node& node);
void launch_sigmoid(const OpContext& ctx, const sy_node& node);
void launch_cpy(const OpContext& ctx, const sy_node& node);
void launch_cont(const OpContext& ctx, const sy_node& node);
void launch_concat(const OpContext& ctx, const sy_node& node);
void launch_rms_norm(const OpContext& ctx, const sy_node& node);
void launch_softmax(const OpContext& ctx, const sy_node& node);
void launch_sum_rows(const OpContext& ctx, const sy_node& node);
void launch_rope(const OpContext& ctx, const sy_node& node);
void launch_argsort(const OpContext& ctx, const sy_node& node);
void launch_top_k(const OpContext& ctx, const sy_node& node);
void launch_drop_ids(const OpContext& ctx, const sy_node& node);
void launch_get_rows(const OpContext& ctx, const sy_node& node);
void launch_mul_mat(const OpContext& ctx, const sy_node& node);
void launch_mul_mat_id(const OpContext& ctx, const sy_node& node);

// moe.fused_up_gate v1 (named_ops.h; moe_fused.cu).
bool is_moe_fused_up_gate(const sy_node& node);
void launch_moe_fused_up_gate(const OpContext& ctx, const sy_node& node);

// Helpers the matrix products share (copy.cu). A packed descriptor of `type` and shape ne at
// `data`; convert_tensor copies src into dst elementwise (same shape), converting float types.
TensorDesc packed_desc(void* data, int32_t type, const int64_t ne[4]);
void convert_tensor(const OpContext& ctx, const TensorDesc& dst, const TensorDesc& src);

// One empty kernel (calibrates the launch overhead).
void launch_empty_kernel(cudaStream_t stream);

// The launcher of a built-in op id, or nullptr.
OpLauncher op_launcher(int32_t op);

}  // namespace sy::cuda
