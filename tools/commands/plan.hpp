// `switchyard plan` (commands.hpp registers it); the text form also serves `run --verbose-plan`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "switchyard/llm/session.hpp"

namespace sy::tools {

// The plan of a prompt ubatch of `ubatch` tokens with `depth` tokens cached, and of the decode
// step after it: backends and policy, weight homes per layer, every node's backend with the
// reason and the candidates' costs, splits, copies and memory per backend.
std::string explain_plan(llm::Session& session, int64_t ubatch, int64_t depth);

// Ops of a prompt ubatch and a decode step that run somewhere slow, one line per op and phase:
// nodes the default backend does not support, and nodes left on a backend while another was
// estimated at least twice as fast but excluded by the offload policy. Empty with one backend.
std::vector<std::string> placement_warnings(llm::Session& session, int64_t ubatch);

}  // namespace sy::tools
