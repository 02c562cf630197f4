#include "buffers.hpp"

#include <cuda_runtime.h>

#include "switchyard/sdk.hpp"

namespace sy::cuda {

DeviceBuffers::~DeviceBuffers() {
    for (auto& [ptr, a] : live_) {
        cudaSetDevice(a.device);
        cudaFree(ptr);
    }
}

sy_status DeviceBuffers::alloc(int32_t device, uint64_t size, sy_buffer* buffer) {
    if (buffer == nullptr || buffer->struct_size < sizeof(sy_buffer))
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "buffer_alloc: the sy_buffer is NULL or its struct_size is too small");
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
        return sdk::error(SY_ERR_BACKEND, "buffer_alloc: cudaSetDevice(%d): %s", device,
                          cudaGetErrorString(e));
    void* ptr = nullptr;
    // A zero-byte buffer still gets a distinct, registered address.
    if (cudaError_t e = cudaMalloc(&ptr, size == 0 ? 1 : size); e != cudaSuccess) {
        cudaGetLastError();  // clear the sticky-free error state of a failed allocation
        size_t free_bytes = 0, total = 0;
        cudaMemGetInfo(&free_bytes, &total);
        return sdk::error(e == cudaErrorMemoryAllocation ? SY_ERR_OUT_OF_MEMORY : SY_ERR_BACKEND,
                          "buffer_alloc: %llu bytes on cuda device %d: %s (%llu of %llu bytes "
                          "free)",
                          (unsigned long long)size, device, cudaGetErrorString(e),
                          (unsigned long long)free_bytes, (unsigned long long)total);
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        live_[ptr] = Allocation{device, size};
    }
    buffer->device = device;
    buffer->handle = ptr;
    buffer->base = ptr;
    buffer->size = size;
    buffer->host_visible = 0;
    return sdk::ok();
}

sy_status DeviceBuffers::free(sy_buffer* buffer) {
    if (buffer == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "buffer_free: NULL buffer");
    Allocation a{};
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = live_.find(buffer->handle);
        if (it == live_.end())
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "buffer_free: %p is not a live buffer of the cuda plugin",
                              buffer->handle);
        a = it->second;
        live_.erase(it);
    }
    cudaSetDevice(a.device);
    if (cudaError_t e = cudaFree(buffer->handle); e != cudaSuccess)
        return sdk::error(SY_ERR_BACKEND, "buffer_free: cudaFree: %s", cudaGetErrorString(e));
    buffer->handle = nullptr;
    buffer->base = nullptr;
    buffer->size = 0;
    return sdk::ok();
}

int32_t DeviceBuffers::device_of(const sy_buffer* buffer) const {
    if (buffer == nullptr) return -1;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(buffer->handle);
    if (it == live_.end() || buffer->base != buffer->handle) return -1;
    return it->second.device;
}

sy_status DeviceBuffers::check(const sy_buffer* buffer, uint64_t offset, uint64_t size,
                               const char* fn) const {
    if (buffer == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: NULL buffer", fn);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(buffer->handle);
    if (it == live_.end() || buffer->base != buffer->handle)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: not a live buffer of the cuda plugin", fn);
    const uint64_t have = it->second.size;
    if (offset > have || size > have - offset)
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: bytes [%llu, %llu) are outside the buffer's %llu bytes", fn,
                          (unsigned long long)offset, (unsigned long long)(offset + size),
                          (unsigned long long)have);
    return sdk::ok();
}

sy_status DeviceBuffers::set(const sy_buffer* buffer, uint64_t offset, const void* src,
                             uint64_t size) {
    if (sy_status s = check(buffer, offset, size, "buffer_set"); s.code) return s;
    if (size == 0) return sdk::ok();
    if (src == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "buffer_set: src is NULL");
    cudaSetDevice(device_of(buffer));
    if (cudaError_t e = cudaMemcpy(static_cast<char*>(buffer->base) + offset, src, size,
                                   cudaMemcpyHostToDevice);
        e != cudaSuccess)
        return sdk::error(SY_ERR_BACKEND, "buffer_set: %s", cudaGetErrorString(e));
    // From pageable memory cudaMemcpy returns once the bytes are staged, before they land; the
    // kernels that read them are on another (non-blocking) stream.
    if (cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy); e != cudaSuccess)
        return sdk::error(SY_ERR_BACKEND, "buffer_set: %s", cudaGetErrorString(e));
    return sdk::ok();
}

sy_status DeviceBuffers::get(const sy_buffer* buffer, uint64_t offset, void* dst,
                             uint64_t size) {
    if (sy_status s = check(buffer, offset, size, "buffer_get"); s.code) return s;
    if (size == 0) return sdk::ok();
    if (dst == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "buffer_get: dst is NULL");
    cudaSetDevice(device_of(buffer));
    if (cudaError_t e = cudaMemcpy(dst, static_cast<const char*>(buffer->base) + offset, size,
                                   cudaMemcpyDeviceToHost);
        e != cudaSuccess)
        return sdk::error(SY_ERR_BACKEND, "buffer_get: %s", cudaGetErrorString(e));
    return sdk::ok();
}

}  // namespace sy::cuda
