// Reader: memory-maps a GGUF file (or every shard of a split model), or reads it into memory
// (Residence::read), and presents its metadata and tensors; the parsing itself is in
// gguf_parser.cpp.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "gguf_layout.hpp"
#include "switchyard/llm/host_memory.hpp"

namespace sy::gguf {
namespace {

// Closes a file descriptor on scope exit (after an error message has read errno).
struct FileDescriptor {
    int fd;
    ~FileDescriptor() {
        if (fd >= 0) ::close(fd);
    }
};

// A whole file's bytes: a read-only private mapping, or (Residence::read) anonymous memory
// advised for huge pages that the file is read into; unmapped when destroyed.
class MappedFile {
  public:
    MappedFile(const std::filesystem::path& path, Residence residence) {
        const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
        if (file.fd < 0) fail(path, "cannot open");
        struct stat st {};
        if (::fstat(file.fd, &st) != 0) fail(path, "cannot stat");
        if (!S_ISREG(st.st_mode)) throw FormatError(path.string() + ": not a regular file");
        size_ = static_cast<size_t>(st.st_size);
        if (size_ > 0 && residence == Residence::read) {
            read_whole(path, file.fd);
        } else if (size_ > 0) {
            void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file.fd, 0);
            if (p == MAP_FAILED) fail(path, "cannot map");
            data_ = static_cast<const uint8_t*>(p);
            mapped_ = true;
        }
    }
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile() {
        if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    }
    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    // [p, p + n) of this file's bytes, writable (copy-on-write pages of a mapping).
    uint8_t* writable(const uint8_t* p, size_t n) const {
        if (mapped_ && n > 0) {
            const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
            const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
            const uintptr_t last = (reinterpret_cast<uintptr_t>(p) + n + page - 1) & ~(page - 1);
            if (::mprotect(reinterpret_cast<void*>(first), last - first, PROT_READ | PROT_WRITE))
                throw sy::Error(std::string("cannot make a tensor's pages writable: ") +
                                std::strerror(errno));
        }
        return const_cast<uint8_t*>(p);
    }

  private:
    // Reads the file into fresh anonymous memory. The memory stays writable: made read-only
    // with mprotect, each 2 MiB page was read much slower the first time after that (read again
    // at full speed), so every routed expert's first use in generation took many times as long
    // (docs/design-measurements.md#no-mmap-writable).
    void read_whole(const std::filesystem::path& path, int fd) {
        const uint64_t available = llm::available_memory();
        if (available > 0 && size_ > available)
            throw sy::Error(path.string() + ": --no-mmap needs " + std::to_string(size_ >> 20) +
                            " MiB to read the file into memory, but only " +
                            std::to_string(available >> 20) +
                            " MiB are available; leave out --no-mmap to map it");
        void* p =
            ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) fail(path, "cannot allocate memory to read it into");
        ::madvise(p, size_, MADV_HUGEPAGE);  // advice only: no huge pages is not an error
        auto* bytes = static_cast<uint8_t*>(p);
        size_t done = 0;
        while (done < size_) {
            const ssize_t n = ::pread(fd, bytes + done, std::min<size_t>(size_ - done, 1u << 30),
                                      static_cast<off_t>(done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                const int err = n < 0 ? errno : EIO;  // 0: the file shrank while being read
                ::munmap(p, size_);
                errno = err;
                fail(path, "cannot read");
            }
            done += static_cast<size_t>(n);
        }
        data_ = bytes;
    }

    [[noreturn]] static void fail(const std::filesystem::path& path, const char* what) {
        throw sy::Error(path.string() + ": " + what + ": " + std::strerror(errno));
    }
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    bool mapped_ = false;  // a file mapping (else anonymous memory, writable already)
};

const Value* find_in(const std::vector<KeyValue>& metadata, std::string_view key) {
    for (const KeyValue& kv : metadata) {
        if (kv.key == key) return &kv.value;
    }
    return nullptr;
}

// An optional integer key of a shard, or nullopt; a non-integer is a format error.
std::optional<uint64_t> split_key(const detail::ParsedFile& f, const std::string& file,
                                  std::string_view key) {
    const Value* v = find_in(f.metadata, key);
    if (!v) return std::nullopt;
    if (!v->is_integer() || v->as_i64() < 0) {
        throw FormatError(file + ": " + std::string(key) + " must be a non-negative integer");
    }
    return v->as_u64();
}

std::optional<uint64_t> split_tensors_count(const std::vector<KeyValue>& metadata,
                                            const std::string& file) {
    const Value* v = find_in(metadata, "split.tensors.count");
    if (!v) return std::nullopt;
    if (!v->is_integer() || v->as_i64() < 0) {
        throw FormatError(file + ": split.tensors.count must be a non-negative integer");
    }
    return v->as_u64();
}

}  // namespace

struct Reader::Impl {
    std::vector<std::unique_ptr<MappedFile>> maps;
    std::vector<std::filesystem::path> files;
    uint64_t file_size = 0;
    uint32_t version = 0;
    uint64_t alignment = kDefaultAlignment;
    std::vector<KeyValue> metadata;
    std::vector<TensorInfo> tensors;
    std::unordered_map<std::string, size_t> tensor_index;
    std::unordered_map<std::string, size_t> key_index;
    std::string name;       // for messages: the first file
    bool modified = false;  // writable() was called: some bytes differ from the file's

    // Adds one parsed shard's tensors, refusing a name another shard already has.
    void add_shard(detail::ParsedFile&& f, const std::string& file) {
        if (version == 0) {  // the first shard
            version = f.version;
            alignment = f.alignment;
            metadata = std::move(f.metadata);
            for (size_t i = 0; i < metadata.size(); ++i) key_index.emplace(metadata[i].key, i);
        }
        for (TensorInfo& t : f.tensors) {
            auto [it, inserted] = tensor_index.emplace(t.name, tensors.size());
            if (!inserted) {
                throw FormatError(file + ": duplicate tensor name \"" + t.name + "\" (also in " +
                                  files[tensors[it->second].shard].string() + ")");
            }
            tensors.push_back(std::move(t));
        }
    }

    void open_file(const std::filesystem::path& path, uint32_t shard, Residence residence) {
        auto map = std::make_unique<MappedFile>(path, residence);
        detail::ParsedFile f = detail::parse_gguf(map->bytes(), path.string(), shard);
        file_size += map->bytes().size();
        files.push_back(path);
        maps.push_back(std::move(map));
        check_split_keys(f, path.string(), shard);
        add_shard(std::move(f), path.string());
    }

    // split.no (0-based) and split.count, where a shard has them, agree with the file names.
    void check_split_keys(const detail::ParsedFile& f, const std::string& file, uint32_t shard) {
        if (shard_count == 0) return;
        const auto count = split_key(f, file, "split.count");
        if (shard == 0 && shard_count > 1 && !count) {
            throw FormatError(file + ": split.count is missing, but the name says " +
                              std::to_string(shard_count) + " shards");
        }
        if (count && *count != shard_count) {
            throw FormatError(file + ": split.count is " + std::to_string(*count) +
                              ", but the name says " + std::to_string(shard_count) + " shards");
        }
        const auto no = split_key(f, file, "split.no");
        if (no && *no != shard) {
            throw FormatError(file + ": split.no is " + std::to_string(*no) + ", expected " +
                              std::to_string(shard) + " (0-based) for this shard");
        }
    }

    uint32_t shard_count = 0;  // 0: not a split model
};

Reader::Reader() : impl_(std::make_unique<Impl>()) {}
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;
Reader::~Reader() = default;

Reader Reader::open(const std::filesystem::path& path, Residence residence) {
    Reader r;
    Impl& m = *r.impl_;
    m.name = path.string();
    const auto shard_name = detail::parse_shard_name(path);
    if (!shard_name || shard_name->count == 1) {
        m.open_file(path, 0, residence);
        return r;
    }
    if (shard_name->index != 1) {
        throw FormatError(path.string() + ": shard " + std::to_string(shard_name->index) +
                          " of a split model; open the first shard " +
                          detail::shard_path(*shard_name, 1).string());
    }
    // Every shard must be there before any is parsed.
    for (uint32_t i = 1; i <= shard_name->count; ++i) {
        const std::filesystem::path p = detail::shard_path(*shard_name, i);
        std::error_code ec;
        if (!std::filesystem::exists(p, ec)) {
            throw FormatError(path.string() + ": shard " + std::to_string(i) + " of " +
                              std::to_string(shard_name->count) + " is missing: " + p.string());
        }
    }
    m.shard_count = shard_name->count;
    for (uint32_t i = 1; i <= shard_name->count; ++i) {
        m.open_file(detail::shard_path(*shard_name, i), i - 1, residence);
    }
    if (const auto total = split_tensors_count(m.metadata, m.name)) {
        if (*total != m.tensors.size()) {
            throw FormatError(path.string() + ": split.tensors.count is " + std::to_string(*total) +
                              ", but the shards hold " + std::to_string(m.tensors.size()) +
                              " tensors");
        }
    }
    return r;
}

Reader Reader::open_memory(std::span<const uint8_t> bytes, std::string name) {
    Reader r;
    Impl& m = *r.impl_;
    m.name = name;
    detail::ParsedFile f = detail::parse_gguf(bytes, name, 0);
    m.file_size = bytes.size();
    m.files.push_back(name);
    m.add_shard(std::move(f), name);
    return r;
}

uint32_t Reader::version() const {
    return impl_->version;
}
uint64_t Reader::alignment() const {
    return impl_->alignment;
}
const std::vector<KeyValue>& Reader::metadata() const {
    return impl_->metadata;
}
const std::vector<TensorInfo>& Reader::tensors() const {
    return impl_->tensors;
}
const std::vector<std::filesystem::path>& Reader::files() const {
    return impl_->files;
}
uint64_t Reader::file_size() const {
    return impl_->file_size;
}
std::span<const uint8_t> Reader::shard_bytes(size_t i) const {
    if (i >= impl_->maps.size() || !impl_->maps[i]) return {};
    return impl_->maps[i]->bytes();
}

const Value* Reader::find(std::string_view key) const {
    auto it = impl_->key_index.find(std::string(key));
    return it == impl_->key_index.end() ? nullptr : &impl_->metadata[it->second].value;
}

uint8_t* Reader::writable(const TensorInfo& t) const {
    if (t.shard >= impl_->maps.size())
        throw FormatError("tensor " + t.name +
                          ": a GGUF image in memory cannot be converted in place");
    impl_->modified = true;
    return impl_->maps[t.shard]->writable(t.data, t.nbytes);
}

bool Reader::modified() const {
    return impl_->modified;
}

const TensorInfo* Reader::tensor(std::string_view name) const {
    auto it = impl_->tensor_index.find(std::string(name));
    return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

namespace {
template <typename F>
auto typed_get(const Reader& r, const std::string& file, std::string_view key, F get) {
    const Value* v = r.find(key);
    if (!v) throw FormatError(file + ": missing metadata key \"" + std::string(key) + "\"");
    try {
        return get(*v);
    } catch (const FormatError& e) {
        throw FormatError(file + ": metadata key \"" + std::string(key) + "\": " + e.what());
    }
}
}  // namespace

uint64_t Reader::get_u64(std::string_view key) const {
    return typed_get(*this, impl_->name, key, [](const Value& v) { return v.as_u64(); });
}
double Reader::get_f64(std::string_view key) const {
    return typed_get(*this, impl_->name, key, [](const Value& v) { return v.as_f64(); });
}
std::string Reader::get_string(std::string_view key) const {
    return typed_get(*this, impl_->name, key, [](const Value& v) { return v.as_string(); });
}

}  // namespace sy::gguf
