// Metadata values: construction, type names and typed access.
#include <utility>

#include "switchyard/llm/gguf.hpp"

namespace sy::gguf {

const char* value_type_name(ValueType t) {
    switch (t) {
        case ValueType::U8: return "u8";
        case ValueType::I8: return "i8";
        case ValueType::U16: return "u16";
        case ValueType::I16: return "i16";
        case ValueType::U32: return "u32";
        case ValueType::I32: return "i32";
        case ValueType::F32: return "f32";
        case ValueType::BOOL: return "bool";
        case ValueType::STRING: return "string";
        case ValueType::ARRAY: return "array";
        case ValueType::U64: return "u64";
        case ValueType::I64: return "i64";
        case ValueType::F64: return "f64";
    }
    return "unknown";
}

namespace {
bool is_unsigned(ValueType t) {
    return t == ValueType::U8 || t == ValueType::U16 || t == ValueType::U32 || t == ValueType::U64;
}
bool is_signed(ValueType t) {
    return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}
[[noreturn]] void mismatch(const char* wanted, ValueType found) {
    throw FormatError(std::string("expected ") + wanted + ", found " + value_type_name(found));
}
}  // namespace

Value Value::u8(uint8_t v) {
    return unsigned_value(ValueType::U8, v);
}
Value Value::u16(uint16_t v) {
    return unsigned_value(ValueType::U16, v);
}
Value Value::u32(uint32_t v) {
    return unsigned_value(ValueType::U32, v);
}
Value Value::u64(uint64_t v) {
    return unsigned_value(ValueType::U64, v);
}
Value Value::i8(int8_t v) {
    return signed_value(ValueType::I8, v);
}
Value Value::i16(int16_t v) {
    return signed_value(ValueType::I16, v);
}
Value Value::i32(int32_t v) {
    return signed_value(ValueType::I32, v);
}
Value Value::i64(int64_t v) {
    return signed_value(ValueType::I64, v);
}

Value Value::f32(float v) {
    Value out;
    out.type_ = ValueType::F32;
    out.v_ = static_cast<double>(v);
    return out;
}

Value Value::f64(double v) {
    Value out;
    out.type_ = ValueType::F64;
    out.v_ = v;
    return out;
}

Value Value::boolean(bool v) {
    Value out;
    out.type_ = ValueType::BOOL;
    out.v_ = v;
    return out;
}

Value Value::string(std::string v) {
    Value out;
    out.type_ = ValueType::STRING;
    out.v_ = std::move(v);
    return out;
}

Value Value::array(ValueType element_type, std::vector<Value> items) {
    for (const Value& item : items) {
        if (item.type() != element_type) {
            throw FormatError(std::string("array of ") + value_type_name(element_type) +
                              " holds an item of type " + value_type_name(item.type()));
        }
    }
    Value out;
    out.type_ = ValueType::ARRAY;
    out.v_ = std::make_shared<Array>(Array{element_type, std::move(items)});
    return out;
}

Value Value::unsigned_value(ValueType t, uint64_t v) {
    Value out;
    out.type_ = t;
    out.v_ = v;
    return out;
}

Value Value::signed_value(ValueType t, int64_t v) {
    Value out;
    out.type_ = t;
    out.v_ = v;
    return out;
}

bool Value::is_integer() const {
    return is_unsigned(type_) || is_signed(type_);
}
bool Value::is_float() const {
    return type_ == ValueType::F32 || type_ == ValueType::F64;
}

uint64_t Value::as_u64() const {
    if (is_unsigned(type_)) return std::get<uint64_t>(v_);
    if (is_signed(type_)) {
        const int64_t v = std::get<int64_t>(v_);
        if (v < 0) throw FormatError("expected a non-negative integer, found " + std::to_string(v));
        return static_cast<uint64_t>(v);
    }
    mismatch("an integer", type_);
}

int64_t Value::as_i64() const {
    if (is_signed(type_)) return std::get<int64_t>(v_);
    if (is_unsigned(type_)) {
        const uint64_t v = std::get<uint64_t>(v_);
        if (v > static_cast<uint64_t>(INT64_MAX)) {
            throw FormatError("integer " + std::to_string(v) + " does not fit in i64");
        }
        return static_cast<int64_t>(v);
    }
    mismatch("an integer", type_);
}

double Value::as_f64() const {
    if (is_float()) return std::get<double>(v_);
    if (is_unsigned(type_)) return static_cast<double>(std::get<uint64_t>(v_));
    if (is_signed(type_)) return static_cast<double>(std::get<int64_t>(v_));
    mismatch("a number", type_);
}

bool Value::as_bool() const {
    if (type_ != ValueType::BOOL) mismatch("bool", type_);
    return std::get<bool>(v_);
}

const std::string& Value::as_string() const {
    if (type_ != ValueType::STRING) mismatch("string", type_);
    return std::get<std::string>(v_);
}

const Array& Value::as_array() const {
    if (type_ != ValueType::ARRAY) mismatch("array", type_);
    return *std::get<std::shared_ptr<Array>>(v_);
}

}  // namespace sy::gguf
