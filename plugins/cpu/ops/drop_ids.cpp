// DROP_IDS (ops.h): per row, id j stays when j < m = iparams[0] or its value is above
// t = fparams[0] times the row's first value; the others become SY_ID_NONE (smart expert
// reduction: the experts whose score is far below the best one's are not computed).
#include <cstring>

#include "ops/ops.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {

void compute_drop_ids(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& ids = *node.src[0];
    const sy_tensor& values = *node.src[1];
    const sy_tensor& dst = *node.dst;
    const int64_t k = dst.ne[0], m = node.iparams[0];
    const float t = node.fparams[0];
    const int64_t min_rows = 4096 / (k > 0 ? k : 1) + 1;
    pool.parallel_ranges(sdk::nrows(dst), min_rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const RowIndex i = row_index(dst, r);
            const char* in = row_at(ids, i);
            const char* v = row_at(values, i);
            char* out = row_at(dst, i);
            float first;
            std::memcpy(&first, v, 4);
            for (int64_t j = 0; j < k; ++j) {
                float value;
                std::memcpy(&value, v + j * values.nb[0], 4);
                int32_t id = SY_ID_NONE;
                if (j < m || value > t * first) std::memcpy(&id, in + j * ids.nb[0], 4);
                std::memcpy(out + j * dst.nb[0], &id, 4);
            }
        }
    });
}

}  // namespace sy::cpu
