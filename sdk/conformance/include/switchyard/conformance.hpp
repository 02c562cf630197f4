// The conformance kit: a table of cases for every capability row a plugin declares, and a
// runner that executes one case on a plugin and compares dst with the reference
// (switchyard/reference.hpp). The `switchyard-conformance` command and the test suites are thin
// layers over this API.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "switchyard/plugin.h"

namespace sy::conformance {

// ---- cases --------------------------------------------------------------------------------------

// How a tensor lies in its buffer. The logical shape is ne; dimensions are stored in the order
// `order` (order[0] is the logical dimension stored innermost, so {1, 0, 2, 3} is a transposed
// view), every innermost stored row is followed by `row_padding` unused elements (a view into a
// larger buffer), and element (0, 0, 0, 0) lies `offset` elements after the buffer's start.
// Unused bytes are filled with 0xff (NaN for float types, -1 for integers), so a plugin that
// reads them poisons its result.
struct TensorSpec {
    int32_t type = SY_TYPE_F32;
    int64_t ne[4] = {1, 1, 1, 1};
    int order[4] = {0, 1, 2, 3};
    int64_t row_padding = 0;
    int64_t offset = 0;
};

// How a source's values are drawn (from a generator seeded by the case name).
enum class Fill {
    Uniform,   // uniform in [lo, hi)
    Distinct,  // a permutation of evenly spaced values in [lo, hi): no ties within a row
    Ties,      // integers in [lo, hi]: many equal values (argsort/top_k tie cases)
    Indices,   // integers in [lo, hi) (row ids, expert ids, positions)
    Dropped,   // as Indices, with every third value SY_ID_NONE (ids after DROP_IDS)
    Mask,      // uniform in [lo, hi) with about a quarter of the values -inf
};

struct SourceSpec {
    TensorSpec tensor;
    Fill fill = Fill::Uniform;
    double lo = -1, hi = 1;
};

struct Case {
    std::string name;      // "add f32,f32->f32 {67, 5, 2, 3} transposed src0": unique per row
    std::string op_label;  // "add", "moe.fused_up_gate"
    int32_t op = 0;
    std::string named_op;  // for SY_OP_NAMED
    uint32_t named_op_version = 0;
    std::vector<SourceSpec> src;
    TensorSpec dst;
    int32_t iparams[SY_MAX_PARAMS] = {};
    float fparams[SY_MAX_PARAMS] = {};
    // The row's plain contiguous case: if supports() refuses it, the row is not honoured (FAIL).
    bool base = false;
    // Set when the kit cannot run this case at all (a type the reference does not implement, a
    // named op it does not know): reported as SKIP with this reason.
    std::string skip_reason;
};

// The cases for one capability row. Wildcards (SY_TYPE_ANY) expand into the types ops.h allows
// in that slot; every row yields at least one case (possibly a skipped one).
std::vector<Case> cases_for(const sy_capability& row);

// ---- tolerances
// -----------------------------------------------------------------------------------

// The bound on the relative L2 error ||out - ref|| / ||ref|| for a case; 0 means exact match.
double tolerance_for(const Case& c);

// ---- plugins
// ----------------------------------------------------------------------------------------

// Thrown by Plugin::load when the plugin's probe says it cannot run on this machine.
struct NotRunnable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct ProbeInfo {
    bool has_probe = false;
    std::string name, variant;
    int32_t score = 0;
};

// A plugin loaded with dlopen and initialised with a minimal host API (log to stderr, aligned
// host allocation). Unloads (shutdown, dlclose) on destruction.
class Plugin {
  public:
    // Throws NotRunnable (probe score 0) or std::runtime_error with the reason.
    static std::unique_ptr<Plugin> load(const std::string& path, bool verbose_log = false);
    // Reads sy_plugin_probe only (no init). Throws std::runtime_error if the file does not load.
    static ProbeInfo probe(const std::string& path);
    ~Plugin();
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;

    const sy_plugin_api& api() const { return api_; }
    const std::string& path() const { return path_; }
    const ProbeInfo& probe_info() const { return probe_; }
    std::string name() const;
    int32_t device_count() const;
    // The capability table, copied (named_op strings stay the plugin's). Throws
    // std::runtime_error if the plugin reports an error.
    std::vector<sy_capability> capabilities() const;

  private:
    Plugin() = default;
    std::string path_;
    void* library_ = nullptr;
    bool initialized_ = false;
    ProbeInfo probe_;
    sy_plugin_api api_{};
};

// ---- running
// ------------------------------------------------------------------------------------------

enum class Status { Pass, Fail, Skip };
const char* status_name(Status s);  // "PASS", "FAIL", "SKIP"

struct CaseResult {
    Status status = Status::Skip;
    double error = 0;      // relative L2 error (or count of mismatches for exact cases)
    double tolerance = 0;  // the bound it was held to; 0 = exact
    std::string message;   // why it failed or was skipped, and where
};

// Runs one case on one device: random inputs, buffers through the plugin, supports(),
// compute(), and the comparison with the reference. Never throws for a plugin's misbehaviour;
// that is a FAIL with a message.
CaseResult run_case(Plugin& plugin, int32_t device, const Case& c);

// One line: "PASS  add f32,f32->f32 {7, 3, 1, 1}  err 1.2e-08 <= 1e-05".
std::string format_result(const Case& c, const CaseResult& r);

}  // namespace sy::conformance
