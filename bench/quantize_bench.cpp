// Quantizer speed and error per type: what `switchyard quantize` spends per value.
//
//   switchyard-quantize-bench [--rows R] [--repeat N] TYPE...
//
// R rows (default 16) of 4096 values drawn from a t distribution with 5 degrees of freedom (x
// 0.02: the heavy tails of real weights) and one importance vector (products of two uniform
// [0.1, 2) draws) are quantized with sy::quants::quantize_rows on one thread, N times (default
// 3); printed per type: thousands of values per second (best of the N), the importance-weighted
// relative RMS error of the round trip, and an FNV-1a hash of the quantized bytes (the same
// hash before and after a change to a quantizer's speed shows that its output did not change).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace {

int32_t type_by_name(const char* name) {
    for (int32_t t = 0; t < 1400; ++t) {
        const sy_dtype_traits info = sy_dtype_info(t);
        if (info.name && std::strcmp(info.name, name) == 0 && info.block_size > 1) return t;
    }
    return -1;
}

int usage() {
    std::fprintf(stderr, "usage: switchyard-quantize-bench [--rows R] [--repeat N] TYPE...\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    int64_t rows = 16;
    int repeat = 3;
    std::vector<int32_t> types;
    std::vector<std::string> names;
    for (int a = 1; a < argc; ++a) {
        const std::string arg = argv[a];
        if ((arg == "--rows" || arg == "--repeat") && a + 1 < argc) {
            const long v = std::strtol(argv[++a], nullptr, 10);
            if (v < 1 || v > 100000) {
                std::fprintf(stderr, "%s %s: expected 1 to 100000\n", arg.c_str(), argv[a]);
                return 2;
            }
            if (arg == "--rows")
                rows = v;
            else
                repeat = int(v);
        } else if (!arg.empty() && arg[0] == '-') {
            return usage();
        } else {
            const int32_t t = type_by_name(arg.c_str());
            if (t < 0) {
                std::fprintf(stderr, "%s: not a block-quantized type this build knows\n",
                             arg.c_str());
                return 2;
            }
            types.push_back(t);
            names.push_back(arg);
        }
    }
    if (types.empty()) return usage();

    const int64_t n = 4096;
    std::mt19937 rng(7);
    std::student_t_distribution<float> t5(5);
    std::vector<float> x(static_cast<size_t>(rows * n)), importance(static_cast<size_t>(n));
    for (float& v : x) v = 0.02f * t5(rng);
    std::uniform_real_distribution<float> u(0.1f, 2.0f);
    for (float& v : importance) v = u(rng) * u(rng);

    std::printf("%-10s %12s %10s  %s\n", "type", "kvalues/s", "wrms", "bytes hash");
    for (size_t k = 0; k < types.size(); ++k) {
        const int32_t type = types[k];
        const int64_t row_bytes = sy::quants::row_size(type, n);
        std::vector<uint8_t> y(size_t(rows * row_bytes));
        double best = 1e30;
        for (int r = 0; r < repeat; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            sy::quants::quantize_rows(type, x.data(), y.data(), rows, n, 1, importance.data());
            best = std::min(
                best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::vector<float> back(static_cast<size_t>(n));
        double e2 = 0, x2 = 0;
        for (int64_t r = 0; r < rows; ++r) {
            sy::quants::dequantize_row(type, y.data() + r * row_bytes, back.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                const double xi = x[size_t(r * n + i)], d = back[size_t(i)] - xi;
                e2 += importance[size_t(i)] * d * d;
                x2 += importance[size_t(i)] * xi * xi;
            }
        }
        uint64_t h = 1469598103934665603ull;
        for (uint8_t b : y) h = (h ^ b) * 1099511628211ull;
        std::printf("%-10s %12.0f %10.5f  %016llx\n", names[k].c_str(),
                    double(rows * n) / best / 1e3, std::sqrt(e2 / x2), (unsigned long long)h);
    }
    return 0;
}
