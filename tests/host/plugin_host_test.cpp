#include "switchyard/core/plugin_host.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "switchyard/sdk.hpp"

namespace fs = std::filesystem;
using sy::PluginHost;

namespace {

const fs::path broken_dir = SY_TEST_BROKEN_DIR;
const fs::path plugin_dir = SY_TEST_PLUGIN_DIR;

fs::path broken(const std::string& name) {
    return broken_dir / ("libswitchyard-" + name + ".so");
}

// Loads one file explicitly and returns the single failure line it produced.
std::string failure_of(const fs::path& file) {
    PluginHost host;
    EXPECT_FALSE(host.load_path(file, true));
    EXPECT_TRUE(host.plugins().empty());
    EXPECT_EQ(host.failures().size(), 1u);
    EXPECT_TRUE(host.any_requested_failure());
    return host.failures().empty() ? "" : host.failures().front().reason;
}

}  // namespace

TEST(PluginHost, MissingFileIsNamed) {
    const std::string why = failure_of(broken_dir / "libswitchyard-absent.so");
    EXPECT_NE(why.find("libswitchyard-absent.so"), std::string::npos) << why;
    EXPECT_NE(why.find("no such file"), std::string::npos) << why;
}

TEST(PluginHost, MissingEntrySymbol) {
    const std::string why = failure_of(broken("noentry"));
    EXPECT_NE(why.find("libswitchyard-noentry.so"), std::string::npos) << why;
    EXPECT_NE(why.find("no entry symbol 'sy_plugin_init'"), std::string::npos) << why;
}

TEST(PluginHost, WrongAbiVersion) {
    const std::string why = failure_of(broken("wrongabi"));
    EXPECT_NE(why.find("ABI mismatch"), std::string::npos) << why;
    EXPECT_NE(why.find("plugin built for ABI " + std::to_string(SY_ABI_VERSION_MAJOR + 1)),
              std::string::npos)
        << why;
}

TEST(PluginHost, PluginRefusesAtInit) {
    const std::string why = failure_of(broken("refuses"));
    EXPECT_NE(why.find("refused: no compatible device found"), std::string::npos) << why;
}

TEST(PluginHost, VariantThatCannotRunHere) {
    const std::string why = failure_of(broken("probezero"));
    EXPECT_NE(why.find("cannot run on this machine"), std::string::npos) << why;
}

TEST(PluginHost, MissingSharedLibraryDependency) {
    const std::string why = failure_of(broken("missingdep"));
    EXPECT_NE(why.find("libswitchyard-missingdep.so"), std::string::npos) << why;
    EXPECT_NE(why.find("libsy_test_dependency.so"), std::string::npos) << why;
}

TEST(PluginHost, NotASharedObject) {
    const std::string why = failure_of(broken("notelf"));
    EXPECT_NE(why.find("cannot load"), std::string::npos) << why;
}

TEST(PluginHost, PluginThatSupportsNothingLoadsAndSaysSo) {
    PluginHost host;
    ASSERT_TRUE(host.load_path(broken("nothing"), true));
    sy::Plugin* p = host.find("nothing");
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->capabilities().empty());
    EXPECT_FALSE(p->estimate(0, sy_node{}).has_value());  // no estimate(): the host falls back
    float a[4] = {1, 2, 3, 4}, out[4] = {};
    sy_tensor ta = sy::sdk::make_tensor(SY_TYPE_F32, 4, 1, 1, 1, a);
    sy_tensor to = sy::sdk::make_tensor(SY_TYPE_F32, 4, 1, 1, 1, out);
    sy_node node = sy::sdk::make_node(SY_OP_ADD, &to);
    node.n_src = 2;
    node.src[0] = &ta;
    node.src[1] = &ta;
    EXPECT_FALSE(p->supports(0, node));
    EXPECT_THROW(p->alloc(0, 16), sy::Error);
}

TEST(PluginHost, BrokenPluginsDoNotStopTheOthers) {
    PluginHost host;
    sy::PluginHostConfig config;
    config.search_paths = {broken_dir, plugin_dir};
    host.load(config);
    EXPECT_NE(host.find("cpu"), nullptr);
    EXPECT_NE(host.find("nothing"), nullptr);
    EXPECT_NE(host.find("widerows"), nullptr);
    // noentry, wrongabi, refuses, probezero, missingdep, notelf, hugecount, rowsize, badnamedop
    // (shortbuffer loads: only an allocation shows its fault)
    EXPECT_EQ(host.failures().size(), 9u);
    EXPECT_FALSE(host.any_requested_failure()) << "found, not asked for: not an error";
    for (const sy::PluginFailure& f : host.failures()) {
        EXPECT_EQ(f.reason.find('\n'), std::string::npos) << "one line: " << f.reason;
    }
}

TEST(PluginHost, ExplicitRequestOfBrokenPluginIsAnError) {
    PluginHost host;
    sy::PluginHostConfig config;
    config.search_paths = {broken_dir, plugin_dir};
    config.load = {"cpu", "wrongabi"};
    host.load(config);
    EXPECT_NE(host.find("cpu"), nullptr);
    EXPECT_EQ(host.find("nothing"), nullptr) << "an explicit list loads only what it names";
    EXPECT_TRUE(host.any_requested_failure());
}

TEST(PluginHost, UnknownNameIsReportedWithSearchPaths) {
    PluginHost host;
    EXPECT_FALSE(host.load_name("nosuchbackend", {broken_dir}, true));
    ASSERT_EQ(host.failures().size(), 1u);
    EXPECT_NE(host.failures()[0].reason.find("nosuchbackend"), std::string::npos);
    EXPECT_NE(host.failures()[0].reason.find(broken_dir.string()), std::string::npos);
}

TEST(PluginHost, LoadsTheBestCpuVariantThisMachineCanRun) {
    PluginHost host;
    ASSERT_TRUE(host.load_name("cpu", {plugin_dir}, true)) << host.failures().front().reason;
    const sy::Plugin* cpu = host.find("cpu");
    ASSERT_NE(cpu, nullptr);
    // Every other variant file must score no higher than the one chosen.
    for (const auto& entry : fs::directory_iterator(plugin_dir)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with("libswitchyard-cpu") || entry.path() == cpu->file()) continue;
        PluginHost other;
        if (other.load_path(entry.path(), true)) {
            EXPECT_LE(other.plugins()[0]->score(), cpu->score()) << name;
        }
    }
    EXPECT_GE(cpu->device_count(), 1);
}

TEST(PluginHost, PluginOptionsReachThePlugin) {
    PluginHost host;
    ASSERT_TRUE(host.load_name("cpu", {plugin_dir}, true));
    sy::Plugin* cpu = host.find("cpu");
    EXPECT_TRUE(cpu->set_option("threads", "2"));
    EXPECT_FALSE(cpu->set_option("no_such_option", "1"));
    EXPECT_THROW(cpu->set_option("threads", "many"), sy::Error);
}

TEST(PluginHost, BuffersAreFreedBeforeThePluginUnloads) {
    // A Buffer that outlives nothing: freed through its plugin, then the host unloads in
    // reverse order. Under ASan a use-after-unload or leak here fails the run.
    PluginHost host;
    ASSERT_TRUE(host.load_name("cpu", {plugin_dir}, true));
    sy::Plugin* cpu = host.find("cpu");
    {
        sy::Buffer b = cpu->alloc(0, 1 << 20);
        ASSERT_TRUE(b.host_visible());
        std::vector<uint8_t> pattern(1 << 20, 0x5a), back(1 << 20);
        cpu->set(b, 0, pattern.data(), pattern.size());
        cpu->get(b, 0, back.data(), back.size());
        EXPECT_EQ(pattern, back);
        EXPECT_THROW(cpu->set(b, (1 << 20) - 4, pattern.data(), 8), sy::Error)
            << "writing past the end must be refused";
    }
}

// What a loaded plugin returns is not trusted either: rows are walked with the size the plugin
// declares in them, counts are bounded, a buffer must be as large as asked. (wrongabi's shutdown
// aborts: the host never calls into a table it refused, so the tests above survive it.)
namespace {

sy::Plugin& only_plugin(PluginHost& host, const fs::path& file) {
    EXPECT_TRUE(host.load_path(file, true)) << file;
    EXPECT_EQ(host.plugins().size(), 1u);
    return *host.plugins().front();
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const sy::Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(PluginHost, RowsAreWalkedWithTheirDeclaredSize) {
    PluginHost host;
    sy::Plugin& p = only_plugin(host, broken("widerows"));
    const std::vector<sy_capability> rows = p.capabilities();
    ASSERT_EQ(rows.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(rows[size_t(i)].struct_size, sizeof(sy_capability));
        EXPECT_EQ(rows[size_t(i)].op, SY_OP_ADD + i);
        EXPECT_EQ(rows[size_t(i)].dst_type, SY_TYPE_F32);
        EXPECT_EQ(rows[size_t(i)].src_type[1], SY_TYPE_F32);
        EXPECT_EQ(rows[size_t(i)].src_type[2], SY_TYPE_NONE);
    }
}

TEST(PluginHost, HugeRowCountIsRefusedAtLoad) {
    const std::string why = failure_of(broken("hugecount"));
    EXPECT_NE(why.find("libswitchyard-hugecount.so: hugecount.capabilities: 1099511627776 rows, "
                       "more than 65536"),
              std::string::npos)
        << why;
}

TEST(PluginHost, RowStructSizeBelowTheKnownFieldsIsRefusedAtLoad) {
    const std::string why = failure_of(broken("rowsize"));
    EXPECT_NE(why.find("rowsize.capabilities: rows declare struct_size 4 (this host reads "),
              std::string::npos)
        << why;
}

TEST(PluginHost, NamedOpWithoutANamespaceIsRefusedAtLoad) {
    const std::string why = failure_of(broken("badnamedop"));
    EXPECT_NE(why.find("plugin 'badnamedop' offers a named op 'fused' that is not of the form "
                       "namespace.name"),
              std::string::npos)
        << why;
}

TEST(PluginHost, ShortBufferIsRefused) {
    PluginHost host;
    sy::Plugin& p = only_plugin(host, broken("shortbuffer"));
    EXPECT_EQ(error_of([&] { p.alloc(0, 1000); }),
              "shortbuffer.buffer_alloc(1000 bytes) returned a buffer of 500 bytes");
}
