// Writer: streams a GGUF v3 file into "<path>.tmp" and renames it into place on finish(), so
// the destination never holds a partial file.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "gguf_layout.hpp"

namespace sy::gguf {
namespace {
struct Declared {
    std::string name;
    int32_t type = 0;
    uint32_t n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};
    uint64_t nbytes = 0;
    uint64_t offset = 0;
};
}  // namespace

struct Writer::Impl {
    std::filesystem::path path;
    std::filesystem::path tmp;
    uint64_t alignment = kDefaultAlignment;
    std::vector<KeyValue> metadata;
    std::unordered_set<std::string> keys;
    std::vector<Declared> tensors;
    std::unordered_set<std::string> names;
    uint64_t data_size = 0;  // end of the last declared tensor, relative to the data section
    std::FILE* file = nullptr;
    uint64_t written = 0;  // bytes in the file so far
    size_t next_tensor = 0;
    bool header_written = false;
    bool finished = false;

    [[noreturn]] void fail(const std::string& problem) const {
        throw sy::Error(path.string() + ": " + problem);
    }

    void write(const void* p, size_t n) {
        if (n && std::fwrite(p, 1, n, file) != n) {
            fail("write failed at byte " + std::to_string(written) + ": " + std::strerror(errno));
        }
        written += n;
    }
    template <typename T>
    void put(T v) {
        write(&v, sizeof v);
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        write(s.data(), s.size());
    }
    void pad_to_alignment() {
        static const uint8_t zeros[256] = {};
        uint64_t n = detail::align_up(written, alignment) - written;
        while (n > 0) {
            const size_t k = n < sizeof zeros ? static_cast<size_t>(n) : sizeof zeros;
            write(zeros, k);
            n -= k;
        }
    }

    void put_value(const Value& v) {
        switch (v.type()) {
            case ValueType::U8: put<uint8_t>(static_cast<uint8_t>(v.as_u64())); break;
            case ValueType::I8: put<int8_t>(static_cast<int8_t>(v.as_i64())); break;
            case ValueType::U16: put<uint16_t>(static_cast<uint16_t>(v.as_u64())); break;
            case ValueType::I16: put<int16_t>(static_cast<int16_t>(v.as_i64())); break;
            case ValueType::U32: put<uint32_t>(static_cast<uint32_t>(v.as_u64())); break;
            case ValueType::I32: put<int32_t>(static_cast<int32_t>(v.as_i64())); break;
            case ValueType::U64: put<uint64_t>(v.as_u64()); break;
            case ValueType::I64: put<int64_t>(v.as_i64()); break;
            case ValueType::F32: put<float>(static_cast<float>(v.as_f64())); break;
            case ValueType::F64: put<double>(v.as_f64()); break;
            case ValueType::BOOL: put<uint8_t>(v.as_bool() ? 1 : 0); break;
            case ValueType::STRING: put_string(v.as_string()); break;
            case ValueType::ARRAY: {
                const Array& a = v.as_array();
                put<uint32_t>(static_cast<uint32_t>(a.element_type));
                put<uint64_t>(a.size());
                for (const Value item : a) put_value(item);
                break;
            }
        }
    }

    void close_and_remove() {
        if (file) std::fclose(file);
        file = nullptr;
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
    }
};

Writer::Writer(const std::filesystem::path& path, uint64_t alignment)
    : impl_(std::make_unique<Impl>()) {
    impl_->path = path;
    impl_->tmp = path;
    impl_->tmp += ".tmp";
    if (!detail::is_power_of_two(alignment) || alignment > (uint64_t{1} << 30)) {
        impl_->fail("alignment must be a non-zero power of two (at most 2^30), got " +
                    std::to_string(alignment));
    }
    impl_->alignment = alignment;
    if (alignment != kDefaultAlignment) add("general.alignment", Value::u32(alignment));
}

Writer::~Writer() {
    if (impl_ && !impl_->finished) impl_->close_and_remove();
}

void Writer::add(std::string key, Value value) {
    Impl& m = *impl_;
    if (m.header_written) m.fail("metadata \"" + key + "\" added after write_header()");
    if (!detail::valid_utf8(key)) m.fail("metadata key is not valid UTF-8");
    if (key == "general.alignment") {
        if (value.type() != ValueType::U32 || value.as_u64() != m.alignment) {
            m.fail("general.alignment must be the u32 given to the Writer (" +
                   std::to_string(m.alignment) + ")");
        }
        if (m.keys.count(key)) return;  // set by the constructor already
    }
    if (!m.keys.insert(key).second) m.fail("duplicate metadata key \"" + key + "\"");
    m.metadata.push_back({std::move(key), std::move(value)});
}

void Writer::declare_tensor(std::string name, int32_t type, std::span<const int64_t> ne) {
    Impl& m = *impl_;
    if (m.header_written) m.fail("tensor \"" + name + "\" declared after write_header()");
    if (!detail::valid_utf8(name)) m.fail("tensor name is not valid UTF-8");
    if (ne.size() > 4) {
        m.fail("tensor \"" + name + "\": n_dims " + std::to_string(ne.size()) +
               " is out of range (1..4)");
    }
    Declared t;
    t.name = name;
    t.type = type;
    t.n_dims = static_cast<uint32_t>(ne.size());
    for (size_t d = 0; d < ne.size(); ++d) t.ne[d] = ne[d];
    const std::string problem = detail::check_tensor_shape(type, t.n_dims, t.ne, t.nbytes);
    if (!problem.empty()) m.fail("tensor \"" + name + "\": " + problem);
    if (!m.names.insert(name).second) m.fail("duplicate tensor name \"" + name + "\"");
    t.offset = detail::align_up(m.data_size, m.alignment);
    m.data_size = t.offset + t.nbytes;
    m.tensors.push_back(std::move(t));
}

void Writer::write_header() {
    Impl& m = *impl_;
    if (m.header_written) m.fail("write_header() called twice");
    m.file = std::fopen(m.tmp.c_str(), "wb");
    if (!m.file) m.fail("cannot create " + m.tmp.string() + ": " + std::strerror(errno));
    m.header_written = true;
    m.put<uint32_t>(detail::kMagic);
    m.put<uint32_t>(3);
    m.put<uint64_t>(m.tensors.size());
    m.put<uint64_t>(m.metadata.size());
    for (const KeyValue& kv : m.metadata) {
        m.put_string(kv.key);
        m.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
        m.put_value(kv.value);
    }
    for (const Declared& t : m.tensors) {
        m.put_string(t.name);
        m.put<uint32_t>(t.n_dims);
        for (uint32_t d = 0; d < t.n_dims; ++d) m.put<uint64_t>(static_cast<uint64_t>(t.ne[d]));
        m.put<uint32_t>(static_cast<uint32_t>(t.type));
        m.put<uint64_t>(t.offset);
    }
    m.pad_to_alignment();
}

void Writer::write_tensor(std::span<const uint8_t> bytes) {
    Impl& m = *impl_;
    if (!m.header_written) m.fail("write_tensor() before write_header()");
    if (m.next_tensor >= m.tensors.size()) {
        m.fail("write_tensor() called more often than tensors were declared (" +
               std::to_string(m.tensors.size()) + ")");
    }
    const Declared& t = m.tensors[m.next_tensor];
    if (bytes.size() != t.nbytes) {
        m.fail("tensor \"" + t.name + "\": got " + std::to_string(bytes.size()) +
               " bytes, its type and shape need " + std::to_string(t.nbytes));
    }
    m.write(bytes.data(), bytes.size());
    m.pad_to_alignment();
    ++m.next_tensor;
}

void Writer::finish() {
    Impl& m = *impl_;
    if (m.finished) return;
    if (!m.header_written) write_header();
    if (m.next_tensor != m.tensors.size()) {
        m.fail("finish() with " + std::to_string(m.tensors.size() - m.next_tensor) +
               " declared tensors not written (next: \"" + m.tensors[m.next_tensor].name + "\")");
    }
    const bool flushed = std::fflush(m.file) == 0 && ::fsync(fileno(m.file)) == 0;
    const int err = errno;
    const bool closed = std::fclose(m.file) == 0;
    m.file = nullptr;
    if (!flushed || !closed) m.fail(std::string("cannot flush: ") + std::strerror(err));
    std::error_code ec;
    std::filesystem::rename(m.tmp, m.path, ec);
    if (ec) m.fail("cannot rename " + m.tmp.string() + " into place: " + ec.message());
    m.finished = true;
}

}  // namespace sy::gguf
