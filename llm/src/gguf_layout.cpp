// GGUF layout facts shared by the reader and the writer.
#include "gguf_layout.hpp"

#include <cstdio>

#include "switchyard/dtype.h"
#include "switchyard/interleaved.hpp"

namespace sy::gguf::detail {

bool valid_utf8(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    size_t i = 0;
    while (i < n) {
        const unsigned char c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t len = 0;
        uint32_t cp = 0;
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (n - i < len) return false;
        for (size_t k = 1; k < len; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
            return false;
        }
        i += len;
    }
    return true;
}

std::string known_type_names() {
    std::string out;
    for (int32_t t = 0; t < 256; ++t) {
        const sy_dtype_traits info = sy_dtype_info(t);
        if (info.name == nullptr || info.block_size <= 0 || info.type_size <= 0) continue;
        out += (out.empty() ? "" : ", ") + std::string(info.name) + " (" + std::to_string(t) + ")";
    }
    for (const quants::InterleavedType& t : quants::interleaved_types())
        out += ", " + std::string(t.name) + " (" + std::to_string(t.id) + ")";
    return out;
}

// ik_llama.cpp's type ids that switchyard does not read yet (docs/ik-quants.md), so that a file
// in one is refused by the type's name, not just its number.
const char* ik_type_name(uint64_t type) {
    switch (type) {
        case 398: return "q8_kv_r8";
        case 399: return "q8_k_r8";
        default: return nullptr;
    }
}

std::string unknown_type(uint64_t type) {
    const char* ik = ik_type_name(type);
    return (ik ? "type id " + std::to_string(type) + " is ik_llama.cpp's " + ik +
                     ", which this build does not read yet"
               : "unknown type id " + std::to_string(type)) +
           "; this build reads " + known_type_names();
}

std::string check_tensor_shape(int32_t type, uint32_t n_dims, const int64_t* ne, uint64_t& nbytes) {
    if (n_dims == 0 || n_dims > 4) {
        return "n_dims " + std::to_string(n_dims) + " is out of range (1..4)";
    }
    int64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
        if (ne[d] <= 0) {
            return "dimension " + std::to_string(d) + " is " + std::to_string(ne[d]) +
                   " (must be positive)";
        }
        if (__builtin_mul_overflow(elements, ne[d], &elements)) {
            return "element count overflows int64";
        }
    }
    // ik_llama.cpp's row-interleaved layouts: the base type's bytes, rows in groups.
    const quants::InterleavedType* interleaved = quants::interleaved_type(type);
    const sy_dtype_traits info = sy_dtype_info(interleaved ? interleaved->base : type);
    if (info.name == nullptr || info.block_size <= 0 || info.type_size <= 0 ||
        type == SY_TYPE_IQ1_M_R4_ROWS) {  // switchyard's in-memory form, not a file type
        return unknown_type(static_cast<uint64_t>(type));
    }
    if (interleaved && (n_dims < 2 || ne[1] % interleaved->rows != 0)) {
        return std::string(interleaved->name) + " stores rows in groups of " +
               std::to_string(interleaved->rows) +
               ", but ne[1] = " + std::to_string(n_dims < 2 ? 1 : ne[1]);
    }
    if (interleaved && ne[0] % quants::interleaved_row_unit(*interleaved) != 0) {
        return "ne[0] = " + std::to_string(ne[0]) + ": switchyard reads " + interleaved->name +
               " as " + info.name + " rows, whose length must be a multiple of " +
               std::to_string(quants::interleaved_row_unit(*interleaved));
    }
    if (ne[0] % info.block_size != 0) {
        return "ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the " + info.name +
               " block size " + std::to_string(info.block_size);
    }
    // Rows of the row-scaled types start with their row_meta_size bytes of scale.
    const uint64_t rows = static_cast<uint64_t>(elements / ne[0]);
    const uint64_t row =
        interleaved ? static_cast<uint64_t>(quants::interleaved_row_size(*interleaved, ne[0]))
                    : static_cast<uint64_t>(info.row_meta_size) +
                          static_cast<uint64_t>(ne[0] / info.block_size) *
                              static_cast<uint64_t>(info.type_size);
    if (__builtin_mul_overflow(rows, row, &nbytes)) {
        return "byte size overflows uint64";
    }
    return "";
}

std::optional<ShardName> parse_shard_name(const std::filesystem::path& path) {
    // <prefix>-NNNNN-of-MMMMM.gguf
    const std::string s = path.string();
    constexpr std::string_view kSuffix = ".gguf";
    constexpr size_t kTail = 1 + 5 + 4 + 5;  // "-NNNNN-of-MMMMM"
    if (s.size() < kTail + kSuffix.size() ||
        s.compare(s.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
        return std::nullopt;
    }
    const size_t start = s.size() - kSuffix.size() - kTail;
    const std::string_view tail(s.data() + start, kTail);
    auto digits = [&](size_t at, uint32_t& out) {
        out = 0;
        for (size_t k = at; k < at + 5; ++k) {
            if (tail[k] < '0' || tail[k] > '9') return false;
            out = out * 10 + static_cast<uint32_t>(tail[k] - '0');
        }
        return true;
    };
    ShardName name;
    if (tail[0] != '-' || tail.substr(6, 4) != "-of-" || !digits(1, name.index) ||
        !digits(10, name.count) || name.index == 0 || name.count == 0 || name.index > name.count) {
        return std::nullopt;
    }
    name.prefix = s.substr(0, start);
    return name;
}

std::filesystem::path shard_path(const ShardName& name, uint32_t index) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "-%05u-of-%05u.gguf", index, name.count);
    return name.prefix + buf;
}

}  // namespace sy::gguf::detail
