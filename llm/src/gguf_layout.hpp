// Facts of the GGUF layout shared by the reader and the writer: tensor sizes from type and
// shape, alignment, UTF-8 checks, split-file names. Internal to switchyard_llm.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/llm/gguf.hpp"

namespace sy::gguf::detail {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32

inline uint64_t align_up(uint64_t v, uint64_t alignment) {
    return (v + alignment - 1) / alignment * alignment;
}
inline bool is_power_of_two(uint64_t v) {
    return v != 0 && (v & (v - 1)) == 0;
}

bool valid_utf8(std::string_view s);

// "unknown type id 98; this build reads f32 (0), f16 (1), ...": every type id sy_dtype_info
// describes, for the message about a tensor of another type.
std::string unknown_type(uint64_t type);

// Checks n_dims, dimensions, the type id and the block multiple; on success stores the tensor's
// byte size in `nbytes` and returns "", otherwise returns the problem ("n_dims 0 is out of
// range (1..4)").
std::string check_tensor_shape(int32_t type, uint32_t n_dims, const int64_t* ne, uint64_t& nbytes);

// "<prefix>-00001-of-00003.gguf": index and count are 1-based as in the name.
struct ShardName {
    std::string prefix;  // the path up to "-00001-of-..."
    uint32_t index = 0;
    uint32_t count = 0;
};
std::optional<ShardName> parse_shard_name(const std::filesystem::path& path);
std::filesystem::path shard_path(const ShardName& name, uint32_t index);

// One GGUF image parsed from memory; tensors' data pointers point into `bytes`.
struct ParsedFile {
    uint32_t version = 0;
    uint64_t alignment = kDefaultAlignment;
    uint64_t data_offset = 0;
    std::vector<KeyValue> metadata;
    std::vector<TensorInfo> tensors;
};
// Throws FormatError("<name>: <problem>").
ParsedFile parse_gguf(std::span<const uint8_t> bytes, const std::string& name, uint32_t shard);

}  // namespace sy::gguf::detail
