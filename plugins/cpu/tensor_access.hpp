// Addressing tensors through their strides: rows, elements, shapes. Instruction-set neutral, used
// by the common code and the kernels alike.
#pragma once

#include <cstdint>
#include <string>

#include "switchyard/sdk.hpp"

namespace sy::cpu {

inline int64_t element_size(int32_t type) {
    return sy_dtype_info(type).type_size;
}

// Row (i1, i2, i3): the ne0 elements starting at this address, nb0 bytes apart.
inline char* row_at(const sy_tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<char*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

struct RowIndex {
    int64_t i1, i2, i3;
};

// Flat row number r in [0, ne1 * ne2 * ne3) -> (i1, i2, i3), i1 fastest.
inline RowIndex row_index(const sy_tensor& t, int64_t r) {
    const int64_t i1 = r % t.ne[1];
    const int64_t rest = r / t.ne[1];
    return {i1, rest % t.ne[2], rest / t.ne[2]};
}

inline char* row_at(const sy_tensor& t, RowIndex r) {
    return row_at(t, r.i1, r.i2, r.i3);
}

inline bool same_shape(const sy_tensor& a, const sy_tensor& b) {
    return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

// Rows whose elements are adjacent, aligned F32 values, which the kernels use in place as float*.
inline bool has_packed_f32_rows(const sy_tensor& t) {
    if (t.type != SY_TYPE_F32 || t.nb[0] != 4) return false;
    if (reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0) return false;
    for (int d = 1; d < SY_MAX_DIMS; ++d)
        if (t.nb[d] % int64_t(alignof(float)) != 0) return false;
    return true;
}

// Same data and descriptor: the in-place case the elementwise ops allow.
inline bool same_view(const sy_tensor& a, const sy_tensor& b) {
    if (a.data != b.data || a.type != b.type || !same_shape(a, b)) return false;
    for (int d = 0; d < SY_MAX_DIMS; ++d)
        if (a.ne[d] > 1 && a.nb[d] != b.nb[d]) return false;
    return true;
}

// "{4096, 7, 1, 1}"
inline std::string shape_string(const sy_tensor& t) {
    return "{" + std::to_string(t.ne[0]) + ", " + std::to_string(t.ne[1]) + ", " +
           std::to_string(t.ne[2]) + ", " + std::to_string(t.ne[3]) + "}";
}

inline const char* type_name(int32_t type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "unknown type";
}

}  // namespace sy::cpu
