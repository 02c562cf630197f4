// GEMV / GEMM benchmark of a plugin's MUL_MAT per weight type (the CPU plugin by default; a
// device plugin such as libswitchyard-cuda.so with --plugin).
//
//   switchyard-gemv-bench [--plugin PATH] [-t THREADS] [--bandwidth GBps] [-k K] [-n N]
//                         [--reps R] [--gemm-rows M] [--types q4_0,q8_0,...] [--experts E:U]
//                         [--hot] [--repack]
//
// The plugin is loaded with plain dlopen: PATH, or the best-scoring libswitchyard-cpu-*.so of the
// build tree. For each type, two weight matrices of K x N (default 4096 x 16384, larger than any
// cache; 64 MiB in Q8_0 ... 256 MiB in F32) are filled with random blocks, and copies of them,
// enough to span twice the last-level cache (which can be hundreds of MiB on server parts:
// docs/design-measurements.md#gemv-bench-llc-span), and the GEMV (one activation row) rotates
// through them, so every run streams its weights from memory. Printed:
// best and median ms, GB/s of weight bytes read (best run), and that as a share of --bandwidth
// (e.g. from bench/membw.sh); then a GEMM (--gemm-rows activation rows, default 512)
// in GFLOP/s (2 K N M flops).
//
// A plugin whose device does not compute on host memory (a GPU) gets its weights, activations
// and results in its own buffers, at least 1 GiB of weight copies (beyond any GPU cache), and
// each compute() call runs one GEMV per copy, so that the time per GEMV does not include the
// call's synchronization; the reference bandwidth then defaults to the device's own figure.
//
// --hot keeps one copy of the weights, read again by every run: from the caches where it fits (use
// a small -k/-n), the kernel's own ceiling with no memory traffic.
//
// --repack gives the weights constant ids and sets the plugin's option repack = "on", so that a
// CPU plugin reads the types it keeps row-interleaved copies of (interleaved_weights.hpp) from
// those copies, made during the warm-up and dropped after each type.
//
// --experts E:U times the routed-expert products of one generated token instead (host-memory
// plugins): see run_experts.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "switchyard/dtype.h"
#include "switchyard/named_ops.h"
#include "switchyard/ops.h"
#include "switchyard/sdk.hpp"

namespace {

struct Options {
    std::string plugin;
    int threads = 0;
    double bandwidth = 0;
    int64_t K = 4096, N = 16384, gemm_rows = 512;
    int reps = 20;
    bool hot = false;  // --hot: one weight copy, re-read from cache when it fits (kernel ceiling)
    bool repack = false;                    // --repack: constant ids and the plugin's repack = "on"
    int64_t experts = 0, experts_used = 0;  // --experts E:U (0: plain MUL_MAT)
    std::vector<std::string> types = {"f16",     "bf16",   "q8_0",  "q4_0",    "q4_1",  "q5_0",
                                      "q5_1",    "q2_K",   "q3_K",  "q4_K",    "q5_K",  "q6_K",
                                      "iq4_nl",  "iq4_xs", "iq3_s", "iq3_xxs", "iq2_s", "iq2_xs",
                                      "iq2_xxs", "iq1_m",  "iq1_s"};
};

void usage() {
    std::fprintf(stderr,
                 "usage: switchyard-gemv-bench [--plugin PATH] [-t THREADS] [--bandwidth GBps]\n"
                 "       [-k K] [-n N] [--reps R] [--gemm-rows M] [--types a,b,...]\n"
                 "       [--experts E:U] [--hot] [--repack]\n");
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
        if (a == "--plugin")
            o.plugin = value();
        else if (a == "-t")
            o.threads = std::atoi(value().c_str());
        else if (a == "--bandwidth")
            o.bandwidth = std::atof(value().c_str());
        else if (a == "-k")
            o.K = std::atoll(value().c_str());
        else if (a == "-n")
            o.N = std::atoll(value().c_str());
        else if (a == "--hot")
            o.hot = true;
        else if (a == "--repack")
            o.repack = true;
        else if (a == "--reps")
            o.reps = std::max(1, std::atoi(value().c_str()));
        else if (a == "--experts") {
            const std::string v = value();
            long long e = 0, u = 0;
            int used = 0;
            if (std::sscanf(v.c_str(), "%9lld:%9lld%n", &e, &u, &used) != 2 ||
                used != int(v.size()) || e < 1 || u < 1 || u > e) {
                std::fprintf(stderr, "--experts %s: expected E:U with 1 <= U <= E\n", v.c_str());
                usage();
            }
            o.experts = e;
            o.experts_used = u;
        } else if (a == "--gemm-rows")
            o.gemm_rows = std::atoll(value().c_str());
        else if (a == "--types") {
            o.types.clear();
            std::string s = value();
            for (size_t p = 0; p <= s.size();) {
                const size_t q = std::min(s.find(',', p), s.size());
                if (q > p) o.types.push_back(s.substr(p, q - p));
                p = q + 1;
            }
        } else
            usage();
    }
    return o;
}

int32_t type_id(const std::string& name) {
    for (int32_t t = 0; t < 256; ++t) {
        const char* n = sy_dtype_info(t).name;
        if (n && name == n) return t;
    }
    return -1;
}

// Operands of 2 MiB or more on huge pages, as the CPU plugin's buffers and --no-mmap models.
void* host_alloc(void*, size_t size, size_t alignment) {
    constexpr size_t kHuge = size_t(2) << 20;
    if (size >= kHuge) alignment = std::max(alignment, kHuge);
    void* p = std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
    if (p != nullptr && size >= kHuge)
        ::madvise(p, (size + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);
    return p;
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
// pattern of the quant fields is valid), or random F16 / BF16 values; rows of K values (a
// row-scaled type's rows start with a small scale and have no float field in their blocks).
void fill_weights(int32_t type, uint8_t* p, int64_t bytes, std::mt19937& rng, int64_t K) {
    for (int64_t i = 0; i + 4 <= bytes; i += 4) {
        const uint32_t r = rng();
        std::memcpy(p + i, &r, 4);
    }
    const sy_dtype_traits t = sy_dtype_info(type);
    if (t.row_meta_size > 0) {
        const int64_t row = sy::sdk::row_bytes(type, K);
        for (int64_t r = 0; r + row <= bytes; r += row) {
            const float d = 1e-3f;
            if (t.row_meta_size == 2) {
                const uint16_t h = sy::sdk::f32_to_fp16(d);
                std::memcpy(p + r, &h, 2);
            } else {
                std::memcpy(p + r, &d, 4);
            }
        }
        return;
    }
    if (type == SY_TYPE_F16 || type == SY_TYPE_BF16 || type == SY_TYPE_F32) {
        const int64_t n = bytes / t.type_size;
        for (int64_t i = 0; i < n; ++i) {
            const float v = float(int(rng() % 2001) - 1000) * 1e-4f;
            if (type == SY_TYPE_F32)
                std::memcpy(p + 4 * i, &v, 4);
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
    if (type == SY_TYPE_IQ1_M)  // its f16 scale is the top nibbles of the u16 words at byte 48
        for (int64_t b = 0; b < bytes / t.type_size; ++b)
            for (int k = 0; k < 4; ++k) {
                uint8_t* top = p + b * t.type_size + 48 + 2 * k + 1;
                *top = uint8_t((*top & 0x0f) | (((h >> (4 * k)) & 15) << 4));
            }
}

double now_ms() {
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Under --repack: the first of `count` fresh constant ids for one type's weight copies (else 0),
// and their release after the type.
uint64_t take_constant_ids(const Options& o, uint64_t count) {
    static uint64_t next = 1;
    if (!o.repack) return 0;
    const uint64_t first = next;
    next += count;
    return first;
}
void release_constant_ids(const sy_plugin_api& api, uint64_t first, uint64_t count) {
    if (first == 0 || api.release_constants == nullptr) return;
    for (uint64_t i = 0; i < count; ++i) api.release_constants(api.ctx, first + i);
}

// --experts E:U: the routed-expert products of one token, as MoE generation runs them: two expert
// tensors (up and gate) of K x N x E, U distinct experts per run, timed as MUL_MAT_ID (the up
// product alone) and as moe.fused_up_gate (both products and the activation). GB/s counts the
// chosen experts' bytes only. Runs rotate over copies of the tensors spanning the last-level
// cache, and each copy deals its experts from its own shuffled deck (reshuffled when dealt out),
// so an expert of a copy is rarely read again before about E / U runs of that copy: the runs
// read their experts from memory, as a generated token does.
void run_experts(const sy_plugin_api& api, const Options& o, int32_t type, const std::string& name,
                 std::mt19937& rng, void* x_data, void* y_data, double bandwidth) {
    const int64_t expert_bytes = sy::sdk::row_bytes(type, o.K) * o.N;
    const int64_t tensor_bytes = expert_bytes * o.experts;
    const long llc = std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE));
    const int copies = int(std::clamp<int64_t>(int64_t(llc) / tensor_bytes + 1, 1, 16));
    std::vector<uint8_t> host_weights(static_cast<size_t>(tensor_bytes));
    fill_weights(type, host_weights.data(), tensor_bytes, rng, o.K);
    std::vector<void*> tensors;  // up, gate, up, gate ...
    const uint64_t ids0 = take_constant_ids(o, uint64_t(2 * copies));
    for (int i = 0; i < 2 * copies; ++i) {
        tensors.push_back(host_alloc(nullptr, size_t(tensor_bytes), 64));
        std::memcpy(tensors.back(), host_weights.data(), size_t(tensor_bytes));
    }
    struct Deck {
        std::vector<int32_t> ids;
        size_t next = 0;
    };
    std::vector<Deck> decks(static_cast<size_t>(copies));
    for (Deck& d : decks) {
        for (int32_t e = 0; e < int32_t(o.experts); ++e) d.ids.push_back(e);
        d.next = d.ids.size();  // shuffled on first use
    }
    std::vector<int32_t> ids(static_cast<size_t>(o.experts_used));
    auto run = [&](int copy, bool fused) {
        Deck& deck = decks[size_t(copy)];
        if (deck.next + ids.size() > deck.ids.size()) {
            std::shuffle(deck.ids.begin(), deck.ids.end(), rng);
            deck.next = 0;
        }
        std::copy_n(deck.ids.begin() + std::ptrdiff_t(deck.next), ids.size(), ids.begin());
        deck.next += ids.size();
        sy_tensor up = sy::sdk::make_tensor(type, o.K, o.N, o.experts, 1, tensors[2 * copy]);
        sy_tensor gate = sy::sdk::make_tensor(type, o.K, o.N, o.experts, 1, tensors[2 * copy + 1]);
        if (ids0 != 0) {
            up.constant_id = ids0 + uint64_t(2 * copy);
            gate.constant_id = up.constant_id + 1;
        }
        sy_tensor x = sy::sdk::make_tensor(SY_TYPE_F32, o.K, 1, 1, 1, x_data);
        sy_tensor sel = sy::sdk::make_tensor(SY_TYPE_I32, o.experts_used, 1, 1, 1, ids.data());
        sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, o.N, o.experts_used, 1, 1, y_data);
        sy_node n = sy::sdk::make_node(fused ? SY_OP_NAMED : SY_OP_MUL_MAT_ID, &d);
        if (fused) {
            n.named_op = SY_NAMED_MOE_FUSED_UP_GATE;
            n.named_op_version = SY_NAMED_MOE_FUSED_UP_GATE_VERSION;
            n.n_src = 4;
            n.src[0] = &up;
            n.src[1] = &gate;
            n.src[2] = &x;
            n.src[3] = &sel;
        } else {
            n.n_src = 3;
            n.src[0] = &up;
            n.src[1] = &x;
            n.src[2] = &sel;
        }
        const sy_node* nodes[] = {&n};
        const double t0 = now_ms();
        const sy_status st = api.compute(api.ctx, 0, nodes, 1);
        if (st.code != SY_OK) {
            std::fprintf(stderr, "%s experts: %s\n", name.c_str(),
                         st.message ? st.message : "error");
            std::exit(1);
        }
        return now_ms() - t0;
    };
    for (const bool fused : {false, true}) {
        for (int i = 0; i < copies; ++i) run(i, fused);  // warm-up
        std::vector<double> times;
        for (int i = 0; i < o.reps; ++i) times.push_back(run(i % copies, fused));
        std::sort(times.begin(), times.end());
        const double best = times.front(), median = times[times.size() / 2];
        const double bytes = double(expert_bytes * o.experts_used) * (fused ? 2 : 1);
        char share[32] = "-";
        if (bandwidth > 0)
            std::snprintf(share, sizeof share, "%.0f%%",
                          100.0 * bytes / (median * 1e6) / bandwidth);
        std::printf("%-7s %-17s %8.1f %9.4f %9.4f %8.1f %8.1f %8s\n", name.c_str(),
                    fused ? "moe.fused_up_gate" : "mul_mat_id", bytes / (1 << 20), best, median,
                    bytes / (best * 1e6), bytes / (median * 1e6), share);
        std::fflush(stdout);
    }
    release_constant_ids(api, ids0, uint64_t(2 * copies));
    for (void* p : tensors) host_free(nullptr, p);
}

}  // namespace

#if defined(__x86_64__)
// The int8 dot-product peak of the GEMM's unit: 512-bit vpdpbusd (64 multiply-adds, 128 ops each)
// on `threads` threads, 24 independent chains each for about 0.2 s after a warm-up; 0 where the CPU
// has no AVX-512 VNNI. The quantized GEMMs' integer work is at most this fast.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double vnni_chains(int64_t iters) {
    __m512i acc[24];
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_epi32(i);
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
    for (int64_t n = 0; n < iters; ++n)
        for (int i = 0; i < 24; ++i) {
            acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
            __asm__ volatile("" : "+v"(acc[i]));
        }
    int32_t lanes[16];
    __m512i sum = acc[0];
    for (int i = 1; i < 24; ++i) sum = _mm512_add_epi32(sum, acc[i]);
    _mm512_storeu_si512(lanes, sum);
    return double(lanes[0]);
}

double int8_peak_gops(int threads) {
    if (!__builtin_cpu_supports("avx512vnni") || threads < 1) return 0.0;
    const int64_t iters = 20000000;
    std::vector<std::thread> pool;
    std::vector<double> ops(size_t(threads), 0.0);
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            vnni_chains(iters / 4);  // warm-up (clock ramp)
            const auto t0 = std::chrono::steady_clock::now();
            volatile double sink = vnni_chains(iters);
            (void)sink;
            const double s =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            ops[size_t(t)] = double(iters) * 24 * 128 / s;
        });
    for (auto& th : pool) th.join();
    double total = 0;
    for (double x : ops) total += x;
    return total / 1e9;
}
#else
double int8_peak_gops(int) {
    return 0.0;
}
#endif

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
    static sy_host_api host{sizeof(sy_host_api),
                            SY_ABI_VERSION_MAJOR,
                            SY_ABI_VERSION_MINOR,
                            "gemv-bench",
                            nullptr,
                            host_log,
                            host_alloc,
                            host_free};
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
    if (o.repack &&
        (api.set_option == nullptr || api.set_option(api.ctx, "repack", "on").code != SY_OK)) {
        std::fprintf(stderr, "%s: the plugin has no option repack\n", path.c_str());
        return 1;
    }
    int32_t devices = 0;
    api.device_count(api.ctx, &devices);
    if (devices < 1) {
        std::fprintf(stderr, "%s: the plugin has no device on this machine\n", path.c_str());
        return 1;
    }
    sy_device_props props{};
    props.struct_size = sizeof props;
    api.device_props(api.ctx, 0, &props);
    std::printf("plugin %s\n%s\nthreads %d, K = %lld, N = %lld, reps %d, GEMM rows %lld%s\n",
                path.c_str(), api.build_info ? api.build_info : "", props.compute_units,
                (long long)o.K, (long long)o.N, o.reps, (long long)o.gemm_rows,
                o.repack ? ", repack on" : "");
    if (o.bandwidth > 0) std::printf("reference bandwidth %.1f GB/s\n", o.bandwidth);
    const bool device = props.host_memory == 0;
    if (!device && o.gemm_rows > 0)
        if (const double peak = int8_peak_gops(props.compute_units); peak > 0)
            std::printf(
                "int8 peak (512-bit vpdpbusd, %d threads, 2 ops per multiply-add): %.0f "
                "GOP/s\n",
                props.compute_units, peak);
    double bandwidth = o.bandwidth;
    if (device) {
        std::printf("device %s: %s\n", props.name, props.description);
        if (bandwidth <= 0) bandwidth = props.memory_bandwidth / 1e9;
    }
    if (o.experts > 0 && device) {
        std::fprintf(stderr, "--experts runs on host-memory (CPU) plugins only\n");
        return 1;
    }
    if (o.experts > 0)
        std::printf("%lld experts, %lld used per token\n%-7s %-17s %8s %9s %9s %8s %8s %8s\n",
                    (long long)o.experts, (long long)o.experts_used, "type", "op", "MiB", "best ms",
                    "med ms", "best GB/s", "med GB/s", "% of bw");
    else
        std::printf("%-7s %9s %9s %9s %8s %9s %12s\n", "type", "MiB", "best ms", "med ms", "GB/s",
                    "% of bw", "GEMM GFLOP/s");

    // Memory for the operands: host memory, or buffers of a device plugin (freed at exit).
    // A deque: the tensors point at their buffer's entry, so entries must not move as more are
    // added (a vector reallocated after ~1000 weight copies, some 30 types in).
    std::deque<sy_buffer> buffers;
    auto place = [&](const void* host_data, size_t bytes) -> std::pair<void*, const sy_buffer*> {
        if (!device) {
            void* p = host_alloc(nullptr, bytes, 64);
            if (host_data) std::memcpy(p, host_data, bytes);
            return {p, nullptr};
        }
        sy_buffer b{};
        b.struct_size = sizeof b;
        sy_status st = api.buffer_alloc(api.ctx, 0, bytes, &b);
        if (st.code == SY_OK && host_data) st = api.buffer_set(api.ctx, &b, 0, host_data, bytes);
        if (st.code != SY_OK) {
            std::fprintf(stderr, "device buffer of %zu bytes: %s\n", bytes,
                         st.message ? st.message : "error");
            std::exit(1);
        }
        buffers.push_back(b);
        return {b.base, &buffers.back()};
    };
    auto release = [&](void* p) {
        if (!device) {
            host_free(nullptr, p);
            return;
        }
        for (sy_buffer& b : buffers)
            if (b.base == p) api.buffer_free(api.ctx, &b);
    };

    std::mt19937 rng(42);
    std::vector<float> x_host(size_t(o.K * std::max<int64_t>(1, o.gemm_rows)));
    for (float& v : x_host) v = float(int(rng() % 2001) - 1000) * 1e-3f;
    const auto [x_data, x_buffer] = place(x_host.data(), x_host.size() * sizeof(float));
    const size_t y_bytes =
        size_t(o.N * std::max({int64_t(1), o.gemm_rows, o.experts_used})) * sizeof(float);
    const auto [y_data, y_buffer] = place(nullptr, y_bytes);

    for (const std::string& name : o.types) {
        const int32_t type = type_id(name);
        if (type < 0 || o.K % sy_dtype_info(type).block_size != 0) {
            std::printf("%-7s (unknown type or K not a multiple of its block)\n", name.c_str());
            continue;
        }
        if (o.experts > 0) {
            run_experts(api, o, type, name, rng, x_data, y_data, bandwidth);
            continue;
        }
        const int64_t bytes = sy::sdk::row_bytes(type, o.K) * o.N;
        const long llc = std::max(0L, sysconf(_SC_LEVEL3_CACHE_SIZE));
        const int64_t span = device ? int64_t(1) << 30 : 2 * int64_t(llc);
        const int copies = o.hot ? 1 : int(std::clamp<int64_t>(span / bytes + 2, 2, 64));
        std::vector<uint8_t> host_weights(static_cast<size_t>(bytes));
        fill_weights(type, host_weights.data(), bytes, rng, o.K);
        std::vector<std::pair<void*, const sy_buffer*>> weights;
        for (int i = 0; i < copies; ++i)
            weights.push_back(place(host_weights.data(), size_t(bytes)));
        const size_t nw = weights.size();
        const uint64_t ids0 = take_constant_ids(o, nw);
        // `count` products over consecutive weight copies from `first`, in one compute() call;
        // returns the milliseconds per product.
        auto run = [&](size_t first, size_t count, int64_t rows) {
            std::vector<sy_tensor> a(count);
            std::vector<sy_node> n(count);
            std::vector<const sy_node*> nodes(count);
            sy_tensor b = sy::sdk::make_tensor(SY_TYPE_F32, o.K, rows, 1, 1, x_data);
            sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, o.N, rows, 1, 1, y_data);
            b.buffer = x_buffer;
            d.buffer = y_buffer;
            for (size_t i = 0; i < count; ++i) {
                const auto& w = weights[(first + i) % nw];
                a[i] = sy::sdk::make_tensor(type, o.K, o.N, 1, 1, w.first);
                if (ids0 != 0) a[i].constant_id = ids0 + (first + i) % nw;
                a[i].buffer = w.second;
                n[i] = sy::sdk::make_node(SY_OP_MUL_MAT, &d);
                n[i].n_src = 2;
                n[i].src[0] = &a[i];
                n[i].src[1] = &b;
                nodes[i] = &n[i];
            }
            const double t0 = now_ms();
            sy_status st = api.compute(api.ctx, 0, nodes.data(), count);
            if (st.code == SY_OK) st = api.synchronize(api.ctx, 0);
            if (st.code != SY_OK) {
                std::fprintf(stderr, "%s: %s\n", name.c_str(), st.message ? st.message : "error");
                std::exit(1);
            }
            return (now_ms() - t0) / double(count);
        };
        const size_t per_call = device ? nw : 1;
        for (size_t i = 0; i < nw; i += per_call) run(i, per_call, 1);  // warm-up
        std::vector<double> times;
        for (int i = 0; i < o.reps; ++i)
            times.push_back(run(size_t(i) * per_call % nw, per_call, 1));
        std::sort(times.begin(), times.end());
        const double best = times.front(), median = times[times.size() / 2];
        const double gbps = double(bytes) / (best * 1e6);
        double gflops = 0;
        if (o.gemm_rows > 0) {
            run(0, per_call, o.gemm_rows);
            const double t = std::min(run(1, per_call, o.gemm_rows), run(0, per_call, o.gemm_rows));
            gflops = 2.0 * double(o.K) * double(o.N) * double(o.gemm_rows) / (t * 1e6);
        }
        char share[32] = "-";
        if (bandwidth > 0) std::snprintf(share, sizeof share, "%.0f%%", 100.0 * gbps / bandwidth);
        std::printf("%-7s %9.1f %9.3f %9.3f %8.1f %9s %12.1f\n", name.c_str(),
                    double(bytes) / (1 << 20), best, median, gbps, share, gflops);
        std::fflush(stdout);
        release_constant_ids(api, ids0, nw);
        for (const auto& w : weights) release(w.first);
    }
    release(x_data);
    release(y_data);
    api.shutdown(api.ctx);
    return 0;
}
