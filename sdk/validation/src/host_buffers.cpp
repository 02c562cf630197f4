#include "switchyard/host_buffers.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "switchyard/sdk.hpp"
#include "switchyard/validation.hpp"

namespace sy::sdk {

HostBuffers::~HostBuffers() {
    for (Allocation* a : live_) {
        std::free(a->base);
        delete a;
    }
}

namespace {
constexpr uint64_t kHugePage = uint64_t(2) << 20;
}  // namespace

sy_status HostBuffers::alloc(uint64_t size, sy_buffer* buffer) {
    if (buffer == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "buffer_alloc: buffer is NULL");
    if (!SY_HAS_FIELD(buffer, host_visible))
        return sdk::error(SY_ERR_ABI,
                          "buffer_alloc: sy_buffer struct_size %u is too small (ABI 1.0 needs %zu)",
                          buffer->struct_size, sizeof(sy_buffer));
    // aligned_alloc wants a multiple of the alignment; a zero-byte buffer still gets a base.
    if (size > UINT64_MAX - kHugePage)
        return sdk::error(SY_ERR_OUT_OF_MEMORY, "buffer_alloc: %llu bytes is not allocatable",
                          (unsigned long long)size);
    // Buffers of 2 MiB or more start on a 2 MiB boundary and are advised for transparent huge
    // pages (streaming reads through 4 KiB pages measured slower:
    // docs/design-measurements.md#host-buffers-huge-pages).
    const uint64_t align = size >= kHugePage ? kHugePage : kAlignment;
    const uint64_t rounded = size == 0 ? align : (size + align - 1) / align * align;
    void* base = rounded <= SIZE_MAX ? std::aligned_alloc(size_t(align), size_t(rounded)) : nullptr;
    if (base != nullptr && align == kHugePage) ::madvise(base, size_t(rounded), MADV_HUGEPAGE);
    if (base == nullptr)
        return sdk::error(SY_ERR_OUT_OF_MEMORY,
                          "buffer_alloc: cannot allocate %llu bytes of host memory",
                          (unsigned long long)size);
    auto* a = new Allocation{base, size};
    {
        std::lock_guard lock(mutex_);
        live_.insert(a);
    }
    buffer->device = 0;
    buffer->handle = a;
    buffer->base = base;
    buffer->size = size;
    buffer->host_visible = 1;
    return sdk::ok();
}

sy_status HostBuffers::free(sy_buffer* buffer) {
    if (buffer == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "buffer_free: buffer is NULL");
    Allocation* a = static_cast<Allocation*>(buffer->handle);
    {
        std::lock_guard lock(mutex_);
        if (live_.erase(a) == 0)
            return sdk::error(
                SY_ERR_INVALID_ARGUMENT,
                "buffer_free: the buffer was not allocated by this plugin or was already freed");
    }
    std::free(a->base);
    delete a;
    buffer->handle = nullptr;
    buffer->base = nullptr;
    buffer->size = 0;
    return sdk::ok();
}

sy_status HostBuffers::find(const sy_buffer* buffer, const char* fn, Allocation* out) {
    if (buffer == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: buffer is NULL", fn);
    std::lock_guard lock(mutex_);
    const auto it = live_.find(static_cast<Allocation*>(buffer->handle));
    if (it == live_.end())
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: the buffer was not allocated by this plugin "
                          "or was already freed",
                          fn);
    *out = **it;
    return sdk::ok();
}

sy_status HostBuffers::check_range(const char* fn, const Allocation& a, uint64_t offset,
                                   uint64_t size, const void* host_ptr) const {
    if (offset > a.size || size > a.size - offset)
        return sdk::error(
            SY_ERR_INVALID_ARGUMENT, "%s: offset %llu + size %llu exceeds the buffer's %llu bytes",
            fn, (unsigned long long)offset, (unsigned long long)size, (unsigned long long)a.size);
    if (size > 0 && host_ptr == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: host pointer is NULL for %llu bytes", fn,
                          (unsigned long long)size);
    return sdk::ok();
}

sy_status HostBuffers::set(const sy_buffer* buffer, uint64_t offset, const void* src,
                           uint64_t size) {
    Allocation a{};
    if (sy_status s = find(buffer, "buffer_set", &a); s.code) return s;
    if (sy_status s = check_range("buffer_set", a, offset, size, src); s.code) return s;
    if (size > 0) std::memcpy(static_cast<char*>(a.base) + offset, src, size_t(size));
    return sdk::ok();
}

sy_status HostBuffers::get(const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t size) {
    Allocation a{};
    if (sy_status s = find(buffer, "buffer_get", &a); s.code) return s;
    if (sy_status s = check_range("buffer_get", a, offset, size, dst); s.code) return s;
    if (size > 0) std::memcpy(dst, static_cast<const char*>(a.base) + offset, size_t(size));
    return sdk::ok();
}

namespace {

bool same_shape(const sy_tensor& a, const sy_tensor& b) {
    for (int d = 0; d < SY_MAX_DIMS; ++d)
        if (a.ne[d] != b.ne[d]) return false;
    return true;
}

std::string shape_text(const sy_tensor& t) {
    return "{" + std::to_string(t.ne[0]) + ", " + std::to_string(t.ne[1]) + ", " +
           std::to_string(t.ne[2]) + ", " + std::to_string(t.ne[3]) + "}";
}

sy_status validate_copy(const sy_copy& c, size_t index) {
    const std::string context = "copy_tensors[" + std::to_string(index) + "]";
    if (c.struct_size < sizeof(sy_copy))
        return sdk::error(SY_ERR_ABI, "%s: sy_copy struct_size %u is too small", context.c_str(),
                          c.struct_size);
    if (c.src == nullptr || c.dst == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: src or dst is NULL", context.c_str());
    for (const auto& [t, role] : {std::pair{c.src, "src"}, std::pair{c.dst, "dst"}})
        if (sy_status s = validation::validate_tensor(t, role, context.c_str(),
                                                      validation::DataChecks::kFull, true);
            s.code)
            return s;
    if (c.src->type != c.dst->type || !same_shape(*c.src, *c.dst))
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: src %s %s and dst %s %s differ in type or shape", context.c_str(),
                          sy_dtype_info(c.src->type).name, shape_text(*c.src).c_str(),
                          sy_dtype_info(c.dst->type).name, shape_text(*c.dst).c_str());
    const sy_dtype_traits tr = sy_dtype_info(c.src->type);
    if (tr.block_size > 1 && (c.src->nb[0] != tr.type_size || c.dst->nb[0] != tr.type_size))
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: rows of a block-quantized tensor must be packed (nb0 = %d)",
                          context.c_str(), tr.type_size);
    return sdk::ok();
}

}  // namespace

sy_status validate_host_copies(const sy_copy* copies, size_t count) {
    if (count > 0 && copies == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "copy_tensors: copies is NULL for %zu copies",
                          count);
    for (size_t i = 0; i < count; ++i)
        if (sy_status s = validate_copy(copies[i], i); s.code) return s;
    return sdk::ok();
}

void copy_tensor_bytes(const sy_tensor& src, const sy_tensor& dst) {
    const sy_dtype_traits tr = sy_dtype_info(src.type);
    const int64_t row = row_bytes(src.type, src.ne[0]);
    // Block types have packed rows (validate_copy checks nb0 = block bytes): whole rows.
    const bool packed =
        tr.block_size > 1 || (src.nb[0] == tr.type_size && dst.nb[0] == tr.type_size);
    for (int64_t i3 = 0; i3 < src.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < src.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < src.ne[1]; ++i1) {
                const char* s = static_cast<const char*>(src.data) + i1 * src.nb[1] +
                                i2 * src.nb[2] + i3 * src.nb[3];
                char* d =
                    static_cast<char*>(dst.data) + i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3];
                if (packed) {
                    std::memcpy(d, s, size_t(row));
                    continue;
                }
                for (int64_t i0 = 0; i0 < src.ne[0]; ++i0)
                    std::memcpy(d + i0 * dst.nb[0], s + i0 * src.nb[0], size_t(tr.type_size));
            }
}

}  // namespace sy::sdk
