// oneDNN's matmul primitive, ABI 2.x (Debian 12's libdnnl2), called through dlsym so that the
// plugin has no link-time dependency on the library. The function pointer types come from
// oneDNN's own header, so a signature mismatch is a compile error, not a crash.
//
// Primitives are cached by shape, strides and type (LRU, kMaxPrimitives): a prompt's products
// repeat every layer and every ubatch. Each cached entry holds its three memory objects, whose
// data handles are set per call (the operands live wherever the host put them).
#include <dlfcn.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <array>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "engine.hpp"

namespace sy::blas {

std::string onednn_library() {
    const char* env = std::getenv("SWITCHYARD_BLAS_ONEDNN_LIB");
    return env && *env ? env : "libdnnl.so.2";
}

namespace {

struct Api {
#define SY_DNNL_FN(name) decltype(&::name) name = nullptr
    SY_DNNL_FN(dnnl_version);
    SY_DNNL_FN(dnnl_engine_create);
    SY_DNNL_FN(dnnl_engine_destroy);
    SY_DNNL_FN(dnnl_stream_create);
    SY_DNNL_FN(dnnl_stream_wait);
    SY_DNNL_FN(dnnl_stream_destroy);
    SY_DNNL_FN(dnnl_memory_desc_init_by_strides);
    SY_DNNL_FN(dnnl_matmul_desc_init);
    SY_DNNL_FN(dnnl_primitive_desc_create);
    SY_DNNL_FN(dnnl_primitive_desc_destroy);
    SY_DNNL_FN(dnnl_primitive_desc_query);
    SY_DNNL_FN(dnnl_primitive_create);
    SY_DNNL_FN(dnnl_primitive_destroy);
    SY_DNNL_FN(dnnl_memory_create);
    SY_DNNL_FN(dnnl_memory_destroy);
    SY_DNNL_FN(dnnl_memory_set_data_handle);
    SY_DNNL_FN(dnnl_primitive_execute);
    SY_DNNL_FN(dnnl_memory_desc_init_by_tag);
    SY_DNNL_FN(dnnl_memory_desc_get_size);
    SY_DNNL_FN(dnnl_primitive_desc_query_md);
    SY_DNNL_FN(dnnl_reorder_primitive_desc_create);
#undef SY_DNNL_FN
};

const char* status_text(dnnl_status_t s) {
    switch (s) {
        case dnnl_success: return "success";
        case dnnl_out_of_memory: return "out of memory";
        case dnnl_invalid_arguments: return "invalid arguments";
        case dnnl_unimplemented: return "no implementation for this shape and type";
        case dnnl_iterator_ends: return "iterator ends";
        case dnnl_runtime_error: return "runtime error";
        case dnnl_not_required: return "not required";
        default: return "unknown status";
    }
}

void check(dnnl_status_t s, const char* what) {
    if (s != dnnl_success)
        throw std::runtime_error(std::string("oneDNN ") + what + ": " + status_text(s));
}

// A primitive is prepared for a thread count (oneDNN reads it when the descriptor is made), so
// the count is part of the key.
struct Key {
    int64_t M, N, K, lda, ldw, ldc;
    int type, threads;
    bool packed;
    bool operator<(const Key& o) const {
        return std::tie(M, N, K, lda, ldw, ldc, type, threads, packed) <
               std::tie(o.M, o.N, o.K, o.lda, o.ldw, o.ldc, o.type, o.threads, o.packed);
    }
};

std::string shape_text(const Gemm& g) {
    return std::to_string(g.M) + " x " + std::to_string(g.N) + " x " + std::to_string(g.K) +
           " (M x N x K; lda " + std::to_string(g.lda) + ", ldw " + std::to_string(g.ldw) +
           ", ldc " + std::to_string(g.ldc) + ", " + (g.type == GemmType::bf16 ? "bf16" : "f32") +
           ")";
}

class OneDnn final : public Engine {
  public:
    OneDnn(void* lib, const Api& api) : lib_(lib), api_(api) {
        check(api_.dnnl_engine_create(&engine_, dnnl_cpu, 0), "engine_create");
        if (dnnl_status_t s = api_.dnnl_stream_create(&stream_, engine_, dnnl_stream_default_flags);
            s != dnnl_success) {
            api_.dnnl_engine_destroy(engine_);
            check(s, "stream_create");
        }
        try {
            describe();
        } catch (...) {
            api_.dnnl_stream_destroy(stream_);
            api_.dnnl_engine_destroy(engine_);
            throw;
        }
    }

    // The version and the implementations oneDNN picks for each operand type.
    void describe() {
        const dnnl_version_t* v = api_.dnnl_version();
        version_ = "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                   std::to_string(v->patch);
        // A product whose only implementation is oneDNN's reference code would be far slower
        // than the CPU plugin; bf16 counts as available only with a JIT (brgemm/gemm) kernel.
        // A JIT kernel alone is not enough: without AVX512-BF16 (or AMX) oneDNN emulates bf16
        // products, slower than f32 ones.
        const std::string f32 = implementation(GemmType::f32);
        const std::string bf16_impl = implementation(GemmType::bf16);
        const bool native =
            __builtin_cpu_supports("avx512bf16") || bf16_impl.find("amx") != std::string::npos;
        has_bf16_ = native && !bf16_impl.empty() && bf16_impl.find("ref") == std::string::npos;
        version_ += " (f32: " + f32 + ", bf16: " + (bf16_impl.empty() ? "none" : bf16_impl) +
                    (has_bf16_ ? "" : ", not used") + ")";
    }

    ~OneDnn() override {
        for (auto& [key, e] : entries_) destroy(e);
        api_.dnnl_stream_destroy(stream_);
        api_.dnnl_engine_destroy(engine_);
        // The library stays loaded (RTLD_NODELETE): its OpenMP threads outlive this object.
        dlclose(lib_);
    }

    const char* name() const override { return "onednn"; }
    std::string version() const override { return version_; }
    bool has_bf16() const override { return has_bf16_; }
    void set_threads(int threads) override { threads_ = threads; }

    void gemm(const Gemm& g) override {
        std::lock_guard lock(mutex_);
        // oneDNN's OpenMP runtime takes its thread count from the calling thread's setting, both
        // when a primitive is prepared and when it runs; the caller's setting is given back.
        const int saved = omp_get_max_threads();
        omp_set_num_threads(threads_);
        try {
            Entry& e = entry(g);
            check(api_.dnnl_memory_set_data_handle(e.src, const_cast<void*>(g.a)), "set src");
            check(api_.dnnl_memory_set_data_handle(e.weights, const_cast<void*>(g.w)),
                  "set weights");
            check(api_.dnnl_memory_set_data_handle(e.dst, g.c), "set dst");
            const dnnl_exec_arg_t args[] = {
                {DNNL_ARG_SRC, e.src}, {DNNL_ARG_WEIGHTS, e.weights}, {DNNL_ARG_DST, e.dst}};
            check(api_.dnnl_primitive_execute(e.primitive, stream_, 3, args), "execute");
            check(api_.dnnl_stream_wait(stream_), "stream wait");
        } catch (const std::runtime_error& e) {
            omp_set_num_threads(saved);
            throw std::runtime_error(std::string(e.what()) + ", product " + shape_text(g));
        }
        omp_set_num_threads(saved);
    }

    size_t cached_products() const override {
        std::lock_guard lock(mutex_);
        return entries_.size();
    }

    size_t packed_weight_bytes(GemmType t, int64_t N, int64_t K) override {
        std::lock_guard lock(mutex_);
        const dnnl_memory_desc_t* md = weight_layout(t, N, K);
        return md ? api_.dnnl_memory_desc_get_size(md) : 0;
    }

    void pack_weights(GemmType t, int64_t N, int64_t K, const void* w, int64_t ldw,
                      void* dst) override {
        std::lock_guard lock(mutex_);
        const dnnl_memory_desc_t* to = weight_layout(t, N, K);
        if (!to) throw std::runtime_error("oneDNN has no packed layout for these weights");
        const int saved = omp_get_max_threads();
        omp_set_num_threads(threads_);
        dnnl_primitive_desc_t pd = nullptr;
        dnnl_primitive_t reorder = nullptr;
        dnnl_memory_t src = nullptr, out = nullptr;
        try {
            const dnnl_memory_desc_t from = plain_weights(t, N, K, ldw);
            check(
                api_.dnnl_reorder_primitive_desc_create(&pd, &from, engine_, to, engine_, nullptr),
                "reorder primitive_desc_create");
            check(api_.dnnl_primitive_create(&reorder, pd), "reorder primitive_create");
            check(api_.dnnl_memory_create(&src, &from, engine_, const_cast<void*>(w)), "memory");
            check(api_.dnnl_memory_create(&out, to, engine_, dst), "memory");
            const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, out}};
            check(api_.dnnl_primitive_execute(reorder, stream_, 2, args), "reorder execute");
            check(api_.dnnl_stream_wait(stream_), "stream wait");
        } catch (const std::runtime_error& e) {
            release_reorder(pd, reorder, src, out);
            omp_set_num_threads(saved);
            throw std::runtime_error(std::string(e.what()) + ", packing weights " +
                                     std::to_string(N) + " x " + std::to_string(K));
        }
        release_reorder(pd, reorder, src, out);
        omp_set_num_threads(saved);
    }

  private:
    static constexpr size_t kMaxPrimitives = 256;

    struct Entry {
        dnnl_primitive_t primitive = nullptr;
        dnnl_memory_t src = nullptr, weights = nullptr, dst = nullptr;
        std::list<Key>::iterator lru;
    };

    void destroy(Entry& e) {
        if (e.src) api_.dnnl_memory_destroy(e.src);
        if (e.weights) api_.dnnl_memory_destroy(e.weights);
        if (e.dst) api_.dnnl_memory_destroy(e.dst);
        if (e.primitive) api_.dnnl_primitive_destroy(e.primitive);
    }

    struct Descs {
        dnnl_memory_desc_t src, weights, dst;
    };

    static dnnl_data_type_t dnnl_type(GemmType t) {
        return t == GemmType::bf16 ? dnnl_bf16 : dnnl_f32;
    }

    // W as oneDNN sees it: {K, N} with N rows of K values (the transpose of our rows).
    dnnl_memory_desc_t plain_weights(GemmType t, int64_t N, int64_t K, int64_t ldw) const {
        dnnl_memory_desc_t md{};
        const dnnl_dims_t dims = {K, N}, strides = {1, ldw};
        check(api_.dnnl_memory_desc_init_by_strides(&md, 2, dims, dnnl_type(t), strides),
              "weights");
        return md;
    }

    Descs descs(const Gemm& g) {
        const dnnl_data_type_t t = dnnl_type(g.type);
        Descs d{};
        const dnnl_dims_t src_dims = {g.M, g.K}, src_strides = {g.lda, 1};
        const dnnl_dims_t dst_dims = {g.M, g.N}, dst_strides = {g.ldc, 1};
        check(api_.dnnl_memory_desc_init_by_strides(&d.src, 2, src_dims, t, src_strides), "src");
        if (g.w_packed) {
            const dnnl_memory_desc_t* md = weight_layout(g.type, g.N, g.K);
            if (!md) throw std::runtime_error("packed weights without a packed layout");
            d.weights = *md;
        } else {
            d.weights = plain_weights(g.type, g.N, g.K, g.ldw);
        }
        check(api_.dnnl_memory_desc_init_by_strides(&d.dst, 2, dst_dims, dnnl_f32, dst_strides),
              "dst");
        return d;
    }

    // The layout oneDNN's matmul prefers for weights {K, N} of type t (asked with weights of
    // any format at 64 rows: the choice does not depend on the row count, checked for 1 to 512
    // rows with oneDNN 2.6), or nullptr when it has none; kept per shape. mutex_ held.
    const dnnl_memory_desc_t* weight_layout(GemmType t, int64_t N, int64_t K) {
        const auto key = std::make_tuple(int(t), N, K);
        if (auto it = layouts_.find(key); it != layouts_.end())
            return it->second ? &*it->second : nullptr;
        std::optional<dnnl_memory_desc_t> found;
        const int saved = omp_get_max_threads();
        omp_set_num_threads(threads_);
        dnnl_memory_desc_t src{}, any{}, dst{};
        const dnnl_dims_t src_dims = {64, K}, w_dims = {K, N}, dst_dims = {64, N};
        dnnl_matmul_desc_t desc{};
        dnnl_primitive_desc_t pd = nullptr;
        if (api_.dnnl_memory_desc_init_by_tag(&src, 2, src_dims, dnnl_type(t), dnnl_ab) ==
                dnnl_success &&
            api_.dnnl_memory_desc_init_by_tag(&any, 2, w_dims, dnnl_type(t), dnnl_format_tag_any) ==
                dnnl_success &&
            api_.dnnl_memory_desc_init_by_tag(&dst, 2, dst_dims, dnnl_f32, dnnl_ab) ==
                dnnl_success &&
            api_.dnnl_matmul_desc_init(&desc, &src, &any, nullptr, &dst) == dnnl_success &&
            api_.dnnl_primitive_desc_create(&pd, &desc, nullptr, engine_, nullptr) ==
                dnnl_success) {
            if (const dnnl_memory_desc_t* md =
                    api_.dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
                md && md->format_kind == dnnl_blocked && md->format_desc.blocking.inner_nblks > 0)
                found = *md;  // a blocked layout (plain strides would gain nothing)
            api_.dnnl_primitive_desc_destroy(pd);
        }
        omp_set_num_threads(saved);
        const auto& slot = layouts_.emplace(key, found).first->second;
        return slot ? &*slot : nullptr;
    }

    void release_reorder(dnnl_primitive_desc_t pd, dnnl_primitive_t reorder, dnnl_memory_t src,
                         dnnl_memory_t out) {
        if (src) api_.dnnl_memory_destroy(src);
        if (out) api_.dnnl_memory_destroy(out);
        if (reorder) api_.dnnl_primitive_destroy(reorder);
        if (pd) api_.dnnl_primitive_desc_destroy(pd);
    }

    // The primitive descriptor of a product, or nullptr when oneDNN has no implementation.
    dnnl_primitive_desc_t make_pd(const Gemm& g, bool throw_if_none) {
        const Descs d = descs(g);
        dnnl_matmul_desc_t desc{};
        check(api_.dnnl_matmul_desc_init(&desc, &d.src, &d.weights, nullptr, &d.dst),
              "matmul_desc_init");
        dnnl_primitive_desc_t pd = nullptr;
        const dnnl_status_t s =
            api_.dnnl_primitive_desc_create(&pd, &desc, nullptr, engine_, nullptr);
        if (s == dnnl_unimplemented && !throw_if_none) return nullptr;
        check(s, "matmul primitive_desc_create");
        return pd;
    }

    std::string implementation(GemmType t) {
        Gemm g;
        g.M = 64, g.N = 64, g.K = 64, g.lda = 64, g.ldw = 64, g.ldc = 64, g.type = t;
        dnnl_primitive_desc_t pd = make_pd(g, false);
        if (!pd) return {};
        const char* impl = nullptr;
        api_.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        std::string out = impl ? impl : "?";
        api_.dnnl_primitive_desc_destroy(pd);
        return out;
    }

    Entry& entry(const Gemm& g) {
        const Key key{g.M,   g.N,         g.K,      g.lda,     g.w_packed ? 0 : g.ldw,
                      g.ldc, int(g.type), threads_, g.w_packed};
        if (auto it = entries_.find(key); it != entries_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second.lru);
            return it->second;
        }
        if (entries_.size() >= kMaxPrimitives) {
            auto oldest = entries_.find(lru_.back());
            destroy(oldest->second);
            entries_.erase(oldest);
            lru_.pop_back();
        }
        dnnl_primitive_desc_t pd = make_pd(g, true);
        Entry e;
        const dnnl_status_t s = api_.dnnl_primitive_create(&e.primitive, pd);
        api_.dnnl_primitive_desc_destroy(pd);
        check(s, "primitive_create");
        const Descs d = descs(g);
        try {
            check(api_.dnnl_memory_create(&e.src, &d.src, engine_, DNNL_MEMORY_NONE), "memory");
            check(api_.dnnl_memory_create(&e.weights, &d.weights, engine_, DNNL_MEMORY_NONE),
                  "memory");
            check(api_.dnnl_memory_create(&e.dst, &d.dst, engine_, DNNL_MEMORY_NONE), "memory");
        } catch (...) {
            destroy(e);
            throw;
        }
        lru_.push_front(key);
        e.lru = lru_.begin();
        return entries_.emplace(key, e).first->second;
    }

    void* lib_;
    Api api_;
    dnnl_engine_t engine_ = nullptr;
    dnnl_stream_t stream_ = nullptr;
    std::string version_;
    bool has_bf16_ = false;
    int threads_ = 1;

    mutable std::mutex mutex_;
    std::map<Key, Entry> entries_;
    std::map<std::tuple<int, int64_t, int64_t>, std::optional<dnnl_memory_desc_t>> layouts_;
    std::list<Key> lru_;
};

}  // namespace

std::unique_ptr<Engine> load_onednn(std::string* why) {
    const std::string file = onednn_library();
    void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        const char* e = dlerror();
        *why = "cannot load " + file + ": " + (e ? e : "unknown error");
        return nullptr;
    }
    Api api;
    bool complete = true;
    std::string missing;
    const auto resolve = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
        if (!fn) {
            complete = false;
            missing += (missing.empty() ? "" : ", ") + std::string(name);
        }
    };
#define SY_RESOLVE(name) resolve(api.name, #name)
    SY_RESOLVE(dnnl_version);
    SY_RESOLVE(dnnl_engine_create);
    SY_RESOLVE(dnnl_engine_destroy);
    SY_RESOLVE(dnnl_stream_create);
    SY_RESOLVE(dnnl_stream_wait);
    SY_RESOLVE(dnnl_stream_destroy);
    SY_RESOLVE(dnnl_memory_desc_init_by_strides);
    SY_RESOLVE(dnnl_matmul_desc_init);
    SY_RESOLVE(dnnl_primitive_desc_create);
    SY_RESOLVE(dnnl_primitive_desc_destroy);
    SY_RESOLVE(dnnl_primitive_desc_query);
    SY_RESOLVE(dnnl_primitive_create);
    SY_RESOLVE(dnnl_primitive_destroy);
    SY_RESOLVE(dnnl_memory_create);
    SY_RESOLVE(dnnl_memory_destroy);
    SY_RESOLVE(dnnl_memory_set_data_handle);
    SY_RESOLVE(dnnl_primitive_execute);
    SY_RESOLVE(dnnl_memory_desc_init_by_tag);
    SY_RESOLVE(dnnl_memory_desc_get_size);
    SY_RESOLVE(dnnl_primitive_desc_query_md);
    SY_RESOLVE(dnnl_reorder_primitive_desc_create);
#undef SY_RESOLVE
    if (!complete) {
        dlclose(lib);
        *why = file + " lacks " + missing + " (oneDNN 2.x expected)";
        return nullptr;
    }
    if (const dnnl_version_t* v = api.dnnl_version(); v == nullptr || v->major != 2) {
        dlclose(lib);
        *why = file + " is oneDNN " + (v ? std::to_string(v->major) : std::string("?")) +
               ".x; this plugin is built for the 2.x API";
        return nullptr;
    }
    try {
        return std::make_unique<OneDnn>(lib, api);
    } catch (const std::exception& e) {
        dlclose(lib);
        *why = e.what();
        return nullptr;
    }
}

}  // namespace sy::blas
