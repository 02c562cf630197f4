#include "contract.hpp"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace sy::reference {

namespace {

bool is_scalar_type(int32_t type) {
    switch (type) {
        case SY_TYPE_F32:
        case SY_TYPE_F16:
        case SY_TYPE_BF16:
        case SY_TYPE_F64:
        case SY_TYPE_I8:
        case SY_TYPE_I16:
        case SY_TYPE_I32:
        case SY_TYPE_I64: return true;
        default: return false;
    }
}

const char* type_name(int32_t type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "unknown type";
}

const char* element_address(const sy_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<const char*>(t.data) + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] +
           i3 * t.nb[3];
}

}  // namespace

bool is_integer_type(int32_t type) {
    return type == SY_TYPE_I8 || type == SY_TYPE_I16 || type == SY_TYPE_I32 || type == SY_TYPE_I64;
}

std::string shape_string(const sy_tensor& t) {
    std::string s = "{";
    for (int d = 0; d < SY_MAX_DIMS; ++d) {
        if (d) s += ", ";
        s += std::to_string(t.ne[d]);
    }
    return s += "}";
}

double read_element(const sy_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const sy_dtype_traits traits = sy_dtype_info(t.type);
    if (traits.row_meta_size > 0 && quants::can_dequantize(t.type)) {
        // A row-scaled type decodes only with its row's scale, in front of the row.
        std::vector<float> row(size_t(t.ne[0]));
        quants::dequantize_row(t.type, element_address(t, 0, i1, i2, i3), row.data(), t.ne[0]);
        return row[size_t(i0)];
    }
    if (traits.block_size > 1 && quants::can_dequantize(t.type)) {
        // Element i0 % block of the block holding it (nb0 is a block's bytes).
        std::vector<float> block(size_t(traits.block_size));
        quants::dequantize_row(t.type, element_address(t, i0 / traits.block_size, i1, i2, i3),
                               block.data(), traits.block_size);
        return block[size_t(i0 % traits.block_size)];
    }
    const char* p = element_address(t, i0, i1, i2, i3);
    switch (t.type) {
        case SY_TYPE_F32:
        case SY_TYPE_F16:
        case SY_TYPE_BF16: return sdk::load_f32(t.type, p);
        case SY_TYPE_F64: {
            double v;
            std::memcpy(&v, p, 8);
            return v;
        }
        case SY_TYPE_I8: {
            int8_t v;
            std::memcpy(&v, p, 1);
            return v;
        }
        case SY_TYPE_I16: {
            int16_t v;
            std::memcpy(&v, p, 2);
            return v;
        }
        case SY_TYPE_I32: {
            int32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case SY_TYPE_I64: {
            int64_t v;
            std::memcpy(&v, p, 8);
            return double(v);
        }
        default:
            throw std::invalid_argument(std::string("reference: cannot read elements of type ") +
                                        type_name(t.type));
    }
}

void write_element(const sy_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3,
                   double value) {
    char* p = const_cast<char*>(element_address(t, i0, i1, i2, i3));
    switch (t.type) {
        case SY_TYPE_F32:
        case SY_TYPE_F16:
        case SY_TYPE_BF16: sdk::store_f32(t.type, p, float(value)); return;
        case SY_TYPE_F64: std::memcpy(p, &value, 8); return;
        case SY_TYPE_I8: {
            int8_t v = int8_t(value);
            std::memcpy(p, &v, 1);
            return;
        }
        case SY_TYPE_I16: {
            int16_t v = int16_t(value);
            std::memcpy(p, &v, 2);
            return;
        }
        case SY_TYPE_I32: {
            int32_t v = int32_t(value);
            std::memcpy(p, &v, 4);
            return;
        }
        case SY_TYPE_I64: {
            int64_t v = int64_t(value);
            std::memcpy(p, &v, 8);
            return;
        }
        default:
            throw std::invalid_argument(std::string("reference: cannot write elements of type ") +
                                        type_name(t.type));
    }
}

double round_to_type(int32_t type, double value) {
    switch (type) {
        case SY_TYPE_F32: return double(float(value));
        case SY_TYPE_F16: return sdk::fp16_to_f32(sdk::f32_to_fp16(float(value)));
        case SY_TYPE_BF16: return sdk::bf16_to_f32(sdk::f32_to_bf16(float(value)));
        case SY_TYPE_I8:
        case SY_TYPE_I16:
        case SY_TYPE_I32:
        case SY_TYPE_I64: return double(int64_t(value));
        default: return value;
    }
}

}  // namespace sy::reference

namespace sy::reference::detail {

std::string op_label(const sy_node& node) {
    if (node.op == SY_OP_NAMED)
        return node.named_op
                   ? std::string(node.named_op) + " v" + std::to_string(node.named_op_version)
                   : std::string("named op (no name)");
    const char* name = sdk::op_name(node.op);
    return name ? name : "op " + std::to_string(node.op);
}

void fail(const sy_node& node, const std::string& what) {
    throw std::invalid_argument(op_label(node) + ": " + what);
}

namespace {

std::string role_name(const sy_tensor& t, const char* role) {
    std::string s = role;
    if (t.name) s += std::string(" '") + t.name + "'";
    return s;
}

void check_descriptor(const sy_node& node, const sy_tensor& t, const char* role) {
    if (t.struct_size < SY_TENSOR_SIZE_1_0)
        fail(node, role_name(t, role) + ": struct_size " + std::to_string(t.struct_size) +
                       " is smaller than sy_tensor");
    if (!is_scalar_type(t.type) && !is_block_type(t.type))
        fail(node, role_name(t, role) + ": type " + type_name(t.type) +
                       " is not implemented by the reference (float, integer and the block types"
                       " of switchyard_quants only)");
    for (int d = 0; d < SY_MAX_DIMS; ++d)
        if (t.ne[d] < 0)
            fail(node, role_name(t, role) + ": negative ne[" + std::to_string(d) + "]");
    if (sdk::nelements(t) > 0 && t.data == nullptr)
        fail(node, role_name(t, role) + ": data is NULL");
}

}  // namespace

const sy_tensor* optional_source(const sy_node& node, int i, const char* role) {
    if (i >= node.n_src || node.src[i] == nullptr) return nullptr;
    check_descriptor(node, *node.src[i], role);
    return node.src[i];
}

const sy_tensor& source(const sy_node& node, int i, const char* role) {
    const sy_tensor* t = optional_source(node, i, role);
    if (!t) fail(node, std::string("missing source ") + std::to_string(i) + " (" + role + ")");
    return *t;
}

const sy_tensor& destination(const sy_node& node) {
    if (!node.dst) fail(node, "missing dst");
    check_descriptor(node, *node.dst, "dst");
    return *node.dst;
}

bool is_block_type(int32_t type) {
    return sy_dtype_info(type).block_size > 1 && quants::can_dequantize(type);
}

SourceReader::SourceReader(const sy_tensor& t) : t_(t) {
    if (!is_block_type(t.type)) return;
    // Dequantize each row (i1, i2, i3) once, through the strides, into logical order.
    const int64_t ne0 = t.ne[0];
    dense_.resize(size_t(sdk::nelements(t)));
    size_t row = 0;
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1, ++row) {
                const char* p =
                    static_cast<const char*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
                quants::dequantize_row(t.type, p, dense_.data() + row * size_t(ne0), ne0);
            }
}

double SourceReader::operator()(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
    if (dense_.empty()) return read_element(t_, i0, i1, i2, i3);
    return dense_[size_t(i0 + t_.ne[0] * (i1 + t_.ne[1] * (i2 + t_.ne[2] * i3)))];
}

int64_t read_index(const sy_node& node, const sy_tensor& t, const char* role, int64_t limit,
                   int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const int64_t v = int64_t(read_element(t, i0, i1, i2, i3));
    if ((v < 0 && v != SY_ID_NONE) || v >= limit)
        fail(node, role_name(t, role) + "[" + std::to_string(i0) + ", " + std::to_string(i1) +
                       ", " + std::to_string(i2) + ", " + std::to_string(i3) + "] = " +
                       std::to_string(v) + " is out of range [0, " + std::to_string(limit) + ")");
    return v;
}

Result::Result(const sy_tensor& dst) : ne{dst.ne[0], dst.ne[1], dst.ne[2], dst.ne[3]} {
    values.assign(size_t(sdk::nelements(dst)), 0.0);
}

}  // namespace sy::reference::detail
