// The row loops the arithmetic kernels share. A row is ne0 elements of any float type with any
// element stride; kernels work on F32 chunks of it: packed F32 rows are used in place, anything
// else is converted through a small stack buffer, so strided, permuted, F16 and BF16 tensors all
// run the same vector code without a temporary copy of the tensor.
#pragma once

#include <cstdint>
#include <cstring>

#include "simd_math.hpp"
#include "switchyard/sdk.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

constexpr int64_t kChunk = 256;  // floats per chunk: 1 KiB, comfortably in L1

// Work (elements) below which an op runs on the calling thread alone.
constexpr int64_t kMinElementsPerTask = 16 * 1024;

struct RowView {
    int32_t type;
    char* row;       // element 0 of the row
    int64_t stride;  // bytes between elements
    bool packed_f32;

    RowView(const sy_tensor& t, char* row_start)
        : type(t.type), row(row_start), stride(t.nb[0]), packed_f32(has_packed_f32_rows(t)) {}

    // Floats of elements [j0, j0 + n), n <= kChunk: into the row itself, or converted into buf.
    const float* read(int64_t j0, int64_t n, float* buf) const {
        if (packed_f32) return reinterpret_cast<const float*>(row) + j0;
        const char* p = row + j0 * stride;
        if (stride == 2 && reinterpret_cast<uintptr_t>(p) % 2 == 0 &&
            (type == SY_TYPE_F16 || type == SY_TYPE_BF16)) {
            const auto* h = reinterpret_cast<const uint16_t*>(p);
            int64_t i = 0;
            for (; i + simd::kLanes <= n; i += simd::kLanes)
                simd::store(buf + i,
                            type == SY_TYPE_F16 ? simd::load_f16(h + i) : simd::load_bf16(h + i));
            for (; i < n; ++i) buf[i] = sdk::load_f32(type, h + i);
            return buf;
        }
        for (int64_t i = 0; i < n; ++i) buf[i] = sdk::load_f32(type, p + i * stride);
        return buf;
    }

    // Where a kernel should write elements [j0, j0 + n): the row itself, or buf (then commit).
    float* output(int64_t j0, float* buf) const {
        return packed_f32 ? reinterpret_cast<float*>(row) + j0 : buf;
    }

    // Stores what output() handed out, converting to the row's type when it was a buffer.
    void commit(int64_t j0, int64_t n, const float* values) const {
        if (packed_f32) return;
        char* p = row + j0 * stride;
        for (int64_t i = 0; i < n; ++i) sdk::store_f32(type, p + i * stride, values[i]);
    }
};

// Calls fn(row_index) for every row of `t` over the pool, `work_per_row` elements each.
template <typename Fn>
void for_each_row(ThreadPool& pool, const sy_tensor& t, int64_t work_per_row, Fn&& fn) {
    const int64_t rows = sdk::nrows(t);
    const int64_t min_rows = kMinElementsPerTask / (work_per_row > 0 ? work_per_row : 1) + 1;
    pool.parallel_ranges(rows, min_rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) fn(row_index(t, r));
    });
}

// dst = fn(src0) chunk by chunk, for the unary ops (src0 and dst of the same shape; in place
// allowed: each chunk is read completely before it is written).
// fn(const float* in, float* out, int64_t n).
template <typename Fn>
void map_unary(ThreadPool& pool, const sy_node& node, Fn&& fn) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& dst = *node.dst;
    for_each_row(pool, dst, dst.ne[0], [&](RowIndex r) {
        const RowView in(src, row_at(src, r));
        const RowView out(dst, row_at(dst, r));
        float in_buf[kChunk], out_buf[kChunk];
        for (int64_t j = 0; j < dst.ne[0]; j += kChunk) {
            const int64_t n = dst.ne[0] - j < kChunk ? dst.ne[0] - j : kChunk;
            float* o = out.output(j, out_buf);
            fn(in.read(j, n, in_buf), o, n);
            out.commit(j, n, o);
        }
    });
}

// dst = fn(src0, src1) with src1 broadcast (each of its dimensions divides dst's; index i of
// dst reads i % ne of src1). Along ne0 src1 repeats with period ne10; chunks never cross a
// period, and a period of 1 is splatted into a buffer once per row.
// fn(const float* a, const float* b, float* out, int64_t n).
template <typename Fn>
void map_binary_broadcast(ThreadPool& pool, const sy_node& node, Fn&& fn) {
    const sy_tensor& a = *node.src[0];
    const sy_tensor& b = *node.src[1];
    const sy_tensor& dst = *node.dst;
    const int64_t ne0 = dst.ne[0];
    const int64_t period = b.ne[0];
    for_each_row(pool, dst, ne0, [&](RowIndex r) {
        const RowView in_a(a, row_at(a, r));
        const RowView in_b(b, row_at(b, r.i1 % b.ne[1], r.i2 % b.ne[2], r.i3 % b.ne[3]));
        const RowView out(dst, row_at(dst, r));
        float a_buf[kChunk], b_buf[kChunk], out_buf[kChunk];
        if (period == 1) {
            const float value = in_b.read(0, 1, b_buf)[0];
            for (float& v : b_buf) v = value;
        }
        for (int64_t j = 0; j < ne0;) {
            int64_t n = ne0 - j < kChunk ? ne0 - j : kChunk;
            const float* vb = b_buf;
            if (period > 1) {
                const int64_t jb = j % period;
                if (period - jb < n) n = period - jb;
                vb = in_b.read(jb, n, b_buf);
            }
            float* o = out.output(j, out_buf);
            fn(in_a.read(j, n, a_buf), vb, o, n);
            out.commit(j, n, o);
            j += n;
        }
    });
}

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
