// The placement and offload policy: where weights live and which ops may leave the host
// (placement.hpp decides with it). Read from the configuration file ([placement], [offload];
// config.hpp); the command-line forms -ot REGEX=BACKEND and --offload-policy op=0|1 are parsed
// here, and their entries are meant to come before the file's (the first matching rule wins).
//
//   [placement]
//   default = "cuda"                 # home of every weight no rule claims
//   [[placement.rules]]              # in order; the first rule whose regex is found in a
//   match   = '\.ffn_.*_exps\.'      # tensor's name gives its home
//   backend = "cpu"
//
//   [offload]                        # ops whose weights live in host memory
//   mode      = "cost"               # cost: cheapest backend wins | never | always
//   min_batch = 32                   # fewer tokens than this: such ops stay on the host
//   [offload.ops]                    # per op (label as in `switchyard plan`): may it leave
//   mul_mat_id = false               # the host? (false: never; true: as mode says)
//   [[offload.pins]]                 # an op (optionally: nodes whose result name matches, only
//   op = "attn.mla"                  # in one phase) always runs on this backend
//   backend = "cuda"
//   phase = "decode"                 # prompt | decode | any (default)
//   cost_table = "costs.toml"        # (under [offload]) measured op times from `switchyard
//                                    # calibrate`, preferred over the plugins' hints
//   staging_mib = 4096               # (under [offload]) the most host-resident weights a device
//                                    # keeps copies of for offloaded ops (default: half its
//                                    # free memory); beyond it, copies made for the nodes that
//                                    # read them, the room reused
//   overlap = true                   # (under [offload]) nodes of the next split that do not
//                                    # depend on the running one (on another plugin) run beside it
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sy {

// Prompt processing (a ubatch of more than one token) or generation (one token per step).
enum class Phase { any, prompt, decode };

struct PlacementRule {
    std::string match;    // regex (RE2 syntax, pattern.hpp), searched for in tensor names
    std::string backend;  // backend name ("cpu", "cuda", ...)
    std::string where;    // "policy.toml:12:1", "-ot #2": for messages
    bool split = false;   // --tensor-split may divide its layers among the devices (-ngl's rule)
    // >= 0: the rule also needs a "blk.N." name with N below this (--n-cpu-moe N).
    int64_t layers_below = -1;
};

struct PlacementPolicy {
    std::string default_backend;  // empty: the caller's default
    std::vector<PlacementRule> rules;
    // --fit / placement.fit: the weights no rule places go to the fastest device (by memory
    // bandwidth) with room for them, leaving fit_margin bytes free there, experts last; what
    // fits nowhere stays on a host backend.
    bool fit = false;
    uint64_t fit_margin = uint64_t(1024) << 20;
    std::string fit_where;  // "--fit" or "policy.toml:3:1"
    // --tensor-split / placement.tensor_split: the layers ("blk.N.") that the default backend or
    // -ngl put on a device are divided among the devices (in load order: cuda, cuda:1, ...) in
    // these proportions, consecutive layers together; other weights stay where they were put.
    std::vector<double> tensor_split;
    std::string tensor_split_where;
};

// --tensor-split: "3,1" (non-negative proportions, not all zero). Throws Error naming `where`.
std::vector<double> parse_tensor_split(std::string_view text, const std::string& where);

enum class OffloadMode { cost, never, always };
// "cost", "never", "always": as the configuration writes them.
const char* offload_mode_name(OffloadMode mode);

struct OffloadSwitch {
    std::string op;  // "mul_mat_id", "moe.fused_up_gate"
    bool allowed = true;
    std::string where;
};

struct OpPin {
    std::string op;     // op label without version: "mul_mat", "attn.mla"
    std::string match;  // regex searched for in the node's result name; empty: every node
    std::string backend;
    Phase phase = Phase::any;
    std::string where;
};

struct OffloadPolicy {
    OffloadMode mode = OffloadMode::cost;
    int64_t min_batch = 0;  // 0: no minimum
    std::vector<OffloadSwitch> ops;
    std::vector<OpPin> pins;
    // A calibrated cost table (`switchyard calibrate`, cost_table.hpp) whose measured times
    // placement takes before the plugins' hints; empty: none. Relative to the config file.
    std::string cost_table;
    std::string cost_table_where;
    // The most bytes of host-resident weights a device keeps staged for the ops offloaded to it
    // (executor.hpp); beyond it, weights share room by when they are read. 0: half of what
    // the device has free besides its compute buffer (Executor::auto_staging_limit).
    uint64_t staging_limit = 0;
    std::string staging_limit_where;
    // Run independent nodes of consecutive splits on two plugins at the same time
    // (Scheduler::set_overlap).
    bool overlap = true;
    // A node that reads a weight homed on a device with its own memory runs on that device when
    // it can (the weight is never copied off it); off for calibration, which measures every
    // backend on every node.
    bool device_weights_stay = true;
};

// A backend name as -ot, --backend, [placement] and [[offload.pins]] may write it, in the form
// backend_name() (placement.hpp) gives: case does not matter, llama.cpp's device names are
// accepted ("CPU" -> "cpu", "CUDA0" -> "cuda", "CUDA1" -> "cuda:1": a name ending in digits
// without a ':' is a plugin and a device index), and device 0 has no index ("cuda:0" -> "cuda").
std::string canonical_backend_name(std::string_view name);

// A canonical backend name's plugin and device: "cuda:1" -> {"cuda", 1}, "cpu" -> {"cpu", 0}.
struct BackendRef {
    std::string plugin;
    int32_t device = 0;
};
BackendRef parse_backend_name(std::string_view name);

// -ot / --override-tensor: "REGEX=BACKEND" (the last '=' splits, so a regex may contain '=');
// the backend in canonical form. Throws Error naming `where` for text without a regex or a
// backend.
PlacementRule parse_override_tensor(std::string_view text, std::string where);

// One -ot value: comma-separated REGEX=BACKEND rules, as llama.cpp reads it
// (-ot 'exps=CPU,blk\.3\.=CUDA0'). llama.cpp splits at every comma; a piece without '=' (a
// regex like 'x{2,3}=cpu' cut in two) is joined to the piece after it instead, with a warning
// naming the rule, and a piece that stays without '=' is an error. The rules are numbered on
// from `first` in their `where` ("-ot #3").
std::vector<PlacementRule> parse_override_tensors(std::string_view text, size_t first,
                                                  std::vector<std::string>& warnings);

// --offload-policy: "op=0|1[,op=0|1...]". Throws Error naming `where` and the bad entry.
std::vector<OffloadSwitch> parse_offload_switches(std::string_view text, std::string where);

}  // namespace sy
