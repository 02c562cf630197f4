// The op table and the error checks every launcher uses; the scratch arena.
#include <algorithm>
#include <new>
#include <string>

#include "ops/ops.hpp"
#include "switchyard/ops.h"

namespace sy::cuda {

void check_launch(const char* what) {
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) throw LaunchError(std::string(what) + ": " + cudaGetErrorString(e));
}

void check_cublas(int status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw LaunchError(std::string(what) + ": " +
                          cublasGetStatusString(static_cast<cublasStatus_t>(status)));
}

OpLauncher op_launcher(int32_t op) {
    switch (op) {
        case SY_OP_ADD: return launch_add;
        case SY_OP_MUL: return launch_mul;
        case SY_OP_DIV: return launch_div;
        case SY_OP_SCALE: return launch_scale;
        case SY_OP_RMS_NORM: return launch_rms_norm;
        case SY_OP_MUL_MAT: return launch_mul_mat;
        case SY_OP_MUL_MAT_ID: return launch_mul_mat_id;
        case SY_OP_GET_ROWS: return launch_get_rows;
        case SY_OP_ROPE: return launch_rope;
        case SY_OP_SOFTMAX: return launch_softmax;
        case SY_OP_SILU: return launch_silu;
        case SY_OP_GELU: return launch_gelu;
        case SY_OP_SIGMOID: return launch_sigmoid;
        case SY_OP_ARGSORT: return launch_argsort;
        case SY_OP_TOP_K: return launch_top_k;
        case SY_OP_DROP_IDS: return launch_drop_ids;
        case SY_OP_SUM_ROWS: return launch_sum_rows;
        case SY_OP_CONCAT: return launch_concat;
        case SY_OP_CPY: return launch_cpy;
        case SY_OP_CONT: return launch_cont;
        default: return nullptr;
    }
}

Scratch::~Scratch() {
    if (block_) cudaFree(block_);
    for (char* old : retired_) cudaFree(old);
}

void Scratch::reset() {
    for (char* old : retired_) cudaFreeAsync(old, stream_);
    retired_.clear();
    used_ = 0;
}

void* Scratch::take(size_t bytes) {
    constexpr size_t kAlign = 256;
    bytes = (bytes + kAlign - 1) / kAlign * kAlign;
    if (used_ + bytes > capacity_) {
        if (capturing_) throw GrowthInCapture();
        // Earlier takes of this op stay valid: the old block is freed at the next reset(), in
        // stream order after the kernels that use it.
        if (block_) retired_.push_back(block_);
        ++generation_;  // even if the allocation below fails: the old block is being freed
        const size_t want = std::max(bytes, 2 * capacity_);
        block_ = nullptr;
        capacity_ = 0;
        used_ = 0;
        if (cudaMallocAsync(reinterpret_cast<void**>(&block_), want, stream_) != cudaSuccess) {
            cudaGetLastError();
            block_ = nullptr;
            throw std::bad_alloc();
        }
        capacity_ = want;
    }
    void* p = block_ + used_;
    used_ += bytes;
    return p;
}

}  // namespace sy::cuda
