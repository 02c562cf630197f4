// MUL_MAT: dst {N, M, B2, B3} = A {K, N, A2, A3} (rows) times B {K, M, B2, B3} (rows), weights
// broadcast over dims 2-3.
//
// Three paths:
//   * block-quantized A with at most kRowDotColumns columns per weight slice (M; token
//     generation, also batched over heads): B quantized to 8-bit blocks on the device, one warp per
//     output element (rowdot.cu);
//   * float A of at most kRowDotFloatSliceBytes per slice with at most kRowDotFloatColumns
//     columns (the attention's products with the cache at generation): a warp per row of A,
//     all columns at once (rowdot.cu);
//   * otherwise cuBLAS (cublasGemmEx, float32 accumulation, no TF32): float A in place (its rows
//     are the columns of a K x N column-major matrix, lda = nb1 / element size), B packed to A's
//     type; block-quantized A dequantized to F16 per weight slice first. dst is written in place
//     when its rows are packed floats, else through a packed temporary.
#include <climits>

#include "ops/ops.hpp"
#include "ops/rowdot.hpp"
#include "quant/blocks.cuh"
#include "quant/quant.hpp"
#include "switchyard/dtype.h"

namespace sy::cuda {
namespace {

constexpr int64_t kRowDotColumns = 8;
constexpr int64_t kRowDotFloatSliceBytes = int64_t(16) << 20;

cudaDataType_t cuda_type(int32_t type) {
    switch (type) {
        case SY_TYPE_F16: return CUDA_R_16F;
        case SY_TYPE_BF16: return CUDA_R_16BF;
        default: return CUDA_R_32F;
    }
}

int checked_int(int64_t v, const char* what) {
    if (v > INT_MAX) throw LaunchError(std::string("mul_mat: ") + what + " exceeds cuBLAS's int");
    return int(v);
}

void mul_mat_rowdot(const OpContext& ctx, const sy_node& node) {
    const TensorDesc a = desc_of(*node.src[0]);
    const TensorDesc b = desc_of(*node.src[1]);
    const TensorDesc dst = desc_of(*node.dst);
    const ActRows x = quantize_activations(ctx, b);
    RowDotColumns cols{};
    cols.count = nrows(b);
    cols.M = b.ne[1];
    cols.B2 = b.ne[2];
    cols.r2 = b.ne[2] / a.ne[2];
    cols.r3 = b.ne[3] / a.ne[3];
    launch_rowdot(ctx, a, x, cols, dst);
}

void mul_mat_float_rowdot(const OpContext& ctx, const sy_node& node) {
    const TensorDesc a = desc_of(*node.src[0]);
    const TensorDesc b = desc_of(*node.src[1]);
    const TensorDesc dst = desc_of(*node.dst);
    auto* x = static_cast<float*>(ctx.scratch->take(size_t(nelements(b)) * sizeof(float)));
    convert_tensor(ctx, packed_desc(x, SY_TYPE_F32, b.ne), b);
    launch_rowdot_float_columns(ctx, a, x, b.ne[1], b.ne[2], b.ne[3], b.ne[2] / a.ne[2],
                                b.ne[3] / a.ne[3], dst);
}

void mul_mat_cublas(const OpContext& ctx, const sy_node& node) {
    const TensorDesc a = desc_of(*node.src[0]);
    const TensorDesc b = desc_of(*node.src[1]);
    const TensorDesc dst = desc_of(*node.dst);
    const int64_t K = a.ne[0], N = a.ne[1], M = b.ne[1];
    const bool blocks = sy_dtype_info(a.type).block_size > 1;
    // The type cuBLAS multiplies: A's own, or F16 for dequantized blocks.
    const int32_t gemm_type = blocks ? SY_TYPE_F16 : a.type;
    const int64_t es = sy_dtype_info(gemm_type).type_size;

    // B packed in the GEMM type: column m of batch (b2, b3) at K * (m + M * (b2 + B2 * b3)).
    void* b_packed = ctx.scratch->take(size_t(K * nrows(b) * es));
    convert_tensor(ctx, packed_desc(b_packed, gemm_type, b.ne), b);

    // A usable in place: float rows at a whole-element stride of at least K.
    const bool a_in_place = !blocks && a.nb[1] % es == 0 && a.nb[1] / es >= K;
    void* a_slice = nullptr;
    if (!a_in_place) a_slice = ctx.scratch->take(size_t(K * N * es));

    const bool dst_in_place = dst.nb[0] == 4 && dst.nb[1] % 4 == 0 && dst.nb[1] / 4 >= N;
    float* c_packed = nullptr;
    if (!dst_in_place) c_packed = static_cast<float*>(ctx.scratch->take(size_t(N * nrows(b) * 4)));

    const int64_t r2 = b.ne[2] / a.ne[2], r3 = b.ne[3] / a.ne[3];
    const float alpha = 1.0f, beta = 0.0f;
    int64_t loaded = -1;  // the weight slice a_slice holds
    for (int64_t b3 = 0; b3 < b.ne[3]; ++b3) {
        for (int64_t b2 = 0; b2 < b.ne[2]; ++b2) {
            const int64_t a2 = b2 / r2, a3 = b3 / r3;
            const char* a_base = a.data + a2 * a.nb[2] + a3 * a.nb[3];
            const void* a_ptr = a_base;
            int64_t lda = a_in_place ? a.nb[1] / es : K;
            if (!a_in_place) {
                if (loaded != a2 + a.ne[2] * a3) {
                    if (blocks) {
                        dequantize_rows_f16(ctx, a.type, a_base, a.nb[1], N, K, a_slice);
                    } else {
                        TensorDesc slice = a;
                        slice.data = const_cast<char*>(a_base);
                        slice.ne[2] = slice.ne[3] = 1;
                        const int64_t ne[4] = {K, N, 1, 1};
                        convert_tensor(ctx, packed_desc(a_slice, gemm_type, ne), slice);
                    }
                    loaded = a2 + a.ne[2] * a3;
                }
                a_ptr = a_slice;
            }
            const int64_t batch = b2 + b.ne[2] * b3;
            const char* b_ptr = static_cast<const char*>(b_packed) + batch * K * M * es;
            void* c_ptr = dst_in_place ? static_cast<void*>(dst.data + b2 * dst.nb[2] + b3 * dst.nb[3])
                                       : static_cast<void*>(c_packed + batch * N * M);
            const int64_t ldc = dst_in_place ? dst.nb[1] / 4 : N;
            check_cublas(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, checked_int(N, "N"),
                                      checked_int(M, "M"), checked_int(K, "K"), &alpha, a_ptr,
                                      cuda_type(gemm_type), checked_int(lda, "lda"), b_ptr,
                                      cuda_type(gemm_type), checked_int(K, "K"), &beta, c_ptr,
                                      CUDA_R_32F, checked_int(ldc, "ldc"), CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT),
                         "mul_mat: cublasGemmEx");
        }
    }
    if (!dst_in_place) {
        const int64_t ne[4] = {N, M, b.ne[2], b.ne[3]};
        convert_tensor(ctx, dst, packed_desc(c_packed, SY_TYPE_F32, ne));
    }
}

__global__ void zero_kernel(TensorDesc dst, int64_t n) {
    for (int64_t i = global_thread(); i < n; i += grid_threads())
        *reinterpret_cast<float*>(at(dst, unravel(dst, i))) = 0.0f;
}

}  // namespace

void launch_mul_mat(const OpContext& ctx, const sy_node& node) {
    const sy_tensor& a = *node.src[0];
    if (a.ne[0] == 0) {  // an empty sum
        const TensorDesc dst = desc_of(*node.dst);
        zero_kernel<<<grid_for(nelements(dst)), kThreads, 0, ctx.stream>>>(dst, nelements(dst));
        check_launch("mul_mat (K = 0)");
        return;
    }
    // Columns per weight slice: the tokens of a generation step (times the heads where the
    // "weights" are the KV cache). Batched slices (per-head weights) launch once either way.
    const sy_tensor& b = *node.src[1];
    const int64_t M = b.ne[1];
    if (sy_dtype_info(a.type).block_size > 1) {
        if (M <= kRowDotColumns)  // the row dots loop over any number of slices
            mul_mat_rowdot(ctx, node);
        else
            mul_mat_cublas(ctx, node);
        return;
    }
    // Float A with few columns and a small slice: mostly the attention's products with the KV
    // cache, whose shape changes every token, so cuBLAS would choose a kernel for a new shape
    // (host time) each time. Large float weights keep cuBLAS's bandwidth.
    const int64_t slice_bytes = a.ne[1] * a.nb[1];
    if (M <= kRowDotFloatColumns && slice_bytes <= kRowDotFloatSliceBytes &&
        b.ne[2] * b.ne[3] <= 65535)
        mul_mat_float_rowdot(ctx, node);
    else
        mul_mat_cublas(ctx, node);
}

}  // namespace sy::cuda
