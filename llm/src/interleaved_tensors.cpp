#include "switchyard/llm/interleaved_tensors.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/interleaved.hpp"
#include "switchyard/quants.hpp"

namespace sy::llm {

DeinterleavedTensor deinterleave_tensor(const gguf::Reader& file, const gguf::TensorInfo& t,
                                        int threads) {
    const quants::InterleavedType* il = quants::interleaved_type(t.type);
    if (il == nullptr) throw std::invalid_argument("tensor " + t.name + " is not row-interleaved");
    const int64_t n = t.ne[0];
    const int64_t from_row = quants::interleaved_row_size(*il, n);
    const int64_t to_row = quants::row_size(il->base, n);
    const int64_t rows = int64_t(t.nbytes / uint64_t(from_row));
    const int64_t groups = rows / il->rows;  // the reader checked ne[1] % rows == 0
    const int64_t from_group = il->rows * from_row, to_group = il->rows * to_row;
    DeinterleavedTensor out;
    out.type = il->base;
    const uint8_t* from = t.data;
    uint8_t* to = nullptr;
    if (from_row == to_row) {
        to = file.writable(t);
        from = to;
    } else {
        try {
            out.owned.resize(size_t(rows * to_row));
        } catch (const std::bad_alloc&) {
            throw Error("tensor " + t.name + ": cannot allocate " + std::to_string(rows * to_row) +
                        " bytes for its " + sy_dtype_info(il->base).name + " rows");
        }
        to = out.owned.data();
    }
    out.data = to;
    const int workers = int(std::clamp<int64_t>(threads, 1, std::max<int64_t>(groups, 1)));
    auto run = [&](int64_t g0, int64_t g1) {
        std::vector<uint8_t> group(static_cast<size_t>(to_group));
        for (int64_t g = g0; g < g1; ++g) {
            quants::deinterleave(*il, from + g * from_group, group.data(), n);
            std::memcpy(to + g * to_group, group.data(), group.size());
        }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w)
        pool.emplace_back(run, groups * w / workers, groups * (w + 1) / workers);
    run(0, groups / workers);
    for (std::thread& th : pool) th.join();
    return out;
}

}  // namespace sy::llm
