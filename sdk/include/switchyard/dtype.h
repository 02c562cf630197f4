/*
 * Data type facts: names, block sizes and byte sizes of the GGUF tensor types (ids in plugin.h).
 * Header-only, plain C, so plugins and the host share one table.
 */
#ifndef SWITCHYARD_DTYPE_H
#define SWITCHYARD_DTYPE_H

#include "switchyard/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sy_dtype_traits {
    const char* name;   /* as GGUF tools print it: "f32", "q4_K" ... */
    int32_t block_size; /* elements per block (1 for scalar types) */
    int32_t type_size;  /* bytes per block */
    int32_t is_float;   /* 1 for F32, F16, BF16, F64 */
    /* Bytes in front of each row's blocks (ik_llama.cpp's row-scaled types keep the row's scale
       there), 0 for every other type: a row of n values takes
       row_meta_size + n / block_size * type_size bytes, and its blocks start row_meta_size bytes
       after the row. */
    int32_t row_meta_size;
} sy_dtype_traits;

/* Traits of a type id; all zero (name NULL) for an id this ABI does not know. */
static inline sy_dtype_traits sy_dtype_info(int32_t type) {
    sy_dtype_traits t = {NULL, 0, 0, 0, 0};
    switch (type) {
        case SY_TYPE_F32:
            t.name = "f32";
            t.block_size = 1;
            t.type_size = 4;
            t.is_float = 1;
            break;
        case SY_TYPE_F16:
            t.name = "f16";
            t.block_size = 1;
            t.type_size = 2;
            t.is_float = 1;
            break;
        case SY_TYPE_BF16:
            t.name = "bf16";
            t.block_size = 1;
            t.type_size = 2;
            t.is_float = 1;
            break;
        case SY_TYPE_F64:
            t.name = "f64";
            t.block_size = 1;
            t.type_size = 8;
            t.is_float = 1;
            break;
        case SY_TYPE_I8:
            t.name = "i8";
            t.block_size = 1;
            t.type_size = 1;
            break;
        case SY_TYPE_I16:
            t.name = "i16";
            t.block_size = 1;
            t.type_size = 2;
            break;
        case SY_TYPE_I32:
            t.name = "i32";
            t.block_size = 1;
            t.type_size = 4;
            break;
        case SY_TYPE_I64:
            t.name = "i64";
            t.block_size = 1;
            t.type_size = 8;
            break;
        case SY_TYPE_Q4_0:
            t.name = "q4_0";
            t.block_size = 32;
            t.type_size = 18;
            break;
        case SY_TYPE_Q4_1:
            t.name = "q4_1";
            t.block_size = 32;
            t.type_size = 20;
            break;
        case SY_TYPE_Q5_0:
            t.name = "q5_0";
            t.block_size = 32;
            t.type_size = 22;
            break;
        case SY_TYPE_Q5_1:
            t.name = "q5_1";
            t.block_size = 32;
            t.type_size = 24;
            break;
        case SY_TYPE_Q8_0:
            t.name = "q8_0";
            t.block_size = 32;
            t.type_size = 34;
            break;
        case SY_TYPE_Q8_1:
            t.name = "q8_1";
            t.block_size = 32;
            t.type_size = 36;
            break;
        case SY_TYPE_Q2_K:
            t.name = "q2_K";
            t.block_size = 256;
            t.type_size = 84;
            break;
        case SY_TYPE_Q3_K:
            t.name = "q3_K";
            t.block_size = 256;
            t.type_size = 110;
            break;
        case SY_TYPE_Q4_K:
            t.name = "q4_K";
            t.block_size = 256;
            t.type_size = 144;
            break;
        case SY_TYPE_Q5_K:
            t.name = "q5_K";
            t.block_size = 256;
            t.type_size = 176;
            break;
        case SY_TYPE_Q6_K:
            t.name = "q6_K";
            t.block_size = 256;
            t.type_size = 210;
            break;
        case SY_TYPE_Q8_K:
            t.name = "q8_K";
            t.block_size = 256;
            t.type_size = 292;
            break;
        case SY_TYPE_IQ4_NL:
            t.name = "iq4_nl";
            t.block_size = 32;
            t.type_size = 18;
            break;
        case SY_TYPE_IQ4_XS:
            t.name = "iq4_xs";
            t.block_size = 256;
            t.type_size = 136;
            break;
        case SY_TYPE_IQ2_XXS:
            t.name = "iq2_xxs";
            t.block_size = 256;
            t.type_size = 66;
            break;
        case SY_TYPE_IQ2_XS:
            t.name = "iq2_xs";
            t.block_size = 256;
            t.type_size = 74;
            break;
        case SY_TYPE_IQ3_XXS:
            t.name = "iq3_xxs";
            t.block_size = 256;
            t.type_size = 98;
            break;
        case SY_TYPE_IQ1_S:
            t.name = "iq1_s";
            t.block_size = 256;
            t.type_size = 50;
            break;
        case SY_TYPE_IQ3_S:
            t.name = "iq3_s";
            t.block_size = 256;
            t.type_size = 110;
            break;
        case SY_TYPE_IQ2_S:
            t.name = "iq2_s";
            t.block_size = 256;
            t.type_size = 82;
            break;
        case SY_TYPE_IQ1_M:
            t.name = "iq1_m";
            t.block_size = 256;
            t.type_size = 56;
            break;
        case SY_TYPE_Q6_0:
            t.name = "q6_0";
            t.block_size = 32;
            t.type_size = 26;
            break;
        case SY_TYPE_IQ2_K:
            t.name = "iq2_k";
            t.block_size = 256;
            t.type_size = 76;
            break;
        case SY_TYPE_IQ3_K:
            t.name = "iq3_k";
            t.block_size = 256;
            t.type_size = 110;
            break;
        case SY_TYPE_IQ4_K:
            t.name = "iq4_k";
            t.block_size = 256;
            t.type_size = 144;
            break;
        case SY_TYPE_IQ5_K:
            t.name = "iq5_k";
            t.block_size = 256;
            t.type_size = 176;
            break;
        case SY_TYPE_IQ6_K:
            t.name = "iq6_k";
            t.block_size = 256;
            t.type_size = 212;
            break;
        case SY_TYPE_IQ4_KS:
            t.name = "iq4_ks";
            t.block_size = 256;
            t.type_size = 136;
            t.row_meta_size = 4;
            break;
        case SY_TYPE_IQ2_KS:
            t.name = "iq2_ks";
            t.block_size = 256;
            t.type_size = 70;
            t.row_meta_size = 2;
            break;
        case SY_TYPE_IQ4_KSS:
            t.name = "iq4_kss";
            t.block_size = 256;
            t.type_size = 128;
            t.row_meta_size = 4;
            break;
        case SY_TYPE_IQ5_KS:
            t.name = "iq5_ks";
            t.block_size = 256;
            t.type_size = 168;
            t.row_meta_size = 4;
            break;
        case SY_TYPE_IQ3_KS:
            t.name = "iq3_ks";
            t.block_size = 256;
            t.type_size = 102;
            t.row_meta_size = 2;
            break;
        case SY_TYPE_IQ2_KL:
            t.name = "iq2_kl";
            t.block_size = 256;
            t.type_size = 86;
            t.row_meta_size = 2;
            break;
        case SY_TYPE_IQ2_KT:
            t.name = "iq2_kt";
            t.block_size = 256;
            t.type_size = 68;
            t.row_meta_size = 4;
            break;
        case SY_TYPE_IQ3_KT:
            t.name = "iq3_kt";
            t.block_size = 256;
            t.type_size = 100;
            t.row_meta_size = 4;
            break;
        case SY_TYPE_IQ4_KT:
            t.name = "iq4_kt";
            t.block_size = 256;
            t.type_size = 128;
            t.row_meta_size = 4;
            break;
        case SY_TYPE_IQ1_KT:
            t.name = "iq1_kt";
            t.block_size = 256;
            t.type_size = 56;
            t.row_meta_size = 4;
            break;
        case SY_TYPE_Q8_KV:
            t.name = "q8_kv";
            t.block_size = 32;
            t.type_size = 32;
            t.row_meta_size = 8;
            break;
        case SY_TYPE_IQ1_M_R4_ROWS:
            t.name = "iq1_m_r4";
            t.block_size = 256;
            t.type_size = 56;
            t.row_meta_size = 2;
            break;
        default: break;
    }
    return t;
}

#ifdef __cplusplus
}
#endif

#endif /* SWITCHYARD_DTYPE_H */
