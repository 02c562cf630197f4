// Helpers shared by the llm tests: a per-test scratch folder, file comparison, edited copies.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "switchyard/llm/gguf.hpp"

namespace sy::llm::test {

// A fresh folder for the running test, removed when the object goes.
class ScratchDir {
  public:
    ScratchDir() {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        // Parameterized tests have '/' in their names ("Modes/Deepseek2Reference"): one folder,
        // not a nest whose outer levels would outlive it.
        std::string name = std::string("sy-llm-") + std::to_string(getpid()) + "-" +
                           info->test_suite_name() + "-" + info->name();
        std::replace(name.begin(), name.end(), '/', '_');
        path_ = std::filesystem::temp_directory_path() / name;
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~ScratchDir() { std::filesystem::remove_all(path_); }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  private:
    std::filesystem::path path_;
};

inline std::vector<char> file_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `to`: the model file `from` with `edit` applied to the bytes of tensor `name` (which
// must exist), e.g. to plant a NaN where a test needs one.
inline void write_with_tensor_edit(
    const std::filesystem::path& from, const std::filesystem::path& to, const std::string& name,
    const std::function<void(uint8_t*, const gguf::TensorInfo&)>& edit) {
    std::vector<char> bytes = file_bytes(from);
    auto* base = reinterpret_cast<uint8_t*>(bytes.data());
    const gguf::Reader image = gguf::Reader::open_memory(std::span(base, bytes.size()), "image");
    const gguf::TensorInfo* t = image.tensor(name);
    if (t == nullptr) throw std::runtime_error(from.string() + " has no tensor " + name);
    edit(base + (t->data - base), *t);
    std::ofstream(to, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace sy::llm::test
