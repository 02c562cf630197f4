// Host-memory buffers for backends that compute on host memory (the CPU and BLAS plugins):
// aligned, host-visible allocations with bounds-checked set/get, and the checks of a
// copy_tensors call. Part of the SDK (Switchyard::validation) so that every host backend
// answers bad buffers and copies with the same messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_set>

#include "switchyard/plugin.h"

namespace sy::sdk {

class HostBuffers {
  public:
    static constexpr uint64_t kAlignment = 64;  // a cache line, and the widest vector load

    HostBuffers() = default;
    ~HostBuffers();  // frees what the host did not
    HostBuffers(const HostBuffers&) = delete;
    HostBuffers& operator=(const HostBuffers&) = delete;

    sy_status alloc(uint64_t size, sy_buffer* buffer);
    sy_status free(sy_buffer* buffer);
    // Bounds-checked copies into and out of a buffer this object allocated.
    sy_status set(const sy_buffer* buffer, uint64_t offset, const void* src, uint64_t size);
    sy_status get(const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t size);

  private:
    struct Allocation {
        void* base;
        uint64_t size;
    };
    // The allocation behind buffer->handle, or an error naming `fn` when the handle is not ours.
    sy_status find(const sy_buffer* buffer, const char* fn, Allocation* out);
    sy_status check_range(const char* fn, const Allocation& a, uint64_t offset, uint64_t size,
                          const void* host_ptr) const;

    std::mutex mutex_;
    std::unordered_set<Allocation*> live_;
};

// Checks every copy of a copy_tensors call on host memory (struct sizes, descriptors inside
// their buffers, same type and shape, packed rows for block types); SY_OK or the first problem.
sy_status validate_host_copies(const sy_copy* copies, size_t count);

// Copies src's bytes to dst (same type and shape, any strides; block types row by row), on the
// calling thread. For copies validate_host_copies accepted.
void copy_tensor_bytes(const sy_tensor& src, const sy_tensor& dst);

// The buffer and copy members of a backend that computes on host memory, for a class published
// with switchyard/plugin.hpp: derive from it, and hide copy_tensors with your own to copy in
// parallel.
class HostMemory {
  public:
    sy_status buffer_alloc(int32_t device, uint64_t size, sy_buffer* buffer) {
        const sy_status s = buffers_.alloc(size, buffer);
        if (s.code == SY_OK) buffer->device = device;
        return s;
    }
    sy_status buffer_free(sy_buffer* buffer) { return buffers_.free(buffer); }
    sy_status buffer_set(const sy_buffer* buffer, uint64_t offset, const void* src, uint64_t size) {
        return buffers_.set(buffer, offset, src, size);
    }
    sy_status buffer_get(const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t size) {
        return buffers_.get(buffer, offset, dst, size);
    }
    sy_status copy_tensors(const sy_copy* copies, size_t count) {
        if (const sy_status s = validate_host_copies(copies, count); s.code != SY_OK) return s;
        for (size_t i = 0; i < count; ++i) copy_tensor_bytes(*copies[i].src, *copies[i].dst);
        return sy_status{SY_OK, nullptr};
    }

  private:
    HostBuffers buffers_;
};

}  // namespace sy::sdk
