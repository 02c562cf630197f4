#include "switchyard/core/text_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "switchyard/core/error.hpp"

namespace sy {
namespace {

std::string size_text(uint64_t bytes) {
    if (bytes >= (uint64_t(1) << 20) && bytes % (uint64_t(1) << 20) == 0)
        return fmt::format("{} MiB", bytes >> 20);
    return fmt::format("{} bytes", bytes);
}

// Up to limit + 1 bytes from `in`, so that one byte too many is seen.
std::string read_bounded(std::istream& in, uint64_t limit) {
    std::string text;
    char buffer[1 << 16];
    while (text.size() <= limit && in.read(buffer, sizeof buffer).gcount() > 0) {
        text.append(buffer, size_t(in.gcount()));
        if (!in) break;
    }
    return text;
}

}  // namespace

std::string read_text_file(const std::string& what, const std::string& path,
                           const TextFileLimits& limits) {
    const std::string name = what.empty() ? path : what + " " + path;
    const std::string limit = size_text(limits.max_bytes);
    if (limits.stdin_dash && path == "-") {
        std::string text = read_bounded(std::cin, limits.max_bytes);
        if (std::cin.bad()) throw Error(name + ": cannot read standard input");
        if (text.size() > limits.max_bytes)
            throw Error(fmt::format("{}: standard input is longer than {}", name, limit));
        return text;
    }
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) throw Error(name + ": no such file");
    if (fs::is_directory(st)) throw Error(name + ": a folder, not a text file");
    if (!fs::is_regular_file(st))
        throw Error(name + ": not a regular file (a device, pipe or socket is not read" +
                    std::string(limits.stdin_dash ? "; use - for standard input)" : ")"));
    const uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > limits.max_bytes)
        throw Error(
            fmt::format("{}: {} bytes, more than the {} this input may have", name, size, limit));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(name + ": cannot open the file: " + std::strerror(errno));
    std::string text = read_bounded(in, limits.max_bytes);
    if (in.bad()) throw Error(name + ": cannot read the file");
    if (text.size() > limits.max_bytes)  // grew while being read
        throw Error(fmt::format("{}: more than the {} this input may have", name, limit));
    return text;
}

}  // namespace sy
