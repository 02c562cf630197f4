// Helpers for the GGUF tests: a scratch folder, whole-file bytes, and patching bytes in place.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "switchyard/llm/gguf.hpp"

namespace sy::gguf::test {

// A fresh folder per test, removed afterwards.
class ScratchDir {
  public:
    ScratchDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        path_ = std::filesystem::temp_directory_path() /
                (std::string("sy_gguf_") + info->test_suite_name() + "_" + info->name() + "_" +
                 std::to_string(::getpid()));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
};

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
void patch(std::vector<uint8_t>& bytes, size_t offset, T value) {
    ASSERT_LE(offset + sizeof(T), bytes.size());
    std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

// Offset of the length field of the GGUF string `s` (u64 length + bytes) in the image.
inline size_t find_string(const std::vector<uint8_t>& bytes, const std::string& s) {
    std::vector<uint8_t> needle(8 + s.size());
    const uint64_t len = s.size();
    std::memcpy(needle.data(), &len, 8);
    std::memcpy(needle.data() + 8, s.data(), s.size());
    for (size_t i = 0; i + needle.size() <= bytes.size(); ++i) {
        if (std::memcmp(bytes.data() + i, needle.data(), needle.size()) == 0) return i;
    }
    ADD_FAILURE() << "string \"" << s << "\" not found";
    return 0;
}
// Offset just past the GGUF string `s`.
inline size_t after_string(const std::vector<uint8_t>& bytes, const std::string& s) {
    return find_string(bytes, s) + 8 + s.size();
}

// The message of the FormatError that opening `path` raises ("" if none).
inline std::string open_error(const std::filesystem::path& path) {
    try {
        Reader::open(path);
    } catch (const FormatError& e) {
        return e.what();
    }
    return "";
}

// Little-endian byte image built by hand (for files the Writer would never produce).
struct ByteBuilder {
    std::vector<uint8_t> bytes;
    template <typename T>
    ByteBuilder& put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        bytes.insert(bytes.end(), p, p + sizeof(T));
        return *this;
    }
    ByteBuilder& str(const std::string& s) {
        put<uint64_t>(s.size());
        bytes.insert(bytes.end(), s.begin(), s.end());
        return *this;
    }
    ByteBuilder& pad(size_t alignment) {
        while (bytes.size() % alignment) bytes.push_back(0);
        return *this;
    }
};

}  // namespace sy::gguf::test
