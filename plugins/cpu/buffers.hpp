// The CPU device's buffers (the SDK's host buffers) and tensor copies.
#pragma once

#include <cstdint>

#include "switchyard/host_buffers.hpp"
#include "switchyard/plugin.h"

namespace sy::cpu {

class ThreadPool;

using sdk::HostBuffers;

// Validates every copy (same type and shape, sane descriptors, inside their buffers), then
// performs them all; nothing is copied when any one is invalid.
sy_status copy_tensors(ThreadPool& pool, const sy_copy* copies, size_t count);

}  // namespace sy::cpu
