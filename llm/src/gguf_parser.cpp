// Parses one GGUF image (v2/v3) from memory, checking every size against the bytes that are
// actually there before it allocates anything from it.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_set>

#include "gguf_layout.hpp"

namespace sy::gguf::detail {
namespace {

// Smallest encoding of one value of a type: what an array of n items needs at least.
uint64_t min_value_size(ValueType t) {
    if (t == ValueType::STRING) return 8;  // a string is at least its u64 length
    if (t == ValueType::ARRAY) return 12;  // u32 element type + u64 length
    return fixed_size(t);
}

bool known_value_type(uint32_t t) {
    return t <= static_cast<uint32_t>(ValueType::F64);
}

std::string in_quotes(std::string_view s) {
    return "\"" + std::string(s) + "\"";
}

class Cursor {
  public:
    Cursor(std::span<const uint8_t> bytes, const std::string& name) : bytes_(bytes), name_(name) {}

    uint64_t pos() const { return pos_; }
    uint64_t left() const { return bytes_.size() - pos_; }
    // What is being read ("metadata \"general.name\"", "tensor info 3"), for messages.
    void set_context(std::string context) { context_ = std::move(context); }
    const std::string& context() const { return context_; }

    [[noreturn]] void fail(const std::string& problem) const {
        throw FormatError(name_ + ": " + problem);
    }

    template <typename T>
    T read(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string read_string(const char* what) {
        const uint64_t at = pos_;
        const uint64_t len = read<uint64_t>(what);
        if (len > left()) {
            fail("string length " + std::to_string(len) + " at offset " + std::to_string(at) +
                 " (" + describe(what) + ") exceeds the " + std::to_string(left()) +
                 " bytes left in the file");
        }
        std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
        if (!valid_utf8(s)) {
            fail("invalid UTF-8 in " + describe(what) + " at offset " + std::to_string(pos_));
        }
        pos_ += len;
        return s;
    }

    // n bytes as they are (the caller has checked that they are there).
    std::vector<uint8_t> read_bytes(uint64_t n, const char* what) {
        need(n, what);
        std::vector<uint8_t> out(bytes_.begin() + std::ptrdiff_t(pos_),
                                 bytes_.begin() + std::ptrdiff_t(pos_ + n));
        pos_ += n;
        return out;
    }

    // Counts the memory the metadata read so far holds against a budget relative to the file's
    // size: 64 MiB + 4 bytes per byte of the file. Compact arrays stay well inside it (numbers
    // cost their own bytes, a string at most 32 bytes per 8 of its length field); the check
    // guarantees it for any file.
    void charge(uint64_t bytes) {
        const uint64_t budget = (uint64_t(64) << 20) + 4 * uint64_t(bytes_.size());
        memory_ += bytes;
        if (memory_ > budget)
            fail("metadata would take more than " + std::to_string(budget) +
                 " bytes of memory (64 MiB + 4 per byte of the file), in " + context_);
    }

    std::string describe(const char* what) const {
        return context_.empty() ? std::string(what) : std::string(what) + " of " + context_;
    }

  private:
    void need(uint64_t n, const char* what) const {
        if (left() < n) {
            fail("truncated at offset " + std::to_string(pos_) + ": " + describe(what) + " needs " +
                 std::to_string(n) + " bytes, " + std::to_string(left()) + " left");
        }
    }

    std::span<const uint8_t> bytes_;
    const std::string& name_;
    uint64_t pos_ = 0;
    uint64_t memory_ = 0;
    std::string context_;
};

Value read_value(Cursor& in, ValueType type, int depth);

Value read_array(Cursor& in, int depth) {
    if (depth >= kMaxArrayDepth) {
        in.fail("arrays nested more than " + std::to_string(kMaxArrayDepth) + " deep in " +
                in.context() + " at offset " + std::to_string(in.pos()));
    }
    const uint64_t type_at = in.pos();
    const uint32_t raw_type = in.read<uint32_t>("array element type");
    if (!known_value_type(raw_type)) {
        in.fail("unknown array element type " + std::to_string(raw_type) + " in " + in.context() +
                " at offset " + std::to_string(type_at));
    }
    const auto element_type = static_cast<ValueType>(raw_type);
    const uint64_t len_at = in.pos();
    const uint64_t len = in.read<uint64_t>("array length");
    if (len > kMaxArrayLength) {
        in.fail("array length " + std::to_string(len) + " at offset " + std::to_string(len_at) +
                " (" + in.context() + ") exceeds the limit of " + std::to_string(kMaxArrayLength) +
                " items");
    }
    const uint64_t each = min_value_size(element_type);
    if (len > in.left() / each) {
        in.fail("array length " + std::to_string(len) + " at offset " + std::to_string(len_at) +
                " (" + in.context() + ") exceeds the file: each " + value_type_name(element_type) +
                " item needs at least " + std::to_string(each) + " bytes, " +
                std::to_string(in.left()) + " bytes left");
    }
    in.charge(sizeof(Value) + sizeof(Array));
    if (element_type == ValueType::STRING) {
        in.charge(len * sizeof(std::string));
        std::vector<std::string> strings;
        strings.reserve(len);
        for (uint64_t i = 0; i < len; ++i) {
            strings.push_back(in.read_string("string value"));
            if (strings.back().size() > 15) in.charge(strings.back().size() + 1);
        }
        return Value::array(Array::from_strings(std::move(strings)));
    }
    if (element_type == ValueType::ARRAY) {
        in.charge(len * sizeof(Value));
        std::vector<Value> arrays;
        arrays.reserve(len);
        for (uint64_t i = 0; i < len; ++i) arrays.push_back(read_array(in, depth + 1));
        return Value::array(Array::from_arrays(std::move(arrays)));
    }
    // Numbers and bools: their bytes as they are (len * each is within the file, checked above).
    in.charge(len * each);
    const uint64_t at = in.pos();
    std::vector<uint8_t> bytes = in.read_bytes(len * each, "array items");
    if (element_type == ValueType::BOOL)
        for (uint64_t i = 0; i < len; ++i)
            if (bytes[i] > 1)
                in.fail("invalid bool " + std::to_string(bytes[i]) + " in " + in.context() +
                        " at offset " + std::to_string(at + i));
    return Value::array(Array::from_bytes(element_type, std::move(bytes)));
}

Value read_value(Cursor& in, ValueType type, int depth) {
    switch (type) {
        case ValueType::U8: return Value::u8(in.read<uint8_t>("value"));
        case ValueType::I8: return Value::i8(in.read<int8_t>("value"));
        case ValueType::U16: return Value::u16(in.read<uint16_t>("value"));
        case ValueType::I16: return Value::i16(in.read<int16_t>("value"));
        case ValueType::U32: return Value::u32(in.read<uint32_t>("value"));
        case ValueType::I32: return Value::i32(in.read<int32_t>("value"));
        case ValueType::U64: return Value::u64(in.read<uint64_t>("value"));
        case ValueType::I64: return Value::i64(in.read<int64_t>("value"));
        case ValueType::F32: return Value::f32(in.read<float>("value"));
        case ValueType::F64: return Value::f64(in.read<double>("value"));
        case ValueType::BOOL: {
            const uint64_t at = in.pos();
            const uint8_t b = in.read<uint8_t>("value");
            if (b > 1) {
                in.fail("invalid bool " + std::to_string(b) + " in " + in.context() +
                        " at offset " + std::to_string(at));
            }
            return Value::boolean(b != 0);
        }
        case ValueType::STRING: return Value::string(in.read_string("string value"));
        case ValueType::ARRAY: return read_array(in, depth);
    }
    in.fail("unknown value type " + std::to_string(static_cast<uint32_t>(type)));
}

std::string hex_bytes(const uint8_t* p, size_t n) {
    static const char* digits = "0123456789ABCDEF";
    std::string hex, text;
    for (size_t i = 0; i < n; ++i) {
        if (i) hex += ' ';
        hex += digits[p[i] >> 4];
        hex += digits[p[i] & 15];
        text += (p[i] >= 0x20 && p[i] < 0x7F) ? static_cast<char>(p[i]) : '.';
    }
    return hex + " (\"" + text + "\")";
}

void read_header(Cursor& in, std::span<const uint8_t> bytes, ParsedFile& out) {
    const uint32_t magic = in.read<uint32_t>("magic");
    if (magic != kMagic) {
        in.fail("not a GGUF file: magic is " + hex_bytes(bytes.data(), 4) +
                ", expected 47 47 55 46 (\"GGUF\")");
    }
    const uint32_t version = in.read<uint32_t>("version");
    if (version == 1) {
        in.fail(
            "GGUF version 1 is not supported (only versions 2 and 3 are); convert the file "
            "with a current llama.cpp");
    }
    if (version == 0x02000000 || version == 0x03000000) {
        in.fail("big-endian GGUF (version bytes " + hex_bytes(bytes.data() + 4, 4) +
                ") is not supported");
    }
    if (version != 2 && version != 3) {
        in.fail("unknown GGUF version " + std::to_string(version) + " (supported: 2, 3)");
    }
    out.version = version;
}

void read_metadata(Cursor& in, uint64_t kv_count, ParsedFile& out) {
    out.metadata.reserve(kv_count);
    std::unordered_set<std::string> keys;
    for (uint64_t i = 0; i < kv_count; ++i) {
        in.set_context("metadata pair " + std::to_string(i));
        const uint64_t key_at = in.pos();
        std::string key = in.read_string("key");
        if (!keys.insert(key).second) {
            in.fail("duplicate metadata key " + in_quotes(key) + " at offset " +
                    std::to_string(key_at));
        }
        in.set_context("metadata " + in_quotes(key));
        const uint64_t type_at = in.pos();
        const uint32_t raw_type = in.read<uint32_t>("value type");
        if (!known_value_type(raw_type)) {
            in.fail("unknown value type " + std::to_string(raw_type) + " in metadata " +
                    in_quotes(key) + " at offset " + std::to_string(type_at));
        }
        Value value = read_value(in, static_cast<ValueType>(raw_type), 0);
        out.metadata.push_back({std::move(key), std::move(value)});
    }
    in.set_context("");
    for (const KeyValue& kv : out.metadata) {
        if (kv.key != "general.alignment") continue;
        const bool is_unsigned =
            kv.value.type() == ValueType::U8 || kv.value.type() == ValueType::U16 ||
            kv.value.type() == ValueType::U32 || kv.value.type() == ValueType::U64;
        if (!is_unsigned) {
            in.fail(std::string("general.alignment must be an unsigned integer, found ") +
                    value_type_name(kv.value.type()));
        }
        const uint64_t a = kv.value.as_u64();
        if (!is_power_of_two(a) || a > (uint64_t{1} << 30)) {
            in.fail("general.alignment must be a non-zero power of two (at most 2^30), found " +
                    std::to_string(a));
        }
        out.alignment = a;
    }
}

void read_tensor_infos(Cursor& in, uint64_t tensor_count, uint32_t shard, ParsedFile& out) {
    out.tensors.reserve(tensor_count);
    std::unordered_set<std::string> names;
    for (uint64_t i = 0; i < tensor_count; ++i) {
        in.set_context("tensor info " + std::to_string(i));
        TensorInfo t;
        const uint64_t name_at = in.pos();
        t.name = in.read_string("name");
        if (!names.insert(t.name).second) {
            in.fail("duplicate tensor name " + in_quotes(t.name) + " at offset " +
                    std::to_string(name_at));
        }
        in.set_context("tensor " + in_quotes(t.name));
        t.n_dims = in.read<uint32_t>("n_dims");
        if (t.n_dims == 0 || t.n_dims > 4) {
            in.fail("tensor " + in_quotes(t.name) + ": n_dims " + std::to_string(t.n_dims) +
                    " is out of range (1..4)");
        }
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            const uint64_t v = in.read<uint64_t>("dimension");
            if (v > static_cast<uint64_t>(INT64_MAX)) {
                in.fail("tensor " + in_quotes(t.name) + ": dimension " + std::to_string(d) +
                        " is " + std::to_string(v) + " (does not fit in int64)");
            }
            t.ne[d] = static_cast<int64_t>(v);
        }
        const uint32_t raw_type = in.read<uint32_t>("type");
        if (raw_type > static_cast<uint32_t>(INT32_MAX)) {
            in.fail("tensor " + in_quotes(t.name) + ": " + unknown_type(raw_type));
        }
        t.type = static_cast<int32_t>(raw_type);
        t.offset = in.read<uint64_t>("offset");
        const std::string problem = check_tensor_shape(t.type, t.n_dims, t.ne, t.nbytes);
        if (!problem.empty()) in.fail("tensor " + in_quotes(t.name) + ": " + problem);
        t.shard = shard;
        out.tensors.push_back(std::move(t));
    }
    in.set_context("");
}

// Every tensor aligned, inside the data section, and no two sharing bytes.
void place_tensors(Cursor& in, std::span<const uint8_t> bytes, ParsedFile& out) {
    out.data_offset = align_up(in.pos(), out.alignment);
    const uint64_t data_size = bytes.size() > out.data_offset ? bytes.size() - out.data_offset : 0;
    for (TensorInfo& t : out.tensors) {
        if (t.offset % out.alignment != 0) {
            in.fail("tensor " + in_quotes(t.name) + ": offset " + std::to_string(t.offset) +
                    " is not a multiple of the alignment " + std::to_string(out.alignment));
        }
        if (t.offset > data_size || t.nbytes > data_size - t.offset) {
            in.fail("tensor " + in_quotes(t.name) + ": data at offset " + std::to_string(t.offset) +
                    " (" + std::to_string(t.nbytes) + " bytes) runs past the end of the file " +
                    "(the data section at " + std::to_string(out.data_offset) + " holds " +
                    std::to_string(data_size) + " bytes)");
        }
        t.data = bytes.data() + out.data_offset + t.offset;
    }
    std::vector<size_t> order(out.tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return out.tensors[a].offset < out.tensors[b].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
        const TensorInfo& a = out.tensors[order[k - 1]];
        const TensorInfo& b = out.tensors[order[k]];
        if (a.offset + a.nbytes > b.offset) {
            in.fail("tensors " + in_quotes(a.name) + " and " + in_quotes(b.name) + " overlap: [" +
                    std::to_string(a.offset) + ", " + std::to_string(a.offset + a.nbytes) +
                    ") and [" + std::to_string(b.offset) + ", " +
                    std::to_string(b.offset + b.nbytes) + ")");
        }
    }
}

}  // namespace

ParsedFile parse_gguf(std::span<const uint8_t> bytes, const std::string& name, uint32_t shard) {
    Cursor in(bytes, name);
    ParsedFile out;
    read_header(in, bytes, out);
    const uint64_t tensor_count = in.read<uint64_t>("tensor_count");
    const uint64_t kv_count = in.read<uint64_t>("kv_count");
    // Smallest encodings: a pair is a key length, a value type and a 1-byte value; a tensor
    // info is a name length, n_dims, one dimension, a type and an offset.
    constexpr uint64_t kMinPair = 8 + 4 + 1, kMinTensor = 8 + 4 + 8 + 4 + 8;
    const uint64_t left = in.left();
    if (kv_count > left / kMinPair) {
        in.fail("kv_count " + std::to_string(kv_count) + " cannot fit in the " +
                std::to_string(left) + " bytes after the header (a pair needs at least " +
                std::to_string(kMinPair) + ")");
    }
    if (tensor_count > (left - kv_count * kMinPair) / kMinTensor) {
        in.fail("tensor_count " + std::to_string(tensor_count) + " cannot fit in the " +
                std::to_string(left) + " bytes after the header with " + std::to_string(kv_count) +
                " metadata pairs (a tensor info needs at least " + std::to_string(kMinTensor) +
                ")");
    }
    read_metadata(in, kv_count, out);
    read_tensor_infos(in, tensor_count, shard, out);
    place_tensors(in, bytes, out);
    return out;
}

}  // namespace sy::gguf::detail
