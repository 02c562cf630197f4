#include "interleaved_weights.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "switchyard/quant_blocks.h"
#include "switchyard/sdk.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {
namespace {

// Where a type's fields lie in its block: `heads` f16 fields from byte 0 (d, and m for the types
// with a minimum), 5th or 5th-6th bits (qh_bytes) at qh, the quant bytes (qs_bytes) at qs.
struct BlockFields {
    int64_t bytes;
    int heads, qh, qh_bytes, qs, qs_bytes;
};
BlockFields fields_of(int32_t type) {
    switch (type) {
        case SY_TYPE_Q4_0:
        case SY_TYPE_IQ4_NL: return {sizeof(sy_block_q4_0), 1, 0, 0, 2, 16};
        case SY_TYPE_Q8_0: return {sizeof(sy_block_q8_0), 1, 0, 0, 2, 32};
        case SY_TYPE_Q4_1: return {sizeof(sy_block_q4_1), 2, 0, 0, 4, 16};
        case SY_TYPE_Q5_0: return {sizeof(sy_block_q5_0), 1, 2, 4, 6, 16};
        case SY_TYPE_Q5_1: return {sizeof(sy_block_q5_1), 2, 4, 4, 8, 16};
        case SY_TYPE_Q6_0: return {sizeof(sy_block_q6_0), 1, 2, 8, 10, 16};
        default: return {0, 0, 0, 0, 0, 0};
    }
}

// The Q5_0/Q5_1 high bits of one row's block regrouped by nibble chunk: byte i, bit 2c = the 5th
// bit of value 4c + i, bit 2c + 1 that of value 16 + 4c + i (qh's bits 4c + i and 16 + 4c + i).
uint32_t regroup_fifth_bits(uint32_t qh) {
    uint32_t out = 0;
    for (int i = 0; i < 4; ++i)
        for (int c = 0; c < 4; ++c) {
            out |= ((qh >> (4 * c + i)) & 1u) << (8 * i + 2 * c);
            out |= ((qh >> (16 + 4 * c + i)) & 1u) << (8 * i + 2 * c + 1);
        }
    return out;
}

}  // namespace

bool InterleavedWeights::eligible(const sy_tensor& w) {
    const BlockFields f = fields_of(w.type);
    if (f.bytes == 0) return false;
    const bool has_id = w.struct_size >= offsetof(sy_tensor, constant_id) + sizeof w.constant_id;
    if (!has_id || w.constant_id == 0 || w.data == nullptr) return false;
    if (w.ne[0] < 32 || w.ne[0] % 32 != 0 || w.ne[1] % kInterleavedRows != 0) return false;
    const int64_t row = w.ne[0] / 32 * f.bytes;
    return w.nb[0] == f.bytes && w.nb[1] == row && w.nb[2] == row * w.ne[1] &&
           w.nb[3] == w.nb[2] * w.ne[2];
}

void interleave_row_group(int32_t type, const uint8_t* rows, int64_t row_bytes, int64_t K,
                          uint8_t* dst) {
    const BlockFields f = fields_of(type);
    const uint32_t flip = type == SY_TYPE_Q8_0 ? 0x80808080u : 0u;  // Q8_0's q + 128 per byte
    const bool fifth = type == SY_TYPE_Q5_0 || type == SY_TYPE_Q5_1;
    const int64_t qs_at = 32 * f.heads, qh_at = qs_at + 16 * f.qs_bytes;
    for (int64_t b = 0; b < K / 32; ++b, dst += kInterleavedRows * f.bytes) {
        for (int64_t r = 0; r < kInterleavedRows; ++r) {
            const uint8_t* block = rows + r * row_bytes + b * f.bytes;
            for (int h = 0; h < f.heads; ++h)  // the f16 scale (and minimum)
                std::memcpy(dst + 32 * h + 2 * r, block + 2 * h, 2);
            for (int c = 0; c < f.qs_bytes / 4; ++c) {
                uint32_t q;
                std::memcpy(&q, block + f.qs + 4 * c, 4);
                q ^= flip;
                std::memcpy(dst + qs_at + 64 * c + 4 * r, &q, 4);
            }
            for (int c = 0; c < f.qh_bytes / 4; ++c) {
                uint32_t q;
                std::memcpy(&q, block + f.qh + 4 * c, 4);
                if (fifth) q = regroup_fifth_bits(q);
                std::memcpy(dst + qh_at + 64 * c + 4 * r, &q, 4);
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
