// Row-interleaved copies of a model's Q4_0, IQ4_NL, Q8_0, Q4_1, Q5_0, Q5_1 and Q6_0 weights (the
// cpu plugin's option `repack`, the command line's -rtr): 16 weight rows packed block by block, so
// that one 512-bit vpdpbusd (avx512; two vpmaddubsw and vpmaddwd on avx2) computes a 4-byte piece
// of 16 rows against one broadcast piece of the activation. The block's bytes need no shuffling and
// its 16 scales load as one vector, which halves the vector work per weight byte of the plain
// kernels (vec_dot_groups.cpp: 3 vpermt2b, 2 scale permutes per 8 blocks), so a core keeps up with
// more memory bandwidth; for the 5- and 6-bit types, whose plain kernels work in 256-bit registers
// a block at a time, it is also the prompt path (their products of many columns decode each block
// once per 16 rows and 4 columns).
//
// Layout, per matrix, per group of 16 rows (g), per block index b (32 weights per row): the f16
// fields of the 16 rows (row r's at bytes [2r, 2r + 2)), then chunks of 64 bytes, row r's 4 bytes
// at [4r, 4r + 4):
//   Q4_0, IQ4_NL (the same block): d[16], then 4 chunks: chunk c holds qs[4c, 4c + 4) of row r
//         (low nibbles elements 4c..4c+3, high 16+4c..16+4c+3); 288 bytes = 16 blocks of 18.
//   Q8_0: d[16], then 8 chunks: chunk c holds qs[4c, 4c + 4) of row r plus 128 (as unsigned
//         bytes); 544 bytes = 16 blocks of 34.
//   Q4_1: d[16], m[16], then Q4_0's 4 chunks; 320 bytes.
//   Q5_0: d[16], Q4_0's 4 chunks, then one chunk of the 5th bits, regrouped: byte i of row r, bit
//         2c = the 5th bit of element 4c + i, bit 2c + 1 that of 16 + 4c + i; 352 bytes.
//   Q5_1: d[16], m[16], Q5_0's 5 chunks; 384 bytes.
//   Q6_0: d[16], Q4_0's 4 chunks, then 2 chunks holding qh[4h, 4h + 4) of row r (h = 0, 1) as
//         they are; 416 bytes.
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
    // Whether a copy can be made of w: one of the types above, a model weight (constant_id), rows
    // of a multiple of 32 values, a multiple of 16 rows, and contiguous.
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
