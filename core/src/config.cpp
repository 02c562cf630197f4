#include "switchyard/core/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "switchyard/core/text_file.hpp"
#include "toml_text.hpp"

namespace fs = std::filesystem;

namespace sy {
namespace {

std::string where(const fs::path& file, const toml::source_region& src) {
    std::ostringstream s;
    s << file.string();
    if (src.begin.line > 0) s << ":" << src.begin.line << ":" << src.begin.column;
    return s.str();
}

[[noreturn]] void fail(const fs::path& file, const toml::node& node, const std::string& what) {
    throw ConfigError(where(file, node.source()) + ": " + what);
}

const char* type_name(const toml::node& node) {
    switch (node.type()) {
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a number";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::array: return "an array";
        case toml::node_type::table: return "a table";
        default: return "a date/time";
    }
}

std::vector<std::string> string_array(const fs::path& file, const toml::node& node,
                                      const std::string& key) {
    const toml::array* array = node.as_array();
    if (!array)
        fail(file, node, "'" + key + "' must be an array of strings, not " + type_name(node));
    std::vector<std::string> out;
    for (const toml::node& item : *array) {
        const auto* s = item.as_string();
        if (!s) fail(file, item, "'" + key + "' must contain strings, found " + type_name(item));
        out.push_back(s->get());
    }
    return out;
}

fs::path resolve_path(const std::string& text, const fs::path& config_file) {
    if (text == "~" || text.starts_with("~/")) {
        const char* home = std::getenv("HOME");
        return fs::path(home ? home : "") / text.substr(text.size() > 1 ? 2 : 1);
    }
    fs::path p(text);
    if (p.is_relative() && !config_file.empty()) p = config_file.parent_path() / p;
    return p.lexically_normal();
}

std::string scalar_text(const fs::path& file, const toml::node& node, const std::string& key) {
    if (const auto* s = node.as_string()) return s->get();
    if (const auto* i = node.as_integer()) return std::to_string(i->get());
    if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
    if (const auto* f = node.as_floating_point()) {
        std::ostringstream s;
        s << f->get();
        return s.str();
    }
    fail(file, node, "'" + key + "' must be a string, number or boolean, not " + type_name(node));
}

void read_plugins(const fs::path& file, const toml::table& table, PluginSettings& out) {
    for (const auto& [key, node] : table) {
        const std::string k(key.str());
        if (k == "search") {
            for (const std::string& s : string_array(file, node, "plugins.search")) {
                out.search.push_back(resolve_path(s, file));
            }
        } else if (k == "load") {
            for (std::string s : string_array(file, node, "plugins.load")) {
                const bool is_path = s.find('/') != std::string::npos || s.ends_with(".so");
                out.load.push_back(is_path ? resolve_path(s, file).string() : s);
            }
        } else if (const toml::table* options = node.as_table()) {
            // [plugins.<name>]: options for that plugin, applied in the order they are written
            // (toml++ tables iterate in key order).
            std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order;
            for (const auto& [okey, ovalue] : *options) in_file_order.push_back({&okey, &ovalue});
            std::sort(in_file_order.begin(), in_file_order.end(), [](const auto& a, const auto& b) {
                const toml::source_position x = a.second->source().begin;
                const toml::source_position y = b.second->source().begin;
                return x.line != y.line ? x.line < y.line : x.column < y.column;
            });
            for (const auto& [okey_ptr, ovalue_ptr] : in_file_order) {
                const toml::key& okey = *okey_ptr;
                const toml::node& ovalue = *ovalue_ptr;
                const std::string full = "plugins." + k + "." + std::string(okey.str());
                out.options.push_back({k, std::string(okey.str()), scalar_text(file, ovalue, full),
                                       where(file, ovalue.source())});
            }
        } else {
            fail(file, node,
                 "unknown key 'plugins." + k +
                     "' (known: search, load, and [plugins.<name>] option tables)");
        }
    }
}

const toml::table& table_at(const fs::path& file, const toml::node& node, const std::string& key) {
    const toml::table* t = node.as_table();
    if (!t) fail(file, node, "'" + key + "' must be a table, not " + type_name(node));
    return *t;
}

std::string string_at(const fs::path& file, const toml::node& node, const std::string& key) {
    const auto* s = node.as_string();
    if (!s) fail(file, node, "'" + key + "' must be a string, not " + type_name(node));
    return s->get();
}

// An array of tables ([[section.name]]) whose entries have only string keys from `known`;
// calls add(entry's values by key, where the entry starts).
template <typename Add>
void read_entries(const fs::path& file, const toml::node& node, const std::string& key,
                  std::initializer_list<const char*> known, Add add) {
    const toml::array* array = node.as_array();
    if (!array)
        fail(file, node,
             "'" + key + "' must be an array of tables ([[" + key + "]]), not " + type_name(node));
    for (const toml::node& item : *array) {
        const toml::table& entry = table_at(file, item, key + " entry");
        std::vector<std::pair<std::string, std::string>> values;
        for (const auto& [k, v] : entry) {
            const std::string name(k.str());
            if (std::find_if(known.begin(), known.end(),
                             [&](const char* x) { return name == x; }) == known.end()) {
                std::string list;
                for (const char* x : known) list += (list.empty() ? "" : ", ") + std::string(x);
                fail(file, v, "unknown key '" + name + "' in " + key + " (known: " + list + ")");
            }
            values.push_back({name, string_at(file, v, key + "." + name)});
        }
        add(values, where(file, item.source()), item);
    }
}

std::string value_of(const std::vector<std::pair<std::string, std::string>>& values,
                     std::string_view key) {
    for (const auto& [k, v] : values)
        if (k == key) return v;
    return {};
}

void read_placement(const fs::path& file, const toml::table& table, PlacementPolicy& out) {
    for (const auto& [key, node] : table) {
        const std::string k(key.str());
        if (k == "default") {
            out.default_backend =
                canonical_backend_name(string_at(file, node, "placement.default"));
        } else if (k == "rules") {
            read_entries(file, node, "placement.rules", {"match", "backend"},
                         [&](const auto& values, const std::string& at, const toml::node& item) {
                             PlacementRule rule{value_of(values, "match"),
                                                canonical_backend_name(value_of(values, "backend")),
                                                at};
                             if (rule.match.empty() || rule.backend.empty())
                                 fail(file, item,
                                      "a placement rule needs both 'match' (a regex) and "
                                      "'backend'");
                             out.rules.push_back(std::move(rule));
                         });
        } else if (k == "fit") {
            const auto* b = node.as_boolean();
            if (!b) fail(file, node, "'placement.fit' must be true or false");
            out.fit = b->get();
            out.fit_where = where(file, node.source());
        } else if (k == "fit_margin_mib") {
            const auto* i = node.as_integer();
            if (!i || i->get() < 0 || i->get() > (int64_t{1} << 30))
                fail(file, node, "'placement.fit_margin_mib' must be an integer of MiB >= 0");
            out.fit_margin = static_cast<uint64_t>(i->get()) << 20;
        } else if (k == "tensor_split") {
            const toml::array* a = node.as_array();
            if (!a || a->empty())
                fail(file, node, "'placement.tensor_split' must be an array of proportions");
            std::string text;
            for (const toml::node& item : *a) {
                const std::optional<double> v = item.value<double>();
                if (!v) fail(file, item, "'placement.tensor_split' must contain numbers");
                text += (text.empty() ? "" : ",") + std::to_string(*v);
            }
            out.tensor_split_where = where(file, node.source());
            try {
                out.tensor_split = parse_tensor_split(text, "placement.tensor_split");
            } catch (const Error& e) {
                fail(file, node, e.what());
            }
        } else {
            fail(file, node,
                 "unknown key 'placement." + k +
                     "' (known: default, rules, fit, fit_margin_mib, tensor_split)");
        }
    }
}

Phase phase_from(const fs::path& file, const toml::node& node, const std::string& text) {
    if (text.empty() || text == "any") return Phase::any;
    if (text == "prompt") return Phase::prompt;
    if (text == "decode") return Phase::decode;
    fail(file, node, "phase '" + text + "': expected prompt, decode or any");
}

void read_offload(const fs::path& file, const toml::table& table, OffloadPolicy& out) {
    for (const auto& [key, node] : table) {
        const std::string k(key.str());
        if (k == "mode") {
            const std::string mode = string_at(file, node, "offload.mode");
            if (mode == "cost")
                out.mode = OffloadMode::cost;
            else if (mode == "never")
                out.mode = OffloadMode::never;
            else if (mode == "always")
                out.mode = OffloadMode::always;
            else
                fail(file, node, "offload.mode '" + mode + "': expected cost, never or always");
        } else if (k == "min_batch") {
            const auto* i = node.as_integer();
            if (!i || i->get() < 0) fail(file, node, "'offload.min_batch' must be an integer >= 0");
            out.min_batch = i->get();
        } else if (k == "ops") {
            for (const auto& [op, value] : table_at(file, node, "offload.ops")) {
                const auto* b = value.as_boolean();
                if (!b)
                    fail(file, value,
                         "'offload.ops." + std::string(op.str()) + "' must be true or false");
                out.ops.push_back({std::string(op.str()), b->get(), where(file, value.source())});
            }
        } else if (k == "pins") {
            read_entries(file, node, "offload.pins", {"op", "match", "backend", "phase"},
                         [&](const auto& values, const std::string& at, const toml::node& item) {
                             OpPin pin{value_of(values, "op"), value_of(values, "match"),
                                       canonical_backend_name(value_of(values, "backend")),
                                       phase_from(file, item, value_of(values, "phase")), at};
                             if (pin.op.empty() || pin.backend.empty())
                                 fail(file, item, "a pin needs both 'op' and 'backend'");
                             out.pins.push_back(std::move(pin));
                         });
        } else if (k == "cost_table") {
            const std::string path = string_at(file, node, "offload.cost_table");
            if (path.empty()) fail(file, node, "'offload.cost_table' is empty: give a file name");
            out.cost_table = resolve_path(path, file).string();
            out.cost_table_where = where(file, node.source());
        } else if (k == "staging_mib") {
            const auto* i = node.as_integer();
            if (!i || i->get() < 1 || i->get() > (int64_t(1) << 40))
                fail(file, node, "'offload.staging_mib' must be an integer from 1 to 2^40 (MiB)");
            out.staging_limit = uint64_t(i->get()) << 20;
            out.staging_limit_where = where(file, node.source());
        } else if (k == "overlap") {
            const auto* b = node.as_boolean();
            if (!b) fail(file, node, "'offload.overlap' must be true or false");
            out.overlap = b->get();
        } else if (k == "device_weights_stay") {
            const auto* b = node.as_boolean();
            if (!b) fail(file, node, "'offload.device_weights_stay' must be true or false");
            out.device_weights_stay = b->get();
        } else {
            fail(file, node,
                 "unknown key 'offload." + k +
                     "' (known: mode, min_batch, ops, pins, cost_table, staging_mib, overlap, "
                     "device_weights_stay)");
        }
    }
}

Config from_table(const toml::table& root, const fs::path& file) {
    Config config;
    config.file = file;
    for (const auto& [key, node] : root) {
        const std::string k(key.str());
        if (k == "plugins") {
            read_plugins(file, table_at(file, node, "plugins"), config.plugins);
        } else if (k == "placement") {
            read_placement(file, table_at(file, node, "placement"), config.placement);
        } else if (k == "offload") {
            read_offload(file, table_at(file, node, "offload"), config.offload);
        } else {
            fail(file, node,
                 "unknown key '" + k + "' (known sections: plugins, placement, offload)");
        }
    }
    return config;
}

}  // namespace

Config parse_config(std::string_view text, const fs::path& source_name) {
    return from_table(parse_toml(text, source_name), source_name);
}

Config load_config(const fs::path& file) {
    std::error_code ec;
    if (!fs::exists(file, ec)) throw ConfigError(file.string() + ": configuration file not found");
    if (fs::is_directory(file, ec))
        throw ConfigError(file.string() + ": is a directory, not a configuration file");
    std::string text;
    try {
        // A configuration is a few KiB of TOML; 16 MiB leaves room for generated rule lists.
        text = read_text_file("", file.string(), {uint64_t(16) << 20});
    } catch (const ConfigError&) {
        throw;
    } catch (const Error& e) {
        throw ConfigError(std::string(e.what()) + " (configuration file)");
    }
    return parse_config(text, file);
}

}  // namespace sy
