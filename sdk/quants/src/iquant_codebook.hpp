// The i-quant codebooks as the quantizers search them. Each codebook is a set of grid points of D
// coordinates (8 for the 2-bit and 1-bit types, 4 for the 3-bit ones), every coordinate one of a
// few levels: 3 for IQ2_* (grid bytes 8, 25, 43) and IQ1_* (-1, 0, 1), 8 for IQ3_*. A point is
// addressed by its packed level index sum(level_k << bits * k). Rounding each coordinate of a
// scaled group to its nearest level gives a lattice point that is often not in the codebook; for
// those the codebook keeps the list of its entries nearest in level space (all entries at the
// nearest `rings` distinct distances), and the quantizer picks among them by the weighted error
// of the actual values. This is the search ggml's i-quant quantizers do (iq2xs_init_impl /
// iq3xs_init_impl); the lists are built here from the grids of iquant_grids.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sy::quants::detail {

enum class Codebook { kIq2xxs, kIq2xs, kIq2s, kIq3xxs, kIq3s, kIq1s };

struct LatticeCodebook {
    int dims = 0;            // coordinates per grid point: 8 or 4
    int bits = 0;            // bits per level in the packed index: 2 or 3
    int levels = 0;          // levels per coordinate: 3 or 8
    float level_value[8]{};  // the value a level dequantizes to, before the block scales
    float level_mid[7]{};    // midpoints of adjacent level values: the rounding thresholds
    std::vector<uint8_t> point_levels;  // entries * dims levels
    std::vector<float> point_values;    // entries * dims level values, for the error sums
    // packed level index -> entry >= 0, or -(1 + offset) of its neighbour list in `neighbours`:
    // a count followed by that many entries.
    std::vector<int32_t> map;
    std::vector<uint16_t> neighbours;

    // The entry at lattice point `packed`, or its first neighbour.
    uint16_t nearest_entry(uint32_t packed) const {
        const int32_t m = map[packed];
        return m >= 0 ? uint16_t(m) : neighbours[size_t(-m - 1) + 1];
    }
    int entries() const { return int(point_levels.size()) / dims; }
    const uint8_t* point(int entry) const { return point_levels.data() + entry * dims; }
    const float* values(int entry) const { return point_values.data() + entry * dims; }
    // The entries to try for the lattice point `packed`: itself when it is in the codebook.
    // Returns the count; `list` points at the entries (or at `single` holding the entry).
    int candidates(uint32_t packed, const uint16_t** list, uint16_t* single) const {
        const int32_t m = map[packed];
        if (m >= 0) {
            *single = uint16_t(m);
            *list = single;
            return 1;
        }
        const uint16_t* n = neighbours.data() + (-m - 1);
        *list = n + 1;
        return n[0];
    }
};

// The codebook, built on first use (thread-safe) and kept for the process's lifetime.
const LatticeCodebook& codebook(Codebook which);

}  // namespace sy::quants::detail
