// libFuzzer target: any text as a cost table (`--cost-table`, `[offload] cost_table`) either
// parses or raises sy::Error naming the place, never a crash; and a table that parses is written
// back by to_toml() as a table that parses to the same entries (the times to to_toml's 6
// significant digits) — so whatever `switchyard calibrate` writes, it reads.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "switchyard/core/cost_table.hpp"
#include "switchyard/core/error.hpp"

namespace {

[[noreturn]] void mismatch(const char* what, const std::string& written) {
    std::fprintf(stderr, "cost table round trip: %s differs; the table written:\n%s\n", what,
                 written.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    sy::CostTable table;
    try {
        table = sy::CostTable::parse(text, "fuzz.toml");
    } catch (const sy::Error&) {
        return 0;
    }
    const std::string written = table.to_toml({{"model", "fuzz"}});
    sy::CostTable again;
    try {
        again = sy::CostTable::parse(written, "written.toml");
    } catch (const sy::Error& e) {
        mismatch(e.what(), written);
    }
    if (again.size() != table.size()) mismatch("the number of entries", written);
    for (size_t i = 0; i < table.size(); ++i) {
        const sy::CostTable::Entry& a = table.entries()[i];
        const sy::CostTable::Entry& b = again.entries()[i];
        if (a.key() != b.key()) mismatch("an entry's signature", written);
        if (a.samples != b.samples || a.node != b.node) mismatch("samples or node", written);
        if (std::fabs(a.ns - b.ns) > 1e-5 * a.ns) mismatch("a time", written);
    }
    return 0;
}
