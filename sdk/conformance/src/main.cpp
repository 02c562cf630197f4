// switchyard-conformance PLUGIN.so [--op NAME] [--device N] [--verbose] [--json] [--probe]
//
// Runs the conformance cases of every capability row the plugin declares and prints one line
// per case (or, with --json, one JSON document). Exit status: 0 when nothing failed, 1 when a
// case failed or the plugin did not load, 2 for a usage error, 77 when the plugin's probe says
// it cannot run on this machine.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "switchyard/conformance.hpp"
#include "switchyard/sdk.hpp"

namespace {

using namespace sy::conformance;

constexpr int kExitSkipped = 77;

struct Options {
    std::string plugin;
    std::string op;
    int device = -1;  // all
    bool verbose = false, json = false, probe = false;
};

void usage(FILE* out) {
    std::fprintf(
        out,
        "usage: switchyard-conformance PLUGIN.so [--op NAME] [--device N] [--verbose] "
        "[--json] [--probe]\n"
        "  Checks every capability row of a switchyard plugin against the reference.\n"
        "  --op NAME   only rows of this op (\"add\", \"mul_mat\", \"moe.fused_up_gate\")\n"
        "  --device N  only device N (default: every device)\n"
        "  --verbose   plugin debug logs and every case's details\n"
        "  --json      machine-readable results on stdout\n"
        "  --probe     print the plugin's probe (name, variant, score) and exit\n");
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char ch : s) {
        switch (ch) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(ch) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    return out + "\"";
}

std::string json_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string row_op_label(const sy_capability& row) {
    if (row.op == SY_OP_NAMED) return row.named_op ? row.named_op : "";
    const char* n = sy::sdk::op_name(row.op);
    return n ? n : "";
}

int run(const Options& opt) {
    if (opt.probe) {
        const ProbeInfo p = Plugin::probe(opt.plugin);
        if (!p.has_probe)
            std::printf("(no probe) - 1\n");
        else
            std::printf("%s %s %d\n", p.name.c_str(), p.variant.c_str(), p.score);
        return 0;
    }
    std::unique_ptr<Plugin> plugin;
    try {
        plugin = Plugin::load(opt.plugin, opt.verbose);
    } catch (const NotRunnable& e) {
        std::fprintf(stderr, "switchyard-conformance: %s: nothing checked\n", e.what());
        return kExitSkipped;
    }
    const int32_t devices = plugin->device_count();
    const std::vector<sy_capability> rows = plugin->capabilities();
    if (!opt.json)
        std::printf("plugin %s: %s, %d device(s), %zu capability row(s)\n", opt.plugin.c_str(),
                    plugin->name().c_str(), devices, rows.size());
    if (opt.device >= devices) {
        std::fprintf(stderr, "switchyard-conformance: device %d out of range (%d devices)\n",
                     opt.device, devices);
        return 2;
    }
    int passed = 0, failed = 0, skipped = 0;
    std::string json_results;
    for (int32_t device = 0; device < devices; ++device) {
        if (opt.device >= 0 && device != opt.device) continue;
        std::set<std::string> seen;  // overlapping rows yield the same case once
        for (const sy_capability& row : rows) {
            if (!opt.op.empty() && row_op_label(row) != opt.op) continue;
            for (const Case& c : cases_for(row)) {
                if (!seen.insert(c.name).second) continue;
                const CaseResult r = run_case(*plugin, device, c);
                (r.status == Status::Pass ? passed : r.status == Status::Fail ? failed : skipped)++;
                if (opt.json) {
                    json_results += std::string(json_results.empty() ? "" : ",\n") +
                                    "    {\"device\": " + std::to_string(device) +
                                    ", \"op\": " + json_string(c.op_label) +
                                    ", \"case\": " + json_string(c.name) +
                                    ", \"status\": " + json_string(status_name(r.status)) +
                                    ", \"error\": " + json_number(r.error) +
                                    ", \"tolerance\": " + json_number(r.tolerance) +
                                    ", \"message\": " + json_string(r.message) + "}";
                } else {
                    std::string line = format_result(c, r);
                    if (devices > 1) line = "[device " + std::to_string(device) + "] " + line;
                    std::printf("%s\n", line.c_str());
                }
            }
        }
    }
    if (opt.json) {
        std::printf(
            "{\n  \"plugin\": %s,\n  \"name\": %s,\n  \"variant\": %s,\n"
            "  \"devices\": %d,\n  \"passed\": %d,\n  \"failed\": %d,\n"
            "  \"skipped\": %d,\n  \"results\": [\n%s\n  ]\n}\n",
            json_string(opt.plugin).c_str(),
            json_string(plugin->api().name ? plugin->api().name : "").c_str(),
            json_string(plugin->probe_info().variant).c_str(), devices, passed, failed, skipped,
            json_results.c_str());
    } else {
        std::printf("%s: %d passed, %d failed, %d skipped\n", plugin->name().c_str(), passed,
                    failed, skipped);
    }
    if (passed + failed == 0)
        std::fprintf(stderr, "switchyard-conformance: warning: no case ran%s\n",
                     opt.op.empty() ? "" : " (check --op)");
    return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "switchyard-conformance: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--op")
            opt.op = value();
        else if (a == "--device")
            opt.device = std::atoi(value().c_str());
        else if (a == "--verbose" || a == "-v")
            opt.verbose = true;
        else if (a == "--json")
            opt.json = true;
        else if (a == "--probe")
            opt.probe = true;
        else if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "switchyard-conformance: unknown option %s\n", a.c_str());
            usage(stderr);
            return 2;
        } else if (opt.plugin.empty())
            opt.plugin = a;
        else {
            std::fprintf(stderr, "switchyard-conformance: more than one plugin given\n");
            return 2;
        }
    }
    if (opt.plugin.empty()) {
        usage(stderr);
        return 2;
    }
    try {
        return run(opt);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "switchyard-conformance: %s\n", e.what());
        return 1;
    }
}
