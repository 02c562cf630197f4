// The placement options of llama.cpp's command line (--backend, -ngl, --cpu-moe, --n-cpu-moe,
// -ot, -ts, --fit) and switchyard's offload switches, turned into the policy a Session runs
// with: a function a library user calls as the tools do.
//
//   llm::PlacementFlags flags;
//   flags.ngl = 99;
//   flags.cpu_moe = true;                              // -ngl 99 --cpu-moe
//   llm::PlacementSetup setup = llm::placement_setup(flags, load_config(file));
//   ... load setup.config.plugins, then:
//   llm::SessionBackends b = llm::session_backends(host, setup);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/core/config.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/policy.hpp"
#include "switchyard/llm/session.hpp"

namespace sy::llm {

struct PlacementFlags {
    std::string backend;                       // --backend ("": cuda with -ngl > 0, else cpu)
    int ngl = -1;                              // -ngl (-1: not given)
    std::vector<std::string> override_tensor;  // -ot REGEX=BACKEND[,...] values, in order
    bool cpu_moe = false;                      // --cpu-moe
    int n_cpu_moe = 0;                         // --n-cpu-moe N
    bool fit = false;                          // --fit
    int64_t fit_margin_mib = -1;               // --fit-margin MiB (-1: the config's or 1024)
    std::string offload_policy;                // --offload-policy op=0|1,...
    std::string cost_table;                    // --cost-table FILE
    std::string tensor_split;                  // -ts 3,1
    int64_t staging_mib = 0;                   // --staging-mib N (0: the config's or auto)
    std::string offload_mode;                  // --offload-mode cost|never|always ("": config's)
    int64_t offload_min_batch = -1;            // --offload-min-batch N (-1: the config's)
    std::string overlap;                       // --overlap on|off ("": the config's or on)
    int repack = -1;                           // -rtr: the cpu plugin's repack (-1: its default)
    // --expert-parallel N: part r (1 .. N-1) of every MoE layer's routed experts on MPI rank r
    // (rules before -ot's); part 0 stays where the other rules put it. The graph's side is
    // ContextOptions::expert_parallel.
    int expert_parallel = 0;
};

// What the flags and a configuration come to.
struct PlacementSetup {
    Config config;        // the command line's rules before the file's (the first match wins),
                          // its offload switches after them (the last word on an op wins)
    std::string backend;  // the default backend, canonical ("cpu", "cuda", "cuda:1")
    BackendRef backend_ref;
    // Something asks for a session over several backends (a rule, a split, an offload setting).
    bool several = false;
    std::vector<std::string> warnings;  // -ot values that match nothing a model has, ...
};

// Merges the flags into `config` ([placement], [offload], and the plugins to load when it lists
// none: the default backend, and the cpu for rules and partial -ngl). Throws sy::Error naming the
// flag whose value is wrong.
PlacementSetup placement_setup(const PlacementFlags& flags, Config config);

// A session over every device of every loaded plugin with the setup's policy (its cost table
// read; a bad one is an sy::Error naming where it was given).
SessionBackends session_backends(const PluginHost& host, const PlacementSetup& setup);

// -ngl N below n_layer + 1 (llama.cpp counts the output layer as one more): a rule that puts the
// last N repeating layers (their weights, and so their KV cache) on `backend`; the first layers,
// the token embeddings and the output stay on the cpu, which becomes the default backend.
// Returns the first offloaded layer.
uint32_t offload_last_layers(SessionBackends& backends, int ngl, uint32_t n_layer,
                             const std::string& backend);

}  // namespace sy::llm
