// copy_tensors: moving a tensor's bytes between host memory (no buffer, or another plugin's
// host-visible buffer) and this plugin's device buffers, in either direction or within a device.
// Packed tensors move with one cudaMemcpy; strided ones are packed on the side that holds them
// (on the host by a row loop, on the device by the copy kernel) and moved packed.
#include <cstring>
#include <vector>

#include "capabilities.hpp"
#include "cuda_backend.hpp"
#include "ops/ops.hpp"
#include "switchyard/sdk.hpp"
#include "switchyard/validation.hpp"

namespace sy::cuda {
namespace {

// A block-quantized tensor seen as whole blocks of bytes (the copy kernel moves elements of at
// most 8 bytes, so blocks are described as rows of single bytes: nb0 must then be the block
// size, which a block tensor's rows always are when they are packed).
TensorDesc unit_desc(const sy_tensor& t) {
    TensorDesc d = desc_of(t);
    const sy_dtype_traits tr = sy_dtype_info(t.type);
    if (tr.block_size > 1) {
        d.type = SY_TYPE_I8;
        d.ne[0] = sdk::row_bytes(t.type, t.ne[0]);  // a row-scaled type's scale included
        d.nb[0] = 1;
    }
    return d;
}

// Bytes of one packed copy of t.
uint64_t packed_bytes(const sy_tensor& t) {
    return uint64_t(sdk::nbytes(t));
}

// Host-side gather (pack = true: strided t -> packed) or scatter (packed -> strided t).
void host_pack(const sy_tensor& t, char* packed, bool pack) {
    const sy_dtype_traits tr = sy_dtype_info(t.type);
    // Block types have packed rows (nb0 = block bytes, checked): a row is one unit of its bytes,
    // a row-scaled type's scale included.
    const bool blocks = tr.block_size > 1;
    const int64_t units = blocks ? 1 : t.ne[0];
    const int64_t unit = blocks ? sdk::row_bytes(t.type, t.ne[0]) : tr.type_size;
    char* base = static_cast<char*>(t.data);
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1) {
                char* row = base + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
                for (int64_t u = 0; u < units; ++u, packed += unit) {
                    if (pack)
                        std::memcpy(packed, row + u * t.nb[0], size_t(unit));
                    else
                        std::memcpy(row + u * t.nb[0], packed, size_t(unit));
                }
            }
}

}  // namespace

sy_status CudaBackend::copy_tensors(const sy_copy* copies, size_t count) {
    if (count > 0 && copies == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "copy_tensors: copies is NULL for %zu copies",
                          count);
    settle(-1);  // the copies are not on the devices' streams
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < count; ++i)
        if (sy_status s = copy_one(copies[i], i); s.code) return s;
    return sdk::ok();
}

sy_status CudaBackend::copy_one(const sy_copy& c, size_t index) {
    const std::string context = "copy_tensors[" + std::to_string(index) + "]";
    if (c.struct_size < sizeof(sy_copy))
        return sdk::error(SY_ERR_ABI, "%s: sy_copy struct_size %u is too small", context.c_str(),
                          c.struct_size);
    if (c.src == nullptr || c.dst == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: src or dst is NULL", context.c_str());
    for (const auto& [t, role] : {std::pair{c.src, "src"}, std::pair{c.dst, "dst"}})
        if (sy_status s = validation::validate_tensor(t, role, context.c_str(),
                                                      validation::DataChecks::kFull, false);
            s.code)
            return s;
    const sy_tensor& src = *c.src;
    const sy_tensor& dst = *c.dst;
    bool same_shape = src.type == dst.type;
    for (int d = 0; d < SY_MAX_DIMS; ++d) same_shape = same_shape && src.ne[d] == dst.ne[d];
    if (!same_shape)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: src and dst differ in type or shape",
                          context.c_str());
    if (sdk::nelements(src) == 0) return sdk::ok();

    // Each side: one of this plugin's buffers (its device), or host memory (-1). A buffer this
    // plugin did not allocate is host memory only if its owner says the host can read it.
    auto side = [&](const sy_tensor& t, const char* role, int32_t* device) -> sy_status {
        *device = buffers_.device_of(t.buffer);
        if (*device >= 0 || t.buffer == nullptr || t.buffer->host_visible) return sdk::ok();
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: %s lives in another plugin's device buffer, which the cuda plugin "
                          "cannot reach",
                          context.c_str(), role);
    };
    int32_t src_dev = -1, dst_dev = -1;
    if (sy_status s = side(src, "src", &src_dev); s.code) return s;
    if (sy_status s = side(dst, "dst", &dst_dev); s.code) return s;
    const sy_dtype_traits tr = sy_dtype_info(src.type);
    for (const auto& [t, dev] : {std::pair{&src, src_dev}, std::pair{&dst, dst_dev}})
        if (dev >= 0 && tr.block_size > 1 && t->nb[0] != tr.type_size)
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "%s: a block-quantized tensor in device memory must have whole "
                              "blocks adjacent (nb0 = %lld, block size %lld)",
                              context.c_str(), (long long)t->nb[0], (long long)tr.type_size);
    if (src_dev >= 0 && dst_dev >= 0 && src_dev != dst_dev && !sdk::is_contiguous(src))
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: a strided copy between two cuda devices is not supported",
                          context.c_str());

    const uint64_t bytes = packed_bytes(src);
    const bool src_packed = sdk::is_contiguous(src), dst_packed = sdk::is_contiguous(dst);
    if (src_packed && dst_packed) {
        if (cudaError_t e = cudaMemcpy(dst.data, src.data, bytes, cudaMemcpyDefault);
            e != cudaSuccess)
            return sdk::error(SY_ERR_BACKEND, "%s: cudaMemcpy: %s", context.c_str(),
                              cudaGetErrorString(e));
        // Device to device, or from pageable memory, it may return before the bytes land.
        if (cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy); e != cudaSuccess)
            return sdk::error(SY_ERR_BACKEND, "%s: %s", context.c_str(), cudaGetErrorString(e));
        return sdk::ok();
    }
    if (src_dev < 0 && dst_dev < 0) {  // host to host, strided
        std::vector<char> packed(bytes);
        host_pack(src, packed.data(), true);
        host_pack(dst, packed.data(), false);
        return sdk::ok();
    }

    // At least one side on a device: pack there with the copy kernel.
    Device& d = devices_[size_t(dst_dev >= 0 ? dst_dev : src_dev)];
    cudaSetDevice(d.ordinal);
    try {
        d.scratch->reset();
        const OpContext ctx{d.stream, d.cublas, d.scratch.get(), d.error_word, 0};
        const TensorDesc s_desc = unit_desc(src), d_desc = unit_desc(dst);
        if (src_dev >= 0 && dst_dev >= 0) {
            convert_tensor(ctx, d_desc, s_desc);
        } else if (dst_dev >= 0) {  // host -> device
            std::vector<char> host(src_packed ? 0 : bytes);
            if (!src_packed) host_pack(src, host.data(), true);
            void* staged = ctx.scratch->take(bytes);
            if (cudaError_t e = cudaMemcpyAsync(staged, src_packed ? src.data : host.data(),
                                                bytes, cudaMemcpyHostToDevice, d.stream);
                e != cudaSuccess)
                throw LaunchError(std::string("cudaMemcpy: ") + cudaGetErrorString(e));
            convert_tensor(ctx, d_desc, packed_desc(staged, s_desc.type, s_desc.ne));
            cudaStreamSynchronize(d.stream);  // `host` must outlive the copy
        } else {  // device -> host
            void* staged = ctx.scratch->take(bytes);
            convert_tensor(ctx, packed_desc(staged, s_desc.type, s_desc.ne), s_desc);
            std::vector<char> host(dst_packed ? 0 : bytes);
            if (cudaError_t e = cudaMemcpyAsync(dst_packed ? dst.data : host.data(), staged,
                                                bytes, cudaMemcpyDeviceToHost, d.stream);
                e != cudaSuccess)
                throw LaunchError(std::string("cudaMemcpy: ") + cudaGetErrorString(e));
            cudaStreamSynchronize(d.stream);
            if (!dst_packed) host_pack(dst, host.data(), false);
        }
    } catch (const LaunchError& e) {
        cudaStreamSynchronize(d.stream);
        return sdk::error(SY_ERR_BACKEND, "%s: %s", context.c_str(), e.what());
    }
    if (cudaError_t e = cudaStreamSynchronize(d.stream); e != cudaSuccess)
        return sdk::error(SY_ERR_BACKEND, "%s: %s", context.c_str(), cudaGetErrorString(e));
    return sdk::ok();
}

}  // namespace sy::cuda
