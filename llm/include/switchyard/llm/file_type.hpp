// general.file_type: llama.cpp's llama_ftype ids (the numbers files carry) and the names
// llama.cpp prints for them (llama-bench's model column, quantize presets).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sy::llm {

// llama.cpp's enum llama_ftype, same numbers, and ik_llama.cpp's for its own types (135+). Ids
// 4-6 and 33-134 are not listed: 5 and 6 were removed from llama.cpp, the rest are
// llama.cpp-only or of types switchyard does not read.
enum class FileType : uint32_t {
    kAllF32 = 0,
    kMostlyF16 = 1,
    kMostlyQ4_0 = 2,
    kMostlyQ4_1 = 3,
    kMostlyQ8_0 = 7,
    kMostlyQ5_0 = 8,
    kMostlyQ5_1 = 9,
    kMostlyQ2_K = 10,
    kMostlyQ3_K_S = 11,
    kMostlyQ3_K_M = 12,
    kMostlyQ3_K_L = 13,
    kMostlyQ4_K_S = 14,
    kMostlyQ4_K_M = 15,
    kMostlyQ5_K_S = 16,
    kMostlyQ5_K_M = 17,
    kMostlyQ6_K = 18,
    kMostlyIQ2_XXS = 19,
    kMostlyIQ2_XS = 20,
    kMostlyQ2_K_S = 21,
    kMostlyIQ3_XS = 22,
    kMostlyIQ3_XXS = 23,
    kMostlyIQ1_S = 24,
    kMostlyIQ4_NL = 25,
    kMostlyIQ3_S = 26,
    kMostlyIQ3_M = 27,
    kMostlyIQ2_S = 28,
    kMostlyIQ2_M = 29,
    kMostlyIQ4_XS = 30,
    kMostlyIQ1_M = 31,
    kMostlyBF16 = 32,
    kMostlyQ6_0 = 135,  // ik_llama.cpp
    kMostlyIQ2_K = 138,
    kMostlyIQ3_K = 139,
    kMostlyIQ4_K = 140,
    kMostlyIQ5_K = 141,
    kMostlyIQ6_K = 142,
    kMostlyIQ4_KS = 145,
    kMostlyIQ2_KS = 147,
    kMostlyIQ4_KSS = 148,
    kMostlyIQ5_KS = 150,
    kMostlyIQ3_KS = 154,
    kMostlyIQ2_KL = 155,
    kMostlyIQ2_KT = 151,
    kMostlyIQ3_KT = 152,
    kMostlyIQ4_KT = 153,
    kMostlyIQ1_KT = 156,
    kMostlyIQ3_KL = 146,  // a mix of IQ3_K, IQ4_KS and IQ5_K (no tensor type of its own)
    kMostlyQ8_KV = 149,
    kMostlyQ4_0_R8 = 202,  // ik_llama.cpp's row-interleaved file types
    kMostlyQ8_0_R8 = 207,
    kMostlyQ5_0_R4 = 208,
    kMostlyQ2_K_R4 = 210,
    kMostlyQ3_K_R4 = 211,
    kMostlyQ4_K_R4 = 214,
    kMostlyQ5_K_R4 = 216,
    kMostlyQ6_K_R4 = 218,
    kMostlyIQ2_XXS_R4 = 219,
    kMostlyIQ2_XS_R4 = 220,
    kMostlyIQ3_XXS_R4 = 223,
    kMostlyIQ1_S_R4 = 224,
    kMostlyIQ4_NL_R4 = 225,
    kMostlyIQ3_S_R4 = 226,
    kMostlyIQ2_M_R4 = 229,
    kMostlyIQ4_XS_R8 = 230,
    kMostlyIQ1_M_R4 = 231,
    kMostlyBF16_R16 = 232,
    kMostlyQ6_0_R4 = 335,
    kMostlyIQ2_K_R4 = 338,
    kMostlyIQ3_K_R4 = 339,
    kMostlyIQ4_K_R4 = 340,
    kMostlyIQ5_K_R4 = 341,
    kMostlyIQ4_KS_R4 = 345,
    kMostlyIQ5_KS_R4 = 350,
};

// Set on a file type that was inferred from the tensors rather than read from the file.
inline constexpr uint32_t kFileTypeGuessed = 1024;

// llama.cpp's llama_model_ftype_name: "Q4_K - Medium", "IQ2_XXS - 2.0625 bpw", "all F32";
// "<name> (guessed)" with kFileTypeGuessed set; "unknown, may not work" for other ids.
std::string file_type_name(uint32_t ftype);

// The name without the guessed suffix; empty for an id not in FileType.
std::string_view known_file_type_name(uint32_t ftype);

// general.file_type for a file whose bulk is tensor type `type` (GGUF type id, interleaved
// layouts included, or the internal rows type of one). Pure K types map to the "_S" variant,
// the closest llama.cpp file type; 0 (all F32) for types without one.
uint32_t file_type_of(int32_t type);

}  // namespace sy::llm
