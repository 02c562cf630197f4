#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "ops/ops.hpp"
#include "ops/rowdot.hpp"
#include "quant/blocks.cuh"
#include "switchyard/ops.h"

namespace sy::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

struct ColumnPlace {
    int64_t weight_offset;  // bytes from w.data
    int64_t x_row;
    char* out;  // dst element of n = 0
};

// nullopt-like: weight_offset < 0 means the slot has no product: its expert id is SY_ID_NONE
// (out set: the slot's dst is zero) or out of range (out null; already reported). A warp works
// this out once per column for all its rows; the divisions are 32-bit (rowdot_grid checks that
// the column counts fit), a 64-bit one being a long software routine on the GPU.
__device__ inline ColumnPlace place_column(const TensorDesc& w, const RowDotColumns& c,
                                           const TensorDesc& dst, int64_t col, int* error_word,
                                           int error_code) {
    ColumnPlace p;
    const auto c32 = uint32_t(col);
    if (!c.by_expert) {
        const uint32_t m = c32 % uint32_t(c.M), rest = c32 / uint32_t(c.M);
        const uint32_t b2 = rest % uint32_t(c.B2), b3 = rest / uint32_t(c.B2);
        p.weight_offset =
            int64_t(b2 / uint32_t(c.r2)) * w.nb[2] + int64_t(b3 / uint32_t(c.r3)) * w.nb[3];
        p.x_row = col;
        p.out = dst.data + m * dst.nb[1] + b2 * dst.nb[2] + b3 * dst.nb[3];
        return p;
    }
    const uint32_t u = c32 % uint32_t(c.U), t = c32 / uint32_t(c.U);
    const int32_t e =
        *reinterpret_cast<const int32_t*>(c.ids.data + u * c.ids.nb[0] + t * c.ids.nb[1]);
    p.out = dst.data + u * dst.nb[1] + t * dst.nb[2];
    if (e == SY_ID_NONE) {
        p.weight_offset = -1;
        return p;
    }
    if (e < 0 || e >= c.E) {
        if (threadIdx.x % 32 == 0) report_bad_index(error_word, error_code);
        p.weight_offset = -1;
        p.out = nullptr;
        return p;
    }
    p.weight_offset = e * w.nb[2];
    p.x_row = u % uint32_t(c.U1) + uint32_t(c.U1) * int64_t(t);
    return p;
}

// Before the activations are ready (wait_for_prerequisite): the warp's first `rows` weight rows
// of its first column toward L2, for MUL_MAT (an expert's place needs the ids, which are
// inputs). Whole row strides: with padded rows the last one's padding is asked for too (a
// prefetch is a hint, never a read). Bounding it by the rows' bytes (the type's block size
// times K) made ptxas spill IQ5_K's one-row kernel at 64 registers.
__device__ inline void prefetch_first_rows(const TensorDesc& w, const RowDotColumns& c,
                                           int64_t first, int rows, int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // before 9.0 nothing runs beside the wait
    if (c.by_expert || blockIdx.y >= c.count || first >= w.ne[1]) return;
    const uint32_t rest = uint32_t(blockIdx.y) / uint32_t(c.M);
    const uint32_t b2 = rest % uint32_t(c.B2), b3 = rest / uint32_t(c.B2);
    const char* row = w.data + int64_t(b2 / uint32_t(c.r2)) * w.nb[2] +
                      int64_t(b3 / uint32_t(c.r3)) * w.nb[3] + first * w.nb[1];
    const int64_t n = w.ne[1] - first < rows ? w.ne[1] - first : rows;
    prefetch_l2(row, n * w.nb[1], lane);
#endif
}

// The bytes of 32 sub-blocks of a block type (one warp step), and the widest load that divides
// them: each warp copies its row's next step into shared memory with coalesced loads, issued
// one step ahead, and every lane decodes its sub-block from there. Used for the K-quants, where
// it measured faster (docs/design-measurements.md#cuda-staged-rows). The 32-value types read
// their blocks directly (staged they were slower); IQ4_XS and the codebook i-quants (IQ2_*,
// IQ3_*, IQ1_*) read theirs directly too, unmeasured either way.
template <int Type>
struct StagedRows
    : std::bool_constant<Type == SY_TYPE_Q2_K || Type == SY_TYPE_Q3_K || Type == SY_TYPE_Q4_K ||
                         Type == SY_TYPE_Q5_K || Type == SY_TYPE_Q6_K> {};

template <int Type>
struct Staging {
    static constexpr int kSubsPerBlock = BlockTraits<Type>::kValues / 32;
    static constexpr int kBytes = 32 / kSubsPerBlock * BlockTraits<Type>::kBytes;
    static constexpr int kWidth = kBytes % 16 == 0 ? 16 : kBytes % 8 == 0 ? 8 : 4;
    static constexpr int kLoads = (kBytes / kWidth + 31) / 32;  // per lane
    using Vec =
        std::conditional_t<kWidth == 16, uint4, std::conditional_t<kWidth == 8, uint2, uint32_t>>;
    static_assert(kBytes % kWidth == 0, "a step's bytes are whole loads");
};

template <int Type>
__device__ inline void load_step(const uint8_t* src, int lane, typename Staging<Type>::Vec* regs) {
    using S = Staging<Type>;
    const auto* v = reinterpret_cast<const typename S::Vec*>(src);
#pragma unroll
    for (int i = 0; i < S::kLoads; ++i) {
        const int at = lane + 32 * i;
        if (at < S::kBytes / S::kWidth) regs[i] = v[at];
    }
}

template <int Type>
__device__ inline void store_step(uint8_t* dst, int lane, const typename Staging<Type>::Vec* regs) {
    using S = Staging<Type>;
    auto* v = reinterpret_cast<typename S::Vec*>(dst);
#pragma unroll
    for (int i = 0; i < S::kLoads; ++i) {
        const int at = lane + 32 * i;
        if (at < S::kBytes / S::kWidth) v[at] = regs[i];
    }
}

// 8 blocks of 4 warps per SM (at most 64 registers a thread): with the cap the K-quants read
// faster, the 32-value types about the same. Tried and slower for Q4_0/Q8_0: two or four blocks
// per lane in flight (96-150 registers), and rows copied to shared memory with cp.async, in a
// ring across a warp's rows or a row at a time
// (docs/design-measurements.md#cuda-rowdot-register-cap).
constexpr int kMinBlocksPerSM = 8;

// Weight rows per warp: 1 reads a row per warp pass (rowdot_blocks_kernel); with R > 1 a warp
// takes R consecutive rows at once (rowdot_rows_kernel), each lane loading its activation
// sub-block once for all R and keeping R rows' weight loads in flight. Chosen per type from GEMV
// bandwidth with 1, 2 and 4 for every type (docs/design-measurements.md#cuda-rowdot-rows-per-warp):
// Q2_K and Q3_K read faster with 2, the 2-bit ik types and IQ1_KT with 4; the others as fast or
// faster with 1.
template <int Type>
struct RowsPerWarp : std::integral_constant<int, 1> {};
template <>
struct RowsPerWarp<SY_TYPE_Q2_K> : std::integral_constant<int, 2> {};
template <>
struct RowsPerWarp<SY_TYPE_Q3_K> : std::integral_constant<int, 2> {};
template <>
struct RowsPerWarp<SY_TYPE_IQ2_K> : std::integral_constant<int, 4> {};
template <>
struct RowsPerWarp<SY_TYPE_IQ2_KS> : std::integral_constant<int, 4> {};
template <>
struct RowsPerWarp<SY_TYPE_IQ1_KT> : std::integral_constant<int, 4> {};
template <>
struct RowsPerWarp<SY_TYPE_IQ2_KT> : std::integral_constant<int, 4> {};

// Fewer resident warps for more rows per warp: the registers of R rows' decodes must fit (at 64
// registers a thread, 8 blocks per SM, most types' 2- and 4-row kernels spilled to local memory
// in ptxas' report).
template <int Rows>
constexpr int rows_min_blocks() {
    return Rows >= 4 ? 4 : 6;
}

template <int Type, int Rows>
__global__ void __launch_bounds__(32 * kWarpsPerBlock, rows_min_blocks<Rows>())
    rowdot_rows_kernel(TensorDesc w, ActRows x, RowDotColumns cols, TensorDesc dst, int* error_word,
                       int error_code) {
    const int lane = threadIdx.x % 32;
    const int64_t first = (int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32) * Rows;
    const int64_t stride = int64_t(gridDim.x) * kWarpsPerBlock * Rows;
    const int64_t subs = w.ne[0] / 32, N = w.ne[1];
    prefetch_first_rows(w, cols, first, Rows, lane);
    wait_for_prerequisite();
    for (int64_t col = blockIdx.y; col < cols.count; col += gridDim.y) {
        const ColumnPlace p = place_column(w, cols, dst, col, error_word, error_code);
        for (int64_t n0 = first; n0 < N; n0 += stride) {
            const int rows = int(N - n0 < Rows ? N - n0 : Rows);
            if (p.weight_offset < 0) {
                if (p.out != nullptr && lane < rows)
                    *reinterpret_cast<float*>(p.out + (n0 + lane) * dst.nb[0]) = 0.0f;
                continue;
            }
            const auto* base =
                reinterpret_cast<const uint8_t*>(w.data + p.weight_offset + n0 * w.nb[1]);
            float acc[Rows];
#pragma unroll
            for (int r = 0; r < Rows; ++r) acc[r] = 0.0f;
            // Instantiated twice: for all R rows (unrolled without a test per row) and the tail.
            auto accumulate = [&](auto all_rows) {
                for (int64_t s = lane; s < subs; s += 32) {
                    const ActSub a = load_act(x, p.x_row, s);
#pragma unroll
                    for (int r = 0; r < Rows; ++r) {
                        if (!decltype(all_rows)::value && r >= rows) break;
                        Sub32 sub;
                        decode_row_sub<Type>(base + r * w.nb[1], s, sub);
                        acc[r] += dot_sub<Type>(sub, a);
                    }
                }
            };
            if (rows == Rows)
                accumulate(std::true_type{});
            else
                accumulate(std::false_type{});
#pragma unroll
            for (int r = 0; r < Rows; ++r) acc[r] = warp_sum(acc[r]);
            if (lane == 0)
                for (int r = 0; r < rows; ++r)
                    *reinterpret_cast<float*>(p.out + (n0 + r) * dst.nb[0]) = acc[r];
        }
    }
}

template <int Type>
__global__ void __launch_bounds__(32 * kWarpsPerBlock, kMinBlocksPerSM)
    rowdot_blocks_kernel(TensorDesc w, ActRows x, RowDotColumns cols, TensorDesc dst,
                         int* error_word, int error_code) {
    const int lane = threadIdx.x % 32;
    const int64_t first = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
    const int64_t subs = w.ne[0] / 32;
    prefetch_first_rows(w, cols, first, 1, lane);
    wait_for_prerequisite();
    for (int64_t col = blockIdx.y; col < cols.count; col += gridDim.y) {
        const ColumnPlace p = place_column(w, cols, dst, col, error_word, error_code);
        for (int64_t n = first; n < w.ne[1]; n += warps) {
            if (p.weight_offset < 0) {
                if (p.out != nullptr && lane == 0)
                    *reinterpret_cast<float*>(p.out + n * dst.nb[0]) = 0.0f;
                continue;
            }
            const auto* row =
                reinterpret_cast<const uint8_t*>(w.data + p.weight_offset + n * w.nb[1]);
            float acc = 0.0f;
            int64_t staged = 0;  // sub-blocks done through shared memory
            if constexpr (StagedRows<Type>::value) {
                using S = Staging<Type>;
                __shared__ alignas(16) uint8_t stage[kWarpsPerBlock][S::kBytes];
                if (reinterpret_cast<uintptr_t>(row) % S::kWidth == 0 && subs >= 32) {
                    const int64_t steps = subs / 32;
                    uint8_t* mine = stage[threadIdx.x / 32];
                    typename S::Vec regs[S::kLoads];
                    load_step<Type>(row, lane, regs);
                    for (int64_t step = 0; step < steps; ++step) {
                        store_step<Type>(mine, lane, regs);
                        __syncwarp();
                        if (step + 1 < steps)
                            load_step<Type>(row + (step + 1) * S::kBytes, lane, regs);
                        Sub32 sub;
                        decode_row_sub<Type>(mine, lane, sub);
                        acc += dot_sub<Type>(sub, load_act(x, p.x_row, step * 32 + lane));
                        __syncwarp();
                    }
                    staged = steps * 32;
                }
            }
            for (int64_t s = staged + lane; s < subs; s += 32) {
                Sub32 sub;
                decode_row_sub<Type>(row, s, sub);
                acc += dot_sub<Type>(sub, load_act(x, p.x_row, s));
            }
            acc = warp_sum(acc);
            if (lane == 0) *reinterpret_cast<float*>(p.out + n * dst.nb[0]) = acc;
        }
    }
}

__global__ void rowdot_float_kernel(TensorDesc w, const float* x, RowDotColumns cols,
                                    TensorDesc dst, int* error_word, int error_code) {
    const int lane = threadIdx.x % 32;
    const int64_t first = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    const int64_t warps = int64_t(gridDim.x) * kWarpsPerBlock;
    const int64_t K = w.ne[0];
    for (int64_t col = blockIdx.y; col < cols.count; col += gridDim.y) {
        const ColumnPlace p = place_column(w, cols, dst, col, error_word, error_code);
        for (int64_t n = first; n < w.ne[1]; n += warps) {
            if (p.weight_offset < 0) {
                if (p.out != nullptr && lane == 0)
                    *reinterpret_cast<float*>(p.out + n * dst.nb[0]) = 0.0f;
                continue;
            }
            const char* row = w.data + p.weight_offset + n * w.nb[1];
            const float* xr = x + p.x_row * K;
            float acc = 0.0f;
            for (int64_t k = lane; k < K; k += 32)
                acc += load_float(w.type, row + k * w.nb[0]) * xr[k];
            acc = warp_sum(acc);
            if (lane == 0) *reinterpret_cast<float*>(p.out + n * dst.nb[0]) = acc;
        }
    }
}

// Float weights against up to kMaxColumns columns per weight slice: a warp per weight row reads
// the row once (load_float over any strides) and keeps one sum per column. blockIdx.y is the
// batch (b2, b3); x holds F32 rows m + M * (b2 + B2 * b3), K floats each.
template <int MaxColumns>
__global__ void rowdot_float_columns_kernel(TensorDesc w, const float* x, int64_t M, int64_t B2,
                                            int64_t r2, int64_t r3, TensorDesc dst) {
    const int lane = threadIdx.x % 32;
    const int64_t n = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (n >= w.ne[1]) return;
    const int64_t K = w.ne[0];
    const int64_t batch = blockIdx.y, b2 = batch % B2, b3 = batch / B2;
    const char* row = w.data + (b2 / r2) * w.nb[2] + (b3 / r3) * w.nb[3] + n * w.nb[1];
    const float* xb = x + batch * M * K;
    float acc[MaxColumns] = {};
    for (int64_t k = lane; k < K; k += 32) {
        const float a = load_float(w.type, row + k * w.nb[0]);
#pragma unroll
        for (int m = 0; m < MaxColumns; ++m)
            if (m < M) acc[m] += a * xb[m * K + k];
    }
    char* out = dst.data + n * dst.nb[0] + b2 * dst.nb[2] + b3 * dst.nb[3];
#pragma unroll
    for (int m = 0; m < MaxColumns; ++m) {
        if (m >= M) break;
        const float v = warp_sum(acc[m]);
        if (lane == 0) *reinterpret_cast<float*>(out + m * dst.nb[1]) = v;
    }
}

}  // namespace

void launch_rowdot_float_columns(const OpContext& ctx, const TensorDesc& w, const float* x,
                                 int64_t M, int64_t B2, int64_t B3, int64_t r2, int64_t r3,
                                 const TensorDesc& dst) {
    if (M > kRowDotFloatColumns) throw LaunchError("row dot: too many columns for one warp");
    if (B2 * B3 > 65535) throw LaunchError("row dot: more than 65535 weight slices");
    if (M == 0 || w.ne[1] == 0 || B2 * B3 == 0) return;
    const dim3 grid(unsigned((w.ne[1] + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned(B2 * B3));
    const dim3 block(32 * kWarpsPerBlock);
    if (M <= 4)
        rowdot_float_columns_kernel<4><<<grid, block, 0, ctx.stream>>>(w, x, M, B2, r2, r3, dst);
    else
        rowdot_float_columns_kernel<kRowDotFloatColumns>
            <<<grid, block, 0, ctx.stream>>>(w, x, M, B2, r2, r3, dst);
    check_launch("matrix product (float row dot)");
}

namespace {

// How many blocks of Kernel one SM of `device` holds at once, times its SMs; asked of the
// runtime once per kernel and device.
template <auto Kernel>
int64_t resident_blocks(int device) {
    static std::array<std::atomic<int64_t>, 64> cache{};
    if (device < 0 || device >= int(cache.size())) device = 0;
    int64_t n = cache[size_t(device)].load(std::memory_order_relaxed);
    if (n == 0) {
        int sms = 0, per_sm = 0;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, 32 * kWarpsPerBlock, 0);
        n = int64_t(std::max(sms, 1)) * std::max(per_sm, 1);
        cache[size_t(device)].store(n, std::memory_order_relaxed);
    }
    return n;
}

// One block per kWarpsPerBlock weight rows, but no more blocks than fit on the device at once:
// the warps then loop over the rows, so a warp works out its column's place once for several
// rows and no partial last wave leaves SMs idle. Several columns share the resident blocks.
template <auto Kernel>
dim3 rowdot_grid(const TensorDesc& w, const RowDotColumns& cols, int device,
                 int rows_per_warp = 1) {
    if (cols.count > INT32_MAX || cols.M > INT32_MAX || cols.B2 > INT32_MAX || cols.U > INT32_MAX)
        throw LaunchError("row dot: more than 2^31 columns");
    const int64_t rows_per_block = int64_t(kWarpsPerBlock) * rows_per_warp;
    const int64_t per_rows = (w.ne[1] + rows_per_block - 1) / rows_per_block;
    const int64_t columns = std::min<int64_t>(cols.count, 65535);
    const int64_t fit = (resident_blocks<Kernel>(device) + columns - 1) / columns;
    return dim3(unsigned(std::max<int64_t>(1, std::min(per_rows, fit))), unsigned(columns));
}

}  // namespace

void launch_rowdot(const OpContext& ctx, const TensorDesc& w, const float* x,
                   const RowDotColumns& cols, const TensorDesc& dst) {
    if (cols.count == 0 || w.ne[1] == 0) return;
    int device = 0;
    cudaGetDevice(&device);
    rowdot_float_kernel<<<rowdot_grid<rowdot_float_kernel>(w, cols, device), 32 * kWarpsPerBlock, 0,
                          ctx.stream>>>(w, x, cols, dst, ctx.error_word, ctx.error_code);
    check_launch("matrix product (float row dot)");
}

namespace {

// Whether Kernel runs on `device` as a programmatic dependent: the device has compute
// capability 9.0 or later and the code it runs was compiled for 9.0 or later (code JIT-compiled
// from an older architecture's PTX has no griddepcontrol.wait, so it must not start early).
template <auto Kernel>
bool dependent_launch(int device) {
    static std::array<std::atomic<int>, 64> cache{};  // 0 unknown, 1 no, 2 yes
    if (device < 0 || device >= int(cache.size())) return false;
    int v = cache[size_t(device)].load(std::memory_order_relaxed);
    if (v == 0) {
        int major = 0;
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
        cudaFuncAttributes attributes{};
        const bool known = cudaFuncGetAttributes(&attributes, Kernel) == cudaSuccess;
        v = major >= 9 && known && attributes.ptxVersion >= 90 ? 2 : 1;
        cache[size_t(device)].store(v, std::memory_order_relaxed);
    }
    return v == 2;
}

// A block-type row dot over rows_per_warp rows a warp. It comes right after the activations'
// quantization, which it waits for inside the kernel (wait_for_prerequisite): launched as its
// dependent, it starts while that runs and prefetches its first weight rows, instead of starting
// after it ends. A launch error is left for the caller's check_launch to report.
template <auto Kernel>
void launch_dependent(const OpContext& ctx, const TensorDesc& w, const ActRows& x,
                      const RowDotColumns& cols, const TensorDesc& dst, int rows_per_warp) {
    int device = 0;
    cudaGetDevice(&device);
    const dim3 grid = rowdot_grid<Kernel>(w, cols, device, rows_per_warp);
    if (dependent_launch<Kernel>(device)) {
        cudaLaunchConfig_t config{};
        config.gridDim = grid;
        config.blockDim = dim3(32 * kWarpsPerBlock);
        config.stream = ctx.stream;
        cudaLaunchAttribute attribute{};
        attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute.val.programmaticStreamSerializationAllowed = 1;
        config.attrs = &attribute;
        config.numAttrs = 1;
        cudaLaunchKernelEx(&config, Kernel, w, x, cols, dst, ctx.error_word, ctx.error_code);
        return;
    }
    Kernel<<<grid, 32 * kWarpsPerBlock, 0, ctx.stream>>>(w, x, cols, dst, ctx.error_word,
                                                         ctx.error_code);
}

}  // namespace

void launch_rowdot(const OpContext& ctx, const TensorDesc& w, const ActRows& x,
                   const RowDotColumns& cols, const TensorDesc& dst) {
    if (cols.count == 0 || w.ne[1] == 0) return;
    const bool known = with_block_type(w.type, [&](auto type_tag) {
        constexpr int Type = decltype(type_tag)::value;
        constexpr int Rows = RowsPerWarp<Type>::value;
        if constexpr (Rows == 1)
            launch_dependent<rowdot_blocks_kernel<Type>>(ctx, w, x, cols, dst, 1);
        else
            launch_dependent<rowdot_rows_kernel<Type, Rows>>(ctx, w, x, cols, dst, Rows);
    });
    if (!known) throw LaunchError("matrix product: no decoder for this weight type");
    check_launch("matrix product (row dot)");
}

}  // namespace sy::cuda
