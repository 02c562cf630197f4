// GET_ROWS, a row gather (ops.h): dst[k, i, b2, b3] = src0[k, ids[i, b2, b3], b2, b3], converted
// to dst's type; same-type gathers (including block-quantized rows) copy bytes; a SY_ID_NONE id
// gives a row of zero bytes. The ids were checked to lie in [0, R) or be SY_ID_NONE before this
// runs. Block-quantized rows gathered into F32 are
// dequantized (the SDK's reference dequantizer, switchyard/quants.hpp).
#include <cstring>
#include <vector>

#include "ops/ops.hpp"
#include "row_copy.hpp"
#include "switchyard/quants.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {

void compute_get_rows(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& src = *node.src[0];
    const sy_tensor& ids = *node.src[1];
    const sy_tensor& dst = *node.dst;
    const bool block_type = sy_dtype_info(src.type).block_size > 1;
    const bool dequantize = block_type && dst.type == SY_TYPE_F32;
    const int64_t row_bytes = sdk::row_bytes(src.type, src.ne[0]);
    const int64_t min_rows = (int64_t(1) << 15) / (dst.ne[0] > 0 ? dst.ne[0] : 1) + 1;
    pool.parallel_ranges(sdk::nrows(dst), min_rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> values(dequantize ? size_t(dst.ne[0]) : 0);
        for (int64_t r = r0; r < r1; ++r) {
            const RowIndex i = row_index(dst, r);
            int32_t id;
            std::memcpy(&id, row_at(ids, i.i2, i.i3, 0) + i.i1 * ids.nb[0], 4);
            if (id == SY_ID_NONE) {  // zero elements, or a packed row of zero bytes (its scales
                                     // included: all values decode to 0)
                const sy_dtype_traits tr = sy_dtype_info(dst.type);
                char* to = row_at(dst, i);
                if (tr.block_size > 1) {
                    std::memset(to, 0, size_t(sdk::row_bytes(dst.type, dst.ne[0])));
                    continue;
                }
                for (int64_t u = 0; u < dst.ne[0]; ++u)
                    std::memset(to + u * dst.nb[0], 0, size_t(tr.type_size));
                continue;
            }
            const char* from = row_at(src, id, i.i2, i.i3);
            if (dequantize) {
                sy::quants::dequantize_row(src.type, from, values.data(), dst.ne[0]);
                copy_row(SY_TYPE_F32, reinterpret_cast<const char*>(values.data()), 4, dst.type,
                         row_at(dst, i), dst.nb[0], dst.ne[0]);
            } else if (block_type) {
                std::memcpy(row_at(dst, i), from, size_t(row_bytes));  // validated: packed rows
            } else {
                copy_row(src.type, from, src.nb[0], dst.type, row_at(dst, i), dst.nb[0], dst.ne[0]);
            }
        }
    });
}

}  // namespace sy::cpu
