// OpenBLAS's cblas_sgemm (and cblas_sbgemm where the library was built with bfloat16), through
// dlsym like the oneDNN engine. OpenBLAS keeps its own threads; openblas_set_num_threads sets
// how many.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "engine.hpp"

namespace sy::blas {

std::string openblas_library() {
    const char* env = std::getenv("SWITCHYARD_BLAS_OPENBLAS_LIB");
    return env && *env ? env : "libopenblas.so.0";
}

namespace {

// CBLAS's enum values (cblas.h): row major, no transpose, transpose.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                       float, float*, int);
using Sbgemm = void (*)(int, int, int, int, int, int, float, const uint16_t*, int, const uint16_t*,
                        int, float, float*, int);
using SetThreads = void (*)(int);
using GetConfig = const char* (*)();

class OpenBlas final : public Engine {
  public:
    OpenBlas(void* lib, Sgemm sgemm, Sbgemm sbgemm, SetThreads threads, GetConfig config)
        : lib_(lib), sgemm_(sgemm), sbgemm_(sbgemm), set_threads_(threads) {
        version_ = std::string("OpenBLAS") + (config ? std::string(" ") + config() : "");
    }
    ~OpenBlas() override { dlclose(lib_); }

    const char* name() const override { return "openblas"; }
    std::string version() const override { return version_; }
    // cblas_sbgemm counts only where the CPU multiplies bf16 natively (its generic kernel is
    // slower than sgemm).
    bool has_bf16() const override {
        return sbgemm_ != nullptr && __builtin_cpu_supports("avx512bf16");
    }
    void set_threads(int threads) override {
        std::lock_guard lock(mutex_);
        if (set_threads_) set_threads_(threads);
    }

    void gemm(const Gemm& g) override {
        constexpr int64_t kMax = 0x7fffffff;  // the LP64 interface's int
        if (g.M > kMax || g.N > kMax || g.K > kMax || g.lda > kMax || g.ldw > kMax || g.ldc > kMax)
            throw std::runtime_error("OpenBLAS: product " + std::to_string(g.M) + " x " +
                                     std::to_string(g.N) + " x " + std::to_string(g.K) + " (lda " +
                                     std::to_string(g.lda) + ", ldw " + std::to_string(g.ldw) +
                                     ", ldc " + std::to_string(g.ldc) +
                                     ") exceeds its 32-bit interface");
        std::lock_guard lock(mutex_);
        if (g.type == GemmType::bf16) {
            if (!sbgemm_) throw std::runtime_error("OpenBLAS: this build has no cblas_sbgemm");
            sbgemm_(kRowMajor, kNoTrans, kTrans, int(g.M), int(g.N), int(g.K), 1.0f,
                    static_cast<const uint16_t*>(g.a), int(g.lda),
                    static_cast<const uint16_t*>(g.w), int(g.ldw), 0.0f, g.c, int(g.ldc));
            return;
        }
        sgemm_(kRowMajor, kNoTrans, kTrans, int(g.M), int(g.N), int(g.K), 1.0f,
               static_cast<const float*>(g.a), int(g.lda), static_cast<const float*>(g.w),
               int(g.ldw), 0.0f, g.c, int(g.ldc));
    }

  private:
    void* lib_;
    Sgemm sgemm_;
    Sbgemm sbgemm_;
    SetThreads set_threads_;
    std::string version_;
    std::mutex mutex_;
};

}  // namespace

std::unique_ptr<Engine> load_openblas(std::string* why) {
    const std::string file = openblas_library();
    void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        const char* e = dlerror();
        *why = "cannot load " + file + ": " + (e ? e : "unknown error");
        return nullptr;
    }
    auto sgemm = reinterpret_cast<Sgemm>(dlsym(lib, "cblas_sgemm"));
    if (!sgemm) {
        dlclose(lib);
        *why = file + " lacks cblas_sgemm";
        return nullptr;
    }
    return std::make_unique<OpenBlas>(
        lib, sgemm, reinterpret_cast<Sbgemm>(dlsym(lib, "cblas_sbgemm")),
        reinterpret_cast<SetThreads>(dlsym(lib, "openblas_set_num_threads")),
        reinterpret_cast<GetConfig>(dlsym(lib, "openblas_get_config")));
}

}  // namespace sy::blas
