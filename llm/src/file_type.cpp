#include "switchyard/llm/file_type.hpp"

#include "switchyard/dtype.h"

namespace sy::llm {

std::string_view known_file_type_name(uint32_t ftype) {
    switch (static_cast<FileType>(ftype)) {
        case FileType::kAllF32: return "all F32";
        case FileType::kMostlyF16: return "F16";
        case FileType::kMostlyBF16: return "BF16";
        case FileType::kMostlyQ4_0: return "Q4_0";
        case FileType::kMostlyQ4_1: return "Q4_1";
        case FileType::kMostlyQ5_0: return "Q5_0";
        case FileType::kMostlyQ5_1: return "Q5_1";
        case FileType::kMostlyQ8_0: return "Q8_0";
        case FileType::kMostlyQ2_K: return "Q2_K - Medium";
        case FileType::kMostlyQ2_K_S: return "Q2_K - Small";
        case FileType::kMostlyQ3_K_S: return "Q3_K - Small";
        case FileType::kMostlyQ3_K_M: return "Q3_K - Medium";
        case FileType::kMostlyQ3_K_L: return "Q3_K - Large";
        case FileType::kMostlyQ4_K_S: return "Q4_K - Small";
        case FileType::kMostlyQ4_K_M: return "Q4_K - Medium";
        case FileType::kMostlyQ5_K_S: return "Q5_K - Small";
        case FileType::kMostlyQ5_K_M: return "Q5_K - Medium";
        case FileType::kMostlyQ6_K: return "Q6_K";
        case FileType::kMostlyIQ2_XXS: return "IQ2_XXS - 2.0625 bpw";
        case FileType::kMostlyIQ2_XS: return "IQ2_XS - 2.3125 bpw";
        case FileType::kMostlyIQ2_S: return "IQ2_S - 2.5 bpw";
        case FileType::kMostlyIQ2_M: return "IQ2_M - 2.7 bpw";
        case FileType::kMostlyIQ3_XS: return "IQ3_XS - 3.3 bpw";
        case FileType::kMostlyIQ3_XXS: return "IQ3_XXS - 3.0625 bpw";
        case FileType::kMostlyIQ1_S: return "IQ1_S - 1.5625 bpw";
        case FileType::kMostlyIQ1_M: return "IQ1_M - 1.75 bpw";
        case FileType::kMostlyIQ4_NL: return "IQ4_NL - 4.5 bpw";
        case FileType::kMostlyIQ4_XS: return "IQ4_XS - 4.25 bpw";
        case FileType::kMostlyIQ3_S: return "IQ3_S - 3.4375 bpw";
        case FileType::kMostlyIQ3_M: return "IQ3_S mix - 3.66 bpw";
        // ik_llama.cpp's names.
        case FileType::kMostlyQ6_0: return "Q6_0";
        case FileType::kMostlyIQ2_K: return "IQ2_K - 2.375 bpw";
        case FileType::kMostlyIQ3_K: return "IQ3_K - 3.4325 bpw";
        case FileType::kMostlyIQ4_K: return "IQ4_K - 4.5 bpw";
        case FileType::kMostlyIQ5_K: return "IQ5_K - 5.5 bpw";
        case FileType::kMostlyIQ6_K: return "IQ6_K - 6.6 bpw";
        case FileType::kMostlyIQ4_KS: return "IQ4_KS - 4.25 bpw";
        case FileType::kMostlyIQ2_KS: return "IQ2_KS - 2.1875 bpw";
        case FileType::kMostlyIQ4_KSS: return "IQ4_KSS - 4.0 bpw";
        case FileType::kMostlyIQ5_KS: return "IQ5_KS - 5.25 bpw";
        case FileType::kMostlyIQ3_KS: return "IQ3_KS - 3.1875 bpw";
        case FileType::kMostlyIQ2_KL: return "IQ2_KL - 2.6875 bpw";
        case FileType::kMostlyIQ2_KT: return "IQ2_KT - 2.125 bpw";
        case FileType::kMostlyIQ3_KT: return "IQ3_KT - 3.125 bpw";
        case FileType::kMostlyIQ4_KT: return "IQ4_KT - 4.0 bpw";
        case FileType::kMostlyIQ1_KT: return "IQ1_KT - 1.75 bpw";
        case FileType::kMostlyIQ3_KL: return "IQ3_KL - 4 bpw";
        case FileType::kMostlyQ8_KV: return "Q8_KV";
        case FileType::kMostlyQ4_0_R8: return "Q4_0_R8 - 4.5 bpw";
        case FileType::kMostlyQ8_0_R8: return "Q8_0_R8 - 8.5 bpw";
        case FileType::kMostlyQ5_0_R4: return "Q5_0_R4 - 5.5 bpw";
        case FileType::kMostlyQ2_K_R4: return "Q2_K_R4";
        case FileType::kMostlyQ3_K_R4: return "Q3_K_R4";
        case FileType::kMostlyQ4_K_R4: return "Q4_K_R4";
        case FileType::kMostlyQ5_K_R4: return "Q5_K_R4";
        case FileType::kMostlyQ6_K_R4: return "Q6_K_R4";
        case FileType::kMostlyIQ2_XXS_R4: return "IQ2_XXS_R4 - 2.0625 bpw";
        case FileType::kMostlyIQ2_XS_R4: return "IQ2_XS_R4 - 2.3125 bpw";
        case FileType::kMostlyIQ3_XXS_R4: return "IQ3_XXS_R4 - 3.0625 bpw";
        case FileType::kMostlyIQ1_S_R4: return "IQ1_S_R4 - 1.5 bpw";
        case FileType::kMostlyIQ4_NL_R4: return "IQ4_NL_R4 - 4.5 bpw";
        case FileType::kMostlyIQ3_S_R4: return "IQ3_S_R4 - 3.4375 bpw";
        case FileType::kMostlyIQ2_M_R4: return "IQ2_M_R4 - 2.7 bpw";
        case FileType::kMostlyIQ4_XS_R8: return "IQ4_XS_R8 - 4.25 bpw";
        case FileType::kMostlyIQ1_M_R4: return "IQ1_M_R4 - 1.75 bpw";
        case FileType::kMostlyBF16_R16: return "BF16_R16";
        case FileType::kMostlyQ6_0_R4: return "Q6_0_R4 - 6.5 bpw";
        case FileType::kMostlyIQ2_K_R4: return "IQ2_K_R4 - 2.375 bpw";
        case FileType::kMostlyIQ3_K_R4: return "IQ3_K_R4 - 3.4325 bpw";
        case FileType::kMostlyIQ4_K_R4: return "IQ4_K_R4 - 4.5 bpw";
        case FileType::kMostlyIQ5_K_R4: return "IQ5_K_R4 - 5.5 bpw";
        case FileType::kMostlyIQ4_KS_R4: return "IQ4_KS_R4 - 4.25 bpw";
        case FileType::kMostlyIQ5_KS_R4: return "IQ5_KS_R4 - 5.25 bpw";
    }
    return {};
}

std::string file_type_name(uint32_t ftype) {
    if (ftype & kFileTypeGuessed) return file_type_name(ftype & ~kFileTypeGuessed) + " (guessed)";
    const std::string_view name = known_file_type_name(ftype);
    return name.empty() ? "unknown, may not work" : std::string(name);
}

uint32_t file_type_of(int32_t type) {
    FileType ft = FileType::kAllF32;
    switch (type) {
        case SY_TYPE_F32: ft = FileType::kAllF32; break;
        case SY_TYPE_F16: ft = FileType::kMostlyF16; break;
        case SY_TYPE_BF16: ft = FileType::kMostlyBF16; break;
        case SY_TYPE_Q4_0: ft = FileType::kMostlyQ4_0; break;
        case SY_TYPE_Q4_1: ft = FileType::kMostlyQ4_1; break;
        case SY_TYPE_Q8_0: ft = FileType::kMostlyQ8_0; break;
        case SY_TYPE_Q5_0: ft = FileType::kMostlyQ5_0; break;
        case SY_TYPE_Q5_1: ft = FileType::kMostlyQ5_1; break;
        case SY_TYPE_Q2_K: ft = FileType::kMostlyQ2_K; break;
        case SY_TYPE_Q3_K: ft = FileType::kMostlyQ3_K_S; break;
        case SY_TYPE_Q4_K: ft = FileType::kMostlyQ4_K_S; break;
        case SY_TYPE_Q5_K: ft = FileType::kMostlyQ5_K_S; break;
        case SY_TYPE_Q6_K: ft = FileType::kMostlyQ6_K; break;
        case SY_TYPE_IQ4_NL: ft = FileType::kMostlyIQ4_NL; break;
        case SY_TYPE_IQ4_XS: ft = FileType::kMostlyIQ4_XS; break;
        case SY_TYPE_IQ2_XXS: ft = FileType::kMostlyIQ2_XXS; break;
        case SY_TYPE_IQ2_XS: ft = FileType::kMostlyIQ2_XS; break;
        case SY_TYPE_IQ2_S: ft = FileType::kMostlyIQ2_S; break;
        case SY_TYPE_IQ3_XXS: ft = FileType::kMostlyIQ3_XXS; break;
        case SY_TYPE_IQ3_S: ft = FileType::kMostlyIQ3_S; break;
        case SY_TYPE_IQ1_S: ft = FileType::kMostlyIQ1_S; break;
        case SY_TYPE_IQ1_M: ft = FileType::kMostlyIQ1_M; break;
        case SY_TYPE_Q6_0: ft = FileType::kMostlyQ6_0; break;
        case SY_TYPE_IQ2_K: ft = FileType::kMostlyIQ2_K; break;
        case SY_TYPE_IQ3_K: ft = FileType::kMostlyIQ3_K; break;
        case SY_TYPE_IQ4_K: ft = FileType::kMostlyIQ4_K; break;
        case SY_TYPE_IQ5_K: ft = FileType::kMostlyIQ5_K; break;
        case SY_TYPE_IQ6_K: ft = FileType::kMostlyIQ6_K; break;
        case SY_TYPE_IQ4_KS: ft = FileType::kMostlyIQ4_KS; break;
        case SY_TYPE_IQ2_KS: ft = FileType::kMostlyIQ2_KS; break;
        case SY_TYPE_IQ4_KSS: ft = FileType::kMostlyIQ4_KSS; break;
        case SY_TYPE_IQ5_KS: ft = FileType::kMostlyIQ5_KS; break;
        case SY_TYPE_IQ3_KS: ft = FileType::kMostlyIQ3_KS; break;
        case SY_TYPE_IQ2_KL: ft = FileType::kMostlyIQ2_KL; break;
        case SY_TYPE_IQ2_KT: ft = FileType::kMostlyIQ2_KT; break;
        case SY_TYPE_IQ3_KT: ft = FileType::kMostlyIQ3_KT; break;
        case SY_TYPE_IQ4_KT: ft = FileType::kMostlyIQ4_KT; break;
        case SY_TYPE_IQ1_KT: ft = FileType::kMostlyIQ1_KT; break;
        case SY_TYPE_Q8_KV: ft = FileType::kMostlyQ8_KV; break;
        // Interleaved layouts (GGUF type ids; IQ2_S_R4 has no file type of its own).
        case 202: ft = FileType::kMostlyQ4_0_R8; break;
        case 208: ft = FileType::kMostlyQ8_0_R8; break;
        case 206: ft = FileType::kMostlyQ5_0_R4; break;
        case 210: ft = FileType::kMostlyQ2_K_R4; break;
        case 211: ft = FileType::kMostlyQ3_K_R4; break;
        case 212: ft = FileType::kMostlyQ4_K_R4; break;
        case 213: ft = FileType::kMostlyQ5_K_R4; break;
        case 214: ft = FileType::kMostlyQ6_K_R4; break;
        case 216: ft = FileType::kMostlyIQ2_XXS_R4; break;
        case 217: ft = FileType::kMostlyIQ2_XS_R4; break;
        case 218: ft = FileType::kMostlyIQ3_XXS_R4; break;
        case 219: ft = FileType::kMostlyIQ1_S_R4; break;
        case 220: ft = FileType::kMostlyIQ4_NL_R4; break;
        case 221: ft = FileType::kMostlyIQ3_S_R4; break;
        case 223: ft = FileType::kMostlyIQ4_XS_R8; break;
        case 229: ft = FileType::kMostlyIQ1_M_R4; break;
        case 230: ft = FileType::kMostlyBF16_R16; break;
        case 233: ft = FileType::kMostlyQ6_0_R4; break;
        case 337: ft = FileType::kMostlyIQ2_K_R4; break;
        case 338: ft = FileType::kMostlyIQ3_K_R4; break;
        case 339: ft = FileType::kMostlyIQ4_K_R4; break;
        case 340: ft = FileType::kMostlyIQ5_K_R4; break;
        case 344: ft = FileType::kMostlyIQ4_KS_R4; break;
        case 352: ft = FileType::kMostlyIQ5_KS_R4; break;
        case SY_TYPE_IQ1_M_R4_ROWS: ft = FileType::kMostlyIQ1_M_R4; break;
        default: break;
    }
    return static_cast<uint32_t>(ft);
}

}  // namespace sy::llm
