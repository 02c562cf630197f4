#include "row_copy.hpp"

#include <cstring>
#include <vector>

#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {
namespace {

template <int32_t kType>
float load_as_f32(const char* p) {
    return sdk::load_f32(kType, p);
}

template <int32_t kType>
void store_from_f32(char* p, float v) {
    sdk::store_f32(kType, p, v);
}

// The type switch is hoisted out of the element loop: one loop per (source, destination) pair.
template <int32_t kSrc, int32_t kDst>
void convert_row(const char* src, int64_t src_stride, char* dst, int64_t dst_stride, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        store_from_f32<kDst>(dst + i * dst_stride, load_as_f32<kSrc>(src + i * src_stride));
}

template <int32_t kSrc>
void convert_row_from(int32_t dst_type, const char* src, int64_t src_stride, char* dst,
                      int64_t dst_stride, int64_t n) {
    switch (dst_type) {
        case SY_TYPE_F32:
            convert_row<kSrc, SY_TYPE_F32>(src, src_stride, dst, dst_stride, n);
            break;
        case SY_TYPE_F16:
            convert_row<kSrc, SY_TYPE_F16>(src, src_stride, dst, dst_stride, n);
            break;
        case SY_TYPE_BF16:
            convert_row<kSrc, SY_TYPE_BF16>(src, src_stride, dst, dst_stride, n);
            break;
        default: break;  // validation admits only float types here
    }
}

}  // namespace

void copy_row(int32_t src_type, const char* src, int64_t src_stride, int32_t dst_type, char* dst,
              int64_t dst_stride, int64_t n) {
    if (n <= 0) return;
    if (src_type == dst_type) {
        const int64_t size = element_size(src_type);
        if (src_stride == size && dst_stride == size) {
            std::memcpy(dst, src, size_t(n * size));
        } else {
            for (int64_t i = 0; i < n; ++i)
                std::memcpy(dst + i * dst_stride, src + i * src_stride, size_t(size));
        }
        return;
    }
    switch (src_type) {
        case SY_TYPE_F32:
            convert_row_from<SY_TYPE_F32>(dst_type, src, src_stride, dst, dst_stride, n);
            break;
        case SY_TYPE_F16:
            convert_row_from<SY_TYPE_F16>(dst_type, src, src_stride, dst, dst_stride, n);
            break;
        case SY_TYPE_BF16:
            convert_row_from<SY_TYPE_BF16>(dst_type, src, src_stride, dst, dst_stride, n);
            break;
        default: break;
    }
}

void copy_tensor(ThreadPool& pool, const sy_tensor& src, const sy_tensor& dst) {
    const int64_t rows = sdk::nrows(dst);
    if (rows == 0 || dst.ne[0] == 0) return;
    const sy_dtype_traits traits = sy_dtype_info(src.type);
    if (src.type != dst.type && (traits.block_size > 1 || sy_dtype_info(dst.type).block_size > 1)) {
        // F32 <-> blocks: each row through a packed F32 row, quantized or decoded whole.
        const int64_t n = dst.ne[0];
        pool.parallel_ranges(rows, (1 << 14) / n + 1, [&](int64_t r0, int64_t r1) {
            thread_local std::vector<float> packed;
            packed.resize(size_t(n));
            char* p = reinterpret_cast<char*>(packed.data());
            for (int64_t r = r0; r < r1; ++r) {
                const RowIndex i = row_index(dst, r);
                if (traits.block_size > 1) {
                    quants::dequantize_row(src.type, row_at(src, i), packed.data(), n);
                    copy_row(SY_TYPE_F32, p, 4, SY_TYPE_F32, row_at(dst, i), dst.nb[0], n);
                } else {
                    copy_row(SY_TYPE_F32, row_at(src, i), src.nb[0], SY_TYPE_F32, p, 4, n);
                    quants::quantize_row(dst.type, packed.data(), row_at(dst, i), n);
                }
            }
        });
        return;
    }
    if (traits.block_size > 1) {
        // Quantized rows are opaque bytes: copy each packed row whole.
        const int64_t bytes = sdk::row_bytes(src.type, src.ne[0]);
        const int64_t min_rows = (int64_t(1) << 16) / (bytes > 0 ? bytes : 1) + 1;
        pool.parallel_ranges(rows, min_rows, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) {
                const RowIndex i = row_index(dst, r);
                std::memcpy(row_at(dst, i), row_at(src, i), size_t(bytes));
            }
        });
        return;
    }
    if (src.type == dst.type && sdk::is_contiguous(src) && sdk::is_contiguous(dst)) {
        const int64_t bytes = sdk::nelements(src) * traits.type_size;
        constexpr int64_t kBytesPerTask = 1 << 20;
        pool.parallel_ranges(bytes, kBytesPerTask, [&](int64_t b0, int64_t b1) {
            std::memcpy(static_cast<char*>(dst.data) + b0, static_cast<const char*>(src.data) + b0,
                        size_t(b1 - b0));
        });
        return;
    }
    const int64_t min_rows = (1 << 15) / dst.ne[0] + 1;
    pool.parallel_ranges(rows, min_rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const RowIndex i = row_index(dst, r);
            copy_row(src.type, row_at(src, i), src.nb[0], dst.type, row_at(dst, i), dst.nb[0],
                     dst.ne[0]);
        }
    });
}

}  // namespace sy::cpu
