// What every op launcher gets: the device's stream, cuBLAS handle and scratch arena, and where to
// report an out-of-range index. Plain C++ (no CUDA syntax): included by host code and kernels.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "switchyard/plugin.h"

namespace sy::cuda {

// Device memory for an op's temporaries, reused from op to op. Allocation is stream-ordered
// (cudaMallocAsync / cudaFreeAsync on the device's stream), so growing it never races with a
// kernel still reading the old block.
class Scratch {
  public:
    explicit Scratch(cudaStream_t stream) : stream_(stream) {}
    ~Scratch();
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;

    // Starts a new op: everything taken before may be reused.
    void reset();
    // `bytes` of device memory, 256-byte aligned, valid until the next reset(). Throws
    // std::bad_alloc when the device has no room, GrowthInCapture when it has to grow while
    // the stream is being captured into a graph (the caller launches the nodes directly then).
    void* take(size_t bytes);
    void set_capturing(bool capturing) { capturing_ = capturing; }
    // Changes whenever the arena moves to a new block (what a captured graph's kernels address).
    uint64_t generation() const { return generation_; }

    struct GrowthInCapture : std::runtime_error {
        GrowthInCapture() : std::runtime_error("the scratch arena must grow during a capture") {}
    };

  private:
    bool capturing_ = false;
    uint64_t generation_ = 0;
    cudaStream_t stream_;
    char* block_ = nullptr;
    std::vector<char*> retired_;  // outgrown blocks, freed at the next reset()
    size_t capacity_ = 0;
    size_t used_ = 0;
};

struct OpContext {
    cudaStream_t stream;
    cublasHandle_t cublas;
    Scratch* scratch;
    int* error_word;   // device int the kernels set to error_code on a bad index
    int32_t error_code;  // 1 + the index of the node in this compute() call
};

}  // namespace sy::cuda
