#include "ops/ops.hpp"
#include "ops/rowdot.hpp"
#include "quant/blocks.cuh"
#include "switchyard/ops.h"

namespace sy::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

struct ColumnPlace {
    int64_t weight_offset;  // bytes from w.data
    int64_t x_row;
    char* out;  // dst element of n = 0
};

// nullopt-like: weight_offset < 0 means the slot has no product: its expert id is SY_ID_NONE
// (out set: the slot's dst is zero) or out of range (out null; already reported).
__device__ inline ColumnPlace place_column(const TensorDesc& w, const RowDotColumns& c,
                                           const TensorDesc& dst, int64_t col, int* error_word,
                                           int error_code) {
    ColumnPlace p;
    if (!c.by_expert) {
        const int64_t m = col % c.M, rest = col / c.M;
        const int64_t b2 = rest % c.B2, b3 = rest / c.B2;
        p.weight_offset = (b2 / c.r2) * w.nb[2] + (b3 / c.r3) * w.nb[3];
        p.x_row = col;
        p.out = dst.data + m * dst.nb[1] + b2 * dst.nb[2] + b3 * dst.nb[3];
        return p;
    }
    const int64_t u = col % c.U, t = col / c.U;
    const int32_t e =
        *reinterpret_cast<const int32_t*>(c.ids.data + u * c.ids.nb[0] + t * c.ids.nb[1]);
    p.out = dst.data + u * dst.nb[1] + t * dst.nb[2];
    if (e == SY_ID_NONE) {
        p.weight_offset = -1;
        return p;
    }
    if (e < 0 || e >= c.E) {
        if (threadIdx.x % 32 == 0) report_bad_index(error_word, error_code);
        p.weight_offset = -1;
        p.out = nullptr;
        return p;
    }
    p.weight_offset = e * w.nb[2];
    p.x_row = u % c.U1 + c.U1 * t;
    return p;
}

template <int Type>
__global__ void rowdot_blocks_kernel(TensorDesc w, const ActBlock* x, RowDotColumns cols,
                                     TensorDesc dst, int* error_word, int error_code) {
    const int lane = threadIdx.x % 32;
    const int64_t n = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (n >= w.ne[1]) return;
    const int64_t subs = w.ne[0] / 32;
    for (int64_t col = blockIdx.y; col < cols.count; col += gridDim.y) {
        const ColumnPlace p = place_column(w, cols, dst, col, error_word, error_code);
        if (p.weight_offset < 0) {
            if (p.out != nullptr && lane == 0)
                *reinterpret_cast<float*>(p.out + n * dst.nb[0]) = 0.0f;
            continue;
        }
        const auto* row = reinterpret_cast<const uint8_t*>(w.data + p.weight_offset + n * w.nb[1]);
        const ActBlock* xr = x + p.x_row * subs;
        float acc = 0.0f;
        for (int64_t s = lane; s < subs; s += 32) {
            Sub32 sub;
            decode_row_sub<Type>(row, s, sub);
            acc += dot_sub<Type>(sub, xr[s]);
        }
        acc = warp_sum(acc);
        if (lane == 0) *reinterpret_cast<float*>(p.out + n * dst.nb[0]) = acc;
    }
}

__global__ void rowdot_float_kernel(TensorDesc w, const float* x, RowDotColumns cols,
                                    TensorDesc dst, int* error_word, int error_code) {
    const int lane = threadIdx.x % 32;
    const int64_t n = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (n >= w.ne[1]) return;
    const int64_t K = w.ne[0];
    for (int64_t col = blockIdx.y; col < cols.count; col += gridDim.y) {
        const ColumnPlace p = place_column(w, cols, dst, col, error_word, error_code);
        if (p.weight_offset < 0) {
            if (p.out != nullptr && lane == 0)
                *reinterpret_cast<float*>(p.out + n * dst.nb[0]) = 0.0f;
            continue;
        }
        const char* row = w.data + p.weight_offset + n * w.nb[1];
        const float* xr = x + p.x_row * K;
        float acc = 0.0f;
        for (int64_t k = lane; k < K; k += 32) acc += load_float(w.type, row + k * w.nb[0]) * xr[k];
        acc = warp_sum(acc);
        if (lane == 0) *reinterpret_cast<float*>(p.out + n * dst.nb[0]) = acc;
    }
}

// Float weights against up to kMaxColumns columns per weight slice: a warp per weight row reads
// the row once (load_float over any strides) and keeps one sum per column. blockIdx.y is the
// batch (b2, b3); x holds F32 rows m + M * (b2 + B2 * b3), K floats each.
template <int MaxColumns>
__global__ void rowdot_float_columns_kernel(TensorDesc w, const float* x, int64_t M, int64_t B2,
                                            int64_t r2, int64_t r3, TensorDesc dst) {
    const int lane = threadIdx.x % 32;
    const int64_t n = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (n >= w.ne[1]) return;
    const int64_t K = w.ne[0];
    const int64_t batch = blockIdx.y, b2 = batch % B2, b3 = batch / B2;
    const char* row = w.data + (b2 / r2) * w.nb[2] + (b3 / r3) * w.nb[3] + n * w.nb[1];
    const float* xb = x + batch * M * K;
    float acc[MaxColumns] = {};
    for (int64_t k = lane; k < K; k += 32) {
        const float a = load_float(w.type, row + k * w.nb[0]);
#pragma unroll
        for (int m = 0; m < MaxColumns; ++m)
            if (m < M) acc[m] += a * xb[m * K + k];
    }
    char* out = dst.data + n * dst.nb[0] + b2 * dst.nb[2] + b3 * dst.nb[3];
#pragma unroll
    for (int m = 0; m < MaxColumns; ++m) {
        if (m >= M) break;
        const float v = warp_sum(acc[m]);
        if (lane == 0) *reinterpret_cast<float*>(out + m * dst.nb[1]) = v;
    }
}

}  // namespace

void launch_rowdot_float_columns(const OpContext& ctx, const TensorDesc& w, const float* x,
                                 int64_t M, int64_t B2, int64_t B3, int64_t r2, int64_t r3,
                                 const TensorDesc& dst) {
    if (M > kRowDotFloatColumns) throw LaunchError("row dot: too many columns for one warp");
    if (B2 * B3 > 65535) throw LaunchError("row dot: more than 65535 weight slices");
    if (M == 0 || w.ne[1] == 0 || B2 * B3 == 0) return;
    const dim3 grid(unsigned((w.ne[1] + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned(B2 * B3));
    const dim3 block(32 * kWarpsPerBlock);
    if (M <= 4)
        rowdot_float_columns_kernel<4><<<grid, block, 0, ctx.stream>>>(w, x, M, B2, r2, r3, dst);
    else
        rowdot_float_columns_kernel<kRowDotFloatColumns>
            <<<grid, block, 0, ctx.stream>>>(w, x, M, B2, r2, r3, dst);
    check_launch("matrix product (float row dot)");
}

void launch_rowdot(const OpContext& ctx, const TensorDesc& w, const void* x,
                   const RowDotColumns& cols, const TensorDesc& dst) {
    if (cols.count == 0 || w.ne[1] == 0) return;
    const dim3 grid(unsigned((w.ne[1] + kWarpsPerBlock - 1) / kWarpsPerBlock),
                    unsigned(cols.count < 65535 ? cols.count : 65535));
    const dim3 block(32 * kWarpsPerBlock);
    if (w.type == SY_TYPE_F32 || w.type == SY_TYPE_F16 || w.type == SY_TYPE_BF16) {
        rowdot_float_kernel<<<grid, block, 0, ctx.stream>>>(w, static_cast<const float*>(x), cols,
                                                            dst, ctx.error_word, ctx.error_code);
    } else {
        const bool known = with_block_type(w.type, [&](auto type_tag) {
            constexpr int Type = decltype(type_tag)::value;
            rowdot_blocks_kernel<Type><<<grid, block, 0, ctx.stream>>>(
                w, static_cast<const ActBlock*>(x), cols, dst, ctx.error_word, ctx.error_code);
        });
        if (!known) throw LaunchError("matrix product: no decoder for this weight type");
    }
    check_launch("matrix product (row dot)");
}

}  // namespace sy::cuda
