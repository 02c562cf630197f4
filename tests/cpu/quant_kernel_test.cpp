// Quantized weights in the CPU plugin: MUL_MAT, MUL_MAT_ID and GET_ROWS with block-quantized
// src0, on every runnable variant, against a double-precision reference on the dequantized
// weights and the unquantized activations. The plugin quantizes activations to 8 bits per block
// (d = max|x| / 127), so each result may differ from the reference by at most
// sum_k |w_k| * d_block(k) / 2; the test asserts that bound (plus float rounding) and prints the
// relative RMS error it sees.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/ops.h"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace {

// The runnable CPU variants, loaded with plain dlopen (no host): each gets a minimal host API.
// An initialized plugin, shut down when the test program exits (its library stays loaded).
struct LoadedCpu {
    std::string variant;
    sy_plugin_api api{};
    LoadedCpu() = default;
    LoadedCpu(LoadedCpu&& other) noexcept : variant(std::move(other.variant)), api(other.api) {
        other.api.shutdown = nullptr;
    }
    LoadedCpu(const LoadedCpu&) = delete;
    LoadedCpu& operator=(const LoadedCpu&) = delete;
    LoadedCpu& operator=(LoadedCpu&&) = delete;
    ~LoadedCpu() {
        if (api.shutdown) api.shutdown(api.ctx);
    }
    const sy_plugin_api& plugin_api() const { return api; }
};

void* host_alloc(void*, size_t size, size_t alignment) {
    return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
void host_free(void*, void* p) {
    std::free(p);
}
void host_log(void*, int32_t, const char*, const char*) {}

const std::vector<LoadedCpu>& cpu_plugins() {
    static const std::vector<LoadedCpu> plugins = [] {
        static sy_host_api host{sizeof(sy_host_api),
                                SY_ABI_VERSION_MAJOR,
                                SY_ABI_VERSION_MINOR,
                                "quant-test",
                                nullptr,
                                host_log,
                                host_alloc,
                                host_free};
        std::vector<LoadedCpu> out;
        std::vector<std::string> files;
        for (const auto& e : std::filesystem::directory_iterator(SWITCHYARD_PLUGIN_OUTPUT_DIR)) {
            const std::string name = e.path().filename().string();
            if (name.rfind("libswitchyard-cpu", 0) == 0 && e.path().extension() == ".so")
                files.push_back(e.path().string());
        }
        std::sort(files.begin(), files.end());
        for (const std::string& file : files) {
            void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!lib) continue;
            auto probe = reinterpret_cast<sy_plugin_probe_fn>(dlsym(lib, SY_PLUGIN_PROBE_SYMBOL));
            auto init = reinterpret_cast<sy_plugin_init_fn>(dlsym(lib, SY_PLUGIN_INIT_SYMBOL));
            sy_probe_info info{};
            info.struct_size = sizeof info;
            if (!probe || !init || probe(&info) <= 0) continue;
            LoadedCpu cpu;
            cpu.variant = info.variant ? info.variant : file;
            cpu.api.struct_size = sizeof(sy_plugin_api);
            if (init(&host, &cpu.api).code != SY_OK) continue;
            out.push_back(std::move(cpu));  // the libraries stay loaded for the process
        }
        return out;
    }();
    return plugins;
}

constexpr int32_t kTypes[] = {
    SY_TYPE_Q8_0,          SY_TYPE_Q4_0,   SY_TYPE_Q4_1,    SY_TYPE_Q5_0,    SY_TYPE_Q5_1,
    SY_TYPE_Q2_K,          SY_TYPE_Q3_K,   SY_TYPE_Q4_K,    SY_TYPE_Q5_K,    SY_TYPE_Q6_K,
    SY_TYPE_IQ4_NL,        SY_TYPE_IQ4_XS, SY_TYPE_IQ2_XXS, SY_TYPE_IQ2_XS,  SY_TYPE_IQ2_S,
    SY_TYPE_IQ3_XXS,       SY_TYPE_IQ3_S,  SY_TYPE_IQ1_S,   SY_TYPE_IQ1_M,   SY_TYPE_Q6_0,
    SY_TYPE_IQ2_K,         SY_TYPE_IQ3_K,  SY_TYPE_IQ4_K,   SY_TYPE_IQ5_K,   SY_TYPE_IQ6_K,
    SY_TYPE_IQ2_KS,        SY_TYPE_IQ3_KS, SY_TYPE_IQ4_KS,  SY_TYPE_IQ4_KSS, SY_TYPE_IQ5_KS,
    SY_TYPE_IQ2_KL,        SY_TYPE_IQ1_KT, SY_TYPE_IQ2_KT,  SY_TYPE_IQ3_KT,  SY_TYPE_IQ4_KT,
    SY_TYPE_IQ1_M_R4_ROWS, SY_TYPE_Q8_KV};

// Byte offsets of the f16 scale fields (d, and dmin / m where the type has one) in a block.
std::vector<int> half_offsets(int32_t type) {
    switch (type) {
        case SY_TYPE_Q4_1:
        case SY_TYPE_Q5_1:
        case SY_TYPE_Q4_K:
        case SY_TYPE_Q5_K: return {0, 2};
        case SY_TYPE_Q2_K: return {80, 82};
        case SY_TYPE_Q3_K: return {108};
        case SY_TYPE_Q6_K: return {208};
        case SY_TYPE_IQ1_M: return {};  // its f16 scale is spread over 4 nibbles: see below
        default: return {0};            // Q4_0, Q5_0, Q8_0, IQ4_NL, IQ4_XS, IQ1_S ... IQ3_S
    }
}

// Random blocks: every bit pattern of the quant fields is a valid block, so random bytes with
// sane f16 scales exercise all values, signs and scale bits. Rows of K values; a row-scaled type
// gets a sane scale in front of each row (its blocks have no float fields).
std::vector<uint8_t> random_blocks(int32_t type, int64_t values, std::mt19937& rng, int64_t K) {
    const sy_dtype_traits t = sy_dtype_info(type);
    const int64_t blocks = values / t.block_size;
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.002f, 0.02f);
    if (t.row_meta_size > 0) {
        const int64_t row = sy::sdk::row_bytes(type, K);
        std::vector<uint8_t> bytes(size_t(values / K * row));
        for (uint8_t& b : bytes) b = uint8_t(byte(rng));
        // The row scale times sub-block scales up to 127: keep the values' size like the others.
        for (int64_t r = 0; r < values / K; ++r) {
            const float d = scale(rng) * (byte(rng) & 1 ? 1.0f : -1.0f) / 16.0f;
            if (t.row_meta_size == 2) {
                const uint16_t h = sy::sdk::f32_to_fp16(d);
                std::memcpy(&bytes[size_t(r * row)], &h, 2);
            } else {
                std::memcpy(&bytes[size_t(r * row)], &d, 4);
            }
        }
        return bytes;
    }
    std::vector<uint8_t> bytes(size_t(blocks * t.type_size));
    for (uint8_t& b : bytes) b = uint8_t(byte(rng));
    for (int64_t i = 0; i < blocks; ++i)
        for (int off : half_offsets(type)) {
            const uint16_t h = sy::sdk::f32_to_fp16(scale(rng) * (byte(rng) & 1 ? 1.0f : -1.0f));
            std::memcpy(&bytes[size_t(i * t.type_size + off)], &h, 2);
        }
    if (type == SY_TYPE_IQ1_M)  // the top nibble of each of the 4 u16 scale words at byte 48
        for (int64_t i = 0; i < blocks; ++i) {
            const uint16_t h = sy::sdk::f32_to_fp16(scale(rng) * (byte(rng) & 1 ? 1.0f : -1.0f));
            uint16_t sc[4];
            std::memcpy(sc, &bytes[size_t(i * t.type_size + 48)], 8);
            for (int k = 0; k < 4; ++k)
                sc[k] = uint16_t((sc[k] & 0x0fff) | (((h >> (4 * k)) & 15) << 12));
            std::memcpy(&bytes[size_t(i * t.type_size + 48)], sc, 8);
        }
    return bytes;
}

std::vector<float> random_floats(int64_t n, std::mt19937& rng) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = g(rng);
    return v;
}

// Activation block size the plugin pairs with each weight type (Q8_K for the 256-element ones).
int64_t act_block(int32_t type) {
    return sy_dtype_info(type).block_size;
}

struct Expected {
    double value, bound;
};

// Reference dot product of dequantized weight row w and activation row x, with the bound of the
// activation quantization error.
Expected reference_dot(const float* w, const float* x, int64_t K, int64_t block) {
    double dot = 0, bound = 0, abs_sum = 0;
    for (int64_t b = 0; b < K; b += block) {
        double amax = 0, wabs = 0;
        for (int64_t k = b; k < b + block; ++k) {
            amax = std::fmax(amax, std::fabs(double(x[k])));
            wabs += std::fabs(double(w[k]));
            dot += double(w[k]) * double(x[k]);
            abs_sum += std::fabs(double(w[k]) * double(x[k]));
        }
        bound += wabs * amax / 254.0;
    }
    return {dot, 1.02 * bound + 1e-5 * abs_sum + 1e-6};
}

std::vector<float> dequantize_matrix(int32_t type, const std::vector<uint8_t>& q, int64_t K,
                                     int64_t rows) {
    std::vector<float> w(size_t(K * rows));
    const int64_t row_bytes = sy::sdk::row_bytes(type, K);
    for (int64_t r = 0; r < rows; ++r)
        sy::quants::dequantize_row(type, q.data() + r * row_bytes, w.data() + r * K, K);
    return w;
}

sy_status run(const sy_plugin_api& api, const sy_node& node) {
    const sy_node* nodes[] = {&node};
    sy_status st = api.compute(api.ctx, 0, nodes, 1);
    if (st.code == SY_OK) st = api.synchronize(api.ctx, 0);
    return st;
}

sy_node make_node(int32_t op, const sy_tensor* dst, std::initializer_list<const sy_tensor*> src) {
    sy_node n{};
    n.struct_size = sizeof(sy_node);
    n.op = op;
    n.dst = dst;
    int i = 0;
    for (const sy_tensor* s : src) n.src[i++] = s;
    n.n_src = i;
    return n;
}

struct ErrorStats {
    double err2 = 0, ref2 = 0;
    void add(double got, double ref) {
        err2 += (got - ref) * (got - ref);
        ref2 += ref * ref;
    }
    double relative() const { return ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2); }
};

// Row lengths for a weight type. 32-element blocks (8 per step of the AVX-512 group kernels,
// which take K >= 256 and K = 128): 512 whole steps; 448 (14 blocks) a masked partial step of 6;
// 1408 (DeepSeek's expert width, 44 blocks) and 288 (9) a step of 4 and of 1 (lower half only);
// 4096: rows over 2 KiB, whose 4-row GEMV prefetch runs a stream per row; 128 (MLA's attn_k_b)
// half a step, or two adjacent rows per step in a GEMV; 96 a per-block kernel. Super-block
// types: 512 and 1280 (5 super-blocks).
std::vector<int64_t> row_lengths(int32_t type) {
    if (sy_dtype_info(type).block_size == 32) return {512, 448, 1408, 288, 4096, 128, 96};
    return {512, 1280};
}

TEST(QuantKernels, MulMatMatchesDequantizedReference) {
    ASSERT_FALSE(cpu_plugins().empty());
    std::mt19937 rng(1234);
    const int64_t N = 37;
    for (const auto& cpu : cpu_plugins()) {
        const sy_plugin_api& api = cpu.plugin_api();
        for (int32_t type : kTypes)
            for (int64_t K : row_lengths(type)) {
                const std::vector<uint8_t> wq = random_blocks(type, K * N, rng, K);
                const std::vector<float> w = dequantize_matrix(type, wq, K, N);
                ErrorStats stats;
                for (int64_t M : {1, 3, 17}) {
                    const std::vector<float> x = random_floats(K * M, rng);
                    std::vector<float> out(size_t(N * M), NAN);
                    sy_tensor a = sy::sdk::make_tensor(type, K, N, 1, 1, (void*)wq.data(), "w");
                    sy_tensor b =
                        sy::sdk::make_tensor(SY_TYPE_F32, K, M, 1, 1, (void*)x.data(), "x");
                    sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, N, M, 1, 1, out.data(), "y");
                    const sy_node node = make_node(SY_OP_MUL_MAT, &d, {&a, &b});
                    int32_t supported = 0;
                    ASSERT_EQ(api.supports(api.ctx, 0, &node, &supported).code, SY_OK);
                    ASSERT_EQ(supported, 1) << cpu.variant << " " << sy_dtype_info(type).name;
                    const sy_status st = run(api, node);
                    ASSERT_EQ(st.code, SY_OK) << (st.message ? st.message : "");
                    for (int64_t m = 0; m < M; ++m)
                        for (int64_t n = 0; n < N; ++n) {
                            const Expected e = reference_dot(&w[size_t(n * K)], &x[size_t(m * K)],
                                                             K, act_block(type));
                            const double got = out[size_t(m * N + n)];
                            stats.add(got, e.value);
                            ASSERT_NEAR(got, e.value, e.bound)
                                << cpu.variant << " " << sy_dtype_info(type).name << " K=" << K
                                << " M=" << M << " row " << n << " col " << m;
                        }
                }
                std::printf("[ info ] %-8s %-7s K %-5lld mul_mat relative RMS error %.2e\n",
                            cpu.variant.c_str(), sy_dtype_info(type).name, (long long)K,
                            stats.relative());
                // The per-element bound above is a worst case and lets a uniform scale error of
                // a few percent through; the activation rounding alone stays near 0.5-0.8 %
                // relative RMS, so 1.5 % catches a wrong factor.
                EXPECT_LT(stats.relative(), 1.5e-2)
                    << cpu.variant << " " << sy_dtype_info(type).name << " K=" << K;
            }
    }
}

// Activations that every activation format holds exactly: integers in [-127, 127] with a +-127
// in each 32-value block, so that the scale is 1 and every quantized value the input itself.
// Then the kernels' integer products are exact, and what is left is float rounding: the result
// must match the dequantized reference to 1e-5 of the sum of |w x|, where one wrong codebook
// entry, sign, scale or element order moves it by about 1/K of that sum or more. 5 columns take
// the per-row kernels (the trellis types: the tile path), 19 the avx512 tile path (8, 8 and 3
// columns; 29 rows: a group of 16 and one of 13), 37 the avx2 tile path too (from 20 columns).
TEST(QuantKernels, ExactActivationsMatchDequantizedReferenceClosely) {
    ASSERT_FALSE(cpu_plugins().empty());
    std::mt19937 rng(4321);
    std::uniform_int_distribution<int> value(-127, 127);
    const int64_t N = 29;
    for (const auto& cpu : cpu_plugins()) {
        const sy_plugin_api& api = cpu.plugin_api();
        for (int32_t type : kTypes)
            for (int64_t K : row_lengths(type))
                for (int64_t M : {3, 5, 19, 37}) {
                    const std::vector<uint8_t> wq = random_blocks(type, K * N, rng, K);
                    const std::vector<float> w = dequantize_matrix(type, wq, K, N);
                    std::vector<float> x(size_t(K * M));
                    for (size_t i = 0; i < x.size(); ++i)
                        x[i] = i % 32 == size_t(rng() % 32) ? (rng() & 1 ? 127.0f : -127.0f)
                                                            : float(value(rng));
                    for (size_t b = 0; b < x.size(); b += 32) x[b + rng() % 32] = 127.0f;
                    std::vector<float> out(size_t(N * M), NAN);
                    sy_tensor a = sy::sdk::make_tensor(type, K, N, 1, 1, (void*)wq.data(), "w");
                    sy_tensor xb = sy::sdk::make_tensor(SY_TYPE_F32, K, M, 1, 1, x.data(), "x");
                    sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, N, M, 1, 1, out.data(), "y");
                    const sy_node node = make_node(SY_OP_MUL_MAT, &d, {&a, &xb});
                    const sy_status st = run(api, node);
                    ASSERT_EQ(st.code, SY_OK) << (st.message ? st.message : "");
                    for (int64_t m = 0; m < M; ++m)
                        for (int64_t n = 0; n < N; ++n) {
                            double dot = 0, abs_sum = 0;
                            for (int64_t k = 0; k < K; ++k) {
                                const double p =
                                    double(w[size_t(n * K + k)]) * x[size_t(m * K + k)];
                                dot += p;
                                abs_sum += std::fabs(p);
                            }
                            ASSERT_NEAR(out[size_t(m * N + n)], dot, 1e-5 * abs_sum + 1e-6)
                                << cpu.variant << " " << sy_dtype_info(type).name << " K=" << K
                                << " M=" << M << " row " << n << " col " << m;
                        }
                }
    }
}

// A GEMV (one activation row) takes the kernels' several-rows form where a kernel has one
// (rows in groups of 4, then 1 to 3); a product with two activation rows the one-row form. With
// the same activation twice, every output must match the GEMV's bit for bit, for row counts that
// leave each remainder, with weight rows further apart than their bytes (a view of wider rows)
// and back to back (where K = 128 pairs them).
// (A variant without a several-rows kernel runs the one-row form both times.)
TEST(QuantKernels, GemvMatchesTwoColumnProductBitForBit) {
    std::mt19937 rng(4321);
    for (const auto& cpu : cpu_plugins()) {
        const sy_plugin_api& api = cpu.plugin_api();
        for (int32_t type : kTypes)
            for (int64_t K : row_lengths(type))
                for (int64_t N : {6, 37, 39})
                    for (int64_t gap : {64, 0}) {
                        // Padding of 0xFF (an f16 NaN wherever a scale would be read): a read past
                        // a row's end shows. The buffer ends with the last row, for the sanitizers.
                        const int64_t row_bytes = sy::sdk::row_bytes(type, K),
                                      stride = row_bytes + gap;
                        std::vector<uint8_t> wq(size_t((N - 1) * stride + row_bytes), 0xFF);
                        const std::vector<uint8_t> rows = random_blocks(type, K * N, rng, K);
                        for (int64_t n = 0; n < N; ++n)
                            std::memcpy(&wq[size_t(n * stride)], &rows[size_t(n * row_bytes)],
                                        size_t(row_bytes));
                        std::vector<float> x = random_floats(K, rng);
                        x.insert(x.end(), x.begin(), x.end());  // the same row twice
                        std::vector<float> gemv(size_t(N), NAN), twice(size_t(2 * N), NAN);
                        sy_tensor a = sy::sdk::make_tensor(type, K, N, 1, 1, wq.data());
                        a.nb[1] = stride;
                        a.nb[2] = a.nb[3] = stride * N;
                        sy_tensor b1 = sy::sdk::make_tensor(SY_TYPE_F32, K, 1, 1, 1, x.data());
                        sy_tensor b2 = sy::sdk::make_tensor(SY_TYPE_F32, K, 2, 1, 1, x.data());
                        sy_tensor d1 = sy::sdk::make_tensor(SY_TYPE_F32, N, 1, 1, 1, gemv.data());
                        sy_tensor d2 = sy::sdk::make_tensor(SY_TYPE_F32, N, 2, 1, 1, twice.data());
                        ASSERT_EQ(run(api, make_node(SY_OP_MUL_MAT, &d1, {&a, &b1})).code, SY_OK);
                        ASSERT_EQ(run(api, make_node(SY_OP_MUL_MAT, &d2, {&a, &b2})).code, SY_OK);
                        for (int64_t n = 0; n < N; ++n)
                            for (int64_t m = 0; m < 2; ++m)
                                ASSERT_EQ(
                                    std::memcmp(&gemv[size_t(n)], &twice[size_t(m * N + n)], 4), 0)
                                    << cpu.variant << " " << sy_dtype_info(type).name << " K=" << K
                                    << " N=" << N << " gap " << gap << " row " << n << ": "
                                    << gemv[size_t(n)] << " vs " << twice[size_t(m * N + n)];
                    }
    }
}

// Weights broadcast over a batch dimension (A2 = 1, B2 = 2) and a strided (transposed) src1.
TEST(QuantKernels, MulMatBroadcastAndStridedActivations) {
    std::mt19937 rng(99);
    const int64_t K = 256, N = 5, M = 3, B2 = 2;
    for (const auto& cpu : cpu_plugins()) {
        const sy_plugin_api& api = cpu.plugin_api();
        for (int32_t type : {SY_TYPE_Q4_0, SY_TYPE_Q6_K}) {
            const std::vector<uint8_t> wq = random_blocks(type, K * N, rng, K);
            const std::vector<float> w = dequantize_matrix(type, wq, K, N);
            // x stored as {M * B2, K} and viewed transposed as {K, M, B2}.
            const std::vector<float> xt = random_floats(K * M * B2, rng);
            std::vector<float> out(size_t(N * M * B2), NAN);
            sy_tensor a = sy::sdk::make_tensor(type, K, N, 1, 1, (void*)wq.data());
            sy_tensor b = sy::sdk::make_tensor(SY_TYPE_F32, K, M, B2, 1, (void*)xt.data());
            b.nb[0] = 4 * M * B2;
            b.nb[1] = 4;
            b.nb[2] = 4 * M;
            b.nb[3] = 4 * M * B2 * K;
            sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, N, M, B2, 1, out.data());
            const sy_node node = make_node(SY_OP_MUL_MAT, &d, {&a, &b});
            ASSERT_EQ(run(api, node).code, SY_OK);
            std::vector<float> x(static_cast<size_t>(K));
            for (int64_t b2 = 0; b2 < B2; ++b2)
                for (int64_t m = 0; m < M; ++m) {
                    for (int64_t k = 0; k < K; ++k)
                        x[size_t(k)] = xt[size_t(k * M * B2 + b2 * M + m)];
                    for (int64_t n = 0; n < N; ++n) {
                        const Expected e =
                            reference_dot(&w[size_t(n * K)], x.data(), K, act_block(type));
                        EXPECT_NEAR(out[size_t((b2 * M + m) * N + n)], e.value, e.bound)
                            << cpu.variant << " " << sy_dtype_info(type).name;
                    }
                }
        }
    }
}

// 5 tokens give each expert about 4 slots (the per-row kernels), 40 about 30 (the avx512 tile
// path), 64 about 48 (the avx2 tile path too).
TEST(QuantKernels, MulMatIdWithQuantizedExperts) {
    std::mt19937 rng(77);
    const int64_t K = 256, N = 19, E = 4, U = 3;
    for (const auto& cpu : cpu_plugins()) {
        const sy_plugin_api& api = cpu.plugin_api();
        for (int32_t type : kTypes)
            for (int64_t T : {5, 40, 64}) {
                const std::vector<uint8_t> wq = random_blocks(type, K * N * E, rng, K);
                const std::vector<float> w = dequantize_matrix(type, wq, K, N * E);
                for (int64_t U1 : {int64_t(1), U}) {
                    const std::vector<float> x = random_floats(K * U1 * T, rng);
                    std::vector<int32_t> ids(size_t(U * T));
                    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(rng() % E);
                    std::vector<float> out(size_t(N * U * T), NAN);
                    sy_tensor tw = sy::sdk::make_tensor(type, K, N, E, 1, (void*)wq.data());
                    sy_tensor tx = sy::sdk::make_tensor(SY_TYPE_F32, K, U1, T, 1, (void*)x.data());
                    sy_tensor ti = sy::sdk::make_tensor(SY_TYPE_I32, U, T, 1, 1, ids.data());
                    sy_tensor td = sy::sdk::make_tensor(SY_TYPE_F32, N, U, T, 1, out.data());
                    const sy_node node = make_node(SY_OP_MUL_MAT_ID, &td, {&tw, &tx, &ti});
                    const sy_status st = run(api, node);
                    ASSERT_EQ(st.code, SY_OK) << (st.message ? st.message : "");
                    for (int64_t t = 0; t < T; ++t)
                        for (int64_t u = 0; u < U; ++u)
                            for (int64_t n = 0; n < N; ++n) {
                                const int32_t e = ids[size_t(t * U + u)];
                                const Expected ex = reference_dot(&w[size_t((e * N + n) * K)],
                                                                  &x[size_t((t * U1 + u % U1) * K)],
                                                                  K, act_block(type));
                                ASSERT_NEAR(out[size_t((t * U + u) * N + n)], ex.value, ex.bound)
                                    << cpu.variant << " " << sy_dtype_info(type).name;
                            }
                }
            }
    }
}

TEST(QuantKernels, GetRowsDequantizes) {
    std::mt19937 rng(5);
    const int64_t K = 512, R = 7;
    const std::vector<int32_t> ids = {6, 0, 3, 3, 1};
    for (const auto& cpu : cpu_plugins()) {
        const sy_plugin_api& api = cpu.plugin_api();
        for (int32_t type : kTypes) {
            const std::vector<uint8_t> wq = random_blocks(type, K * R, rng, K);
            const std::vector<float> w = dequantize_matrix(type, wq, K, R);
            std::vector<float> out(size_t(K * ids.size()), NAN);
            sy_tensor src = sy::sdk::make_tensor(type, K, R, 1, 1, (void*)wq.data());
            sy_tensor ti =
                sy::sdk::make_tensor(SY_TYPE_I32, int64_t(ids.size()), 1, 1, 1, (void*)ids.data());
            sy_tensor td =
                sy::sdk::make_tensor(SY_TYPE_F32, K, int64_t(ids.size()), 1, 1, out.data());
            const sy_node node = make_node(SY_OP_GET_ROWS, &td, {&src, &ti});
            const sy_status st = run(api, node);
            ASSERT_EQ(st.code, SY_OK) << (st.message ? st.message : "");
            for (size_t i = 0; i < ids.size(); ++i)
                for (int64_t k = 0; k < K; ++k)
                    ASSERT_EQ(out[i * size_t(K) + size_t(k)], w[size_t(ids[i] * K + k)])
                        << cpu.variant << " " << sy_dtype_info(type).name;
        }
    }
}

TEST(QuantKernels, SupportsRefusesWhatComputeCannotDo) {
    for (const auto& cpu : cpu_plugins()) {
        const sy_plugin_api& api = cpu.plugin_api();
        std::vector<uint8_t> wq(4096);
        std::vector<float> x(1024), out(64);
        // ne0 = 48 is not a whole number of 32-element blocks.
        sy_tensor a = sy::sdk::make_tensor(SY_TYPE_Q8_0, 48, 2, 1, 1, wq.data());
        sy_tensor b = sy::sdk::make_tensor(SY_TYPE_F32, 48, 1, 1, 1, x.data());
        sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, 2, 1, 1, 1, out.data());
        sy_node node = make_node(SY_OP_MUL_MAT, &d, {&a, &b});
        int32_t supported = 1;
        ASSERT_EQ(api.supports(api.ctx, 0, &node, &supported).code, SY_OK);
        EXPECT_EQ(supported, 0);
        // Q8_1 / Q8_K are activation formats, not weights; F16 dst is not offered.
        sy_tensor a1 = sy::sdk::make_tensor(SY_TYPE_Q8_K, 256, 2, 1, 1, wq.data());
        sy_tensor b1 = sy::sdk::make_tensor(SY_TYPE_F32, 256, 1, 1, 1, x.data());
        node = make_node(SY_OP_MUL_MAT, &d, {&a1, &b1});
        supported = 1;
        ASSERT_EQ(api.supports(api.ctx, 0, &node, &supported).code, SY_OK);
        EXPECT_EQ(supported, 0);
        sy_tensor a2 = sy::sdk::make_tensor(SY_TYPE_Q4_K, 256, 2, 1, 1, wq.data());
        sy_tensor d2 = sy::sdk::make_tensor(SY_TYPE_F16, 2, 1, 1, 1, out.data());
        node = make_node(SY_OP_MUL_MAT, &d2, {&a2, &b1});
        supported = 1;
        ASSERT_EQ(api.supports(api.ctx, 0, &node, &supported).code, SY_OK);
        EXPECT_EQ(supported, 0);
    }
}

// The plugin's host memory beyond its buffers (cost_params "extra_memory").
double extra_memory(const sy_plugin_api& api) {
    const sy_cost_param* params = nullptr;
    size_t n = 0;
    EXPECT_EQ(api.cost_params(api.ctx, 0, &params, &n).code, SY_OK);
    for (size_t i = 0; i < n; ++i)
        if (std::strcmp(params[i].key, "extra_memory") == 0) return params[i].value;
    ADD_FAILURE() << "no extra_memory row";
    return -1;
}

// The option repack (on here; auto at the end): Q4_0, IQ4_NL, Q8_0, Q4_1, Q5_0, Q5_1 and Q6_0
// weights with a constant_id are read from row-interleaved copies (interleaved_weights.hpp; the
// avx512 and avx2 variants).
// Products of 1 to 17 columns (the interleaved kernel takes up to 4 at a time) match the double
// reference on the dequantized weights for row lengths of 1, 3, 44 (DeepSeek's expert width) and 64
// blocks and 16 to 48 rows; a column's results do not depend on the columns beside it (a GEMV gives
// the bits of the same row in a 5-column product); the experts of MUL_MAT_ID and weights without a
// constant_id (read in place) too. The copies are reported as extra memory and dropped by
// release_constants.
constexpr int32_t kInterleavedTypes[] = {SY_TYPE_Q4_0, SY_TYPE_IQ4_NL, SY_TYPE_Q8_0, SY_TYPE_Q4_1,
                                         SY_TYPE_Q5_0, SY_TYPE_Q5_1,   SY_TYPE_Q6_0};
TEST(QuantKernels, InterleavedWeightsMatchDequantizedReference) {
    std::mt19937 rng(2468);
    for (const auto& cpu : cpu_plugins()) {
        const sy_plugin_api& api = cpu.plugin_api();
        ASSERT_NE(api.release_constants, nullptr);
        EXPECT_NE(api.set_option(api.ctx, "repack", "sometimes").code, SY_OK);
        ASSERT_EQ(api.set_option(api.ctx, "repack", "on").code, SY_OK);
        auto interleaves_type = [&](int32_t) {
            return cpu.variant == "avx512" || cpu.variant == "avx2";
        };
        uint64_t id = 1000;
        for (int32_t type : kInterleavedTypes)
            for (int64_t K : {32, 96, 1408, 2048})
                for (int64_t N : {16, 48}) {
                    const bool interleaves = interleaves_type(type);
                    const std::vector<uint8_t> wq = random_blocks(type, K * N, rng, K);
                    const std::vector<float> w = dequantize_matrix(type, wq, K, N);
                    const std::vector<float> x = random_floats(K * 17, rng);
                    std::vector<float> gemv(size_t(N), NAN);
                    for (int64_t M : {1, 5, 17}) {
                        std::vector<float> out(size_t(N * M), NAN);
                        sy_tensor a = sy::sdk::make_tensor(type, K, N, 1, 1, (void*)wq.data(), "w");
                        a.constant_id = ++id;
                        sy_tensor b =
                            sy::sdk::make_tensor(SY_TYPE_F32, K, M, 1, 1, (void*)x.data());
                        sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, N, M, 1, 1, out.data());
                        const double before = extra_memory(api);
                        ASSERT_EQ(run(api, make_node(SY_OP_MUL_MAT, &d, {&a, &b})).code, SY_OK);
                        EXPECT_EQ(extra_memory(api) - before,
                                  interleaves ? double(wq.size()) : 0.0);
                        for (int64_t m = 0; m < M; ++m)
                            for (int64_t n = 0; n < N; ++n) {
                                const Expected e =
                                    reference_dot(&w[size_t(n * K)], &x[size_t(m * K)], K, 32);
                                ASSERT_NEAR(out[size_t(m * N + n)], e.value, e.bound)
                                    << cpu.variant << " " << sy_dtype_info(type).name << " K=" << K
                                    << " N=" << N << " M=" << M << " row " << n << " col " << m;
                            }
                        if (M == 1)
                            gemv = out;
                        else
                            EXPECT_EQ(std::memcmp(gemv.data(), out.data(), size_t(N) * 4), 0)
                                << cpu.variant << " " << sy_dtype_info(type).name << " K=" << K;
                        ASSERT_EQ(api.release_constants(api.ctx, a.constant_id).code, SY_OK);
                        EXPECT_EQ(extra_memory(api), before);
                    }
                }
        // Experts: 4 experts of 32 rows, 3 slots per token; the copy is kept for the next call.
        const int64_t K = 256, N = 32, E = 4, U = 3, T = 5;
        for (int32_t type : kInterleavedTypes) {
            const bool interleaves = interleaves_type(type);
            const std::vector<uint8_t> wq = random_blocks(type, K * N * E, rng, K);
            const std::vector<float> w = dequantize_matrix(type, wq, K, N * E);
            const std::vector<float> x = random_floats(K * T, rng);
            std::vector<int32_t> ids(size_t(U * T));
            for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(rng() % E);
            sy_tensor tw = sy::sdk::make_tensor(type, K, N, E, 1, (void*)wq.data());
            tw.constant_id = ++id;
            sy_tensor tx = sy::sdk::make_tensor(SY_TYPE_F32, K, 1, T, 1, (void*)x.data());
            sy_tensor ti = sy::sdk::make_tensor(SY_TYPE_I32, U, T, 1, 1, ids.data());
            for (int call = 0; call < 2; ++call) {
                std::vector<float> out(size_t(N * U * T), NAN);
                sy_tensor td = sy::sdk::make_tensor(SY_TYPE_F32, N, U, T, 1, out.data());
                ASSERT_EQ(run(api, make_node(SY_OP_MUL_MAT_ID, &td, {&tw, &tx, &ti})).code, SY_OK);
                EXPECT_EQ(extra_memory(api), interleaves ? double(wq.size()) : 0.0);
                for (int64_t t = 0; t < T; ++t)
                    for (int64_t u = 0; u < U; ++u)
                        for (int64_t n = 0; n < N; ++n) {
                            const int32_t e = ids[size_t(t * U + u)];
                            const Expected ex = reference_dot(&w[size_t((e * N + n) * K)],
                                                              &x[size_t(t * K)], K, 32);
                            ASSERT_NEAR(out[size_t((t * U + u) * N + n)], ex.value, ex.bound)
                                << cpu.variant << " " << sy_dtype_info(type).name;
                        }
            }
            ASSERT_EQ(api.release_constants(api.ctx, tw.constant_id).code, SY_OK);
            // Without a constant_id the weights are read in place: nothing is kept.
            tw.constant_id = 0;
            std::vector<float> out(size_t(N * U * T), NAN);
            sy_tensor td = sy::sdk::make_tensor(SY_TYPE_F32, N, U, T, 1, out.data());
            ASSERT_EQ(run(api, make_node(SY_OP_MUL_MAT_ID, &td, {&tw, &tx, &ti})).code, SY_OK);
            EXPECT_EQ(extra_memory(api), 0.0);
        }
        const bool interleaves = interleaves_type(SY_TYPE_Q4_0);
        // auto (the default) copies too, within half of the available memory; off drops them.
        ASSERT_EQ(api.set_option(api.ctx, "repack", "auto").code, SY_OK);
        const std::vector<uint8_t> wq = random_blocks(SY_TYPE_Q4_0, 512 * 32, rng, 512);
        const std::vector<float> x = random_floats(512, rng);
        std::vector<float> out(32, NAN);
        sy_tensor a = sy::sdk::make_tensor(SY_TYPE_Q4_0, 512, 32, 1, 1, (void*)wq.data());
        a.constant_id = ++id;
        sy_tensor b = sy::sdk::make_tensor(SY_TYPE_F32, 512, 1, 1, 1, (void*)x.data());
        sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, 32, 1, 1, 1, out.data());
        ASSERT_EQ(run(api, make_node(SY_OP_MUL_MAT, &d, {&a, &b})).code, SY_OK);
        EXPECT_EQ(extra_memory(api), interleaves ? double(wq.size()) : 0.0);
        ASSERT_EQ(api.set_option(api.ctx, "repack", "off").code, SY_OK);
        EXPECT_EQ(extra_memory(api), 0.0);
        ASSERT_EQ(api.set_option(api.ctx, "repack", "auto").code, SY_OK);  // the plugin's default
    }
}

}  // namespace
