// Host stand-ins for the CUDA types and intrinsics that plugins/cuda/quant/blocks.cuh uses, with
// the CUDA Math API's semantics, so that its decoders compile as host code for
// block_decoding_test (which puts this folder first on its include path, in place of the
// toolkit's cuda_fp16.h). A decoder that starts using another intrinsic needs it added here.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#define __host__
#define __device__

struct __half {
    uint16_t bits;
};

inline __half __ushort_as_half(unsigned short bits) {
    return __half{bits};
}

inline float __half2float(__half h) {
    const uint32_t sign = h.bits >> 15, exponent = (h.bits >> 10) & 31, mantissa = h.bits & 1023;
    float v;
    if (exponent == 0)
        v = std::ldexp(float(mantissa), -24);
    else if (exponent == 31)
        v = mantissa ? NAN : INFINITY;
    else
        v = std::ldexp(float(mantissa | 1024), int(exponent) - 25);
    return sign ? -v : v;
}

struct int4 {
    int x, y, z, w;
};

template <typename T>
T __ldg(const T* p) {
    return *p;
}

inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, sizeof f);
    return f;
}

// Single roundings: volatile keeps the compiler from contracting them into a fused multiply-add.
inline float __fmul_rn(float a, float b) {
    volatile float r = a * b;
    return r;
}
inline float __fadd_rn(float a, float b) {
    volatile float r = a + b;
    return r;
}

inline int __popc(uint32_t x) {
    return __builtin_popcount(x);
}

// The low word of the 64-bit {hi, lo} shifted right by shift % 32.
inline uint32_t __funnelshift_r(uint32_t lo, uint32_t hi, uint32_t shift) {
    return uint32_t(((uint64_t(hi) << 32) | lo) >> (shift & 31));
}

// Byte k of the result: byte (selector's nibble k) & 7 of the 8 bytes {y, x}.
inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t selector) {
    const uint64_t bytes = (uint64_t(y) << 32) | x;
    uint32_t r = 0;
    for (int k = 0; k < 4; ++k)
        r |= uint32_t((bytes >> (8 * ((selector >> (4 * k)) & 7))) & 0xFF) << (8 * k);
    return r;
}

template <typename Op>
uint32_t per_byte(uint32_t a, uint32_t b, Op op) {
    uint32_t r = 0;
    for (int k = 0; k < 4; ++k)
        r |= uint32_t(uint8_t(op(uint8_t(a >> (8 * k)), uint8_t(b >> (8 * k))))) << (8 * k);
    return r;
}
inline uint32_t __vadd4(uint32_t a, uint32_t b) {
    return per_byte(a, b, [](uint8_t x, uint8_t y) { return x + y; });
}
inline uint32_t __vsub4(uint32_t a, uint32_t b) {
    return per_byte(a, b, [](uint8_t x, uint8_t y) { return x - y; });
}
inline uint32_t __vcmpne4(uint32_t a, uint32_t b) {
    return per_byte(a, b, [](uint8_t x, uint8_t y) { return x != y ? 0xFF : 0; });
}

// c + the sum of the products of the four signed bytes of a and b.
inline int __dp4a(int a, int b, int c) {
    for (int k = 0; k < 4; ++k) c += int(int8_t(a >> (8 * k))) * int(int8_t(b >> (8 * k)));
    return c;
}
