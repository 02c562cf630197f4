// A tensor as a kernel argument: data, type, sizes and byte strides, passed by value. Plain C++,
// so host code that prepares launches can use it too.
#pragma once

#include <cstdint>

#include "switchyard/plugin.h"

namespace sy::cuda {

struct TensorDesc {
    char* data;
    int32_t type;
    int64_t ne[4];
    int64_t nb[4];
};

inline TensorDesc desc_of(const sy_tensor& t) {
    TensorDesc d{static_cast<char*>(t.data), t.type, {}, {}};
    for (int i = 0; i < 4; ++i) {
        d.ne[i] = t.ne[i];
        d.nb[i] = t.nb[i];
    }
    return d;
}

inline int64_t nelements(const TensorDesc& t) {
    return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}

inline int64_t nrows(const TensorDesc& t) {
    return t.ne[1] * t.ne[2] * t.ne[3];
}

}  // namespace sy::cuda
