#include "buffers.hpp"

#include "row_copy.hpp"
#include "switchyard/sdk.hpp"

namespace sy::cpu {

sy_status copy_tensors(ThreadPool& pool, const sy_copy* copies, size_t count) {
    if (sy_status s = sdk::validate_host_copies(copies, count); s.code) return s;
    for (size_t i = 0; i < count; ++i) copy_tensor(pool, *copies[i].src, *copies[i].dst);
    return sdk::ok();
}

}  // namespace sy::cpu
