#include "quant/dequantize.hpp"

#include <cstring>

#include "switchyard/quant_blocks.h"
#include "switchyard/sdk.hpp"

namespace sy::cpu {
namespace {

inline float h2f(sy_half h) {
    return sdk::fp16_to_f32(h);
}

void q4_0(const sy_block_q4_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        const float d = h2f(x[i].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * float((x[i].qs[j] & 15) - 8);
            y[j + 16] = d * float((x[i].qs[j] >> 4) - 8);
        }
    }
}
void q4_1(const sy_block_q4_1* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        const float d = h2f(x[i].d), m = h2f(x[i].m);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * float(x[i].qs[j] & 15) + m;
            y[j + 16] = d * float(x[i].qs[j] >> 4) + m;
        }
    }
}
template <typename Block>
void q5(const Block* x, float* y, int64_t nb, int offset) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        const float d = h2f(x[i].d);
        float m = 0.0f;
        if constexpr (sizeof(Block) == sizeof(sy_block_q5_1)) m = h2f(x[i].m);
        uint32_t qh;
        std::memcpy(&qh, x[i].qh, 4);
        for (int j = 0; j < 16; ++j) {
            const int lo = (x[i].qs[j] & 15) | int(((qh >> j) & 1) << 4);
            const int hi = (x[i].qs[j] >> 4) | int(((qh >> (j + 16)) & 1) << 4);
            y[j] = d * float(lo - offset) + m;
            y[j + 16] = d * float(hi - offset) + m;
        }
    }
}
void q8_0(const sy_block_q8_0* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        const float d = h2f(x[i].d);
        for (int j = 0; j < 32; ++j) y[j] = d * float(x[i].qs[j]);
    }
}
void iq4_nl(const sy_block_iq4_nl* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i, y += 32) {
        const float d = h2f(x[i].d);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * float(sy_kvalues_iq4nl[x[i].qs[j] & 15]);
            y[j + 16] = d * float(sy_kvalues_iq4nl[x[i].qs[j] >> 4]);
        }
    }
}
void iq4_xs(const sy_block_iq4_xs* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = h2f(x[i].d);
        for (int ib = 0; ib < 8; ++ib, y += 32) {
            const int ls = ((x[i].scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
                           (((x[i].scales_h >> (2 * ib)) & 3) << 4);
            const float dl = d * float(ls - 32);
            const uint8_t* qs = x[i].qs + 16 * ib;
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * float(sy_kvalues_iq4nl[qs[j] & 15]);
                y[j + 16] = dl * float(sy_kvalues_iq4nl[qs[j] >> 4]);
            }
        }
    }
}
void q2_K(const sy_block_q2_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        const uint8_t* q = x[i].qs;
        int is = 0;
        for (int n = 0; n < SY_QK_K; n += 128, q += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int half = 0; half < 2; ++half) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * float(sc & 0xF), ml = dmin * float(sc >> 4);
                    for (int l = 0; l < 16; ++l)
                        *y++ = dl * float((q[l + 16 * half] >> shift) & 3) - ml;
                }
    }
}
void q3_K(const sy_block_q3_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        uint32_t aux[4];
        std::memcpy(aux, x[i].scales, 12);
        const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f, tmp = aux[2];
        aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
        aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
        aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
        aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
        int8_t scales[16];
        std::memcpy(scales, aux, 16);
        const float d = h2f(x[i].d);
        const uint8_t* q = x[i].qs;
        unsigned m = 1;
        int is = 0;
        for (int n = 0; n < SY_QK_K; n += 128, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int half = 0; half < 2; ++half) {
                    const float dl = d * float(scales[is++] - 32);
                    for (int l = 16 * half; l < 16 * half + 16; ++l)
                        *y++ = dl * float(((q[l] >> shift) & 3) - ((x[i].hmask[l] & m) ? 0 : 4));
                }
    }
}
void scale_min_k4(int j, const uint8_t* q, int& sc, int& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}
template <typename Block>
void q45_K(const Block* x, float* y, int64_t nb) {
    constexpr bool five = sizeof(Block) == sizeof(sy_block_q5_K);
    for (int64_t i = 0; i < nb; ++i) {
        const float d = h2f(x[i].d), dmin = h2f(x[i].dmin);
        const uint8_t* q = x[i].qs;
        for (int j = 0; j < 4; ++j, q += 32) {
            int sc1, m1, sc2, m2;
            scale_min_k4(2 * j, x[i].scales, sc1, m1);
            scale_min_k4(2 * j + 1, x[i].scales, sc2, m2);
            for (int l = 0; l < 32; ++l) {
                int h = 0;
                if constexpr (five) h = ((x[i].qh[l] >> (2 * j)) & 1) << 4;
                *(y + l) = d * float(sc1) * float((q[l] & 15) | h) - dmin * float(m1);
            }
            for (int l = 0; l < 32; ++l) {
                int h = 0;
                if constexpr (five) h = ((x[i].qh[l] >> (2 * j + 1)) & 1) << 4;
                *(y + 32 + l) = d * float(sc2) * float((q[l] >> 4) | h) - dmin * float(m2);
            }
            y += 64;
        }
    }
}
void q6_K(const sy_block_q6_K* x, float* y, int64_t nb) {
    for (int64_t i = 0; i < nb; ++i) {
        const float d = h2f(x[i].d);
        const uint8_t* ql = x[i].ql;
        const uint8_t* qh = x[i].qh;
        const int8_t* sc = x[i].scales;
        for (int n = 0; n < SY_QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8)
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * float(sc[is] * q1);
                y[l + 32] = d * float(sc[is + 2] * q2);
                y[l + 64] = d * float(sc[is + 4] * q3);
                y[l + 96] = d * float(sc[is + 6] * q4);
            }
    }
}

}  // namespace

bool can_dequantize(int32_t type) {
    switch (type) {
        case SY_TYPE_Q4_0:
        case SY_TYPE_Q4_1:
        case SY_TYPE_Q5_0:
        case SY_TYPE_Q5_1:
        case SY_TYPE_Q8_0:
        case SY_TYPE_Q2_K:
        case SY_TYPE_Q3_K:
        case SY_TYPE_Q4_K:
        case SY_TYPE_Q5_K:
        case SY_TYPE_Q6_K:
        case SY_TYPE_IQ4_NL:
        case SY_TYPE_IQ4_XS: return true;
        default: return false;
    }
}

void dequantize_row(int32_t type, const void* x, float* y, int64_t n) {
    const int64_t nb = n / sy_dtype_info(type).block_size;
    switch (type) {
        case SY_TYPE_Q4_0: return q4_0(static_cast<const sy_block_q4_0*>(x), y, nb);
        case SY_TYPE_Q4_1: return q4_1(static_cast<const sy_block_q4_1*>(x), y, nb);
        case SY_TYPE_Q5_0: return q5(static_cast<const sy_block_q5_0*>(x), y, nb, 16);
        case SY_TYPE_Q5_1: return q5(static_cast<const sy_block_q5_1*>(x), y, nb, 0);
        case SY_TYPE_Q8_0: return q8_0(static_cast<const sy_block_q8_0*>(x), y, nb);
        case SY_TYPE_Q2_K: return q2_K(static_cast<const sy_block_q2_K*>(x), y, nb);
        case SY_TYPE_Q3_K: return q3_K(static_cast<const sy_block_q3_K*>(x), y, nb);
        case SY_TYPE_Q4_K: return q45_K(static_cast<const sy_block_q4_K*>(x), y, nb);
        case SY_TYPE_Q5_K: return q45_K(static_cast<const sy_block_q5_K*>(x), y, nb);
        case SY_TYPE_Q6_K: return q6_K(static_cast<const sy_block_q6_K*>(x), y, nb);
        case SY_TYPE_IQ4_NL: return iq4_nl(static_cast<const sy_block_iq4_nl*>(x), y, nb);
        case SY_TYPE_IQ4_XS: return iq4_xs(static_cast<const sy_block_iq4_xs*>(x), y, nb);
        default: break;
    }
}

}  // namespace sy::cpu
