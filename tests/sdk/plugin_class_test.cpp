// switchyard/plugin.hpp: the C function table sdk::publish_plugin makes from a C++ class. Its
// entries are called here the way the host calls them, with good and bad arguments.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "switchyard/host_buffers.hpp"
#include "switchyard/plugin.hpp"

namespace {

void* alloc_host(void*, size_t size, size_t alignment) {
    return std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}
void free_host(void*, void* p) {
    std::free(p);
}

sy_host_api host_api() {
    sy_host_api h{};
    h.struct_size = sizeof h;
    h.abi_major = SY_ABI_VERSION_MAJOR;
    h.abi_minor = SY_ABI_VERSION_MINOR;
    h.host_version = "test";
    h.alloc_host = alloc_host;
    h.free_host = free_host;
    return h;
}

std::string message(sy_status s) {
    return s.message ? s.message : "";
}

// Two devices; supports() throws for device 1, estimate() throws a Failure; no optional
// entries beyond those.
class TwoDevices : public sy::sdk::HostMemory {
  public:
    static inline int alive = 0;
    TwoDevices(const sy_host_api& host, int marker) : marker_(marker) {
        if (host.host_version == nullptr) throw std::runtime_error("no host version");
        ++alive;
    }
    ~TwoDevices() { --alive; }
    int32_t device_count() const { return 2; }
    const char* build_info() const { return "two devices"; }
    sy_status device_props(int32_t device, sy_device_props* p) {
        p->compute_units = marker_ + device;
        return sy::sdk::ok();
    }
    sy_status capabilities(const sy_capability** rows, size_t* count) {
        *rows = nullptr;
        *count = 0;
        return sy::sdk::ok();
    }
    sy_status supports(int32_t device, const sy_node*, int32_t* supported) {
        if (device == 1) throw std::runtime_error("device 1 is busy");
        *supported = 1;
        return sy::sdk::ok();
    }
    sy_status estimate(int32_t, const sy_node*, double*) {
        throw sy::sdk::Failure(SY_ERR_UNSUPPORTED, "no estimate for this node");
    }
    sy_status compute(int32_t, const sy_node* const*, size_t) { return sy::sdk::ok(); }

  private:
    int marker_;
};

class Refusing : public sy::sdk::HostMemory {
  public:
    explicit Refusing(const sy_host_api&) { throw std::runtime_error("libfoo.so is missing"); }
    sy_status device_props(int32_t, sy_device_props*) { return sy::sdk::ok(); }
    sy_status capabilities(const sy_capability**, size_t*) { return sy::sdk::ok(); }
    sy_status supports(int32_t, const sy_node*, int32_t*) { return sy::sdk::ok(); }
    sy_status compute(int32_t, const sy_node* const*, size_t) { return sy::sdk::ok(); }
};

struct Published {
    sy_plugin_api api{};
    Published() {
        api.struct_size = sizeof api;
        const sy_host_api h = host_api();
        const sy_status s = sy::sdk::publish_plugin<TwoDevices>(&h, &api, {"two", "1.2.3"}, 40);
        EXPECT_EQ(s.code, SY_OK) << message(s);
    }
    ~Published() { api.shutdown(api.ctx); }
};

TEST(PluginClass, TableNamesTheBackendAndLeavesOutWhatTheClassLacks) {
    Published p;
    EXPECT_EQ(p.api.abi_major, uint32_t(SY_ABI_VERSION_MAJOR));
    EXPECT_EQ(p.api.struct_size, uint32_t(sizeof(sy_plugin_api)));
    EXPECT_STREQ(p.api.name, "two");
    EXPECT_STREQ(p.api.version, "1.2.3");
    EXPECT_STREQ(p.api.build_info, "two devices");
    EXPECT_NE(p.api.estimate, nullptr);
    EXPECT_EQ(p.api.cost_params, nullptr);
    EXPECT_EQ(p.api.named_ops, nullptr);
    EXPECT_EQ(p.api.set_option, nullptr);
    EXPECT_EQ(p.api.release_constants, nullptr);
    EXPECT_NE(p.api.synchronize, nullptr);  // the default: nothing to wait for
    EXPECT_EQ(p.api.synchronize(p.api.ctx, 1).code, SY_OK);
    int32_t n = 0;
    EXPECT_EQ(p.api.device_count(p.api.ctx, &n).code, SY_OK);
    EXPECT_EQ(n, 2);
    EXPECT_EQ(TwoDevices::alive, 1);
}

TEST(PluginClass, DeviceIndicesAndNullPointersAreRefusedBeforeTheClassRuns) {
    Published p;
    sy_node node = sy::sdk::make_node(SY_OP_ADD, nullptr);
    int32_t supported = 0;
    sy_status s = p.api.supports(p.api.ctx, 2, &node, &supported);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(message(s), "supports: device 2 does not exist (the two plugin has 2)");
    s = p.api.compute(p.api.ctx, -1, nullptr, 0);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(message(s), "compute: device -1 does not exist (the two plugin has 2)");
    s = p.api.supports(p.api.ctx, 0, &node, nullptr);
    EXPECT_EQ(s.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(message(s), "supports: a pointer argument is NULL");
    EXPECT_EQ(p.api.device_count(p.api.ctx, nullptr).code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(p.api.compute(p.api.ctx, 0, nullptr, 3).code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(p.api.buffer_set(p.api.ctx, nullptr, 0, nullptr, 0).code, SY_ERR_INVALID_ARGUMENT);
}

TEST(PluginClass, ExceptionsBecomeStatusesNamingTheEntry) {
    Published p;
    sy_node node = sy::sdk::make_node(SY_OP_ADD, nullptr);
    int32_t supported = 0;
    sy_status s = p.api.supports(p.api.ctx, 1, &node, &supported);
    EXPECT_EQ(s.code, SY_ERR_BACKEND);
    EXPECT_EQ(message(s), "supports: device 1 is busy");
    double ns = 0;
    s = p.api.estimate(p.api.ctx, 0, &node, &ns);
    EXPECT_EQ(s.code, SY_ERR_UNSUPPORTED);
    EXPECT_EQ(message(s), "estimate: no estimate for this node");
}

TEST(PluginClass, DevicePropsFillOnlyWhatTheHostsStructHolds) {
    Published p;
    sy_device_props props{};
    props.struct_size = sizeof props;
    ASSERT_EQ(p.api.device_props(p.api.ctx, 1, &props).code, SY_OK);
    EXPECT_EQ(props.compute_units, 41);
    EXPECT_EQ(props.struct_size, uint32_t(sizeof props));
    sy_device_props small{};
    small.struct_size = 8;  // smaller than ABI 1.0's struct
    const sy_status s = p.api.device_props(p.api.ctx, 0, &small);
    EXPECT_EQ(s.code, SY_ERR_ABI);
    EXPECT_NE(message(s).find("struct_size 8 is smaller than ABI 1.0's"), std::string::npos);
}

TEST(PluginClass, HostMemoryGivesCheckedBuffersOnTheAskedDevice) {
    Published p;
    sy_buffer b{};
    b.struct_size = sizeof b;
    ASSERT_EQ(p.api.buffer_alloc(p.api.ctx, 1, 64, &b).code, SY_OK);
    EXPECT_EQ(b.device, 1);
    EXPECT_EQ(b.host_visible, 1);
    const char text[] = "switchyard";
    EXPECT_EQ(p.api.buffer_set(p.api.ctx, &b, 60, text, sizeof text).code, SY_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(p.api.buffer_set(p.api.ctx, &b, 8, text, sizeof text).code, SY_OK);
    char back[sizeof text] = {};
    ASSERT_EQ(p.api.buffer_get(p.api.ctx, &b, 8, back, sizeof back).code, SY_OK);
    EXPECT_STREQ(back, text);
    EXPECT_EQ(p.api.buffer_free(p.api.ctx, &b).code, SY_OK);
    EXPECT_EQ(p.api.buffer_free(p.api.ctx, &b).code, SY_ERR_INVALID_ARGUMENT);  // twice
}

TEST(PluginClass, AConstructorThatThrowsRefusesTheLoadWithItsReason) {
    sy_plugin_api api{};
    api.struct_size = sizeof api;
    const sy_host_api h = host_api();
    sy_status s = sy::sdk::publish_plugin<Refusing>(&h, &api, {"foo", "0.1"});
    EXPECT_EQ(s.code, SY_ERR_REFUSED);
    EXPECT_EQ(message(s), "foo: libfoo.so is missing");
    EXPECT_EQ(api.shutdown, nullptr);  // nothing published

    sy_host_api other = host_api();
    other.abi_major = SY_ABI_VERSION_MAJOR + 1;
    s = sy::sdk::publish_plugin<TwoDevices>(&other, &api, {"two", "1"}, 0);
    EXPECT_EQ(s.code, SY_ERR_ABI);
    EXPECT_EQ(TwoDevices::alive, 0);
}

TEST(PluginClass, AShortHostTableGetsOnlyTheEntriesItHasRoomFor) {
    sy_plugin_api api{};
    api.struct_size = offsetof(sy_plugin_api, release_constants);  // an ABI 1.0 host
    const sy_host_api h = host_api();
    ASSERT_EQ(sy::sdk::publish_plugin<TwoDevices>(&h, &api, {"two", "1"}, 0).code, SY_OK);
    EXPECT_EQ(api.struct_size, uint32_t(offsetof(sy_plugin_api, release_constants)));
    api.shutdown(api.ctx);
    EXPECT_EQ(TwoDevices::alive, 0);
}

}  // namespace
