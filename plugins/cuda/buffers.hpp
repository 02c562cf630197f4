// Device buffers: cudaMalloc'd memory the host addresses only through buffer_set/buffer_get and
// copies. Every buffer this plugin hands out is registered, so a tensor whose buffer is foreign,
// freed, or on another device is refused with a message instead of being dereferenced.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "switchyard/plugin.h"

namespace sy::cuda {

class DeviceBuffers {
  public:
    DeviceBuffers() = default;
    ~DeviceBuffers();  // frees what the host did not
    DeviceBuffers(const DeviceBuffers&) = delete;
    DeviceBuffers& operator=(const DeviceBuffers&) = delete;

    sy_status alloc(int32_t device, uint64_t size, sy_buffer* buffer);
    sy_status free(sy_buffer* buffer);
    sy_status set(const sy_buffer* buffer, uint64_t offset, const void* src, uint64_t size);
    sy_status get(const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t size);

    // The device of a buffer this plugin allocated and has not freed, or -1.
    int32_t device_of(const sy_buffer* buffer) const;

  private:
    sy_status check(const sy_buffer* buffer, uint64_t offset, uint64_t size,
                    const char* fn) const;

    struct Allocation {
        int32_t device;
        uint64_t size;
    };
    mutable std::mutex mutex_;
    std::unordered_map<void*, Allocation> live_;  // by device address
};

}  // namespace sy::cuda
