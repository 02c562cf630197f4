// CPY (float types, converting), CONT (same type, packed dst) and CONCAT: data movement with any
// strides. Same-type copies move element bytes unchanged, so every plain type (F64, I8 ... I64)
// and NaN payloads pass through exactly.
#include "ops/ops.hpp"
#include "ops/tensor.cuh"
#include "switchyard/dtype.h"

namespace sy::cuda {
namespace {

__device__ inline void copy_element(char* dst, const char* src, int size) {
    switch (size) {
        case 1: *dst = *src; break;
        case 2: *reinterpret_cast<uint16_t*>(dst) = *reinterpret_cast<const uint16_t*>(src); break;
        case 4: *reinterpret_cast<uint32_t*>(dst) = *reinterpret_cast<const uint32_t*>(src); break;
        default: *reinterpret_cast<uint64_t*>(dst) = *reinterpret_cast<const uint64_t*>(src); break;
    }
}

__global__ void copy_kernel(TensorDesc dst, TensorDesc src, int element_size, int64_t n) {
    const bool same = dst.type == src.type;
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        const Coord c = unravel(dst, i);
        if (same)
            copy_element(at(dst, c), at(src, c), element_size);
        else
            store_float(dst.type, at(dst, c), load_float(src.type, at(src, c)));
    }
}

__global__ void concat_kernel(TensorDesc dst, TensorDesc a, TensorDesc b, int dim,
                              int element_size, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads()) {
        Coord c = unravel(dst, i);
        char* out = at(dst, c);
        if (c.i[dim] < a.ne[dim]) {
            copy_element(out, at(a, c), element_size);
        } else {
            c.i[dim] -= a.ne[dim];
            copy_element(out, at(b, c), element_size);
        }
    }
}

void launch_copy(const OpContext& ctx, const sy_node& node, const char* name) {
    const TensorDesc dst = desc_of(*node.dst);
    const int64_t n = nelements(dst);
    copy_kernel<<<grid_for(n), kThreads, 0, ctx.stream>>>(
        dst, desc_of(*node.src[0]), int(sy_dtype_info(node.dst->type).type_size), n);
    check_launch(name);
}

}  // namespace

void launch_cpy(const OpContext& ctx, const sy_node& node) {
    launch_copy(ctx, node, "cpy");
}

void launch_cont(const OpContext& ctx, const sy_node& node) {
    launch_copy(ctx, node, "cont");
}

void launch_concat(const OpContext& ctx, const sy_node& node) {
    const TensorDesc dst = desc_of(*node.dst);
    const int64_t n = nelements(dst);
    concat_kernel<<<grid_for(n), kThreads, 0, ctx.stream>>>(
        dst, desc_of(*node.src[0]), desc_of(*node.src[1]), node.iparams[0],
        int(sy_dtype_info(node.dst->type).type_size), n);
    check_launch("concat");
}

}  // namespace sy::cuda

namespace sy::cuda {

TensorDesc packed_desc(void* data, int32_t type, const int64_t ne[4]) {
    TensorDesc d{static_cast<char*>(data), type, {ne[0], ne[1], ne[2], ne[3]}, {}};
    d.nb[0] = sy_dtype_info(type).type_size;
    for (int i = 1; i < 4; ++i) d.nb[i] = d.nb[i - 1] * ne[i - 1];
    return d;
}

__global__ void empty_kernel() {}

void launch_empty_kernel(cudaStream_t stream) {
    empty_kernel<<<1, 1, 0, stream>>>();
}

void convert_tensor(const OpContext& ctx, const TensorDesc& dst, const TensorDesc& src) {
    const int64_t n = nelements(dst);
    if (n == 0) return;
    copy_kernel<<<grid_for(n), kThreads, 0, ctx.stream>>>(
        dst, src, int(sy_dtype_info(dst.type).type_size), n);
    check_launch("convert");
}

}  // namespace sy::cuda
