#include "cost_model.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/op_work.hpp"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace sy::blas {
namespace {

using Clock = std::chrono::steady_clock;

// The fastest of at least `reps` runs, in ns, repeated until they have taken 10 ms: on a shared
// machine a few runs in a row can all find a worker descheduled or slow to wake (passive OpenMP
// workers sleep between products), which made the per-product cost and the GEMM rate vary
// widely from one process to the next, and flipped placements that the tests check
// (docs/design-measurements.md#blas-timing-repeats).
template <typename Fn>
double best_ns(int reps, Fn&& fn) {
    double best = 1e300;
    const auto start = Clock::now();
    for (int i = 0; i < reps || (Clock::now() - start < std::chrono::milliseconds(10) && i < 1000);
         ++i) {
        const auto t0 = Clock::now();
        fn();
        best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    }
    return best;
}

// `packed`: the weights in the engine's own layout (0 when it has none).
double measure_gemm(Engine& engine, GemmType t, int64_t M, int64_t N, int64_t K, int reps,
                    bool packed = false) {
    const size_t es = t == GemmType::bf16 ? 2 : 4;
    std::vector<char> a(size_t(M * K) * es), w(size_t(N * K) * es);
    std::vector<float> c(size_t(M * N));
    // Small values in both encodings (0x3c00 is 1.0 in bf16's upper half for f32 too: 1/128).
    for (size_t i = 0; i < a.size(); i += 2) a[i + 1] = 0x3c;
    for (size_t i = 0; i < w.size(); i += 2) w[i + 1] = 0x3c;
    Gemm g;
    g.M = M, g.N = N, g.K = K, g.type = t;
    g.a = a.data(), g.lda = K, g.w = w.data(), g.ldw = K, g.c = c.data(), g.ldc = N;
    std::vector<char> blocked;
    if (packed) {
        const size_t bytes = engine.packed_weight_bytes(t, N, K);
        if (bytes == 0) return 0;
        blocked.resize(bytes);
        engine.pack_weights(t, N, K, w.data(), K, blocked.data());
        g.w = blocked.data();
        g.w_packed = true;
    }
    engine.gemm(g);  // warm-up: primitive creation, first touch
    return best_ns(reps, [&] { engine.gemm(g); });
}

double measure_bandwidth(int threads) {
    constexpr size_t kBytes = size_t(64) << 20;
    const size_t n = kBytes / sizeof(uint64_t);
    std::vector<uint64_t> data(n, 1);
    uint64_t sink = 0;
    const double ns = best_ns(3, [&] {
        uint64_t sum = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : sum) schedule(static)
        for (size_t i = 0; i < n; ++i) sum += data[i];
        sink += sum;
    });
    if (sink == 0) return 0;  // keeps the reads
    return double(kBytes) / ns * 1e9;
}

}  // namespace

double Rates::flops(GemmType t, double rows, bool packed) const {
    const auto& plain = t == GemmType::bf16 ? flops_bf16 : flops_f32;
    const auto& blocked = t == GemmType::bf16 ? flops_bf16_packed : flops_f32_packed;
    const auto& table = packed && blocked.front() > 0 ? blocked : plain;
    if (rows <= double(kRows.front())) return table.front();
    for (size_t i = 1; i < kRows.size(); ++i) {
        if (rows > double(kRows[i])) continue;
        const double x0 = std::log(double(kRows[i - 1])), x1 = std::log(double(kRows[i]));
        const double f = (std::log(rows) - x0) / (x1 - x0);
        return table[i - 1] + f * (table[i] - table[i - 1]);
    }
    return table.back();
}

Rates measure_rates(Workspace& ws) {
    Engine& engine = *ws.engine;
    Rates r;
    r.threads = ws.threads;
    engine.set_threads(ws.threads);
    r.overhead_ns = measure_gemm(engine, GemmType::f32, 1, 256, 256, 20);
    constexpr int64_t kSide = 1024;
    for (size_t i = 0; i < Rates::kRows.size(); ++i) {
        const int64_t M = Rates::kRows[i];
        const double flop = 2.0 * double(M) * kSide * kSide;
        const auto rate = [&](GemmType t, bool packed) {
            const double ns = measure_gemm(engine, t, M, kSide, kSide, 3, packed);
            return ns > 0 ? flop / std::max(1.0, ns - r.overhead_ns) * 1e9 : 0.0;
        };
        r.flops_f32[i] = rate(GemmType::f32, false);
        r.flops_f32_packed[i] = rate(GemmType::f32, true);
        if (engine.has_bf16()) {
            r.flops_bf16[i] = rate(GemmType::bf16, false);
            r.flops_bf16_packed[i] = rate(GemmType::bf16, true);
        }
    }

    // Conversions, per value, on all threads as the products run them, over buffers larger than
    // the caches (32 MiB of f32): the weights a call converts come from memory.
    constexpr int64_t kValues = int64_t(1) << 23, kRow = 4096;
    std::vector<float> f32(size_t(kValues), 0.5f);
    std::vector<uint16_t> h(size_t(kValues), 0x3800);  // 0.5 in f16
    std::vector<char> q8(size_t(quants::row_size(SY_TYPE_Q8_0, kValues)));
    quants::quantize_row(SY_TYPE_Q8_0, f32.data(), q8.data(), kValues);
    std::vector<char> out(size_t(kValues) * 4);
    const GemmType block_operand = gemm_type(ws, SY_TYPE_Q8_0);
    const auto per_value = [&](auto&& convert) {
        return best_ns(3,
                       [&] {
                           const int64_t rows = kValues / kRow;
#pragma omp parallel for num_threads(ws.threads) schedule(static)
                           for (int64_t i = 0; i < rows; ++i) convert(i * kRow);
                       }) /
               double(kValues);
    };
    r.pack_bf16_ns = per_value([&](int64_t i) {
        convert_row(SY_TYPE_F32, &f32[size_t(i)], GemmType::bf16, &out[size_t(i) * 2], kRow);
    });
    r.pack_f32_ns = per_value([&](int64_t i) {
        convert_row(SY_TYPE_F32, &f32[size_t(i)], GemmType::f32, &out[size_t(i) * 4], kRow);
    });
    r.f16_to_f32_ns = per_value([&](int64_t i) {
        convert_row(SY_TYPE_F16, &h[size_t(i)], GemmType::f32, &out[size_t(i) * 4], kRow);
    });
    const int64_t q8_row = quants::row_size(SY_TYPE_Q8_0, kRow);
    r.block_to_operand_ns = per_value([&](int64_t i) {
        convert_row(SY_TYPE_Q8_0, &q8[size_t(i / kRow * q8_row)], block_operand,
                    &out[size_t(i) * 4], kRow);
    });
    r.bandwidth = measure_bandwidth(ws.threads);
    // One-row products over 64 MiB of weights: the weights come from memory, as in generation.
    const auto stream = [&](GemmType t) {
        const int64_t es = t == GemmType::bf16 ? 2 : 4, K = 4096, N = (int64_t(64) << 20) / es / K;
        return double(N * K * es) / measure_gemm(engine, t, 1, N, K, 3) * 1e9;
    };
    r.stream_f32 = stream(GemmType::f32);
    if (engine.has_bf16()) r.stream_bf16 = stream(GemmType::bf16);
    return r;
}

namespace {

double bytes_of(int32_t type, double values) {
    const sy_dtype_traits tr = sy_dtype_info(type);
    return tr.block_size > 0 ? values / tr.block_size * tr.type_size : 0.0;
}

// One GEMM of `rows` activation rows against one {K, N} weight matrix of `type`, including the
// conversion of its weights (read from memory) and the packing of its activations (`pack` false:
// already packed for an earlier product of the same rows, as the fused op's gate product is).
// `kept`: the weights are copies kept from an earlier call (WeightCache), read as they are;
// `packed`: in the engine's packed layout.
double product_ns(const Rates& r, const Workspace& ws, int32_t type, double rows, double N,
                  double K, bool kept, bool packed, bool pack = true) {
    const GemmType t = gemm_type(ws, type);
    const bool in_place = (t == GemmType::f32 && type == SY_TYPE_F32) ||
                          (t == GemmType::bf16 && type == SY_TYPE_BF16);
    double convert = pack ? rows * K * (t == GemmType::bf16 ? r.pack_bf16_ns : r.pack_f32_ns) : 0;
    if (!in_place && !kept) {
        // Block types by their measured rate; f16 widened, and rounded again for bf16.
        const bool block = sy_dtype_info(type).block_size > 1;
        convert += N * K *
                   (block ? r.block_to_operand_ns
                          : r.f16_to_f32_ns + (t == GemmType::bf16 ? r.pack_bf16_ns : 0.0));
    }
    const double rate = r.flops(t, rows, kept && packed);
    const double compute_ns = rate > 0 ? 2.0 * rows * N * K / rate * 1e9 : 0.0;
    // The GEMM streams the weights as it gets them: the source, or the widened copy.
    const double weight_bytes =
        in_place && !kept ? bytes_of(type, N * K) : N * K * (t == GemmType::bf16 ? 2.0 : 4.0);
    const double stream = t == GemmType::bf16 ? r.stream_bf16 : r.stream_f32;
    const double memory_ns = stream > 0 ? weight_bytes / stream * 1e9 : 0.0;
    return r.overhead_ns + std::max(compute_ns, memory_ns) + convert;
}

}  // namespace

double estimate_ns(const Rates& r, Workspace& ws, const sy_node& node) {
    const sy_tensor& a = *node.src[0];
    const double K = double(a.ne[0]), N = double(a.ne[1]);
    if (node.op == SY_OP_MUL_MAT) {
        const sy_tensor& b = *node.src[1];
        const double matrices = double(a.ne[2]) * double(a.ne[3]);
        const double rows = double(b.ne[1]) * double(b.ne[2]) * double(b.ne[3]) / matrices;
        bool packed = false;
        const bool kept = weights_kept(ws, a, gemm_type(ws, a.type), matrices, &packed);
        return matrices * product_ns(r, ws, a.type, rows, N, K, kept, packed);
    }
    // MUL_MAT_ID / moe.fused_up_gate: the experts the batch can touch, its rows spread evenly
    // over them (the routing is known only at run time), padded as mul_mat_id pads them.
    const bool fused = node.op == SY_OP_NAMED;
    const sdk::ExpertReach reach = sdk::expert_reach(node);
    const double pairs = reach.pairs, touched = reach.touched;
    if (touched <= 0) return r.overhead_ns;
    const double q = double(kExpertRowQuantum);
    const double rows = std::ceil(pairs / touched / q) * q;
    // Both of the fused op's weights are kept, or neither is counted as kept.
    bool packed = false;
    const bool kept =
        weights_kept(ws, a, gemm_type(ws, a.type), double(a.ne[2]) * (fused ? 2.0 : 1.0), &packed);
    double per_expert = product_ns(r, ws, a.type, rows, N, K, kept, packed);
    if (fused) per_expert += product_ns(r, ws, a.type, rows, N, K, kept, packed, false);
    // The activation (exp per value, ~20 flops) and the scatter of the results, on all threads.
    const double epilogue = pairs * N * (fused ? 2.0 : 0.5) / std::max(1, r.threads);
    return touched * per_expert + epilogue;
}

}  // namespace sy::blas
