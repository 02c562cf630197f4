// Row-interleaved copies of a model's Q4_0, IQ4_NL and Q8_0 weights (the cpu plugin's option
// `repack`, the command line's -rtr): 16 weight rows packed block by block, so that one 512-bit
// vpdpbusd computes a 4-byte piece of 16 rows against one broadcast piece of the activation. The
// block's bytes need no shuffling and its 16 scales load as one vector, which halves the vector
// work per weight byte of the plain kernels (vec_dot_groups.cpp: 3 vpermt2b, 2 scale permutes per 8
// blocks), so a core keeps up with more memory bandwidth.
//
// Layout, per matrix, per group of 16 rows (g), per block index b (32 weights per row):
//   Q4_0, IQ4_NL (the same block): f16 d[16] (row r's scale), then 4 chunks of 64 bytes:
//         chunk c holds qs[4c, 4c + 4) of row r at bytes [4r, 4r + 4) — low nibbles elements
//         4c..4c+3, high 16+4c..16+4c+3; 288 bytes = 16 blocks of 18.
//   Q8_0: f16 d[16], then 8 chunks of 64 bytes: chunk c holds qs[4c, 4c + 4) of row r, plus 128
//         (as unsigned bytes), at [4r, 4r + 4); 544 bytes = 16 blocks of 34.
// A group takes the bytes its 16 rows take in the original, so a row group's offset (and an
// expert's) is the same in both: the copy is addressed like the original tensor.
//
// A copy is made on first use of a weight (sy_tensor.constant_id nonzero, ABI 1.1) and kept,
// keyed by the id and the address, until release_constants(id). It costs as much host memory as
// the weights it copies (reported as the plugin's extra_memory), advised for huge pages as the
// host's --no-mmap copy is; the original's pages are no longer read by the cpu, so with a
// memory-mapped model the kernel may drop them. Copies stop at a budget: with `repack = "auto"`
// (the default) half of the memory available when the first copy is made, so a model larger
// than that is copied in part and the rest read in place; with "on" no limit but the
// allocation's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "switchyard/plugin.h"

namespace sy::cpu {

class ThreadPool;

constexpr int64_t kInterleavedRows = 16;

class InterleavedWeights {
  public:
    // Whether a copy can be made of w: Q4_0, IQ4_NL or Q8_0, a model weight (constant_id), rows of
    // a multiple of 32 values, a multiple of 16 rows, and contiguous.
    static bool eligible(const sy_tensor& w);

    // The interleaved copy of w, made now if there is none yet; nullptr where w is not eligible
    // or the memory for a copy could not be had (the caller then reads the original).
    const void* find_or_make(ThreadPool& pool, const sy_tensor& w);

    // Drops the copies of the weights with this constant_id.
    void release(uint64_t constant_id);

    // Copies stop at half of the memory available at the first copy (true), or only where an
    // allocation fails (false).
    void set_automatic_budget(bool automatic) { automatic_ = automatic; }

    size_t bytes() const { return bytes_; }

  private:
    struct Free {
        void operator()(void* p) const;
    };
    struct Copy {
        std::unique_ptr<uint8_t, Free> data;
        size_t bytes;
        int32_t type;
    };
    std::map<std::pair<uint64_t, const void*>, Copy> copies_;
    size_t bytes_ = 0;
    bool automatic_ = true;
    std::optional<uint64_t> budget_;  // resolved at the first copy under the automatic budget
};

// Packs rows [16 g, 16 g + 16) of one matrix (K values per row, rows row_bytes apart) into the
// layout above at dst. Exposed for the kernel tests.
void interleave_row_group(int32_t type, const uint8_t* rows, int64_t row_bytes, int64_t K,
                          uint8_t* dst);

}  // namespace sy::cpu
