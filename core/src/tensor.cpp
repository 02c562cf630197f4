#include "switchyard/core/tensor.hpp"

#include <atomic>

#include "switchyard/core/error.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/sdk.hpp"

namespace sy {

Shape::Shape(std::initializer_list<int64_t> dims) {
    if (dims.size() > SY_MAX_DIMS) {
        throw Error("a shape has at most 4 dimensions, got " + std::to_string(dims.size()));
    }
    size_t d = 0;
    for (int64_t n : dims) ne[d++] = n;
}

std::string Shape::str() const {
    std::string s = "{";
    for (size_t d = 0; d < ne.size(); ++d) {
        if (d > 0) s += ", ";
        s += std::to_string(ne[d]);
    }
    return s += "}";
}

Strides packed_strides(sy_dtype type, const Shape& shape) {
    const sy_tensor t = sdk::make_tensor(type, shape[0], shape[1], shape[2], shape[3]);
    return {t.nb[0], t.nb[1], t.nb[2], t.nb[3]};
}

const char* kind_name(TensorKind kind) {
    switch (kind) {
        case TensorKind::weight: return "weight";
        case TensorKind::input: return "input";
        case TensorKind::intermediate: return "intermediate";
        case TensorKind::view: return "view";
    }
    return "?";
}

uint64_t new_constant_id() {
    static std::atomic<uint64_t> next{1};
    return next.fetch_add(1);
}

void Tensor::set_constant_id(uint64_t id) {
    if (kind_ != TensorKind::weight && id != 0)
        throw Error("tensor " + describe() + " is " + kind_name(kind_) +
                    ": only weights are constant");
    constant_id_ = id;
}

Tensor* Tensor::set_name(std::string name) {
    name_ = std::move(name);
    return this;
}

sy_tensor Tensor::descriptor() const {
    sy_tensor t{};
    t.struct_size = sizeof(sy_tensor);
    t.type = type_;
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        t.ne[d] = shape_[d];
        t.nb[d] = strides_[static_cast<size_t>(d)];
    }
    t.name = name_.c_str();
    t.constant_id = constant_id();
    return t;
}

int64_t Tensor::bytes() const {
    return sdk::nbytes(descriptor());
}

bool Tensor::is_contiguous() const {
    return sdk::is_contiguous(descriptor());
}

std::string Tensor::describe() const {
    const char* type_name = sy_dtype_info(type_).name;
    return "'" + name_ + "' " + (type_name ? type_name : "type?") + " " + shape_.str();
}

void Tensor::set_data(void* host) {
    if (!is_external()) {
        throw Error("tensor " + describe() + " is " + kind_name(kind_) +
                    ": only weights and inputs take external data");
    }
    host_data_ = host;
    device_buffer_ = nullptr;
    device_offset_ = 0;
}

void Tensor::set_data(const Buffer& buffer, uint64_t offset) {
    if (!is_external()) {
        throw Error("tensor " + describe() + " is " + kind_name(kind_) +
                    ": only weights and inputs take external data");
    }
    if (!buffer || offset + static_cast<uint64_t>(bytes()) > buffer.size()) {
        throw Error("tensor " + describe() + ": " + std::to_string(bytes()) + " bytes at offset " +
                    std::to_string(offset) + " do not fit its buffer of " +
                    std::to_string(buffer.size()) + " bytes");
    }
    host_data_ = nullptr;
    device_buffer_ = &buffer;
    device_offset_ = offset;
}

}  // namespace sy
