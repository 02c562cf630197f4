// GET_ROWS: dst[k, i, b2, b3] = src0[k, ids[i, b2, b3], b2, b3]. Float rows convert to dst's
// type; same-type rows (plain or block types) move as bytes; block rows to F32 dequantize with
// switchyard_quants' rounding. A SY_ID_NONE id gives a row of zero bytes; any other id outside
// [0, R) is reported through the error word and its dst row is left untouched. One block per dst
// row.
#include "ops/ops.hpp"
#include "ops/tensor.cuh"
#include "quant/blocks.cuh"
#include "switchyard/dtype.h"
#include "switchyard/ops.h"

namespace sy::cuda {
namespace {

// The source row of dst row (i, b2, b3), or nullptr for SY_ID_NONE (none_out set) and for a bad
// id (the error reported).
__device__ inline const char* source_row(const TensorDesc& src, const TensorDesc& ids, int64_t r,
                                         int* error_word, int error_code, bool& none_out) {
    const int64_t i = r % ids.ne[0], b2 = (r / ids.ne[0]) % ids.ne[1],
                  b3 = r / ids.ne[0] / ids.ne[1];
    const int32_t id = *reinterpret_cast<const int32_t*>(ids.data + i * ids.nb[0] + b2 * ids.nb[1] +
                                                         b3 * ids.nb[2]);
    none_out = id == SY_ID_NONE;
    if (none_out) return nullptr;
    if (id < 0 || id >= src.ne[1]) {
        if (threadIdx.x == 0) report_bad_index(error_word, error_code);
        return nullptr;
    }
    return src.data + id * src.nb[1] + b2 * src.nb[2] + b3 * src.nb[3];
}

__device__ inline char* dst_row(const TensorDesc& dst, int64_t r) {
    const int64_t i = r % dst.ne[1], b2 = (r / dst.ne[1]) % dst.ne[2],
                  b3 = r / dst.ne[1] / dst.ne[2];
    return dst.data + i * dst.nb[1] + b2 * dst.nb[2] + b3 * dst.nb[3];
}

// Elements (or whole blocks, unit = block bytes) copied or converted.
__global__ void get_rows_kernel(TensorDesc dst, TensorDesc src, TensorDesc ids, int64_t units,
                                int unit_bytes, int* error_word, int error_code) {
    const int64_t r = blockIdx.x;
    bool none = false;
    const char* in = source_row(src, ids, r, error_word, error_code, none);
    if (in == nullptr && !none) return;
    char* out = dst_row(dst, r);
    const bool same = dst.type == src.type;
    for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
        if (none && same) {  // zero bytes: 0.0, or a zero-scale block
            for (int b = 0; b < unit_bytes; ++b) out[u * dst.nb[0] + b] = 0;
        } else if (none) {
            store_float(dst.type, out + u * dst.nb[0], 0.0f);
        } else if (same) {
            const char* s = in + u * src.nb[0];
            char* d = out + u * dst.nb[0];
            for (int b = 0; b < unit_bytes; ++b) d[b] = s[b];
        } else {
            store_float(dst.type, out + u * dst.nb[0], load_float(src.type, in + u * src.nb[0]));
        }
    }
}

template <int Type>
__global__ void get_rows_dequantize_kernel(TensorDesc dst, TensorDesc src, TensorDesc ids,
                                           int* error_word, int error_code) {
    const int64_t r = blockIdx.x;
    bool none = false;
    const char* in = source_row(src, ids, r, error_word, error_code, none);
    if (in == nullptr && !none) return;
    char* out = dst_row(dst, r);
    if (none) {
        for (int64_t e = threadIdx.x; e < dst.ne[0]; e += blockDim.x)
            *reinterpret_cast<float*>(out + e * dst.nb[0]) = 0.0f;
        return;
    }
    const int64_t subs = src.ne[0] / 32;
    for (int64_t s = threadIdx.x; s < subs; s += blockDim.x) {
        Sub32 sub;
        decode_row_sub<Type>(reinterpret_cast<const uint8_t*>(in), s, sub);
        for (int e = 0; e < 32; ++e)
            *reinterpret_cast<float*>(out + (s * 32 + e) * dst.nb[0]) = sub_value<Type>(sub, e);
    }
}

}  // namespace

void launch_get_rows(const OpContext& ctx, const sy_node& node) {
    const TensorDesc dst = desc_of(*node.dst);
    const TensorDesc src = desc_of(*node.src[0]);
    const TensorDesc ids = desc_of(*node.src[1]);
    const unsigned rows = unsigned(nrows(dst));
    const sy_dtype_traits tr = sy_dtype_info(src.type);
    if (tr.block_size > 1 && dst.type != src.type) {
        const bool known = with_block_type(src.type, [&](auto type_tag) {
            constexpr int Type = decltype(type_tag)::value;
            get_rows_dequantize_kernel<Type>
                <<<rows, 64, 0, ctx.stream>>>(dst, src, ids, ctx.error_word, ctx.error_code);
        });
        if (!known) throw LaunchError("get_rows: no decoder for this block type");
    } else if (tr.block_size > 1) {
        // Packed block rows copied as bytes (a row-scaled type's scale included).
        TensorDesc s = src, d = dst;
        s.type = d.type = SY_TYPE_I8;
        s.nb[0] = d.nb[0] = 1;
        const int64_t units = tr.row_meta_size + src.ne[0] / tr.block_size * tr.type_size;
        get_rows_kernel<<<rows, kThreads, 0, ctx.stream>>>(d, s, ids, units, 1, ctx.error_word,
                                                           ctx.error_code);
    } else {
        get_rows_kernel<<<rows, kThreads, 0, ctx.stream>>>(dst, src, ids, src.ne[0],
                                                           int(tr.type_size), ctx.error_word,
                                                           ctx.error_code);
    }
    check_launch("get_rows");
}

}  // namespace sy::cuda
