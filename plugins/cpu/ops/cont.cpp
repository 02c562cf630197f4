// CONT: the same-type copy into a packed dst that materializes a transposed or permuted view
// (ops.h). Validation guarantees the packed dst; the copy reads src0 through its strides.
#include "ops/ops.hpp"
#include "row_copy.hpp"

namespace sy::cpu {

void compute_cont(ThreadPool& pool, const sy_node& node) {
    copy_tensor(pool, *node.src[0], *node.dst);
}

}  // namespace sy::cpu
