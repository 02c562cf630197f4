#include "interleaved_weights.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "switchyard/quant_blocks.h"
#include "switchyard/sdk.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {
namespace {

// Q4_0 and IQ4_NL share their block (an f16 scale and 16 bytes of nibbles).
int64_t block_bytes(int32_t type) {
    return type == SY_TYPE_Q8_0 ? int64_t(sizeof(sy_block_q8_0)) : int64_t(sizeof(sy_block_q4_0));
}

}  // namespace

bool InterleavedWeights::eligible(const sy_tensor& w) {
    if (w.type != SY_TYPE_Q4_0 && w.type != SY_TYPE_Q8_0 && w.type != SY_TYPE_IQ4_NL) return false;
    const bool has_id = w.struct_size >= offsetof(sy_tensor, constant_id) + sizeof w.constant_id;
    if (!has_id || w.constant_id == 0 || w.data == nullptr) return false;
    if (w.ne[0] < 32 || w.ne[0] % 32 != 0 || w.ne[1] % kInterleavedRows != 0) return false;
    const int64_t row = w.ne[0] / 32 * block_bytes(w.type);
    return w.nb[0] == block_bytes(w.type) && w.nb[1] == row && w.nb[2] == row * w.ne[1] &&
           w.nb[3] == w.nb[2] * w.ne[2];
}

void interleave_row_group(int32_t type, const uint8_t* rows, int64_t row_bytes, int64_t K,
                          uint8_t* dst) {
    const int64_t bb = block_bytes(type);
    const int64_t chunks = (bb - 2) / 4;                            // 4 (Q4_0, IQ4_NL) or 8 (Q8_0)
    const uint32_t flip = type == SY_TYPE_Q8_0 ? 0x80808080u : 0u;  // Q8_0's q + 128 per byte
    for (int64_t b = 0; b < K / 32; ++b, dst += kInterleavedRows * bb) {
        for (int64_t r = 0; r < kInterleavedRows; ++r) {
            const uint8_t* block = rows + r * row_bytes + b * bb;
            std::memcpy(dst + 2 * r, block, 2);  // the f16 scale
            for (int64_t c = 0; c < chunks; ++c) {
                uint32_t q;
                std::memcpy(&q, block + 2 + 4 * c, 4);
                q ^= flip;
                std::memcpy(dst + 32 + 64 * c + 4 * r, &q, 4);
            }
        }
    }
}

void InterleavedWeights::Free::operator()(void* p) const {
    std::free(p);
}

const void* InterleavedWeights::find_or_make(ThreadPool& pool, const sy_tensor& w) {
    if (!eligible(w)) return nullptr;
    const auto key = std::make_pair(w.constant_id, w.data);
    if (auto it = copies_.find(key); it != copies_.end())
        return it->second.type == w.type ? it->second.data.get() : nullptr;
    const size_t bytes = size_t(w.nb[3] * w.ne[3]);
    if (automatic_ && !budget_) budget_ = sdk::available_memory() / 2;
    if (automatic_ && bytes_ + bytes > *budget_) return nullptr;
    // In whole 2 MiB pages, advised for huge pages (advice only: none is not an error).
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    std::unique_ptr<uint8_t, Free> data(static_cast<uint8_t*>(std::aligned_alloc(kHuge, rounded)));
    if (!data) return nullptr;
    ::madvise(data.get(), rounded, MADV_HUGEPAGE);
    const int64_t groups = w.ne[1] / kInterleavedRows * w.ne[2] * w.ne[3];
    const int64_t group_bytes = kInterleavedRows * w.nb[1];
    const auto* src = static_cast<const uint8_t*>(w.data);
    pool.parallel_ranges(groups, 1, [&](int64_t g0, int64_t g1) {
        for (int64_t g = g0; g < g1; ++g)
            interleave_row_group(w.type, src + g * group_bytes, w.nb[1], w.ne[0],
                                 data.get() + g * group_bytes);
    });
    const void* copy = data.get();
    copies_.emplace(key, Copy{std::move(data), bytes, w.type});
    bytes_ += bytes;
    return copy;
}

void InterleavedWeights::release(uint64_t constant_id) {
    for (auto it = copies_.begin(); it != copies_.end();) {
        if (it->first.first == constant_id) {
            bytes_ -= it->second.bytes;
            it = copies_.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace sy::cpu
