// Host-memory buffers of the CPU device (64-byte aligned, host-visible) and tensor copies.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_set>

#include "switchyard/plugin.h"

namespace sy::cpu {

class ThreadPool;

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

// Validates every copy (same type and shape, sane descriptors, inside their buffers), then
// performs them all; nothing is copied when any one is invalid.
sy_status copy_tensors(ThreadPool& pool, const sy_copy* copies, size_t count);

}  // namespace sy::cpu
