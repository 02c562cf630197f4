// GGUF files (v2 and v3), the format of llama.cpp and its forks: reading (memory-mapped,
// zero-copy, split files as one model) and writing (streamed, so a model never has to fit in RAM).
//
// Layout (little-endian): magic "GGUF", u32 version, u64 tensor_count, u64 kv_count, kv pairs
// (string key, u32 value type, value), tensor infos (string name, u32 n_dims, u64 ne[n_dims],
// u32 type, u64 offset relative to the data section), padding to `general.alignment` (default
// 32), tensor data. Strings are u64 length + bytes (UTF-8, no terminator).
//
// Every malformed input is a sy::gguf::FormatError naming the file and what is wrong, raised
// before anything is allocated from an unchecked size.
//
// Limits beyond the format itself (so a hostile file cannot make the reader allocate much more
// than the file's own size): arrays nest at most kMaxArrayDepth deep, and one array holds at
// most kMaxArrayLength items.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "switchyard/core/error.hpp"

namespace sy::gguf {

class FormatError : public sy::Error {
  public:
    using sy::Error::Error;
};

inline constexpr uint64_t kDefaultAlignment = 32;
inline constexpr int kMaxArrayDepth = 8;                        // array of array of ... levels
inline constexpr uint64_t kMaxArrayLength = uint64_t{1} << 26;  // items in one array

// Metadata value types, numbered as in the file.
enum class ValueType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};

const char* value_type_name(ValueType t);

class Value;

// A typed array; element_type may itself be ARRAY (nested arrays). Stored compactly, so that
// an array costs about what it takes in the file: numbers and bools as their little-endian bytes,
// strings as strings, nested arrays as values. Items are read by index (operator[] makes a
// Value; string_at gives STRING items by reference) or iterated as Values.
class Array {
  public:
    Array() = default;
    // Throws FormatError for an item whose type is not element_type.
    Array(ValueType element_type, std::vector<Value> items);
    // The parser's forms: n items of a number or bool type from their bytes; strings; arrays.
    static Array from_bytes(ValueType element_type, std::vector<uint8_t> bytes);
    static Array from_strings(std::vector<std::string> strings);
    static Array from_arrays(std::vector<Value> arrays);

    ValueType element_type = ValueType::U8;

    size_t size() const;
    bool empty() const { return size() == 0; }
    Value operator[](size_t i) const;
    Value front() const;
    const std::string& string_at(size_t i) const;  // STRING arrays
    // Bytes this array holds in memory (items, not counting the object itself).
    uint64_t memory_bytes() const;

    class Iterator {
      public:
        Iterator(const Array* a, size_t i) : a_(a), i_(i) {}
        Value operator*() const;
        Iterator& operator++() {
            ++i_;
            return *this;
        }
        bool operator!=(const Iterator& o) const { return i_ != o.i_; }

      private:
        const Array* a_;
        size_t i_;
    };
    Iterator begin() const { return {this, 0}; }
    Iterator end() const { return {this, size()}; }

  private:
    std::vector<uint8_t> bytes_;        // number and bool items
    std::vector<std::string> strings_;  // STRING items
    std::vector<Value> arrays_;         // ARRAY items
};

// Bytes of one item of a number or bool type (0 for STRING and ARRAY).
size_t fixed_size(ValueType t);

class Value {
  public:
    Value() = default;
    static Value u8(uint8_t v);
    static Value i8(int8_t v);
    static Value u16(uint16_t v);
    static Value i16(int16_t v);
    static Value u32(uint32_t v);
    static Value i32(int32_t v);
    static Value u64(uint64_t v);
    static Value i64(int64_t v);
    static Value f32(float v);
    static Value f64(double v);
    static Value boolean(bool v);
    static Value string(std::string v);
    static Value array(ValueType element_type, std::vector<Value> items);
    static Value array(Array a);

    ValueType type() const { return type_; }
    // Typed access; throws FormatError("metadata key: expected u32, found string") style
    // messages via the callers below when the type differs.
    bool is_integer() const;
    bool is_float() const;
    uint64_t as_u64() const;  // any unsigned or non-negative signed integer
    int64_t as_i64() const;   // any integer
    double as_f64() const;    // any number
    bool as_bool() const;
    const std::string& as_string() const;
    const Array& as_array() const;

  private:
    static Value unsigned_value(ValueType t, uint64_t v);
    static Value signed_value(ValueType t, int64_t v);

    ValueType type_ = ValueType::U8;
    std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<Array>> v_;
};

inline Value Array::front() const {
    return (*this)[0];
}
inline Value Array::Iterator::operator*() const {
    return (*a_)[i_];
}

struct KeyValue {
    std::string key;
    Value value;
};

// One tensor as the file describes it.
struct TensorInfo {
    std::string name;
    int32_t type = 0;     // GGUF/ggml type id (sy_dtype)
    uint32_t n_dims = 0;  // 1..4
    int64_t ne[4] = {1, 1, 1, 1};
    uint64_t offset = 0;            // relative to the data section of its shard
    uint64_t nbytes = 0;            // from type and shape
    uint32_t shard = 0;             // index of the file that holds it (split models)
    const uint8_t* data = nullptr;  // in the memory map (reader only)
};

// How Reader::open holds a file's bytes.
enum class Residence {
    // Memory-mapped: zero-copy, pages come from the page cache as they are touched.
    mapped,
    // Read into anonymous memory advised for transparent huge pages (--no-mmap): a copy the size
    // of the file, refused when that exceeds MemAvailable. Generation can run faster from it
    // than from the mapping, through 2 MiB pages (docs/design-measurements.md#no-mmap-huge-pages).
    read,
};

// A GGUF model opened for reading: one file, or every shard of a split model.
class Reader {
  public:
    // Opens `path`. If its name is "<prefix>-00001-of-0000N.gguf", all N shards are opened and
    // their tensors presented as one model (metadata from the first shard).
    static Reader open(const std::filesystem::path& path, Residence residence = Residence::mapped);
    // Parses a GGUF image already in memory (tests, fuzzing, embedded models). `bytes` must
    // outlive the Reader: TensorInfo::data points into it. `name` is used in messages.
    static Reader open_memory(std::span<const uint8_t> bytes, std::string name);
    Reader(Reader&&) noexcept;
    Reader& operator=(Reader&&) noexcept;
    ~Reader();

    uint32_t version() const;
    uint64_t alignment() const;
    const std::vector<KeyValue>& metadata() const;
    const Value* find(std::string_view key) const;
    // Typed lookups with messages naming the file and key ("missing key", "expected u32").
    uint64_t get_u64(std::string_view key) const;
    double get_f64(std::string_view key) const;
    std::string get_string(std::string_view key) const;

    const std::vector<TensorInfo>& tensors() const;
    const TensorInfo* tensor(std::string_view name) const;
    const std::vector<std::filesystem::path>& files() const;
    uint64_t file_size() const;  // all shards together
    // Shard i's whole file as memory (mapped, or read with --no-mmap); empty for open_memory.
    std::span<const uint8_t> shard_bytes(size_t i) const;
    // t's bytes made writable in place, for a tensor the loader converts once (ik_llama.cpp's
    // row-interleaved layouts): in a mapped file the pages become private copies as they are
    // written (the file and its page cache are untouched), so the conversion keeps one copy of
    // the weights. Throws for a Reader over memory it does not own (open_memory).
    uint8_t* writable(const TensorInfo& t) const;
    // Whether writable() was called: some tensors' bytes in memory are no longer the file's.
    bool modified() const;

  private:
    Reader();
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Writes a GGUF v3 file in one pass: metadata and tensor declarations first, then each tensor's
// bytes in declaration order (so tensors can be produced one at a time, never all in RAM).
class Writer {
  public:
    explicit Writer(const std::filesystem::path& path, uint64_t alignment = 32);
    ~Writer();  // a writer destroyed before finish() removes its partial file

    void add(std::string key, Value value);
    // Declares a tensor; its bytes come later through write_tensor, in the same order.
    void declare_tensor(std::string name, int32_t type, std::span<const int64_t> ne);
    // Writes the header, metadata and tensor infos (after all declarations).
    void write_header();
    // The next declared tensor's bytes (exactly its size).
    void write_tensor(std::span<const uint8_t> bytes);
    // Checks every declared tensor was written, flushes and closes.
    void finish();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace sy::gguf
