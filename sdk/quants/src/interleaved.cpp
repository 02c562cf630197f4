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
    {202, "q4_0_r8", SY_TYPE_Q4_0, 8},           {206, "q5_0_r4", SY_TYPE_Q5_0, 4},
    {208, "q8_0_r8", SY_TYPE_Q8_0, 8},           {210, "q2_k_r4", SY_TYPE_Q2_K, 4},
    {211, "q3_k_r4", SY_TYPE_Q3_K, 4},           {212, "q4_k_r4", SY_TYPE_Q4_K, 4},
    {213, "q5_k_r4", SY_TYPE_Q5_K, 4},           {214, "q6_k_r4", SY_TYPE_Q6_K, 4},
    {216, "iq2_xxs_r4", SY_TYPE_IQ2_XXS, 4},     {217, "iq2_xs_r4", SY_TYPE_IQ2_XS, 4},
    {218, "iq3_xxs_r4", SY_TYPE_IQ3_XXS, 4},     {221, "iq3_s_r4", SY_TYPE_IQ3_S, 4},
    {222, "iq2_s_r4", SY_TYPE_IQ2_S, 4},         {219, "iq1_s_r4", SY_TYPE_IQ1_S, 4, false},
    {229, "iq1_m_r4", SY_TYPE_IQ1_M_R4_ROWS, 4}, {220, "iq4_nl_r4", SY_TYPE_IQ4_NL, 4},
    {223, "iq4_xs_r8", SY_TYPE_IQ4_XS, 8},       {230, "bf16_r16", SY_TYPE_BF16, 16},
    {233, "q6_0_r4", SY_TYPE_Q6_0, 4},           {337, "iq2_k_r4", SY_TYPE_IQ2_K, 4},
    {338, "iq3_k_r4", SY_TYPE_IQ3_K, 4},         {339, "iq4_k_r4", SY_TYPE_IQ4_K, 4},
    {340, "iq5_k_r4", SY_TYPE_IQ5_K, 4},         {344, "iq4_ks_r4", SY_TYPE_IQ4_KS, 4},
    {352, "iq5_ks_r4", SY_TYPE_IQ5_KS, 4},
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
    std::vector<int32_t> scrambled;  // struct bytes with a scrambled sign index in bits 1-7
};

// Maps the sign index in bits 1-7 of each listed struct byte, keeping bit 0.
void map_signs(const std::vector<int32_t>& at, uint8_t* s, uint8_t (*f)(uint8_t)) {
    for (const int32_t b : at) s[b] = uint8_t(f(uint8_t(s[b] >> 1)) << 1 | (s[b] & 1));
}

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
    c.scrambled = link.scrambled;
    return c;
}

// IQ1_S_R4 (docs/ik-quants.md 6.3): a group is the 4 rows' f16 scales, then per 32 values a
// 24-byte struct: qs[4 i + k] = low 8 index bits of row k's group i, u16 qh[k] at 16 = row k's
// IQ1_S qh word of those 32 values. An IQ1_S block (quant_blocks.h): d, qs[32] at 2, qh[8] at 34.
constexpr int32_t kIq1sR4 = 219;
constexpr int kIq1sBlock = 50, kIq1sR4Struct = 24;

// Group in (IQ1_S_R4) to 4 rows of IQ1_S, or back; n a multiple of 256.
void iq1_s_r4(const uint8_t* in, uint8_t* out, int64_t n, bool to_base) {
    const int64_t row_bytes = n / 256 * kIq1sBlock;
    const uint8_t* rows = in;  // the IQ1_S side, when interleaving
    for (int k = 0; k < 4; ++k) {
        const int64_t row = k * row_bytes;
        if (!to_base) {  // one scale per row: every block's d must be the first's
            for (int64_t at = kIq1sBlock; at < row_bytes; at += kIq1sBlock)
                if (std::memcmp(rows + row, rows + row + at, 2) != 0)
                    throw std::invalid_argument(
                        "interleaved iq1_s_r4: row " + std::to_string(k) +
                        " has blocks with different scales (iq1_s_r4 has one per row)");
            std::memcpy(out + 2 * k, in + row, 2);
        }
        for (int64_t b = 0; b < n / 32; ++b) {
            const int64_t block = row + b / 8 * kIq1sBlock, ib = b % 8;
            const int64_t s = 8 + b * kIq1sR4Struct;
            if (to_base) {
                if (ib == 0) std::memcpy(out + block, in + 2 * k, 2);
                for (int i = 0; i < 4; ++i) out[block + 2 + 4 * ib + i] = in[s + 4 * i + k];
                std::memcpy(out + block + 34 + 2 * ib, in + s + 16 + 2 * k, 2);
            } else {
                for (int i = 0; i < 4; ++i) out[s + 4 * i + k] = in[block + 2 + 4 * ib + i];
                std::memcpy(out + s + 16 + 2 * k, in + block + 34 + 2 * ib, 2);
            }
        }
    }
}

const Compiled& compiled(const InterleavedType& t) {
    static std::once_flag once;
    static std::vector<Compiled> all;
    std::call_once(once, [] {
        for (const InterleavedType& type : kTypes)
            all.push_back(type.id == kIq1sR4 ? Compiled{} : build(type));
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
    if (t.id == kIq1sR4) {
        if (n <= 0 || n % 256 != 0)
            throw std::invalid_argument("interleaved iq1_s_r4: rows of " + std::to_string(n) +
                                        " values are not whole iq1_s blocks of 256");
        return iq1_s_r4(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), n, to_base);
    }
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
    std::vector<uint8_t> plain(c.scrambled.empty() ? 0 : static_cast<size_t>(struct_bytes));
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
            const uint8_t* from = in + group_meta + i * struct_bytes;
            if (!plain.empty()) {
                std::memcpy(plain.data(), from, plain.size());
                map_signs(c.scrambled, plain.data(), detail::unscrambled_sign);
                from = plain.data();
            }
            apply(c.to_base, from, gathered.data());
            for (int k = 0; k < t.rows; ++k)
                std::memcpy(out + k * row_bytes + c.meta + i * c.block_bytes,
                            gathered.data() + k * c.block_bytes, size_t(c.block_bytes));
        } else {
            for (int k = 0; k < t.rows; ++k)
                std::memcpy(gathered.data() + k * c.block_bytes,
                            in + k * row_bytes + c.meta + i * c.block_bytes, size_t(c.block_bytes));
            apply(c.to_interleaved, gathered.data(), out + group_meta + i * struct_bytes);
            map_signs(c.scrambled, out + group_meta + i * struct_bytes, detail::scrambled_sign);
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
        if (t.base == base && t.repackable) return &t;
    return nullptr;
}

int64_t interleaved_row_unit(const InterleavedType& t) {
    if (t.id == kIq1sR4) return 256;  // read as iq1_s
    const sy_dtype_traits base = sy_dtype_info(t.base);
    return base.block_size;
}

int64_t interleaved_row_size(const InterleavedType& t, int64_t n) {
    if (t.id == kIq1sR4) return 2 + n / 32 * 6;
    const sy_dtype_traits base = sy_dtype_info(t.base);
    return base.row_meta_size + n / base.block_size * base.type_size;
}

void deinterleave(const InterleavedType& t, const void* src, void* dst, int64_t n) {
    convert(t, src, dst, n, true);
}

void interleave(const InterleavedType& t, const void* src, void* dst, int64_t n) {
    convert(t, src, dst, n, false);
}

}  // namespace sy::quants
