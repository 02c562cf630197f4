// CPY: dst[i] = convert(src0[i]), same shape, any strides, float types (ops.h).
#include "ops/ops.hpp"
#include "row_copy.hpp"

namespace sy::cpu {

void compute_cpy(ThreadPool& pool, const sy_node& node) {
    copy_tensor(pool, *node.src[0], *node.dst);
}

}  // namespace sy::cpu
