#include "switchyard/core/policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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

std::string canonical_backend_name(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const BackendRef ref = parse_backend_name(lower);
    return ref.device == 0 ? ref.plugin : ref.plugin + ":" + std::to_string(ref.device);
}

BackendRef parse_backend_name(std::string_view name) {
    const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
    // "cuda:1" splits at the colon; "cuda1" (llama.cpp's CUDA1) before its trailing digits.
    size_t cut = name.rfind(':');
    size_t digits = cut == std::string_view::npos ? name.size() : cut + 1;
    if (cut == std::string_view::npos) {
        while (digits > 0 && is_digit(name[digits - 1])) --digits;
        cut = digits;
    }
    const std::string_view index = name.substr(digits);
    // Up to 4 digits: a device index, not part of a plugin name such as "x86_64".
    if (cut == 0 || index.empty() || index.size() > 4 ||
        !std::all_of(index.begin(), index.end(), is_digit) ||
        (cut == digits && !std::isalpha(static_cast<unsigned char>(name[cut - 1]))))
        return {std::string(name), 0};
    const auto device = static_cast<int32_t>(std::stoi(std::string(index)));
    // "rank2": MPI rank 2, device 1 of the mpi plugin (whose devices are ranks 1, 2 ...); rank 0
    // is this process, whose own backend is the cpu.
    if (name.substr(0, cut) == "rank")
        return device == 0 ? BackendRef{"cpu", 0} : BackendRef{"mpi", device - 1};
    return {std::string(name.substr(0, cut)), device};
}

PlacementRule parse_override_tensor(std::string_view text, std::string where) {
    const size_t eq = text.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
        throw Error(where + ": '" + std::string(text) +
                    "' is not REGEX=BACKEND (e.g. '\\.ffn_.*_exps\\.=cpu')");
    return {std::string(text.substr(0, eq)), canonical_backend_name(text.substr(eq + 1)),
            std::move(where)};
}

std::vector<PlacementRule> parse_override_tensors(std::string_view text, size_t first,
                                                  std::vector<std::string>& warnings) {
    std::vector<PlacementRule> out;
    std::string pending;  // pieces without '=' so far, commas restored
    std::string cut;      // the first of them, for the warning
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view piece = text.substr(start, comma - start);
        start = comma + 1;
        if (piece.empty() && pending.empty())
            throw Error(
                fmt::format("-ot '{}': an empty rule (two commas, or one at an end)", text));
        const std::string rule =
            pending.empty() ? std::string(piece) : pending + "," + std::string(piece);
        const std::string where = fmt::format("-ot #{}", first + out.size());
        if (rule.find('=') == std::string::npos) {
            if (comma == text.size()) parse_override_tensor(rule, where);  // throws: no backend
            if (pending.empty()) cut = std::string(piece);
            pending = rule;
            continue;
        }
        if (!pending.empty())
            warnings.push_back(fmt::format(
                "-ot '{}': '{}' has no '=', so the comma after it was read as part of the regex "
                "of rule '{}' ({}); llama.cpp splits at every comma and would refuse it",
                text, cut, rule, where));
        out.push_back(parse_override_tensor(rule, where));
        pending.clear();
    }
    return out;
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
