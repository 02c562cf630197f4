// hello: the smallest honest switchyard backend, as a C++ class. One device ("hello device")
// computing one op, SY_OP_ADD on f32 tensors of one shape (any strides, no broadcasting), on
// host memory. sdk::publish_plugin (switchyard/plugin.hpp) makes the C function table: it
// guards every entry, checks pointers and device indices, and fills in the optional entries;
// sdk::HostMemory gives the buffers and copies. A plugin in plain C: ../hello-plugin-c.
#include <cstdio>
#include <cstring>
#include <iterator>

#include "switchyard/host_buffers.hpp"
#include "switchyard/plugin.hpp"

namespace {

using sy::sdk::error;
using sy::sdk::ok;

constexpr sy_capability kCapabilities[] = {
    sy::sdk::capability(SY_OP_ADD, SY_TYPE_F32, SY_TYPE_F32, SY_TYPE_F32),
};

// Why this plugin cannot run `node`, or nullptr if it can.
const char* refusal(const sy_node& node) {
    if (node.op != SY_OP_ADD) return "only add is implemented";
    if (node.dst == nullptr || node.n_src < 2 || !node.src[0] || !node.src[1])
        return "add needs two sources and a destination";
    const sy_tensor &a = *node.src[0], &b = *node.src[1], &d = *node.dst;
    if (a.type != SY_TYPE_F32 || b.type != SY_TYPE_F32 || d.type != SY_TYPE_F32)
        return "only f32 is implemented";
    if (std::memcmp(a.ne, d.ne, sizeof d.ne) || std::memcmp(b.ne, d.ne, sizeof d.ne))
        return "broadcasting is not implemented";
    return nullptr;
}

float& at(const sy_tensor& t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return *reinterpret_cast<float*>(static_cast<char*>(t.data) + i0 * t.nb[0] + i1 * t.nb[1] +
                                     i2 * t.nb[2] + i3 * t.nb[3]);
}

class Hello : public sy::sdk::HostMemory {
  public:
    explicit Hello(const sy_host_api&) {}

    sy_status device_props(int32_t, sy_device_props* p) {
        std::snprintf(p->name, sizeof p->name, "hello device");
        std::snprintf(p->description, sizeof p->description, "example plugin: f32 add");
        p->kind = SY_DEVICE_CPU;
        p->compute_units = 1;
        p->host_memory = 1;
        return ok();
    }

    sy_status capabilities(const sy_capability** rows, size_t* count) {
        *rows = kCapabilities;
        *count = std::size(kCapabilities);
        return ok();
    }

    sy_status supports(int32_t, const sy_node* node, int32_t* supported) {
        *supported = refusal(*node) == nullptr;
        return ok();
    }

    sy_status compute(int32_t, const sy_node* const* nodes, size_t count) {
        for (size_t n = 0; n < count; ++n) {
            if (nodes[n] == nullptr) return error(SY_ERR_INVALID_ARGUMENT, "hello: node is NULL");
            if (const char* why = refusal(*nodes[n]))
                return error(
                    nodes[n]->op == SY_OP_ADD ? SY_ERR_INVALID_ARGUMENT : SY_ERR_UNSUPPORTED,
                    "hello: %s", why);
            const sy_tensor &a = *nodes[n]->src[0], &b = *nodes[n]->src[1], &d = *nodes[n]->dst;
            for (int64_t i3 = 0; i3 < d.ne[3]; ++i3)
                for (int64_t i2 = 0; i2 < d.ne[2]; ++i2)
                    for (int64_t i1 = 0; i1 < d.ne[1]; ++i1)
                        for (int64_t i0 = 0; i0 < d.ne[0]; ++i0)
                            at(d, i0, i1, i2, i3) = at(a, i0, i1, i2, i3) + at(b, i0, i1, i2, i3);
        }
        return ok();
    }
};

}  // namespace

extern "C" SY_EXPORT int32_t sy_plugin_probe(sy_probe_info* info) {
    if (SY_HAS_FIELD(info, score)) *info = {info->struct_size, "hello", "generic", 1};
    return 1;  // runs anywhere
}

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    return sy::sdk::publish_plugin<Hello>(host, api, {"hello", "0.1.0"});
}
