#include "switchyard/llm/interleaved_tensors.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "switchyard/interleaved.hpp"
#include "switchyard/quants.hpp"

namespace sy::llm {

int32_t deinterleave_in_place(const gguf::Reader& file, const gguf::TensorInfo& t, int threads) {
    const quants::InterleavedType* il = quants::interleaved_type(t.type);
    if (il == nullptr) throw std::invalid_argument("tensor " + t.name + " is not row-interleaved");
    const int64_t n = t.ne[0];
    const int64_t rows = int64_t(t.nbytes / uint64_t(quants::row_size(il->base, n)));
    const int64_t groups = rows / il->rows;  // the reader checked ne[1] % rows == 0
    const int64_t group_bytes = il->rows * quants::row_size(il->base, n);
    uint8_t* data = file.writable(t);
    const int workers = int(std::clamp<int64_t>(threads, 1, std::max<int64_t>(groups, 1)));
    auto run = [&](int64_t g0, int64_t g1) {
        std::vector<uint8_t> group(static_cast<size_t>(group_bytes));
        for (int64_t g = g0; g < g1; ++g) {
            uint8_t* at = data + g * group_bytes;
            quants::deinterleave(*il, at, group.data(), n);
            std::memcpy(at, group.data(), group.size());
        }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w)
        pool.emplace_back(run, groups * w / workers, groups * (w + 1) / workers);
    run(0, groups / workers);
    for (std::thread& th : pool) th.join();
    return il->base;
}

}  // namespace sy::llm
