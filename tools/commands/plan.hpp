// `switchyard plan` (commands.hpp registers it); the text form also serves `run --verbose-plan`.
#pragma once

#include <cstdint>
#include <string>

#include "switchyard/llm/deepseek2.hpp"

namespace sy::tools {

// The plan of a prompt ubatch of `ubatch` tokens with `depth` tokens cached, and of the decode
// step after it: backends and policy, weight homes per layer, every node's backend with the
// reason and the candidates' costs, splits, copies and memory per backend.
std::string explain_plan(llm::Deepseek2Session& session, int64_t ubatch, int64_t depth);

}  // namespace sy::tools
