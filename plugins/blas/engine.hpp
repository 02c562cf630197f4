// The GEMM engines behind the BLAS plugin: oneDNN (default) and OpenBLAS. Each is loaded at run
// time with dlopen, so that a machine without the library still loads the plugin's other engine,
// and a machine with neither gets a plugin that refuses to start with the reason (the host
// reports it and goes on without blas).
//
// One operation: C[m, n] = sum_k A[m, k] * W[n, k], "rows times rows" like MUL_MAT: A holds M
// activation rows of K values (row stride lda), W holds N weight rows of K values (row stride
// ldw) or, packed, the same matrix in the engine's own layout, C M rows of N floats (row stride
// ldc); strides in elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace sy::blas {

enum class GemmType {
    f32,   // A and W float32
    bf16,  // A and W bfloat16, accumulated in float32
};

struct Gemm {
    int64_t M = 0, N = 0, K = 0;
    GemmType type = GemmType::f32;
    const void* a = nullptr;
    int64_t lda = 0;
    const void* w = nullptr;
    int64_t ldw = 0;
    float* c = nullptr;
    int64_t ldc = 0;
    // w is in the engine's own layout (pack_weights), not rows; ldw is then unused.
    bool w_packed = false;
};

class Engine {
  public:
    virtual ~Engine() = default;
    virtual const char* name() const = 0;     // "onednn", "openblas"
    virtual std::string version() const = 0;  // library, version, ISA or configuration
    // Whether bf16 products run on a native (not reference) implementation here.
    virtual bool has_bf16() const = 0;
    virtual void set_threads(int threads) = 0;
    // Runs one product; throws std::runtime_error with the library's message on failure.
    virtual void gemm(const Gemm& g) = 0;
    // Prepared products kept for reuse (oneDNN primitives); 0 for an engine that keeps none.
    virtual size_t cached_products() const { return 0; }
    // Bytes of a weight matrix {K, N} of type t in the engine's own layout (oneDNN's blocked
    // weights, which its kernels read without packing them on every call: ~2x faster products
    // at the 16-64 rows of an expert); 0 when the engine has none (weights stay rows).
    virtual size_t packed_weight_bytes(GemmType, int64_t /*N*/, int64_t /*K*/) { return 0; }
    // Writes N weight rows of K values at w (row stride ldw, elements) into that layout at dst.
    virtual void pack_weights(GemmType, int64_t /*N*/, int64_t /*K*/, const void* /*w*/,
                              int64_t /*ldw*/, void* /*dst*/) {}
};

// The library file an engine loads: the environment variable SWITCHYARD_BLAS_ONEDNN_LIB or
// SWITCHYARD_BLAS_OPENBLAS_LIB when set (a path or a soname), else the Debian soname.
std::string onednn_library();
std::string openblas_library();

// nullptr and the reason in `why` when the library cannot be loaded or used.
std::unique_ptr<Engine> load_onednn(std::string* why);
std::unique_ptr<Engine> load_openblas(std::string* why);

}  // namespace sy::blas
