// Header-only C++ helpers for plugin authors (and the host): status values with messages,
// float16/bfloat16 conversions, tensor descriptor arithmetic. Optional: a plugin may use the C
// ABI alone. Nothing here crosses the ABI boundary except sy_status values.
#pragma once

#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include "switchyard/dtype.h"
#include "switchyard/ops.h"
#include "switchyard/plugin.h"

namespace sy::sdk {

// ---- status -----------------------------------------------------------------------------------

inline sy_status ok() {
    return sy_status{SY_OK, nullptr};
}

// A status whose message lives in thread-local storage until the next error on this thread,
// which is exactly the lifetime the ABI promises.
inline sy_status error(int32_t code, const char* format, ...) __attribute__((format(printf, 2, 3)));
inline sy_status error(int32_t code, const char* format, ...) {
    thread_local std::string message;
    char buf[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buf, sizeof buf, format, args);
    va_end(args);
    message = buf;
    return sy_status{code, message.c_str()};
}

// An error with its status code, for C++ plugin code that throws rather than returns: guarded()
// and publish_plugin() (plugin.hpp) turn it into a status with this code.
class Failure : public std::exception {
  public:
    Failure(int32_t code, std::string message) : code_(code), message_(std::move(message)) {}
    int32_t code() const noexcept { return code_; }
    const char* what() const noexcept override { return message_.c_str(); }

  private:
    int32_t code_;
    std::string message_;
};

// Runs `body` (returning sy_status) and turns any exception into a status naming `fn`: the
// wrapper every C table function of a C++ plugin needs, as nothing may unwind across the ABI.
template <typename Fn>
sy_status guarded(const char* fn, Fn&& body) noexcept {
    try {
        return body();
    } catch (const Failure& e) {
        return error(e.code(), "%s: %s", fn, e.what());
    } catch (const std::bad_alloc&) {
        return error(SY_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
    } catch (const std::exception& e) {
        return error(SY_ERR_BACKEND, "%s: %s", fn, e.what());
    } catch (...) {
        return error(SY_ERR_BACKEND, "%s: unknown failure", fn);
    }
}

inline const char* status_name(int32_t code) {
    switch (code) {
        case SY_OK: return "ok";
        case SY_ERR_INVALID_ARGUMENT: return "invalid argument";
        case SY_ERR_UNSUPPORTED: return "unsupported";
        case SY_ERR_OUT_OF_MEMORY: return "out of memory";
        case SY_ERR_ABI: return "ABI mismatch";
        case SY_ERR_BACKEND: return "backend failure";
        case SY_ERR_REFUSED: return "refused";
        default: return "unknown error";
    }
}

// ---- plugin entry ------------------------------------------------------------------------------

// The checks every sy_plugin_init starts with: non-null arguments, the host's ABI major version,
// and a function table large enough for ABI 1.0 (up to shutdown, without which the host could
// not release the plugin). `plugin` names the plugin in the message.
inline sy_status check_host(const sy_host_api* host, const sy_plugin_api* api, const char* plugin) {
    if (host == nullptr || api == nullptr) {
        return error(SY_ERR_INVALID_ARGUMENT, "%s: sy_plugin_init called with a NULL argument",
                     plugin);
    }
    if (host->struct_size < offsetof(sy_host_api, abi_minor) + sizeof(host->abi_minor)) {
        return error(SY_ERR_ABI, "%s: sy_host_api is too small to hold its ABI version", plugin);
    }
    if (host->abi_major != SY_ABI_VERSION_MAJOR) {
        return error(SY_ERR_ABI,
                     "%s: host speaks plugin ABI %u.%u; this plugin was built for %d.%d", plugin,
                     host->abi_major, host->abi_minor, SY_ABI_VERSION_MAJOR, SY_ABI_VERSION_MINOR);
    }
    if (api->struct_size < offsetof(sy_plugin_api, shutdown) + sizeof(api->shutdown)) {
        return error(SY_ERR_ABI, "%s: sy_plugin_api struct_size %u is smaller than ABI 1.0's",
                     plugin, api->struct_size);
    }
    return ok();
}

// Hands a complete function table to the host: as much of it as the host's struct has room
// for, with struct_size saying how much that was. Sets the ABI version fields.
inline void publish_api(sy_plugin_api table, sy_plugin_api* api) {
    table.abi_major = SY_ABI_VERSION_MAJOR;
    table.abi_minor = SY_ABI_VERSION_MINOR;
    const uint32_t size =
        api->struct_size < sizeof table ? api->struct_size : uint32_t(sizeof table);
    table.struct_size = size;
    std::memcpy(static_cast<void*>(api), &table, size);
}

// ---- 16-bit floats ------------------------------------------------------------------------------

inline float bits_to_f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline uint32_t f32_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float bf16_to_f32(uint16_t h) {
    return bits_to_f32(uint32_t(h) << 16);
}

// Round to nearest even; NaN stays NaN (quiet).
inline uint16_t f32_to_bf16(float f) {
    uint32_t u = f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

inline float fp16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        // zero or subnormal: mant * 2^-24
        float v = std::ldexp(float(mant), -24);
        return sign ? -v : v;
    }
    if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
    return bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

// Round to nearest even, overflow to infinity, NaN stays NaN.
inline uint16_t f32_to_fp16(float f) {
    const uint32_t u = f32_to_bits(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
    if (abs < 0x38800000u) {                                  // below 2^-14: subnormal
        // value = abs_f * 2^24 rounded to an integer number of 2^-24 units
        const float v = bits_to_f32(abs) * 16777216.0f;
        return uint16_t(sign | uint16_t(std::nearbyint(v)));
    }
    uint32_t m = abs + 0xfffu + ((abs >> 13) & 1u) - (112u << 23);
    return uint16_t(sign | uint16_t(m >> 13));
}

// Value of one element of a float-typed tensor (F32, F16, BF16, F64) at `p`.
inline float load_f32(int32_t type, const void* p) {
    switch (type) {
        case SY_TYPE_F32: {
            float v;
            std::memcpy(&v, p, 4);
            return v;
        }
        case SY_TYPE_F16: {
            uint16_t h;
            std::memcpy(&h, p, 2);
            return fp16_to_f32(h);
        }
        case SY_TYPE_BF16: {
            uint16_t h;
            std::memcpy(&h, p, 2);
            return bf16_to_f32(h);
        }
        case SY_TYPE_F64: {
            double v;
            std::memcpy(&v, p, 8);
            return float(v);
        }
        default: return NAN;
    }
}

inline void store_f32(int32_t type, void* p, float v) {
    switch (type) {
        case SY_TYPE_F32: std::memcpy(p, &v, 4); break;
        case SY_TYPE_F16: {
            uint16_t h = f32_to_fp16(v);
            std::memcpy(p, &h, 2);
            break;
        }
        case SY_TYPE_BF16: {
            uint16_t h = f32_to_bf16(v);
            std::memcpy(p, &h, 2);
            break;
        }
        case SY_TYPE_F64: {
            double d = v;
            std::memcpy(p, &d, 8);
            break;
        }
        default: break;
    }
}

// ---- tensor descriptors -----------------------------------------------------------------------

inline bool is_float_type(int32_t type) {
    return type == SY_TYPE_F32 || type == SY_TYPE_F16 || type == SY_TYPE_BF16;
}

inline int64_t nelements(const sy_tensor& t) {
    return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}

inline int64_t nrows(const sy_tensor& t) {
    return t.ne[1] * t.ne[2] * t.ne[3];
}

// Bytes of one packed row of `ne0` elements of `type` (0 if ne0 is not a whole number of blocks),
// the row metadata of the row-scaled types included.
inline int64_t row_bytes(int32_t type, int64_t ne0) {
    const sy_dtype_traits tr = sy_dtype_info(type);
    if (tr.block_size <= 0 || ne0 % tr.block_size != 0) return 0;
    return tr.row_meta_size + ne0 / tr.block_size * tr.type_size;
}

// Bytes spanned by the tensor through its strides: from its first byte to one past its last,
// for any layout (packed, transposed, permuted, broadcast with zero strides).
inline int64_t nbytes(const sy_tensor& t) {
    const sy_dtype_traits tr = sy_dtype_info(t.type);
    if (tr.block_size <= 0 || nelements(t) == 0) return 0;
    int64_t bytes = tr.row_meta_size + tr.type_size + (t.ne[0] / tr.block_size - 1) * t.nb[0];
    for (int d = 1; d < SY_MAX_DIMS; ++d) bytes += (t.ne[d] - 1) * t.nb[d];
    return bytes;
}

// Packed in ggml order: nb0 = element (block) size, each nb[d] = nb[d-1] * ne[d-1].
inline bool is_contiguous(const sy_tensor& t) {
    const sy_dtype_traits tr = sy_dtype_info(t.type);
    if (tr.block_size <= 0) return false;
    if (t.nb[0] != tr.type_size) return false;
    int64_t expect = row_bytes(t.type, t.ne[0]);
    for (int d = 1; d < SY_MAX_DIMS; ++d) {
        if (t.ne[d] > 1 && t.nb[d] != expect) return false;
        expect *= t.ne[d];
    }
    return true;
}

// The host's MemAvailable (/proc/meminfo) in bytes, or 0 when unknown.
inline uint64_t available_memory() {
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (f == nullptr) return 0;
    char line[256];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f))
        found = std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    std::fclose(f);
    return found ? uint64_t(kib) * 1024u : 0;
}

// A copy of `t` that reads only the fields its struct_size holds (a tensor from an older host is
// shorter than this build's sy_tensor: `sy_tensor copy = t` would read past it); the fields it
// lacks are zero, and the copy's struct_size is this build's.
inline sy_tensor copy_tensor(const sy_tensor& t) {
    sy_tensor out{};
    std::memcpy(&out, &t, t.struct_size < sizeof out ? t.struct_size : sizeof out);
    out.struct_size = sizeof out;
    return out;
}

// A packed descriptor over `data` (which may be null while planning).
inline sy_tensor make_tensor(int32_t type, int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1,
                             int64_t ne3 = 1, void* data = nullptr, const char* name = nullptr) {
    sy_tensor t{};
    t.struct_size = sizeof(sy_tensor);
    t.type = type;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = ne2;
    t.ne[3] = ne3;
    const sy_dtype_traits tr = sy_dtype_info(type);
    t.nb[0] = tr.type_size;
    t.nb[1] = row_bytes(type, ne0);
    t.nb[2] = t.nb[1] * ne1;
    t.nb[3] = t.nb[2] * ne2;
    t.data = data;
    t.name = name;
    return t;
}

inline const char* op_name(int32_t op) {
    switch (op) {
        case SY_OP_NONE: return "none";
        case SY_OP_ADD: return "add";
        case SY_OP_MUL: return "mul";
        case SY_OP_SCALE: return "scale";
        case SY_OP_RMS_NORM: return "rms_norm";
        case SY_OP_MUL_MAT: return "mul_mat";
        case SY_OP_MUL_MAT_ID: return "mul_mat_id";
        case SY_OP_GET_ROWS: return "get_rows";
        case SY_OP_ROPE: return "rope";
        case SY_OP_SOFTMAX: return "softmax";
        case SY_OP_SILU: return "silu";
        case SY_OP_GELU: return "gelu";
        case SY_OP_SIGMOID: return "sigmoid";
        case SY_OP_ARGSORT: return "argsort";
        case SY_OP_TOP_K: return "top_k";
        case SY_OP_SUM_ROWS: return "sum_rows";
        case SY_OP_CONCAT: return "concat";
        case SY_OP_CPY: return "cpy";
        case SY_OP_CONT: return "cont";
        case SY_OP_DIV: return "div";
        case SY_OP_DROP_IDS: return "drop_ids";
        case SY_OP_NAMED: return "named";
        default: return nullptr;
    }
}

// One row of a capability table: op, dst type and up to four source types.
constexpr sy_capability capability(int32_t op, int32_t dst, int32_t src0,
                                   int32_t src1 = SY_TYPE_NONE, int32_t src2 = SY_TYPE_NONE,
                                   int32_t src3 = SY_TYPE_NONE) {
    return sy_capability{sizeof(sy_capability), op, nullptr, 0, dst, {src0, src1, src2, src3}};
}

// A node with struct_size set and no sources.
inline sy_node make_node(int32_t op, const sy_tensor* dst) {
    sy_node n{};
    n.struct_size = sizeof(sy_node);
    n.op = op;
    n.dst = dst;
    return n;
}

}  // namespace sy::sdk
