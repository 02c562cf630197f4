// GEMV / GEMM benchmark of the CPU plugin's MUL_MAT per weight type.
//
//   switchyard-gemv-bench [--plugin PATH] [-t THREADS] [--bandwidth GBps] [-k K] [-n N]
//                         [--reps R] [--gemm-rows M] [--types q4_0,q8_0,...]
//
// The plugin is loaded with plain dlopen: PATH, or the best-scoring libswitchyard-cpu-*.so of the
// build tree. For each type, two weight matrices of K x N (default 4096 x 16384, larger than any
// cache; 64 MiB in Q8_0 ... 256 MiB in F32) are filled with random blocks, and copies of them,
// enough to span twice the last-level cache (which is ~500 MiB on some EPYC parts), and the GEMV
// (one activation row) rotates through them, so every run streams its weights from memory. Printed:
// best and median ms, GB/s of weight bytes read (best run), and that as a share of --bandwidth
// (e.g. from ../shared/tools/membw.sh); then a GEMM (--gemm-rows activation rows, default 512)
// in GFLOP/s (2 K N M flops).
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/ops.h"
#include "switchyard/sdk.hpp"

namespace {

struct Options {
    std::string plugin;
    int threads = 0;
    double bandwidth = 0;
    int64_t K = 4096, N = 16384, gemm_rows = 512;
    int reps = 20;
    std::vector<std::string> types = {"f16",  "bf16", "q8_0", "q4_0", "q4_1", "q5_0",
                                      "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
                                      "iq4_nl", "iq4_xs"};
};

void usage() {
    std::fprintf(stderr,
                 "usage: switchyard-gemv-bench [--plugin PATH] [-t THREADS] [--bandwidth GBps]\n"
                 "       [-k K] [-n N] [--reps R] [--gemm-rows M] [--types a,b,...]\n");
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage();
            return argv[++i];
        };
        if (a == "--plugin") o.plugin = value();
        else if (a == "-t") o.threads = std::atoi(value().c_str());
        else if (a == "--bandwidth") o.bandwidth = std::atof(value().c_str());
        else if (a == "-k") o.K = std::atoll(value().c_str());
        else if (a == "-n") o.N = std::atoll(value().c_str());
        else if (a == "--reps") o.reps = std::max(1, std::atoi(value().c_str()));
        else if (a == "--gemm-rows") o.gemm_rows = std::atoll(value().c_str());
        else if (a == "--types") {
            o.types.clear();
            std::string s = value();
            for (size_t p = 0; p <= s.size();) {
                const size_t q = std::min(s.find(',', p), s.size());
                if (q > p) o.types.push_back(s.substr(p, q - p));
                p = q + 1;
            }
        } else usage();
    }
    return o;
}

int32_t type_id(const std::string& name) {
    for (int32_t t = 0; t < 40; ++t) {
        const char* n = sy_dtype_info(t).name;
        if (n && name == n) return t;
    }
    return -1;
}

void* host_alloc(void*, size_t size, size_t alignment) {
    return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
void host_free(void*, void* p) {
    std::free(p);
}
void host_log(void*, int32_t level, const char*, const char* message) {
    if (level >= SY_LOG_WARN) std::fprintf(stderr, "plugin: %s\n", message);
}

// The given plugin, or the runnable libswitchyard-cpu-*.so with the highest probe score.
std::string choose_plugin(const std::string& given) {
    if (!given.empty()) return given;
    std::string best;
    int32_t best_score = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(SWITCHYARD_PLUGIN_OUTPUT_DIR, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("libswitchyard-cpu", 0) != 0 || e.path().extension() != ".so") continue;
        void* lib = dlopen(e.path().c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!lib) continue;
        auto probe = reinterpret_cast<sy_plugin_probe_fn>(dlsym(lib, SY_PLUGIN_PROBE_SYMBOL));
        sy_probe_info info{};
        info.struct_size = sizeof info;
        const int32_t score = probe ? probe(&info) : 0;
        if (score > best_score) {
            best_score = score;
            best = e.path().string();
        }
        dlclose(lib);
    }
    return best;
}

// Random weights: random bytes with small f16 scales in the block's scale fields (any bit
// pattern of the quant fields is valid), or random F16 / BF16 values.
void fill_weights(int32_t type, uint8_t* p, int64_t bytes, std::mt19937& rng) {
    for (int64_t i = 0; i + 4 <= bytes; i += 4) {
        const uint32_t r = rng();
        std::memcpy(p + i, &r, 4);
    }
    const sy_dtype_traits t = sy_dtype_info(type);
    if (type == SY_TYPE_F16 || type == SY_TYPE_BF16 || type == SY_TYPE_F32) {
        const int64_t n = bytes / t.type_size;
        for (int64_t i = 0; i < n; ++i) {
            const float v = float(int(rng() % 2001) - 1000) * 1e-4f;
            if (type == SY_TYPE_F32) std::memcpy(p + 4 * i, &v, 4);
            else {
                const uint16_t h = type == SY_TYPE_F16 ? sy::sdk::f32_to_fp16(v)
                                                       : uint16_t(std::bit_cast<uint32_t>(v) >> 16);
                std::memcpy(p + 2 * i, &h, 2);
            }
        }
        return;
    }
    std::vector<int> offs = {0};
    if (type == SY_TYPE_Q4_1 || type == SY_TYPE_Q5_1 || type == SY_TYPE_Q4_K ||
        type == SY_TYPE_Q5_K)
        offs = {0, 2};
    if (type == SY_TYPE_Q2_K) offs = {80, 82};
    if (type == SY_TYPE_Q3_K) offs = {108};
    if (type == SY_TYPE_Q6_K) offs = {208};
    const uint16_t h = sy::sdk::f32_to_fp16(0.01f);
    for (int64_t b = 0; b < bytes / t.type_size; ++b)
        for (int o : offs) std::memcpy(p + b * t.type_size + o, &h, 2);
}

double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const std::string path = choose_plugin(o.plugin);
    if (path.empty()) {
        std::fprintf(stderr, "no runnable CPU plugin in %s (use --plugin)\n",
                     SWITCHYARD_PLUGIN_OUTPUT_DIR);
        return 1;
    }
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        std::fprintf(stderr, "dlopen %s: %s\n", path.c_str(), dlerror());
        return 1;
    }
    auto init = reinterpret_cast<sy_plugin_init_fn>(dlsym(lib, SY_PLUGIN_INIT_SYMBOL));
    static sy_host_api host{sizeof(sy_host_api), SY_ABI_VERSION_MAJOR, SY_ABI_VERSION_MINOR,
                            "gemv-bench", nullptr, host_log, host_alloc, host_free};
    sy_plugin_api api{};
    api.struct_size = sizeof api;
    if (!init || init(&host, &api).code != SY_OK) {
        std::fprintf(stderr, "%s: sy_plugin_init failed\n", path.c_str());
        return 1;
    }
    if (o.threads > 0 && api.set_option) {
        const std::string t = std::to_string(o.threads);
        if (api.set_option(api.ctx, "threads", t.c_str()).code != SY_OK) {
            std::fprintf(stderr, "cannot set threads = %d\n", o.threads);
            return 1;
        }
    }
    sy_device_props props{};
    props.struct_size = sizeof props;
    api.device_props(api.ctx, 0, &props);
    std::printf("plugin %s\n%s\nthreads %d, K = %lld, N = %lld, reps %d, GEMM rows %lld\n",
                path.c_str(), api.build_info ? api.build_info : "", props.compute_units,
                (long long)o.K, (long long)o.N, o.reps, (long long)o.gemm_rows);
    if (o.bandwidth > 0) std::printf("reference bandwidth %.1f GB/s\n", o.bandwidth);
    std::printf("%-7s %9s %9s %9s %8s %9s %12s\n", "type", "MiB", "best ms", "med ms", "GB/s",
                "% of bw", "GEMM GFLOP/s");

    std::mt19937 rng(42);
    std::vector<float> x(size_t(o.K * std::max<int64_t>(1, o.gemm_rows)));
    for (float& v : x) v = float(int(rng() % 2001) - 1000) * 1e-3f;
    std::vector<float> y(size_t(o.N * std::max<int64_t>(1, o.gemm_rows)));

    for (const std::string& name : o.types) {
        const int32_t type = type_id(name);
        if (type < 0 || o.K % sy_dtype_info(type).block_size != 0) {
            std::printf("%-7s (unknown type or K not a multiple of its block)\n", name.c_str());
            continue;
        }
        const int64_t bytes = sy::sdk::row_bytes(type, o.K) * o.N;
        const long llc = std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE));
        const int copies = int(std::clamp<int64_t>((2 * int64_t(llc)) / bytes + 2, 2, 64));
        std::vector<uint8_t*> weights;
        for (int i = 0; i < copies; ++i) {
            auto* p = static_cast<uint8_t*>(host_alloc(nullptr, size_t(bytes), 64));
            if (i == 0) fill_weights(type, p, bytes, rng);
            else std::memcpy(p, weights[0], size_t(bytes));
            weights.push_back(p);
        }
        const size_t nw = weights.size();
        auto run = [&](uint8_t* w, int64_t rows) {
            sy_tensor a = sy::sdk::make_tensor(type, o.K, o.N, 1, 1, w);
            sy_tensor b = sy::sdk::make_tensor(SY_TYPE_F32, o.K, rows, 1, 1, x.data());
            sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, o.N, rows, 1, 1, y.data());
            sy_node n{};
            n.struct_size = sizeof n;
            n.op = SY_OP_MUL_MAT;
            n.n_src = 2;
            n.src[0] = &a;
            n.src[1] = &b;
            n.dst = &d;
            const sy_node* nodes[] = {&n};
            const double t0 = now_ms();
            sy_status st = api.compute(api.ctx, 0, nodes, 1);
            if (st.code == SY_OK) st = api.synchronize(api.ctx, 0);
            if (st.code != SY_OK) {
                std::fprintf(stderr, "%s: %s\n", name.c_str(), st.message ? st.message : "error");
                std::exit(1);
            }
            return now_ms() - t0;
        };
        for (size_t i = 0; i < nw; ++i) run(weights[i], 1);  // warm-up
        std::vector<double> times;
        for (int i = 0; i < o.reps; ++i) times.push_back(run(weights[size_t(i) % nw], 1));
        std::sort(times.begin(), times.end());
        const double best = times.front(), median = times[times.size() / 2];
        const double gbps = double(bytes) / (best * 1e6);
        double gflops = 0;
        if (o.gemm_rows > 0) {
            run(weights[0], o.gemm_rows);
            const double t = std::min(run(weights[1], o.gemm_rows), run(weights[0], o.gemm_rows));
            gflops = 2.0 * double(o.K) * double(o.N) * double(o.gemm_rows) / (t * 1e6);
        }
        char share[32] = "-";
        if (o.bandwidth > 0) std::snprintf(share, sizeof share, "%.0f%%", 100.0 * gbps / o.bandwidth);
        std::printf("%-7s %9.1f %9.2f %9.2f %8.1f %9s %12.1f\n", name.c_str(),
                    double(bytes) / (1 << 20), best, median, gbps, share, gflops);
        std::fflush(stdout);
        for (uint8_t* p : weights) host_free(nullptr, p);
    }
    api.shutdown(api.ctx);
    return 0;
}
