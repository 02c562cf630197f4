// Metadata values: construction, type names and typed access.
#include <cstring>
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
    Value out;
    out.type_ = ValueType::ARRAY;
    out.v_ = std::make_shared<Array>(element_type, std::move(items));
    return out;
}

Value Value::array(Array a) {
    Value out;
    out.type_ = ValueType::ARRAY;
    out.v_ = std::make_shared<Array>(std::move(a));
    return out;
}

size_t fixed_size(ValueType t) {
    switch (t) {
        case ValueType::U8:
        case ValueType::I8:
        case ValueType::BOOL: return 1;
        case ValueType::U16:
        case ValueType::I16: return 2;
        case ValueType::U32:
        case ValueType::I32:
        case ValueType::F32: return 4;
        case ValueType::U64:
        case ValueType::I64:
        case ValueType::F64: return 8;
        case ValueType::STRING:
        case ValueType::ARRAY: return 0;
    }
    return 0;
}

namespace {

// Item i of a number or bool type from its little-endian bytes.
Value item_from_bytes(ValueType t, const uint8_t* p) {
    const auto get = [p](auto v) {
        std::memcpy(&v, p, sizeof v);
        return v;
    };
    switch (t) {
        case ValueType::U8: return Value::u8(get(uint8_t{}));
        case ValueType::I8: return Value::i8(get(int8_t{}));
        case ValueType::U16: return Value::u16(get(uint16_t{}));
        case ValueType::I16: return Value::i16(get(int16_t{}));
        case ValueType::U32: return Value::u32(get(uint32_t{}));
        case ValueType::I32: return Value::i32(get(int32_t{}));
        case ValueType::U64: return Value::u64(get(uint64_t{}));
        case ValueType::I64: return Value::i64(get(int64_t{}));
        case ValueType::F32: return Value::f32(get(float{}));
        case ValueType::F64: return Value::f64(get(double{}));
        case ValueType::BOOL: return Value::boolean(get(uint8_t{}) != 0);
        default: break;
    }
    throw FormatError(std::string("no fixed-size items of type ") + value_type_name(t));
}

// The bytes of a number or bool item.
void append_bytes(const Value& v, std::vector<uint8_t>& out) {
    const auto put = [&out](auto x) {
        const auto* b = reinterpret_cast<const uint8_t*>(&x);
        out.insert(out.end(), b, b + sizeof x);
    };
    switch (v.type()) {
        case ValueType::U8: return put(uint8_t(v.as_u64()));
        case ValueType::I8: return put(int8_t(v.as_i64()));
        case ValueType::U16: return put(uint16_t(v.as_u64()));
        case ValueType::I16: return put(int16_t(v.as_i64()));
        case ValueType::U32: return put(uint32_t(v.as_u64()));
        case ValueType::I32: return put(int32_t(v.as_i64()));
        case ValueType::U64: return put(uint64_t(v.as_u64()));
        case ValueType::I64: return put(int64_t(v.as_i64()));
        case ValueType::F32: return put(float(v.as_f64()));
        case ValueType::F64: return put(double(v.as_f64()));
        case ValueType::BOOL: return put(uint8_t(v.as_bool() ? 1 : 0));
        default: break;
    }
}

}  // namespace

Array::Array(ValueType type, std::vector<Value> items) : element_type(type) {
    for (const Value& item : items) {
        if (item.type() != type) {
            throw FormatError(std::string("array of ") + value_type_name(type) +
                              " holds an item of type " + value_type_name(item.type()));
        }
    }
    if (type == ValueType::STRING) {
        strings_.reserve(items.size());
        for (const Value& item : items) strings_.push_back(item.as_string());
    } else if (type == ValueType::ARRAY) {
        arrays_ = std::move(items);
    } else {
        bytes_.reserve(items.size() * fixed_size(type));
        for (const Value& item : items) append_bytes(item, bytes_);
    }
}

Array Array::from_bytes(ValueType type, std::vector<uint8_t> bytes) {
    const size_t each = fixed_size(type);
    if (each == 0 || bytes.size() % each != 0)
        throw FormatError(std::string("array of ") + value_type_name(type) + ": " +
                          std::to_string(bytes.size()) + " bytes are not whole items");
    Array a;
    a.element_type = type;
    a.bytes_ = std::move(bytes);
    return a;
}

Array Array::from_strings(std::vector<std::string> strings) {
    Array a;
    a.element_type = ValueType::STRING;
    a.strings_ = std::move(strings);
    return a;
}

Array Array::from_arrays(std::vector<Value> arrays) {
    return Array(ValueType::ARRAY, std::move(arrays));
}

size_t Array::size() const {
    if (element_type == ValueType::STRING) return strings_.size();
    if (element_type == ValueType::ARRAY) return arrays_.size();
    return bytes_.size() / fixed_size(element_type);
}

Value Array::operator[](size_t i) const {
    if (i >= size())
        throw FormatError("array index " + std::to_string(i) + " past its " +
                          std::to_string(size()) + " items");
    if (element_type == ValueType::STRING) return Value::string(strings_[i]);
    if (element_type == ValueType::ARRAY) return arrays_[i];
    return item_from_bytes(element_type, bytes_.data() + i * fixed_size(element_type));
}

const std::string& Array::string_at(size_t i) const {
    if (element_type != ValueType::STRING)
        throw FormatError(std::string("expected an array of strings, found an array of ") +
                          value_type_name(element_type));
    if (i >= strings_.size())
        throw FormatError("array index " + std::to_string(i) + " past its " +
                          std::to_string(strings_.size()) + " items");
    return strings_[i];
}

uint64_t Array::memory_bytes() const {
    uint64_t n = bytes_.capacity() + strings_.capacity() * sizeof(std::string) +
                 arrays_.capacity() * sizeof(Value);
    for (const std::string& s : strings_)
        if (s.capacity() > 15) n += s.capacity() + 1;  // beyond the small-string buffer
    for (const Value& v : arrays_) n += sizeof(Array) + v.as_array().memory_bytes();
    return n;
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
