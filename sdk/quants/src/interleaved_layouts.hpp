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
    // Struct bytes whose bits 1-7 hold a 7-bit sign index stored scrambled (scrambled_sign
    // below), bit 0 untouched: the bit moves place the plain index, the conversion then maps it.
    std::vector<int32_t> scrambled;

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
    void scramble(int struct_byte) { scrambled.push_back(struct_byte); }
};

// IQ2_XXS_R4 / IQ2_XS_R4 / IQ3_XXS_R4 store a 7-bit sign index s (whose 8 signs are
// ksigns_iq2xs[s]: s plus an even-parity 8th bit) as the value x whose byte y = x << 1 decodes, by
// y ^ (y >> 1), to those 8 signs: ik's SIMD code gets the signs with one shift and xor. y is the
// inverse Gray code of the 8 signs; its bit 0 is their parity, 0.
inline uint8_t scrambled_sign(uint8_t s) {
    const unsigned t = (s & 0x7fu) | ((__builtin_popcount(s & 0x7fu) & 1u) << 7);
    unsigned y = t;
    for (unsigned shift = 1; shift < 8; shift <<= 1) y ^= y >> shift;
    return uint8_t(y >> 1);
}
inline uint8_t unscrambled_sign(uint8_t x) {
    const unsigned y = unsigned(x & 0x7f) << 1;
    return uint8_t((y ^ (y >> 1)) & 0x7f);
}

// Fills `link` for the interleaved type id.
void describe(int32_t id, StructLinker& link);

}  // namespace sy::quants::detail
