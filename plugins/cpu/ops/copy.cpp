// CPY, CONT and CONCAT: data movement (ops.h).
#include "ops/ops.hpp"
#include "row_copy.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {

// CPY: dst[i] = convert(src0[i]), same shape, any strides, float types (ops.h).
void compute_cpy(ThreadPool& pool, const sy_node& node) {
    copy_tensor(pool, *node.src[0], *node.dst);
}

// CONT: the same-type copy into a packed dst that materializes a transposed or permuted view
// (ops.h). Validation guarantees the packed dst; the copy reads src0 through its strides.
void compute_cont(ThreadPool& pool, const sy_node& node) {
    copy_tensor(pool, *node.src[0], *node.dst);
}

// CONCAT along dimension d = iparams[0] (ops.h): dst index i_d < src0.ne[d] reads src0, the rest
// read src1 at i_d - src0.ne[d]. Same type throughout, so rows move as bytes.
void compute_concat(ThreadPool& pool, const sy_node& node) {
    const sy_tensor& a = *node.src[0];
    const sy_tensor& b = *node.src[1];
    const sy_tensor& dst = *node.dst;
    const int dim = node.iparams[0];
    const int64_t ne0 = dst.ne[0];
    const int64_t min_rows = (int64_t(1) << 15) / (ne0 > 0 ? ne0 : 1) + 1;
    pool.parallel_ranges(sdk::nrows(dst), min_rows, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const RowIndex i = row_index(dst, r);
            char* out = row_at(dst, i);
            if (dim == 0) {  // an empty side may have no data: do not address it
                if (a.ne[0] > 0)
                    copy_row(a.type, row_at(a, i), a.nb[0], dst.type, out, dst.nb[0], a.ne[0]);
                if (b.ne[0] > 0)
                    copy_row(b.type, row_at(b, i), b.nb[0], dst.type, out + a.ne[0] * dst.nb[0],
                             dst.nb[0], b.ne[0]);
                continue;
            }
            int64_t idx[4] = {0, i.i1, i.i2, i.i3};
            const bool from_a = idx[dim] < a.ne[dim];
            if (!from_a) idx[dim] -= a.ne[dim];
            const sy_tensor& src = from_a ? a : b;
            copy_row(src.type, row_at(src, idx[1], idx[2], idx[3]), src.nb[0], dst.type, out,
                     dst.nb[0], ne0);
        }
    });
}

}  // namespace sy::cpu
