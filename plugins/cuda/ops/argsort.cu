// ARGSORT and TOP_K by rank: the rank of element i of a row is the number of elements that come
// before it in the order (greater for descending, smaller for ascending; equal values: lower
// index first), which makes the sort stable and exact without any data-dependent control flow.
// O(n^2) per row, fine for routing rows (n = experts); one block per row, the row in shared
// memory when it fits. DROP_IDS, the smart-expert-reduction step after TOP_K, is here too: one
// thread per row.
#include "ops/ops.hpp"
#include "ops/tensor.cuh"
#include "switchyard/ops.h"

namespace sy::cuda {
namespace {

constexpr int64_t kSharedRow = 12288;  // floats: 48 KiB of shared memory

__global__ void rank_sort_kernel(TensorDesc dst, TensorDesc x, bool descending, int64_t k) {
    extern __shared__ float row[];
    const int64_t r = blockIdx.x;
    const char* in = row_ptr(x, r);
    char* out = row_ptr(dst, r);
    const int64_t n = x.ne[0];
    const bool cached = n <= kSharedRow;
    if (cached)
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
            row[j] = *reinterpret_cast<const float*>(in + j * x.nb[0]);
    __syncthreads();
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = cached ? row[i] : *reinterpret_cast<const float*>(in + i * x.nb[0]);
        int64_t rank = 0;
        for (int64_t j = 0; j < n; ++j) {
            const float u = cached ? row[j] : *reinterpret_cast<const float*>(in + j * x.nb[0]);
            const bool before = descending ? u > v : u < v;
            rank += before || (u == v && j < i);
        }
        if (rank < k) *reinterpret_cast<int32_t*>(out + rank * dst.nb[0]) = int32_t(i);
    }
}

void launch_rank_sort(const OpContext& ctx, const sy_node& node, bool descending, int64_t k,
                      const char* name) {
    const TensorDesc dst = desc_of(*node.dst);
    const TensorDesc x = desc_of(*node.src[0]);
    const size_t shared = x.ne[0] <= kSharedRow ? size_t(x.ne[0]) * sizeof(float) : 0;
    rank_sort_kernel<<<unsigned(nrows(x)), kThreads, shared, ctx.stream>>>(dst, x, descending, k);
    check_launch(name);
}

__global__ void drop_ids_kernel(TensorDesc dst, TensorDesc ids, TensorDesc values, int64_t rows,
                                int64_t kept, float threshold) {
    const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const char* in = row_ptr(ids, r);
    const char* v = row_ptr(values, r);
    char* out = row_ptr(dst, r);
    const float first = *reinterpret_cast<const float*>(v);
    for (int64_t j = 0; j < dst.ne[0]; ++j) {
        const float value = *reinterpret_cast<const float*>(v + j * values.nb[0]);
        const bool keep = j < kept || value > threshold * first;
        *reinterpret_cast<int32_t*>(out + j * dst.nb[0]) =
            keep ? *reinterpret_cast<const int32_t*>(in + j * ids.nb[0]) : SY_ID_NONE;
    }
}

}  // namespace

void launch_drop_ids(const OpContext& ctx, const sy_node& node) {
    const TensorDesc dst = desc_of(*node.dst);
    const int64_t rows = nrows(dst);
    const unsigned blocks = unsigned((rows + kThreads - 1) / kThreads);
    drop_ids_kernel<<<blocks, kThreads, 0, ctx.stream>>>(
        dst, desc_of(*node.src[0]), desc_of(*node.src[1]), rows, node.iparams[0], node.fparams[0]);
    check_launch("drop_ids");
}

void launch_argsort(const OpContext& ctx, const sy_node& node) {
    launch_rank_sort(ctx, node, node.iparams[0] == 1, node.src[0]->ne[0], "argsort");
}

void launch_top_k(const OpContext& ctx, const sy_node& node) {
    launch_rank_sort(ctx, node, true, node.dst->ne[0], "top_k");
}

}  // namespace sy::cuda
