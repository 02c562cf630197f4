#include "switchyard/core/config.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "switchyard/core/plugin_setup.hpp"

namespace fs = std::filesystem;

namespace {

std::string error_of(std::string_view text) {
    try {
        sy::parse_config(text, "/etc/switchyard/test.toml");
    } catch (const sy::ConfigError& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return {};
}

}  // namespace

TEST(Config, ReadsPluginSection) {
    setenv("HOME", "/home/user", 1);
    const sy::Config c = sy::parse_config(R"(
[plugins]
search = ["~/.local/lib/switchyard", "plugins", "/opt/sy"]
load = ["cpu", "./mine/libswitchyard-x.so"]
[plugins.cpu]
threads = 8
pin = true
)",
                                          "/etc/switchyard/test.toml");
    ASSERT_EQ(c.plugins.search.size(), 3u);
    EXPECT_EQ(c.plugins.search[0], fs::path("/home/user/.local/lib/switchyard"));
    EXPECT_EQ(c.plugins.search[1], fs::path("/etc/switchyard/plugins")) << "relative to the file";
    EXPECT_EQ(c.plugins.search[2], fs::path("/opt/sy"));
    ASSERT_EQ(c.plugins.load.size(), 2u);
    EXPECT_EQ(c.plugins.load[0], "cpu");
    EXPECT_EQ(c.plugins.load[1], "/etc/switchyard/mine/libswitchyard-x.so");
    ASSERT_EQ(c.plugins.options.size(), 2u);
    EXPECT_EQ(c.plugins.options[0].plugin, "cpu");
    EXPECT_EQ(c.plugins.options[0].key, "threads");
    EXPECT_EQ(c.plugins.options[0].value, "8");
    EXPECT_EQ(c.plugins.options[1].value, "true");
    EXPECT_EQ(c.plugins.options[0].where, "/etc/switchyard/test.toml:6:11");
}

TEST(Config, UnknownSectionNamesKeyAndLine) {
    const std::string e = error_of("\n[plugin]\nload = []\n");
    EXPECT_NE(e.find("/etc/switchyard/test.toml:2"), std::string::npos) << e;
    EXPECT_NE(e.find("unknown key 'plugin'"), std::string::npos) << e;
}

TEST(Config, UnknownPluginsKey) {
    const std::string e = error_of("[plugins]\nlaod = [\"cpu\"]\n");
    EXPECT_NE(e.find("test.toml:2:8"), std::string::npos) << e;
    EXPECT_NE(e.find("unknown key 'plugins.laod'"), std::string::npos) << e;
}

TEST(Config, WrongTypes) {
    std::string e = error_of("[plugins]\nsearch = \"/opt\"\n");
    EXPECT_NE(e.find("'plugins.search' must be an array of strings, not a string"),
              std::string::npos)
        << e;
    e = error_of("[plugins]\nload = [\"cpu\", 3]\n");
    EXPECT_NE(e.find("'plugins.load' must contain strings, found an integer"), std::string::npos)
        << e;
    e = error_of("plugins = 1\n");
    EXPECT_NE(e.find("'plugins' must be a table"), std::string::npos) << e;
    e = error_of("[plugins.cpu]\nthreads = [1, 2]\n");
    EXPECT_NE(e.find("'plugins.cpu.threads' must be a string, number or boolean, not an array"),
              std::string::npos)
        << e;
}

TEST(Config, SyntaxErrorNamesThePosition) {
    const std::string e = error_of("[plugins]\nload = [\"cpu\"\n");
    EXPECT_NE(e.find("/etc/switchyard/test.toml:"), std::string::npos) << e;
}

TEST(Config, MissingFile) {
    try {
        sy::load_config("/nonexistent/switchyard.toml");
        FAIL() << "no error";
    } catch (const sy::ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "/nonexistent/switchyard.toml: configuration file not found"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Config, LoadsFromFile) {
    const fs::path file = fs::temp_directory_path() / "sy_config_test.toml";
    std::ofstream(file) << "[plugins]\nload = [\"cpu\"]\n";
    const sy::Config c = sy::load_config(file);
    EXPECT_EQ(c.file, file);
    EXPECT_EQ(c.plugins.load, std::vector<std::string>{"cpu"});
    fs::remove(file);
}

namespace {

std::string failures_of(const sy::PluginHost& host) {
    std::string out;
    for (const sy::PluginFailure& f : host.failures()) out += "\n  " + f.file + ": " + f.reason;
    return out.empty() ? " (no load failures recorded)" : out;
}

}  // namespace

TEST(Config, PluginOptionsAreAppliedAndOptionsOfPluginsNotLoadedWarn) {
    const std::string dir = SY_TEST_PLUGIN_DIR;
    sy::PluginHost host;
    const sy::Config c = sy::parse_config("[plugins]\nsearch = [\"" + dir +
                                              "\"]\nload = [\"cpu\"]\n[plugins.cpu]\nthreads = 2\n"
                                              "[plugins.blas]\nengine = \"onednn\"\n",
                                          "/tmp/a.toml");
    const auto warnings = sy::setup_plugins(host, c, {});
    ASSERT_NE(host.find("cpu"), nullptr)
        << "the cpu plugin did not load from " << dir << failures_of(host);
    std::string all;
    for (const std::string& w : warnings) all += "\n  " + w;
    ASSERT_EQ(warnings.size(), 1u) << all;
    EXPECT_NE(warnings[0].find(
                  "/tmp/a.toml:7:10: option 'engine' for plugin 'blas', which is not loaded"),
              std::string::npos)
        << warnings[0];
}

TEST(Config, UnknownPluginOptionIsRejectedWithItsLine) {
    const std::string dir = SY_TEST_PLUGIN_DIR;
    sy::PluginHost host;
    const sy::Config c = sy::parse_config(
        "[plugins]\nsearch = [\"" + dir + "\"]\nload = [\"cpu\"]\n[plugins.cpu]\nthredas = 2\n",
        "/tmp/b.toml");
    try {
        sy::setup_plugins(host, c, {});
        FAIL() << "unknown option accepted; cpu loaded: " << (host.find("cpu") != nullptr)
               << failures_of(host);
    } catch (const sy::ConfigError& e) {
        EXPECT_NE(
            std::string(e.what()).find("/tmp/b.toml:5:11: plugin 'cpu' has no option 'thredas'"),
            std::string::npos)
            << e.what() << "; cpu loaded: " << (host.find("cpu") != nullptr) << failures_of(host);
    }
}

TEST(Config, ReadsPlacementAndOffloadPolicy) {
    const sy::Config c = sy::parse_config(R"(
[placement]
default = "cuda"
fit = true
fit_margin_mib = 512
tensor_split = [3, 1.5]
[[placement.rules]]
match = '\.ffn_(up|gate|down)_exps\.'
backend = "cpu"
[[placement.rules]]
match = 'output'
backend = "cpu"

[offload]
mode = "always"
min_batch = 32
cost_table = "costs/mini.toml"
staging_mib = 2048
overlap = false
[offload.ops]
mul_mat_id = false
"moe.fused_up_gate" = true
[[offload.pins]]
op = "attn.mla"
match = 'blk\.0\.'
backend = "cuda"
phase = "decode"
)",
                                          "/etc/switchyard/test.toml");
    EXPECT_EQ(c.placement.default_backend, "cuda");
    ASSERT_EQ(c.placement.rules.size(), 2u);
    EXPECT_EQ(c.placement.rules[0].match, "\\.ffn_(up|gate|down)_exps\\.");
    EXPECT_EQ(c.placement.rules[0].backend, "cpu");
    EXPECT_EQ(c.placement.rules[0].where, "/etc/switchyard/test.toml:7:1");
    EXPECT_EQ(c.placement.tensor_split, (std::vector<double>{3, 1.5}));
    EXPECT_EQ(c.placement.tensor_split_where, "/etc/switchyard/test.toml:6:16");
    EXPECT_TRUE(c.placement.fit);
    EXPECT_EQ(c.placement.fit_where, "/etc/switchyard/test.toml:4:7");
    EXPECT_EQ(c.placement.fit_margin, uint64_t(512) << 20);
    EXPECT_EQ(c.placement.rules[1].match, "output");
    EXPECT_EQ(c.offload.mode, sy::OffloadMode::always);
    EXPECT_EQ(c.offload.min_batch, 32);
    EXPECT_EQ(c.offload.cost_table, "/etc/switchyard/costs/mini.toml") << "next to the file";
    EXPECT_EQ(c.offload.cost_table_where, "/etc/switchyard/test.toml:17:14");
    EXPECT_EQ(c.offload.staging_limit, uint64_t(2048) << 20);
    EXPECT_EQ(c.offload.staging_limit_where, "/etc/switchyard/test.toml:18:15");
    EXPECT_FALSE(c.offload.overlap);
    EXPECT_TRUE(sy::OffloadPolicy{}.overlap) << "on by default";
    ASSERT_EQ(c.offload.ops.size(), 2u);
    for (const sy::OffloadSwitch& s : c.offload.ops)
        EXPECT_EQ(s.allowed, s.op == "moe.fused_up_gate") << s.op;
    ASSERT_EQ(c.offload.pins.size(), 1u);
    EXPECT_EQ(c.offload.pins[0].op, "attn.mla");
    EXPECT_EQ(c.offload.pins[0].match, "blk\\.0\\.");
    EXPECT_EQ(c.offload.pins[0].backend, "cuda");
    EXPECT_EQ(c.offload.pins[0].phase, sy::Phase::decode);
}

TEST(Config, PolicyErrorsNameTheKey) {
    const std::string mode = error_of("[offload]\nmode = \"sometimes\"\n");
    EXPECT_NE(mode.find("test.toml:2"), std::string::npos) << mode;
    EXPECT_NE(mode.find("expected cost, never or always"), std::string::npos) << mode;
    const std::string batch = error_of("[offload]\nmin_batch = -3\n");
    EXPECT_NE(batch.find("'offload.min_batch' must be an integer >= 0"), std::string::npos)
        << batch;
    const std::string op = error_of("[offload.ops]\nmul_mat_id = 0\n");
    EXPECT_NE(op.find("'offload.ops.mul_mat_id' must be true or false"), std::string::npos) << op;
    const std::string rule = error_of("[[placement.rules]]\nmatch = 'exps'\n");
    EXPECT_NE(rule.find("needs both 'match' (a regex) and 'backend'"), std::string::npos) << rule;
    const std::string key =
        error_of("[[placement.rules]]\nmatch = 'a'\nbackend = 'cpu'\nbakend = 'x'\n");
    EXPECT_NE(key.find("unknown key 'bakend' in placement.rules"), std::string::npos) << key;
    const std::string phase =
        error_of("[[offload.pins]]\nop = 'mul_mat'\nbackend = 'cpu'\nphase = 'prefill'\n");
    EXPECT_NE(phase.find("phase 'prefill': expected prompt, decode or any"), std::string::npos)
        << phase;
    const std::string fit = error_of("[placement]\nfit = 1\n");
    EXPECT_NE(fit.find("test.toml:2:7: 'placement.fit' must be true or false"), std::string::npos)
        << fit;
    const std::string margin = error_of("[placement]\nfit_margin_mib = -5\n");
    EXPECT_NE(margin.find("'placement.fit_margin_mib' must be an integer of MiB >= 0"),
              std::string::npos)
        << margin;
    const std::string split = error_of("[placement]\ntensor_split = [1, -2]\n");
    EXPECT_NE(split.find("test.toml:2:16: placement.tensor_split"), std::string::npos) << split;
    EXPECT_NE(split.find("is not a proportion"), std::string::npos) << split;
    const std::string table = error_of("[offload]\ncost_table = \"\"\n");
    EXPECT_NE(table.find("test.toml:2:14: 'offload.cost_table' is empty"), std::string::npos)
        << table;
    for (const char* bad : {"0", "-1", "\"4096\"", "1.5", "2199023255553"}) {
        const std::string staging = error_of(std::string("[offload]\nstaging_mib = ") + bad + "\n");
        EXPECT_NE(staging.find("test.toml:2:15: 'offload.staging_mib' must be an integer from 1 "
                               "to 2^40 (MiB)"),
                  std::string::npos)
            << bad << ": " << staging;
    }
    for (const char* bad : {"1", "\"yes\"", "[true]"}) {
        const std::string overlap = error_of(std::string("[offload]\noverlap = ") + bad + "\n");
        EXPECT_NE(overlap.find("test.toml:2:11: 'offload.overlap' must be true or false"),
                  std::string::npos)
            << bad << ": " << overlap;
    }
    const std::string section = error_of("[placement]\nfits = true\n");
    EXPECT_NE(section.find("unknown key 'placement.fits' (known: default, rules, fit, "
                           "fit_margin_mib, tensor_split)"),
              std::string::npos)
        << section;
}

TEST(Config, CommandLinePolicyForms) {
    const sy::PlacementRule r = sy::parse_override_tensor("a=b\\.(x|y)=cuda", "-ot #1");
    EXPECT_EQ(r.match, "a=b\\.(x|y)") << "the last '=' splits";
    EXPECT_EQ(r.backend, "cuda");
    EXPECT_THROW(sy::parse_override_tensor("exps", "-ot #1"), sy::Error);
    EXPECT_THROW(sy::parse_override_tensor("exps=", "-ot #1"), sy::Error);
    const auto s =
        sy::parse_offload_switches("mul_mat_id=0,moe.fused_up_gate=1", "--offload-policy");
    ASSERT_EQ(s.size(), 2u);
    EXPECT_FALSE(s[0].allowed);
    EXPECT_EQ(s[1].op, "moe.fused_up_gate");
    EXPECT_TRUE(s[1].allowed);
    try {
        sy::parse_offload_switches("mul_mat_id=2", "--offload-policy");
        ADD_FAILURE() << "no error";
    } catch (const sy::Error& e) {
        EXPECT_NE(std::string(e.what()).find("'mul_mat_id=2' is not OP=0 or OP=1"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Config, BackendNamesIgnoreCaseAndTakeLlamaCppDeviceNames) {
    EXPECT_EQ(sy::canonical_backend_name("CPU"), "cpu");
    EXPECT_EQ(sy::canonical_backend_name("CUDA0"), "cuda");
    EXPECT_EQ(sy::canonical_backend_name("CUDA1"), "cuda:1");
    EXPECT_EQ(sy::canonical_backend_name("cuda:0"), "cuda");
    EXPECT_EQ(sy::canonical_backend_name("Cuda:2"), "cuda:2");
    EXPECT_EQ(sy::canonical_backend_name("blas"), "blas");
    EXPECT_EQ(sy::canonical_backend_name("x86_64"), "x86_64") << "digits after '_' are a name";
    const sy::BackendRef ref = sy::parse_backend_name("cuda:1");
    EXPECT_EQ(ref.plugin, "cuda");
    EXPECT_EQ(ref.device, 1);
    EXPECT_EQ(sy::parse_override_tensor("exps=CUDA1", "-ot #1").backend, "cuda:1");

    const sy::Config c = sy::parse_config(R"(
[placement]
default = "CUDA0"
[[placement.rules]]
match = 'exps'
backend = "CPU"
[[offload.pins]]
op = "attn.mla"
backend = "CUDA1"
)",
                                          "/etc/switchyard/test.toml");
    EXPECT_EQ(c.placement.default_backend, "cuda");
    EXPECT_EQ(c.placement.rules.at(0).backend, "cpu");
    EXPECT_EQ(c.offload.pins.at(0).backend, "cuda:1");
}

TEST(Config, OverrideTensorListsSplitAtCommasAsLlamaCpp) {
    std::vector<std::string> warnings;
    auto rules = sy::parse_override_tensors("exps=CPU,blk\\.3\\.=CUDA0", 1, warnings);
    ASSERT_EQ(rules.size(), 2u);
    EXPECT_EQ(rules[0].match, "exps");
    EXPECT_EQ(rules[0].backend, "cpu");
    EXPECT_EQ(rules[0].where, "-ot #1");
    EXPECT_EQ(rules[1].match, "blk\\.3\\.");
    EXPECT_EQ(rules[1].backend, "cuda");
    EXPECT_EQ(rules[1].where, "-ot #2");
    EXPECT_TRUE(warnings.empty());

    // A regex with a comma: the piece without '=' is joined to the next, with a warning.
    rules = sy::parse_override_tensors("a=cpu,blk\\.[0-9]{1,2}\\.=cuda", 4, warnings);
    ASSERT_EQ(rules.size(), 2u);
    EXPECT_EQ(rules[1].match, "blk\\.[0-9]{1,2}\\.");
    EXPECT_EQ(rules[1].where, "-ot #5");
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("'blk\\.[0-9]{1' has no '='"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("rule 'blk\\.[0-9]{1,2}\\.=cuda' (-ot #5)"), std::string::npos)
        << warnings[0];

    try {
        sy::parse_override_tensors("a=cpu,exps", 1, warnings);
        ADD_FAILURE() << "no error";
    } catch (const sy::Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "-ot #2: 'exps' is not REGEX=BACKEND (e.g. '\\.ffn_.*_exps\\.=cpu')");
    }
    EXPECT_THROW(sy::parse_override_tensors("a=cpu,", 1, warnings), sy::Error);
    EXPECT_THROW(sy::parse_override_tensors("", 1, warnings), sy::Error);
}

// Outside strings and comments TOML is ASCII; anything else is refused at its line and column
// before the TOML parser sees it (toml++ 3.3 reaches __builtin_unreachable on U+FE7F there).
TEST(Config, NonAsciiOutsideStringsIsRefusedWithItsPlace) {
    try {
        (void)sy::parse_config("[plugins]\nload = [\"cpu\"]\n\xEF\xB9\xBF = 1\n", "/tmp/u.toml");
        FAIL() << "accepted";
    } catch (const sy::ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "/tmp/u.toml:3:1: a non-ASCII character outside a string or comment (TOML "
                  "allows them only in quoted strings and comments)");
    }
    // Quotes open strings only where TOML has them: not in a header's `["""`, not after a value.
    for (const char* text : {"[\"\"\"\n\xC3\xBC\n", "[plugins]\nsearch = 0[[\"\"\"a\xCB\xAA\n",
                             "match =0\"_\xEF\xBB\xB7"
                             "exps\"\n"})
        EXPECT_THROW((void)sy::parse_config(text, "/tmp/w.toml"), sy::ConfigError) << text;
    // What toml++ never sees: non-ASCII text in strings goes to it as escapes, a literal string
    // with some as the equal basic string, so a line-ending backslash before a non-ASCII line
    // (where toml++ tests the character for white space, faultily) is read right.
    const sy::Config e = sy::parse_config(
        "[[placement.rules]]\nmatch = \"\"\"a\\\n  \xC3\xBC\"\"\"\nbackend = "
        "'c\\p\"\xE2\x82\xAC'\n",
        "/tmp/y.toml");
    ASSERT_EQ(e.placement.rules.size(), 1u);
    EXPECT_EQ(e.placement.rules[0].match, "a\xC3\xBC");
    EXPECT_EQ(e.placement.rules[0].backend, "c\\p\"\xE2\x82\xAC");
    try {
        (void)sy::parse_config("x = \"\\\xC3\xBC\"\n", "/tmp/z.toml");
        FAIL() << "accepted";
    } catch (const sy::ConfigError& err) {
        EXPECT_EQ(std::string(err.what()),
                  "/tmp/z.toml:1:7: a non-ASCII character after a backslash in a string (escapes "
                  "are ASCII)");
    }
    EXPECT_NO_THROW(
        (void)sy::parse_config("[plugins]\nsearch = [\"/home/j\xC3\xBC"
                               "rgen/p\",\n  'q']\n",
                               "/tmp/x.toml"));
    const sy::Config c = sy::parse_config(
        "# Grüße\n[[placement.rules]]\nmatch = \"ü\"  # ß\nbackend = '''é\n'''\n", "/tmp/v.toml");
    ASSERT_EQ(c.placement.rules.size(), 1u);
    EXPECT_EQ(c.placement.rules[0].match, "ü");
}
