#include "iquant_codebook.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include "switchyard/iquant_grids.h"

namespace sy::quants::detail {
namespace {

struct GridSource {
    const void* grid;  // uint64_t[entries] for 8 coordinates, uint32_t[entries] for 4
    int entries;
    int dims;
    int bits;
    int rings;                  // neighbour distances kept for off-grid lattice points
    std::array<int, 8> values;  // the grid byte of each level, ascending (int8 for IQ1)
    int levels;
};

GridSource source(Codebook which) {
    switch (which) {
        case Codebook::kIq2xxs: return {sy_iq2xxs_grid, 256, 8, 2, 2, {8, 25, 43}, 3};
        case Codebook::kIq2xs: return {sy_iq2xs_grid, 512, 8, 2, 2, {8, 25, 43}, 3};
        case Codebook::kIq2s: return {sy_iq2s_grid, 1024, 8, 2, 1, {8, 25, 43}, 3};
        case Codebook::kIq3xxs:
            return {sy_iq3xxs_grid, 256, 4, 3, 2, {4, 12, 20, 28, 36, 44, 52, 62}, 8};
        case Codebook::kIq3s: return {sy_iq3s_grid, 512, 4, 3, 3, {1, 3, 5, 7, 9, 11, 13, 15}, 8};
        case Codebook::kIq1s: return {sy_iq1s_grid, 2048, 8, 2, 3, {-1, 0, 1}, 3};
    }
    throw std::logic_error("iquant codebook: unknown codebook");
}

// Byte k of entry e as a signed value (the IQ1 grid holds -1, 0, 1; the others are positive).
int grid_byte(const GridSource& s, int e, int k) {
    uint8_t bytes[8];
    if (s.dims == 8) {
        std::memcpy(bytes, static_cast<const uint64_t*>(s.grid) + e, 8);
    } else {
        std::memcpy(bytes, static_cast<const uint32_t*>(s.grid) + e, 4);
    }
    return int(int8_t(bytes[k]));
}

LatticeCodebook build(Codebook which) {
    const GridSource s = source(which);
    LatticeCodebook cb;
    cb.dims = s.dims;
    cb.bits = s.bits;
    cb.levels = s.levels;
    for (int l = 0; l < s.levels; ++l) cb.level_value[l] = float(s.values[size_t(l)]);
    for (int l = 0; l + 1 < s.levels; ++l)
        cb.level_mid[l] = 0.5f * (cb.level_value[l] + cb.level_value[l + 1]);
    cb.point_levels.resize(size_t(s.entries * s.dims));
    cb.map.assign(size_t(1) << (s.bits * s.dims), 0);
    std::vector<bool> in_grid(cb.map.size(), false);
    for (int e = 0; e < s.entries; ++e) {
        uint32_t packed = 0;
        for (int k = 0; k < s.dims; ++k) {
            const int v = grid_byte(s, e, k);
            const int* at = std::find(s.values.data(), s.values.data() + s.levels, v);
            if (at == s.values.data() + s.levels) {
                throw std::logic_error("iquant codebook: a grid byte outside the level set");
            }
            const int level = int(at - s.values.data());
            cb.point_levels[size_t(e * s.dims + k)] = uint8_t(level);
            packed |= uint32_t(level) << (s.bits * k);
        }
        cb.map[packed] = e;
        in_grid[packed] = true;
    }
    cb.point_values.resize(cb.point_levels.size());
    for (size_t i = 0; i < cb.point_levels.size(); ++i)
        cb.point_values[i] = cb.level_value[cb.point_levels[i]];
    // Neighbour lists of the lattice points whose levels are all valid but which are not in the
    // grid: every entry at the `rings` smallest squared level distances.
    std::vector<std::pair<int, int>> dist(size_t(s.entries));
    int levels[8];
    for (uint32_t packed = 0; packed < cb.map.size(); ++packed) {
        if (in_grid[packed]) continue;
        bool valid = true;
        for (int k = 0; k < s.dims; ++k) {
            levels[k] = int(packed >> (s.bits * k)) & ((1 << s.bits) - 1);
            valid = valid && levels[k] < s.levels;
        }
        if (!valid) {
            cb.map[packed] = 0;  // never looked up: rounding clamps every level
            continue;
        }
        for (int e = 0; e < s.entries; ++e) {
            int d2 = 0;
            for (int k = 0; k < s.dims; ++k) {
                const int d = int(cb.point(e)[k]) - levels[k];
                d2 += d * d;
            }
            dist[size_t(e)] = {d2, e};
        }
        std::sort(dist.begin(), dist.end());
        cb.map[packed] = -int32_t(cb.neighbours.size()) - 1;
        const size_t count_at = cb.neighbours.size();
        cb.neighbours.push_back(0);
        int rings = 0, last = -1;
        for (const auto& [d2, e] : dist) {
            if (d2 != last) {
                if (rings == s.rings) break;
                ++rings;
                last = d2;
            }
            cb.neighbours.push_back(uint16_t(e));
        }
        cb.neighbours[count_at] = uint16_t(cb.neighbours.size() - count_at - 1);
    }
    return cb;
}

}  // namespace

const LatticeCodebook& codebook(Codebook which) {
    static std::once_flag once[6];
    static LatticeCodebook books[6];
    const int i = int(which);
    std::call_once(once[i], [&] { books[i] = build(which); });
    return books[i];
}

}  // namespace sy::quants::detail
