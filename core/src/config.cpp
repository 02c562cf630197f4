#include "switchyard/core/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

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

Config from_table(const toml::table& root, const fs::path& file) {
    Config config;
    config.file = file;
    for (const auto& [key, node] : root) {
        const std::string k(key.str());
        if (k == "plugins") {
            const toml::table* t = node.as_table();
            if (!t)
                fail(file, node, "'plugins' must be a table, not " + std::string(type_name(node)));
            read_plugins(file, *t, config.plugins);
        } else {
            fail(file, node, "unknown key '" + k + "' (known sections: plugins)");
        }
    }
    return config;
}

}  // namespace

Config parse_config(std::string_view text, const fs::path& source_name) {
    try {
        const toml::table root = toml::parse(text, source_name.string());
        return from_table(root, source_name);
    } catch (const toml::parse_error& e) {
        throw ConfigError(where(source_name, e.source()) + ": " + std::string(e.description()));
    }
}

Config load_config(const fs::path& file) {
    std::error_code ec;
    if (!fs::exists(file, ec)) throw ConfigError(file.string() + ": configuration file not found");
    if (fs::is_directory(file, ec))
        throw ConfigError(file.string() + ": is a directory, not a configuration file");
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ConfigError(file.string() + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_config(text.str(), file);
}

}  // namespace sy
