// ik_llama.cpp's row-interleaved storage (docs/ik-quants.md section 6): a tensor of a base type
// whose rows are taken `rows` (4, 8 or 16) at a time, and block position i of those rows stored
// as one interleaved struct, so that a kernel reads the same block of several rows at once. The
// bytes are the base type's, rearranged: the sizes are the base type's, and a group of rows
// converts to the base layout and back exactly (every bit has one place in each). For a
// row-scaled base type (IQ4_KS, IQ5_KS) the group starts with its rows' scales, one after the
// other.
//
// These types are file formats only: switchyard reads such a tensor by de-interleaving it once,
// at load, into the base type that its kernels compute on, and `quantize` can write them.
//
// IQ1_S_R4 is the exception to "the base type's bytes": ik_llama.cpp quantizes it with one f16
// scale per row (2 bytes in front of each row, then 6 bytes per 32 values) where IQ1_S has one
// per 256 values. Its values are IQ1_S's exactly (the row scale repeated in every block), so it
// is read as IQ1_S rows, which are 2 bytes per 256 values larger; it cannot be written from IQ1_S
// rows whose blocks have different scales.
//
// IQ1_M_R4 has no plain type with its values (one f16 scale per row, a plain 4-bit scale per 16
// values where IQ1_M packs 3-bit ones around a block scale): its base is switchyard's internal
// rows type SY_TYPE_IQ1_M_R4_ROWS (quant_blocks.h), which is never written to a file.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace sy::quants {

struct InterleavedType {
    int32_t id;        // as ik_llama.cpp's GGUF files store it
    const char* name;  // ik's name, "iq4_k_r4"
    int32_t base;      // the type each row is in
    int rows;          // rows per group
    // Any rows of the base type have this form (not IQ1_S_R4's rows, which need one scale each:
    // quantize_rows_one_scale makes them); what --repack writes.
    bool repackable = true;
};

// The interleaved types this build converts (Q4_0_R8, Q5_0_R4, Q8_0_R8, Q2_K_R4 ... Q6_K_R4,
// IQ4_NL_R4, IQ4_XS_R8, BF16_R16, Q6_0_R4, IQ2_K_R4 ... IQ5_K_R4, IQ4_KS_R4, IQ5_KS_R4, the
// codebook IQ2_XXS_R4 ... IQ2_S_R4, IQ1_S_R4, IQ1_M_R4).
std::vector<InterleavedType> interleaved_types();
// The entry of an id or a name (case-insensitive), or nullptr.
const InterleavedType* interleaved_type(int32_t id);
const InterleavedType* interleaved_type(std::string_view name);
// The interleaved type whose base is `base` (what `quantize --repack` writes for it), or nullptr.
const InterleavedType* interleaved_of(int32_t base);

// Bytes of one row of n values stored in t's layout (a group is t.rows of them), and the value
// count a row must be a whole number of (0 if n is not one: then it cannot be read).
int64_t interleaved_row_size(const InterleavedType& t, int64_t n);
int64_t interleaved_row_unit(const InterleavedType& t);

// One group of t.rows rows of n values each: src in the interleaved layout
// (t.rows * interleaved_row_size bytes), dst as t.rows packed rows of the base type (row r at
// dst + r * row_size(t.base, n)), and the reverse. n must be a whole number of
// interleaved_row_unit (std::invalid_argument otherwise, and for IQ1_S_R4 rows whose scales
// differ); src and dst must not overlap.
void deinterleave(const InterleavedType& t, const void* src, void* dst, int64_t n);
void interleave(const InterleavedType& t, const void* src, void* dst, int64_t n);

}  // namespace sy::quants
