// Importance matrix files: llama.cpp's GGUF format and the legacy .dat (imatrix.hpp describes
// both), read with every size checked against the file before anything is allocated from it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/imatrix.hpp"

namespace sy::llm {
namespace {

constexpr int32_t kMaxNameLength = 1 << 16;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& problem) {
    throw Error(path.string() + ": " + problem);
}

// The checks every entry passes, whichever format it came from.
void check_entry(const std::filesystem::path& path, const std::string& name,
                 const ImatrixEntry& e) {
    const std::string where = "entry '" + name + "': ";
    if (e.counts.empty()) fail(path, where + "no counts");
    if (e.sums.empty() || e.sums.size() % e.counts.size() != 0)
        fail(path, where + std::to_string(e.sums.size()) + " sums do not divide into " +
                       std::to_string(e.counts.size()) + " counts");
    bool any = false;
    for (float c : e.counts) {
        if (!std::isfinite(c) || c < 0) fail(path, where + "a count is negative or not finite");
        any = any || c > 0;
    }
    if (!any) fail(path, where + "every count is zero (no activations were collected)");
    for (float v : e.sums)
        if (!std::isfinite(v) || v < 0)
            fail(path, where + "a sum of squares is negative or not finite (" + std::to_string(v) +
                           ")");
}

// Reads little-endian fields from a byte image, each bounds-checked.
class ByteReader {
  public:
    ByteReader(const std::filesystem::path& path, std::span<const std::byte> bytes)
        : path_(path), bytes_(bytes) {}
    size_t left() const { return bytes_.size() - at_; }
    int32_t i32(const std::string& what) {
        int32_t v;
        take(&v, sizeof v, what);
        return v;
    }
    void take(void* dst, size_t n, const std::string& what) {
        if (n > left())
            fail(path_, "truncated: " + what + " needs " + std::to_string(n) + " bytes at offset " +
                            std::to_string(at_) + ", " + std::to_string(left()) + " left");
        std::memcpy(dst, bytes_.data() + at_, n);
        at_ += n;
    }

  private:
    const std::filesystem::path& path_;
    std::span<const std::byte> bytes_;
    size_t at_ = 0;
};

Imatrix read_legacy(const std::filesystem::path& path, std::span<const std::byte> bytes,
                    uint32_t chunk_size) {
    ByteReader in(path, bytes);
    Imatrix m;
    m.chunk_size = chunk_size;
    const int32_t n_entries = in.i32("the entry count");
    if (n_entries < 1) fail(path, "no entries (count " + std::to_string(n_entries) + ")");
    // Each entry takes at least 16 bytes: no count can be larger than that allows.
    if (size_t(n_entries) > in.left() / 16)
        fail(path, "truncated: " + std::to_string(n_entries) + " entries cannot fit in " +
                       std::to_string(in.left()) + " bytes");
    float max_count = 0;
    for (int32_t i = 0; i < n_entries; ++i) {
        const std::string nth = "entry " + std::to_string(i + 1);
        const int32_t len = in.i32(nth + "'s name length");
        if (len < 1 || len > kMaxNameLength || size_t(len) > in.left())
            fail(path, nth + ": name length " + std::to_string(len) + " is not in [1, " +
                           std::to_string(std::min<size_t>(kMaxNameLength, in.left())) + "]");
        std::string name(size_t(len), '\0');
        in.take(name.data(), name.size(), nth + "'s name");
        const std::string where = "entry '" + name + "'";
        const int32_t ncall = in.i32(where + "'s ncall");
        const int32_t nval = in.i32(where + "'s value count");
        if (ncall < 1) fail(path, where + ": ncall " + std::to_string(ncall) + " (must be >= 1)");
        if (nval < 1 || size_t(nval) > in.left() / sizeof(float))
            fail(path, where + ": " + std::to_string(nval) + " values do not fit in the " +
                           std::to_string(in.left()) + " bytes left");
        std::vector<float> values(static_cast<size_t>(nval));
        in.take(values.data(), values.size() * sizeof(float), where + "'s values");
        if (m.entries.count(name)) fail(path, where + " appears twice");
        // Back to sums and counts as if each of the ncall chunks had chunk_size rows:
        // sums / counts = values / ncall.
        ImatrixEntry& e = m.entries[name];
        const float rows = float(ncall) * float(chunk_size);
        e.counts = {rows};
        e.sums.resize(values.size());
        for (size_t j = 0; j < values.size(); ++j) e.sums[j] = values[j] * float(chunk_size);
        check_entry(path, name, e);
        max_count = std::max(max_count, rows);
    }
    m.chunk_count = uint32_t(max_count / float(chunk_size));
    // Optional trailer: the chunk count, then the dataset's name.
    if (in.left() > 0) {
        const int32_t chunks = in.i32("the chunk count after the entries");
        if (chunks < 0) fail(path, "negative chunk count " + std::to_string(chunks));
        m.chunk_count = uint32_t(chunks);
        if (in.left() > 0) {
            const int32_t len = in.i32("the dataset name's length");
            if (len < 0 || size_t(len) > in.left())
                fail(path, "dataset name length " + std::to_string(len) + " with " +
                               std::to_string(in.left()) + " bytes left");
            std::string dataset(size_t(len), '\0');
            in.take(dataset.data(), dataset.size(), "the dataset name");
            if (!dataset.empty()) m.datasets.push_back(dataset);
            if (in.left() > 0)
                fail(path, std::to_string(in.left()) + " unexpected bytes after the dataset name");
        }
    }
    return m;
}

std::span<const float> f32_data(const std::filesystem::path& path, const gguf::TensorInfo& t) {
    if (t.type != SY_TYPE_F32)
        fail(path, "tensor " + t.name + " is " + sy_dtype_info(t.type).name + ", not f32");
    return {reinterpret_cast<const float*>(t.data), size_t(t.nbytes / sizeof(float))};
}

bool strip_suffix(std::string& s, std::string_view suffix) {
    if (s.size() <= suffix.size() || s.compare(s.size() - suffix.size(), suffix.size(), suffix))
        return false;
    s.resize(s.size() - suffix.size());
    return true;
}

Imatrix read_gguf(const std::filesystem::path& path) {
    const gguf::Reader file = gguf::Reader::open(path);
    Imatrix m;
    if (const gguf::Value* type = file.find("general.type")) {
        if (type->type() != gguf::ValueType::STRING || type->as_string() != "imatrix")
            fail(path, "general.type is not \"imatrix\": this is not an importance matrix file");
    }
    if (const gguf::Value* d = file.find("imatrix.datasets")) {
        if (d->type() != gguf::ValueType::ARRAY ||
            d->as_array().element_type != gguf::ValueType::STRING)
            fail(path, "imatrix.datasets is not an array of strings");
        for (const gguf::Value s : d->as_array()) m.datasets.push_back(s.as_string());
    }
    const auto u32_key = [&](const char* key) -> uint32_t {
        const gguf::Value* v = file.find(key);
        if (v == nullptr) return 0;
        if (!v->is_integer() || v->as_i64() < 0 || v->as_i64() > int64_t(UINT32_MAX))
            fail(path, std::string(key) + " is not an unsigned 32-bit integer");
        return uint32_t(v->as_u64());
    };
    m.chunk_count = u32_key("imatrix.chunk_count");
    m.chunk_size = u32_key("imatrix.chunk_size");

    std::map<std::string, std::pair<const gguf::TensorInfo*, const gguf::TensorInfo*>> parts;
    for (const gguf::TensorInfo& t : file.tensors()) {
        std::string name = t.name;
        if (strip_suffix(name, ".in_sum2"))
            parts[name].first = &t;
        else if (strip_suffix(name, ".counts"))
            parts[name].second = &t;
        else if (strip_suffix(name, ".in_sum") &&
                 (!file.tensor(name + ".in_sum2") ||
                  file.tensor(name + ".in_sum2")->nbytes != t.nbytes))
            fail(path, "entry '" + name + "': in_sum does not match in_sum2");
    }
    if (parts.empty())
        fail(path, "no <weight>.in_sum2 tensors: not an importance matrix file");
    for (const auto& [name, p] : parts) {
        if (!p.first || !p.second)
            fail(path, "entry '" + name + "': " + (p.first ? "counts" : "in_sum2") +
                           " tensor missing");
        ImatrixEntry& e = m.entries[name];
        const std::span<const float> sums = f32_data(path, *p.first);
        const std::span<const float> counts = f32_data(path, *p.second);
        if (p.first->ne[1] != int64_t(counts.size()))
            fail(path, "entry '" + name + "': in_sum2 has " + std::to_string(p.first->ne[1]) +
                           " rows for " + std::to_string(counts.size()) + " counts");
        e.sums.assign(sums.begin(), sums.end());
        e.counts.assign(counts.begin(), counts.end());
        check_entry(path, name, e);
    }
    return m;
}

std::span<const uint8_t> f32_bytes(const std::vector<float>& v) {
    return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

void write_gguf(const std::filesystem::path& path, const Imatrix& m) {
    gguf::Writer w(path);
    w.add("general.type", gguf::Value::string("imatrix"));
    std::vector<gguf::Value> datasets;
    for (const std::string& d : m.datasets) datasets.push_back(gguf::Value::string(d));
    w.add("imatrix.datasets", gguf::Value::array(gguf::ValueType::STRING, std::move(datasets)));
    w.add("imatrix.chunk_count", gguf::Value::u32(m.chunk_count));
    w.add("imatrix.chunk_size", gguf::Value::u32(m.chunk_size));
    for (const auto& [name, e] : m.entries) {
        check_entry(path, name, e);
        const auto n_mat = int64_t(e.counts.size());
        const int64_t sums_ne[] = {int64_t(e.sums.size()) / n_mat, n_mat};
        const int64_t counts_ne[] = {1, n_mat};
        w.declare_tensor(name + ".in_sum2", SY_TYPE_F32, sums_ne);
        w.declare_tensor(name + ".counts", SY_TYPE_F32, counts_ne);
    }
    w.write_header();
    for (const auto& [name, e] : m.entries) {
        w.write_tensor(f32_bytes(e.sums));
        w.write_tensor(f32_bytes(e.counts));
    }
    w.finish();
}

void write_legacy(const std::filesystem::path& path, const Imatrix& m) {
    if (m.chunk_size == 0) fail(path, "the legacy format needs the chunk size (it counts chunks)");
    std::vector<char> out;
    const auto put = [&out](const void* p, size_t n) {
        out.insert(out.end(), static_cast<const char*>(p), static_cast<const char*>(p) + n);
    };
    const auto put_i32 = [&put](int64_t v) {
        const auto x = static_cast<int32_t>(v);
        put(&x, sizeof x);
    };
    put_i32(int64_t(m.entries.size()));
    for (const auto& [name, e] : m.entries) {
        check_entry(path, name, e);
        put_i32(int64_t(name.size()));
        put(name.data(), name.size());
        const float busiest = *std::max_element(e.counts.begin(), e.counts.end());
        const auto ncall = int64_t(std::ceil(double(busiest) / double(m.chunk_size)));
        put_i32(ncall);
        put_i32(int64_t(e.sums.size()));
        const size_t block = e.sums.size() / e.counts.size();
        std::vector<float> values(e.sums.size());
        for (size_t j = 0; j < values.size(); ++j) {
            const float count = e.counts[j / block];
            const float mean = count > 0 ? e.sums[j] / count : 1.0f;
            values[j] = mean * float(ncall);
        }
        put(values.data(), values.size() * sizeof(float));
    }
    put_i32(int64_t(m.chunk_count));
    const std::string dataset = m.datasets.empty() ? std::string() : m.datasets.back();
    put_i32(int64_t(dataset.size()));
    put(dataset.data(), dataset.size());

    std::filesystem::path tmp = path;
    tmp += ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        if (!f) fail(path, "cannot create " + tmp.string());
        f.write(out.data(), std::streamsize(out.size()));
        if (!f) fail(path, "write failed");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) fail(path, "cannot rename " + tmp.string() + " into place: " + ec.message());
}

}  // namespace

Imatrix read_imatrix(const std::filesystem::path& path, uint32_t legacy_chunk_size) {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(path, "cannot open the importance matrix file");
    char magic[4] = {};
    f.read(magic, 4);
    const bool is_gguf = f.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0;
    Imatrix m;
    if (is_gguf) {
        m = read_gguf(path);
    } else {
        if (legacy_chunk_size == 0) fail(path, "the legacy format needs a chunk size > 0");
        f.seekg(0);
        const std::vector<char> bytes((std::istreambuf_iterator<char>(f)),
                                      std::istreambuf_iterator<char>());
        m = read_legacy(path, std::as_bytes(std::span<const char>(bytes)), legacy_chunk_size);
    }
    m.source = path.string();
    return m;
}

void write_imatrix(const std::filesystem::path& path, const Imatrix& m, ImatrixFormat format) {
    if (m.entries.empty()) fail(path, "no entries to write");
    if (format == ImatrixFormat::gguf)
        write_gguf(path, m);
    else
        write_legacy(path, m);
}

ImatrixFormat parse_imatrix_format(const std::string& text) {
    if (text == "gguf") return ImatrixFormat::gguf;
    if (text == "dat") return ImatrixFormat::dat;
    throw Error("--output-format '" + text + "': expected gguf or dat");
}

std::optional<std::vector<float>> Imatrix::importance(const std::string& name, int64_t n_per_row,
                                                      int64_t n_mat) const {
    const auto it = entries.find(name);
    if (it == entries.end()) return std::nullopt;
    const ImatrixEntry& e = it->second;
    if (int64_t(e.sums.size()) != n_per_row * n_mat || e.counts.empty() ||
        e.sums.size() % e.counts.size() != 0)
        throw Error(source + ": entry '" + name + "' has " + std::to_string(e.sums.size()) +
                    " values; the tensor needs " + std::to_string(n_per_row) + " per row x " +
                    std::to_string(n_mat) + (n_mat == 1 ? " matrix" : " matrices") + " = " +
                    std::to_string(n_per_row * n_mat) +
                    " (an importance matrix of another model?)");
    const size_t block = e.sums.size() / e.counts.size();
    std::vector<float> out(e.sums.size());
    for (size_t j = 0; j < out.size(); ++j) {
        const float count = e.counts[j / block];
        out[j] = count > 0 ? e.sums[j] / count : 1.0f;
    }
    return out;
}

}  // namespace sy::llm
