// switchyard/iquant_grids.h: the structure of ggml's i-quant codebooks that a copying error would
// break. Each grid lists distinct points whose coordinates come from a small value set, in
// increasing order of the point's index in base (set size), coordinate 0 the least significant;
// the sign tables follow from their rule. A value replaced by another valid point that keeps the
// order would pass these checks; when copied, every grid entry was also compared with the packed
// index lists (kgrid_*) in ggml's ggml-quants.c, which encode the same points independently.
#include "switchyard/iquant_grids.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

// Byte k of v (k = 0 the lowest).
uint32_t byte_at(uint64_t v, int k) {
    return static_cast<uint32_t>((v >> (8 * k)) & 0xff);
}

// For every entry: each of its nbytes bytes is one of levels[0..nlevels), and the entry's packed
// index sum(level(byte k) << (bits * k)) is strictly larger than the previous entry's.
template <typename T>
void expect_ordered_grid(const T* grid, size_t n, int nbytes, const std::vector<uint32_t>& levels,
                         int bits, const char* name) {
    int64_t prev = -1;
    for (size_t i = 0; i < n; ++i) {
        const uint64_t v = static_cast<uint64_t>(grid[i]);
        int64_t packed = 0;
        for (int k = 0; k < nbytes; ++k) {
            const uint32_t b = byte_at(v, k);
            int level = -1;
            for (size_t l = 0; l < levels.size(); ++l) {
                if (levels[l] == b) level = static_cast<int>(l);
            }
            ASSERT_GE(level, 0) << name << "[" << i << "] byte " << k << " = 0x" << std::hex << b;
            packed |= static_cast<int64_t>(level) << (bits * k);
        }
        ASSERT_GT(packed, prev) << name << "[" << i << "] out of order";
        prev = packed;
    }
    if (nbytes < 8) {  // nothing above the used bytes
        for (size_t i = 0; i < n; ++i) {
            ASSERT_EQ(static_cast<uint64_t>(grid[i]) >> (8 * nbytes), 0u)
                << name << "[" << i << "]";
        }
    }
}

TEST(IquantGrids, Sizes) {
    EXPECT_EQ(sizeof(sy_kmask_iq2xs), 8u);
    EXPECT_EQ(sizeof(sy_ksigns_iq2xs), 128u);
    EXPECT_EQ(sizeof(sy_ksigns64), 128u * 8);
    EXPECT_EQ(sizeof(sy_iq2xxs_grid), 256u * 8);
    EXPECT_EQ(sizeof(sy_iq2xs_grid), 512u * 8);
    EXPECT_EQ(sizeof(sy_iq2s_grid), 1024u * 8);
    EXPECT_EQ(sizeof(sy_iq3xxs_grid), 256u * 4);
    EXPECT_EQ(sizeof(sy_iq3s_grid), 512u * 4);
    EXPECT_EQ(sizeof(sy_iq1s_grid), 2048u * 8);
    EXPECT_EQ(SY_NGRID_IQ1S, 2048);
    EXPECT_EQ(SY_IQ1S_DELTA, 0.125f);
    EXPECT_EQ(SY_IQ1M_DELTA, 0.125f);
}

// The _INIT macros are complete initializers of exactly the table's size (what a CUDA file that
// defines its own __device__ copy relies on): an unsized array takes the table's length.
TEST(IquantGrids, InitMacrosHaveTheTableSizes) {
    const uint8_t kmask[] = SY_KMASK_IQ2XS_INIT;
    const uint8_t ksigns[] = SY_KSIGNS_IQ2XS_INIT;
    const uint64_t ksigns64[] = SY_KSIGNS64_INIT;
    const uint64_t g2xxs[] = SY_IQ2XXS_GRID_INIT;
    const uint64_t g2xs[] = SY_IQ2XS_GRID_INIT;
    const uint64_t g2s[] = SY_IQ2S_GRID_INIT;
    const uint32_t g3xxs[] = SY_IQ3XXS_GRID_INIT;
    const uint32_t g3s[] = SY_IQ3S_GRID_INIT;
    const uint64_t g1s[] = SY_IQ1S_GRID_INIT;
    EXPECT_EQ(sizeof(kmask), sizeof(sy_kmask_iq2xs));
    EXPECT_EQ(sizeof(ksigns), sizeof(sy_ksigns_iq2xs));
    EXPECT_EQ(sizeof(ksigns64), sizeof(sy_ksigns64));
    EXPECT_EQ(sizeof(g2xxs), sizeof(sy_iq2xxs_grid));
    EXPECT_EQ(sizeof(g2xs), sizeof(sy_iq2xs_grid));
    EXPECT_EQ(sizeof(g2s), sizeof(sy_iq2s_grid));
    EXPECT_EQ(sizeof(g3xxs), sizeof(sy_iq3xxs_grid));
    EXPECT_EQ(sizeof(g3s), sizeof(sy_iq3s_grid));
    EXPECT_EQ(sizeof(g1s), sizeof(sy_iq1s_grid));
}

TEST(IquantGrids, SignTables) {
    for (int k = 0; k < 8; ++k) EXPECT_EQ(sy_kmask_iq2xs[k], 1u << k) << k;
    for (int i = 0; i < 128; ++i) {
        const uint32_t s = sy_ksigns_iq2xs[i];
        EXPECT_EQ(s & 0x7f, static_cast<uint32_t>(i)) << i;
        int pop = 0;
        for (int b = 0; b < 7; ++b) pop += (i >> b) & 1;
        EXPECT_EQ(s >> 7, static_cast<uint32_t>(pop & 1)) << i;  // even count of set bits
        for (int k = 0; k < 8; ++k) {
            EXPECT_EQ(byte_at(sy_ksigns64[i], k), ((s >> k) & 1) ? 0xffu : 0x00u) << i << " " << k;
        }
    }
}

TEST(IquantGrids, Iq2GridsOrderedOverThreeLevels) {
    const std::vector<uint32_t> levels = {0x08, 0x19, 0x2b};
    expect_ordered_grid(sy_iq2xxs_grid, 256, 8, levels, 2, "iq2xxs_grid");
    expect_ordered_grid(sy_iq2xs_grid, 512, 8, levels, 2, "iq2xs_grid");
    expect_ordered_grid(sy_iq2s_grid, 1024, 8, levels, 2, "iq2s_grid");
}

TEST(IquantGrids, Iq3GridsOrderedOverEightLevels) {
    expect_ordered_grid(sy_iq3xxs_grid, 256, 4, {0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3e}, 3,
                        "iq3xxs_grid");
    expect_ordered_grid(sy_iq3s_grid, 512, 4, {0x01, 0x03, 0x05, 0x07, 0x09, 0x0b, 0x0d, 0x0f}, 3,
                        "iq3s_grid");
}

TEST(IquantGrids, Iq1sGridOrderedOverMinusOneZeroOne) {
    expect_ordered_grid(sy_iq1s_grid, 2048, 8, {0xff, 0x00, 0x01}, 2, "iq1s_grid");
}

// A few entries as ggml-common.h spells them (first and last of each grid).
TEST(IquantGrids, KnownEntries) {
    EXPECT_EQ(sy_iq2xxs_grid[0], 0x0808080808080808ull);
    EXPECT_EQ(sy_iq2xxs_grid[255], 0x2b2b2b1908081908ull);
    EXPECT_EQ(sy_iq2xs_grid[0], 0x0808080808080808ull);
    EXPECT_EQ(sy_iq2xs_grid[511], 0x2b2b2b2b2b2b2b2bull);
    EXPECT_EQ(sy_iq2s_grid[0], 0x0808080808080808ull);
    EXPECT_EQ(sy_iq2s_grid[1023], 0x2b2b2b2b2b2b2b2bull);
    EXPECT_EQ(sy_iq3xxs_grid[0], 0x04040404u);
    EXPECT_EQ(sy_iq3xxs_grid[255], 0x3e341c04u);
    EXPECT_EQ(sy_iq3s_grid[0], 0x01010101u);
    EXPECT_EQ(sy_iq3s_grid[511], 0x0f0f0101u);
    EXPECT_EQ(sy_iq1s_grid[0], 0xffffffffffffffffull);
    EXPECT_EQ(sy_iq1s_grid[1], 0xffffffffffffff01ull);
    EXPECT_EQ(sy_iq1s_grid[2047], 0x0101010101010101ull);
    EXPECT_EQ(sy_ksigns64[127], 0xffffffffffffffffull);
}

}  // namespace
