// Activation rows for the matmul kernels, which want each row as packed F32 values. A tensor
// whose rows already are (nb0 = 4, aligned) is used in place; any other (a transposed or
// permuted view) is packed once into a scratch copy, row (i1, i2, i3) at
// ((i3 * ne2 + i2) * ne1 + i1) * ne0.
#pragma once

#include <cstdint>
#include <vector>

#include "row_copy.hpp"
#include "simd.hpp"
#include "tensor_access.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {
inline namespace SY_CPU_SIMD_ISA {

class ActivationRows {
  public:
    ActivationRows(ThreadPool& pool, const sy_tensor& t)
        : t_(t), in_place_(has_packed_f32_rows(t)) {
        if (in_place_) return;
        const int64_t ne0 = t.ne[0];
        packed_.resize(size_t(sdk::nrows(t) * ne0));
        pool.parallel_ranges(
            sdk::nrows(t), 4096 / (ne0 > 0 ? ne0 : 1) + 1, [&](int64_t r0, int64_t r1) {
                for (int64_t r = r0; r < r1; ++r)
                    copy_row(t.type, row_at(t, row_index(t, r)), t.nb[0], SY_TYPE_F32,
                             reinterpret_cast<char*>(packed_.data() + r * ne0), 4, ne0);
            });
    }

    const float* row(int64_t i1, int64_t i2, int64_t i3) const {
        if (in_place_) return reinterpret_cast<const float*>(row_at(t_, i1, i2, i3));
        return packed_.data() + ((i3 * t_.ne[2] + i2) * t_.ne[1] + i1) * t_.ne[0];
    }

  private:
    const sy_tensor& t_;
    const bool in_place_;
    std::vector<float> packed_;
};

}  // namespace SY_CPU_SIMD_ISA
}  // namespace sy::cpu
