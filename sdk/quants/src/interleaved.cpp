// Row-interleaved layouts (interleaved.hpp): each type's struct is described bit field by bit
// field against its rows' base blocks (interleaved_layouts.cpp); the description is checked to
// place every bit exactly once and compiled into byte operations
//   to[t] |= ((from[f] >> fs) & mask) << ts
// (one per run of bits that stays inside one byte on both sides), applied per block position in
// either direction.
#include "switchyard/interleaved.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <iterator>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "interleaved_layouts.hpp"
#include "switchyard/dtype.h"
#include "switchyard/plugin.h"

namespace sy::quants {
namespace {

using detail::StructLinker;

constexpr InterleavedType kTypes[] = {
    {202, "q4_0_r8", SY_TYPE_Q4_0, 8},     {206, "q5_0_r4", SY_TYPE_Q5_0, 4},
    {208, "q8_0_r8", SY_TYPE_Q8_0, 8},     {210, "q2_k_r4", SY_TYPE_Q2_K, 4},
    {211, "q3_k_r4", SY_TYPE_Q3_K, 4},     {212, "q4_k_r4", SY_TYPE_Q4_K, 4},
    {213, "q5_k_r4", SY_TYPE_Q5_K, 4},     {214, "q6_k_r4", SY_TYPE_Q6_K, 4},
    {220, "iq4_nl_r4", SY_TYPE_IQ4_NL, 4}, {223, "iq4_xs_r8", SY_TYPE_IQ4_XS, 8},
    {230, "bf16_r16", SY_TYPE_BF16, 16},   {233, "q6_0_r4", SY_TYPE_Q6_0, 4},
    {337, "iq2_k_r4", SY_TYPE_IQ2_K, 4},   {338, "iq3_k_r4", SY_TYPE_IQ3_K, 4},
    {339, "iq4_k_r4", SY_TYPE_IQ4_K, 4},   {340, "iq5_k_r4", SY_TYPE_IQ5_K, 4},
    {344, "iq4_ks_r4", SY_TYPE_IQ4_KS, 4}, {352, "iq5_ks_r4", SY_TYPE_IQ5_KS, 4},
};

// to[to_byte] |= ((from[from_byte] >> from_shift) & mask) << to_shift
struct ByteOp {
    int32_t from_byte, to_byte;
    uint8_t from_shift, to_shift, mask;
};

// A type's struct, compiled both ways. Base offsets are k * block_bytes + byte within row k's
// block (the rows' blocks side by side); the caller maps them onto rows.
struct Compiled {
    int values = 0;       // values of each row per struct
    int block_bytes = 0;  // bytes of each row per struct
    int meta = 0;         // row-scale bytes in front of each base row (and N of them per group)
    std::vector<ByteOp> to_base, to_interleaved;
};

std::vector<ByteOp> compile(const std::vector<int32_t>& dest_of_source_bit) {
    std::vector<ByteOp> ops;
    const int32_t bits = int32_t(dest_of_source_bit.size());
    for (int32_t b = 0; b < bits;) {
        const int32_t d = dest_of_source_bit[size_t(b)];
        int len = 1;
        while (b + len < bits && (b + len) % 8 != 0 && (d + len) % 8 != 0 &&
               dest_of_source_bit[size_t(b + len)] == d + len)
            ++len;
        ops.push_back({b / 8, d / 8, uint8_t(b % 8), uint8_t(d % 8), uint8_t((1u << len) - 1)});
        b += len;
    }
    return ops;
}

Compiled build(const InterleavedType& t) {
    const sy_dtype_traits base = sy_dtype_info(t.base);
    StructLinker link;
    link.rows = t.rows;
    link.values = t.base == SY_TYPE_BF16 ? 2 : base.block_size;
    link.block_bytes = t.base == SY_TYPE_BF16 ? 4 : base.type_size;
    const int bits = t.rows * link.block_bytes * 8;
    link.base_of.assign(size_t(bits), -1);
    detail::describe(t.id, link);
    // Every struct bit has one base bit, and no base bit two.
    std::vector<int32_t> interleaved_of(size_t(bits), -1);
    for (int32_t r = 0; r < bits; ++r) {
        const int32_t b = link.base_of[size_t(r)];
        if (b < 0 || b >= bits || interleaved_of[size_t(b)] >= 0)
            throw std::logic_error(std::string("interleaved layout of ") + t.name + ": bit " +
                                   std::to_string(r) + " is placed " +
                                   (b < 0 ? "nowhere" : "twice"));
        interleaved_of[size_t(b)] = r;
    }
    Compiled c;
    c.values = link.values;
    c.block_bytes = link.block_bytes;
    c.meta = base.row_meta_size;
    c.to_base = compile(link.base_of);
    c.to_interleaved = compile(interleaved_of);
    return c;
}

const Compiled& compiled(const InterleavedType& t) {
    static std::once_flag once;
    static std::vector<Compiled> all;
    std::call_once(once, [] {
        for (const InterleavedType& type : kTypes) all.push_back(build(type));
    });
    return all[size_t(&t - kTypes)];
}

const InterleavedType& checked(const InterleavedType& t) {
    const InterleavedType* known = interleaved_type(t.id);
    if (known == nullptr) throw std::invalid_argument("interleaved: unknown type id");
    return *known;
}

void apply(const std::vector<ByteOp>& ops, const uint8_t* from, uint8_t* to) {
    for (const ByteOp& op : ops)
        to[op.to_byte] = uint8_t(to[op.to_byte] | ((from[op.from_byte] >> op.from_shift) & op.mask)
                                                      << op.to_shift);
}

// One group either way. Base rows: row k at base + k * row_bytes, its scale then its blocks;
// the interleaved group: the rows' scales one after the other, then the structs.
void convert(const InterleavedType& type, const void* src, void* dst, int64_t n, bool to_base) {
    const InterleavedType& t = checked(type);
    const Compiled& c = compiled(t);
    if (n <= 0 || n % c.values != 0)
        throw std::invalid_argument(std::string("interleaved ") + t.name + ": rows of " +
                                    std::to_string(n) + " values are not whole blocks of " +
                                    std::to_string(c.values));
    const int64_t blocks = n / c.values;
    const int64_t row_bytes = c.meta + blocks * c.block_bytes;
    const int64_t struct_bytes = int64_t(t.rows) * c.block_bytes;
    const auto* in = static_cast<const uint8_t*>(src);
    auto* out = static_cast<uint8_t*>(dst);
    std::memset(out, 0, size_t(row_bytes * t.rows));
    std::vector<uint8_t> gathered(static_cast<size_t>(struct_bytes));
    for (int k = 0; k < t.rows; ++k) {  // the row scales
        if (to_base)
            std::memcpy(out + k * row_bytes, in + k * c.meta, size_t(c.meta));
        else
            std::memcpy(out + k * c.meta, in + k * row_bytes, size_t(c.meta));
    }
    const int64_t group_meta = int64_t(t.rows) * c.meta;
    for (int64_t i = 0; i < blocks; ++i) {
        // The rows' blocks i side by side, as the ops see them.
        std::fill(gathered.begin(), gathered.end(), uint8_t(0));
        if (to_base) {
            apply(c.to_base, in + group_meta + i * struct_bytes, gathered.data());
            for (int k = 0; k < t.rows; ++k)
                std::memcpy(out + k * row_bytes + c.meta + i * c.block_bytes,
                            gathered.data() + k * c.block_bytes, size_t(c.block_bytes));
        } else {
            for (int k = 0; k < t.rows; ++k)
                std::memcpy(gathered.data() + k * c.block_bytes,
                            in + k * row_bytes + c.meta + i * c.block_bytes, size_t(c.block_bytes));
            apply(c.to_interleaved, gathered.data(), out + group_meta + i * struct_bytes);
        }
    }
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    return out;
}

}  // namespace

std::vector<InterleavedType> interleaved_types() {
    return {std::begin(kTypes), std::end(kTypes)};
}

const InterleavedType* interleaved_type(int32_t id) {
    for (const InterleavedType& t : kTypes)
        if (t.id == id) return &t;
    return nullptr;
}

const InterleavedType* interleaved_type(std::string_view name) {
    const std::string wanted = lower(name);
    for (const InterleavedType& t : kTypes)
        if (wanted == t.name) return &t;
    return nullptr;
}

const InterleavedType* interleaved_of(int32_t base) {
    for (const InterleavedType& t : kTypes)
        if (t.base == base) return &t;
    return nullptr;
}

void deinterleave(const InterleavedType& t, const void* src, void* dst, int64_t n) {
    convert(t, src, dst, n, true);
}

void interleave(const InterleavedType& t, const void* src, void* dst, int64_t n) {
    convert(t, src, dst, n, false);
}

}  // namespace sy::quants
