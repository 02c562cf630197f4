// The quantizers' constant-time nearest-entry lookup (sdk/quants/src/internal.hpp NearestIndex)
// against the search it replaces, best_index_int8, on every non-linear table half, at every
// half-integer (where the answer changes), just beside each, and at random and extreme values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "internal.hpp"
#include "switchyard/quant_blocks.h"

namespace {

using sy::quants::detail::best_index_int8;
using sy::quants::detail::NearestIndex;

struct Half {
    const char* name;
    const int8_t* values;
    int n;
};

TEST(NearestIndex, AgreesWithTheSearchOnEveryTable) {
    const Half halves[] = {{"iq4nl", sy_kvalues_iq4nl, 16},      {"iq2nl", sy_iq2nl_values, 4},
                           {"iq2nl+", sy_iq2nl_values + 4, 4},   {"iq3nl", sy_iq3nl_values, 8},
                           {"iq3nl+", sy_iq3nl_values + 8, 8},   {"iq4k", sy_iq4k_values, 16},
                           {"iq4k+", sy_iq4k_values + 16, 16},   {"iq5nl", sy_iq5nl_values, 32},
                           {"iq5nl+", sy_iq5nl_values + 32, 32}, {"iq6nl", sy_iq6nl_values, 64},
                           {"iq6nl+", sy_iq6nl_values + 64, 64}};
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> wide(-300.f, 300.f);
    for (const Half& h : halves) {
        const NearestIndex nearest(h.n, h.values);
        std::vector<float> xs = {0.f,
                                 -0.f,
                                 1e-30f,
                                 -1e-30f,
                                 1e30f,
                                 -1e30f,
                                 std::numeric_limits<float>::max(),
                                 -std::numeric_limits<float>::max()};
        for (int k = -600; k <= 600; ++k) {
            const float x = 0.5f * float(k);
            xs.insert(xs.end(), {x, std::nextafter(x, -1e9f), std::nextafter(x, 1e9f)});
        }
        for (int i = 0; i < 100000; ++i) xs.push_back(wide(rng));
        for (float x : xs)
            ASSERT_EQ(nearest(x), best_index_int8(h.n, h.values, x)) << h.name << " at x = " << x;
    }
}

}  // namespace
