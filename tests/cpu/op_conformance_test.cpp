// Every conformance case (sdk/conformance) of every capability row of every runnable CPU plugin
// variant, each its own test: Cpu/OpConformance.Case/<variant>_<op>_<types>_<shape>_<variant>.
#include <gtest/gtest.h>

#include <cctype>
#include <set>

#include "cpu_plugins.hpp"

namespace {

using sy::conformance::Case;
using sy::conformance::Status;

struct Param {
    const sy::test::CpuPlugin* plugin;
    Case c;
    std::string test_name;
};

std::string identifier(const std::string& s) {
    std::string out;
    for (char ch : s) {
        const bool ok = std::isalnum(static_cast<unsigned char>(ch));
        if (ok)
            out += ch;
        else if (!out.empty() && out.back() != '_')
            out += '_';
    }
    while (!out.empty() && out.back() == '_') out.pop_back();
    return out;
}

std::vector<Param> all_cases() {
    std::vector<Param> params;
    std::set<std::string> names;
    for (const sy::test::CpuPlugin& p : sy::test::cpu_plugins()) {
        for (const sy_capability& row : p.plugin->capabilities())
            for (Case& c : sy::conformance::cases_for(row)) {
                std::string name = identifier(p.variant + " " + c.name);
                if (!names.insert(name).second) continue;  // overlapping rows
                params.push_back({&p, std::move(c), std::move(name)});
            }
    }
    return params;
}

// gtest prints a parameter with a failure; the case name says everything.
void PrintTo(const Param& p, std::ostream* os) {
    *os << p.plugin->variant << ": " << p.c.name;
}

class OpConformance : public testing::TestWithParam<Param> {};

TEST_P(OpConformance, Case) {
    const Param& p = GetParam();
    const sy::conformance::CaseResult r = sy::conformance::run_case(*p.plugin->plugin, 0, p.c);
    RecordProperty("result", sy::conformance::format_result(p.c, r));
    if (r.status == Status::Skip) GTEST_SKIP() << r.message;
    EXPECT_EQ(r.status, Status::Pass)
        << p.plugin->variant << ": " << sy::conformance::format_result(p.c, r);
}

INSTANTIATE_TEST_SUITE_P(Cpu, OpConformance, testing::ValuesIn(all_cases()),
                         [](const testing::TestParamInfo<Param>& p) { return p.param.test_name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpConformance);

TEST(CpuPlugins, AtLeastOneVariantLoads) {
    for (const std::string& e : sy::test::load_errors()) ADD_FAILURE() << e;
    EXPECT_FALSE(sy::test::cpu_plugin_files().empty())
        << "no libswitchyard-cpu*.so in " << SWITCHYARD_PLUGIN_OUTPUT_DIR;
    EXPECT_FALSE(sy::test::cpu_plugins().empty()) << "no CPU plugin variant can run here";
}

TEST(CpuPlugins, EveryVariantDeclaresCapabilities) {
    for (const sy::test::CpuPlugin& p : sy::test::cpu_plugins())
        EXPECT_FALSE(p.plugin->capabilities().empty()) << p.variant;
}

}  // namespace
