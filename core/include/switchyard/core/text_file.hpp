// Reading the small text inputs a user names on the command line (configs, cost tables, prompt
// and corpus files) without trusting them: only a regular file (or "-", standard input, where
// the caller allows it), never more than a stated number of bytes, so that `--config /dev/zero`
// or `-f /dev/zero` is a message, not a read until memory runs out.
#pragma once

#include <cstdint>
#include <string>

namespace sy {

struct TextFileLimits {
    uint64_t max_bytes;       // larger is refused, naming the limit
    bool stdin_dash = false;  // "-" reads standard input (up to max_bytes)
};

// The whole file at `path`. Throws Error("<what> <path>: ...") for a missing file, a folder, a
// device, FIFO or socket, an unreadable file, or one over the limit.
std::string read_text_file(const std::string& what, const std::string& path,
                           const TextFileLimits& limits);

}  // namespace sy
