// The bit-level descriptions of ik_llama.cpp's row-interleaved structs (interleaved.cpp,
// docs/ik-quants.md section 6).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sy::quants::detail {

// Collects where each bit of one interleaved struct comes from: base_of[struct bit] = the bit of
// the rows' blocks side by side (row k's block at k * block_bytes).
struct StructLinker {
    int rows = 0, values = 0, block_bytes = 0;
    std::vector<int32_t> base_of;

    // n bits of row k's block from byte base_byte bit base_shift to the struct's byte
    // struct_byte bit struct_shift (a field may cross bytes on either side).
    void bits(int k, int base_byte, int base_shift, int struct_byte, int struct_shift, int n) {
        for (int t = 0; t < n; ++t) {
            const int32_t r = struct_byte * 8 + struct_shift + t;
            const int32_t b = (k * block_bytes + base_byte) * 8 + base_shift + t;
            if (r < 0 || r >= int32_t(base_of.size()) || base_of[size_t(r)] >= 0)
                throw std::logic_error(
                    "interleaved layout: struct bit " + std::to_string(r) +
                    (r < 0 || r >= int32_t(base_of.size()) ? " out of range" : " placed twice"));
            base_of[size_t(r)] = b;
        }
    }
    void bytes(int k, int base_byte, int struct_byte, int n) {
        bits(k, base_byte, 0, struct_byte, 0, 8 * n);
    }
};

// Fills `link` for the interleaved type id.
void describe(int32_t id, StructLinker& link);

}  // namespace sy::quants::detail
