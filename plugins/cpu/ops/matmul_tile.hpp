// The dot-product kernel behind MUL_MAT and MUL_MAT_ID. Both compute dst values that are dot
// products of a weight row (F32, F16 or BF16, contiguous) with an activation row (packed F32)
// over K; they differ only in which rows meet and where the result goes, so the callers hand
// over pointer lists and this header does the arithmetic:
//
//   matmul_block: weight rows [n0, n1) x `count` activation columns, walked in register tiles of
//   kTileRows x kTileCols dot products. Each step of a tile loads kTileRows weight vectors
//   (converted to F32 in registers) and kTileCols activation vectors and does R x C FMAs, so each
//   load feeds several FMAs. Partial tiles at the edges repeat the last weight row (its results
//   are dropped) and fall back to one column at a time; K need not be a multiple of the vector
//   width (a scalar tail finishes each dot product).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "simd.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

constexpr int kTileRows = 4;
// AVX-512 has 32 vector registers: 4 x 4 accumulators + 4 activations + 1 weight fit; AVX2 and
// SSE have 16, so 4 x 2 + 2 + 1.
constexpr int kTileCols = simd::kLanes == 16 ? 4 : 2;
// Work of one task: at least kBlockRows weight rows (see rows_per_task) against at most
// kBlockCols activation columns.
constexpr int64_t kBlockRows = 16;
constexpr int64_t kBlockCols = 64;
constexpr int64_t kTasksPerThread = 4;

// Weight rows per task for a matmul of N weight rows split into `parts` independent pieces
// (batch entries x column blocks, or experts x column blocks): about kTasksPerThread tasks per
// thread in all, in whole kBlockRows. Long runs of consecutive weight rows per thread matter
// more than fine balance: large tasks keep each thread streaming through its own rows, while
// small tasks taken in turn measured markedly slower
// (docs/design-measurements.md#cpu-gemv-task-size).
inline int64_t rows_per_task(int64_t N, int64_t parts, int threads) {
    const int64_t wanted = int64_t(threads > 0 ? threads : 1) * kTasksPerThread;
    const int64_t row_blocks =
        std::max<int64_t>(1, (wanted + parts - 1) / std::max<int64_t>(1, parts));
    const int64_t rows = (N + row_blocks - 1) / row_blocks;
    return std::max(kBlockRows, (rows + kBlockRows - 1) / kBlockRows * kBlockRows);
}

template <int32_t kType>
struct WeightRow;

template <>
struct WeightRow<SY_TYPE_F32> {
    static simd::F32x load(const char* row, int64_t k) {
        return simd::load(reinterpret_cast<const float*>(row) + k);
    }
    static float scalar(const char* row, int64_t k) {
        return sdk::load_f32(SY_TYPE_F32, row + 4 * k);
    }
};

template <>
struct WeightRow<SY_TYPE_F16> {
    static simd::F32x load(const char* row, int64_t k) {
        return simd::load_f16(reinterpret_cast<const uint16_t*>(row) + k);
    }
    static float scalar(const char* row, int64_t k) {
        return sdk::load_f32(SY_TYPE_F16, row + 2 * k);
    }
};

template <>
struct WeightRow<SY_TYPE_BF16> {
    static simd::F32x load(const char* row, int64_t k) {
        return simd::load_bf16(reinterpret_cast<const uint16_t*>(row) + k);
    }
    static float scalar(const char* row, int64_t k) {
        return sdk::load_f32(SY_TYPE_BF16, row + 2 * k);
    }
};

// out[r][c] = sum_k a[r][k] * b[c][k]
template <int32_t kType, int R, int C>
inline void dot_tile(const char* const* a, const float* const* b, int64_t K, float (&out)[R][C]) {
    constexpr int64_t kElementBytes = kType == SY_TYPE_F32 ? 4 : 2;
    simd::F32x acc[R][C];
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) acc[r][c] = simd::zero();
    int64_t k = 0;
    for (; k + simd::kLanes <= K; k += simd::kLanes) {
        simd::F32x bv[C];
        for (int c = 0; c < C; ++c) bv[c] = simd::load(b[c] + k);
        for (int r = 0; r < R; ++r) {
            // Software prefetch 2 KiB ahead in each weight row (see quant/int8_simd.hpp).
            if constexpr (C == 1) __builtin_prefetch(a[r] + k * kElementBytes + 2048, 0, 3);
            const simd::F32x av = WeightRow<kType>::load(a[r], k);
            for (int c = 0; c < C; ++c) acc[r][c] = simd::fma(av, bv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) out[r][c] = simd::reduce_add(acc[r][c]);
    for (; k < K; ++k)
        for (int r = 0; r < R; ++r) {
            const float av = WeightRow<kType>::scalar(a[r], k);
            for (int c = 0; c < C; ++c) out[r][c] += av * b[c][k];
        }
}

// Where the results of one block go: column c's value for weight row n is stored at
// out[c] + n * out_row_stride bytes.
struct BlockColumns {
    const float* const* b;   // activation rows (packed F32, K values each)
    float* const* out;       // dst element of weight row 0 for each column
    int64_t count;           // <= kBlockCols
    int64_t out_row_stride;  // bytes between consecutive weight rows' results (dst nb0)
};

template <int R, int C>
inline void store_tile(const float (&t)[R][C], const BlockColumns& cols, int64_t c0, int64_t n,
                       int valid_rows) {
    for (int c = 0; c < C; ++c) {
        char* base = reinterpret_cast<char*>(cols.out[c0 + c]);
        for (int r = 0; r < valid_rows; ++r)
            std::memcpy(base + (n + r) * cols.out_row_stride, &t[r][c], sizeof(float));
    }
}

// Weight rows [n0, n1) of the matrix at `a` (rows a_row_stride bytes apart) against `cols`.
template <int32_t kType>
void matmul_block(const char* a, int64_t a_row_stride, int64_t n0, int64_t n1, int64_t K,
                  const BlockColumns& cols) {
    for (int64_t n = n0; n < n1; n += kTileRows) {
        const int valid_rows = int(n1 - n < kTileRows ? n1 - n : kTileRows);
        const char* rows[kTileRows];
        for (int r = 0; r < kTileRows; ++r)
            rows[r] = a + (r < valid_rows ? n + r : n1 - 1) * a_row_stride;
        int64_t c = 0;
        for (; c + kTileCols <= cols.count; c += kTileCols) {
            float t[kTileRows][kTileCols];
            dot_tile<kType, kTileRows, kTileCols>(rows, cols.b + c, K, t);
            store_tile(t, cols, c, n, valid_rows);
        }
        for (; c < cols.count; ++c) {
            float t[kTileRows][1];
            dot_tile<kType, kTileRows, 1>(rows, cols.b + c, K, t);
            store_tile(t, cols, c, n, valid_rows);
        }
    }
}

// K = 0: every dot product is the empty sum. The sources may have no data then, so the callers
// write zeros instead of addressing them.
inline void fill_with_zeros(const sy_tensor& dst) {
    const float zero = 0.0f;
    for (int64_t i3 = 0; i3 < dst.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < dst.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < dst.ne[1]; ++i1) {
                char* row =
                    static_cast<char*>(dst.data) + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
                for (int64_t i0 = 0; i0 < dst.ne[0]; ++i0)
                    std::memcpy(row + i0 * dst.nb[0], &zero, sizeof zero);
            }
}

inline void matmul_block(int32_t weight_type, const char* a, int64_t a_row_stride, int64_t n0,
                         int64_t n1, int64_t K, const BlockColumns& cols) {
    switch (weight_type) {
        case SY_TYPE_F32: matmul_block<SY_TYPE_F32>(a, a_row_stride, n0, n1, K, cols); break;
        case SY_TYPE_F16: matmul_block<SY_TYPE_F16>(a, a_row_stride, n0, n1, K, cols); break;
        case SY_TYPE_BF16: matmul_block<SY_TYPE_BF16>(a, a_row_stride, n0, n1, K, cols); break;
        default: break;  // the capability table admits only these
    }
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
