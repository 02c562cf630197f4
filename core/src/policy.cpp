#include "switchyard/core/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "switchyard/core/error.hpp"

namespace sy {

const char* offload_mode_name(OffloadMode mode) {
    switch (mode) {
        case OffloadMode::cost: return "cost";
        case OffloadMode::never: return "never";
        case OffloadMode::always: return "always";
    }
    return "?";
}

std::vector<double> parse_tensor_split(std::string_view text, const std::string& where) {
    std::vector<double> out;
    double total = 0;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string item(text.substr(start, comma - start));
        char* end = nullptr;
        const double v = item.empty() ? -1 : std::strtod(item.c_str(), &end);
        if (item.empty() || end != item.c_str() + item.size() || !std::isfinite(v) || v < 0 ||
            v > 1e6)
            throw Error(fmt::format("{} '{}': '{}' is not a proportion (a number >= 0)", where,
                                    text, item));
        out.push_back(v);
        total += v;
        start = comma + 1;
    }
    if (total <= 0) throw Error(fmt::format("{} '{}': every proportion is 0", where, text));
    return out;
}

PlacementRule parse_override_tensor(std::string_view text, std::string where) {
    const size_t eq = text.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
        throw Error(where + ": '" + std::string(text) +
                    "' is not REGEX=BACKEND (e.g. '\\.ffn_.*_exps\\.=cpu')");
    return {std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)), std::move(where)};
}

std::vector<OffloadSwitch> parse_offload_switches(std::string_view text, std::string where) {
    std::vector<OffloadSwitch> out;
    while (!text.empty()) {
        const size_t comma = text.find(',');
        const std::string_view entry = text.substr(0, comma);
        const size_t eq = entry.find('=');
        const std::string_view value = eq == std::string_view::npos ? "" : entry.substr(eq + 1);
        if (eq == 0 || eq == std::string_view::npos || (value != "0" && value != "1"))
            throw Error(where + ": '" + std::string(entry) +
                        "' is not OP=0 or OP=1 (e.g. mul_mat_id=0,moe.fused_up_gate=1)");
        out.push_back({std::string(entry.substr(0, eq)), value == "1", where});
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    }
    if (out.empty()) throw Error(where + ": empty; expected OP=0|1[,OP=0|1...]");
    return out;
}

}  // namespace sy
