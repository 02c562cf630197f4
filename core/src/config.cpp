#include "switchyard/core/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "switchyard/core/text_file.hpp"

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
        } else {
            fail(file, node,
                 "unknown key 'offload." + k +
                     "' (known: mode, min_batch, ops, pins, cost_table, staging_mib, overlap)");
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

// The configuration as toml++ gets it: pure ASCII. TOML allows other characters only in strings
// and comments, and toml++ 3.3 tests characters for white space with a table that reaches
// __builtin_unreachable() for most of U+00A1-U+0499, U+2C5E-U+3057 and U+FB26-U+FEFE (found by
// tests/fuzz) wherever its lexer looks for white space, inside malformed values and after
// backslashes in strings too. So nothing outside ASCII reaches it:
//   - in a basic string ("...", """..."""), each such character becomes its \uXXXX or
//     \UXXXXXXXX escape (the same string once parsed);
//   - a literal string ('...', three quotes) holding one becomes the equal basic string, with
//     backslashes and quotes escaped;
//   - in a comment each such byte becomes '?';
//   - anywhere else it is an error at its line and column.
// Strings are found as TOML places them: a value after '=' (or in an array or inline table opened
// there, after '[', '{' or ','), a quoted key first on its line or after '.', a quoted key in a
// table header. Lines are kept, so toml++'s line numbers stay right (columns may move on a line
// whose strings were rewritten).
std::string ascii_for_toml(std::string_view text, const fs::path& file) {
    size_t i = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;  // a UTF-8 byte order mark
    std::string out;
    out.reserve(text.size() - i);
    uint32_t line = 1;
    size_t line_start = i;
    const auto fail_at = [&](size_t at, const std::string& what) {
        throw ConfigError(file.string() + ":" + std::to_string(line) + ":" +
                          std::to_string(at - line_start + 1) + ": " + what);
    };
    // The code point of the UTF-8 sequence at i (advanced past it), or an error.
    const auto code_point = [&]() -> uint32_t {
        const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
        const unsigned char c = b(0);
        const int len = c >= 0xC2 && c <= 0xDF   ? 2
                        : c >= 0xE0 && c <= 0xEF ? 3
                        : c >= 0xF0 && c <= 0xF4 ? 4
                                                 : 0;
        bool valid = len > 0 && i + size_t(len) <= text.size();
        for (int k = 1; valid && k < len; ++k) valid = (b(size_t(k)) & 0xC0) == 0x80;
        if (!valid) fail_at(i, "invalid UTF-8 in a string");
        uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
        for (int k = 1; k < len; ++k) cp = cp << 6 | (b(size_t(k)) & 0x3F);
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            fail_at(i, "invalid UTF-8 in a string");
        i += size_t(len);
        return cp;
    };
    const auto escape = [&](uint32_t cp) {
        char buffer[16];
        std::snprintf(buffer, sizeof buffer, cp <= 0xFFFF ? "\\u%04X" : "\\U%08X", unsigned(cp));
        out += buffer;
    };
    // A string starting at i (its opening quote), copied to out as a basic string.
    const auto string = [&](char quote) {
        const bool multi = text.substr(i, 3) == std::string(3, quote);
        const std::string delimiter(multi ? 3 : 1, '"');
        out += delimiter;
        i += multi ? 3 : 1;
        while (i < text.size()) {
            const char c = text[i];
            if (static_cast<unsigned char>(c) >= 0x80) {
                escape(code_point());
                continue;
            }
            if (c == quote && (!multi || text.substr(i, 3) == std::string(3, quote))) {
                out += delimiter;
                i += multi ? 3 : 1;
                return;
            }
            if (c == '\n') {
                if (!multi) return;  // toml++ reports the unterminated string
                ++line;
                line_start = i + 1;
            }
            if (quote == '\'' && (c == '\\' || c == '"')) {
                out += '\\';  // literal text in a basic string
            } else if (quote == '"' && c == '\\') {
                // An escape: the backslash and the next character go as they are (escapes are
                // ASCII; anything else is an error).
                out += c;
                ++i;
                if (i < text.size() && static_cast<unsigned char>(text[i]) >= 0x80)
                    fail_at(i,
                            "a non-ASCII character after a backslash in a string (escapes are "
                            "ASCII)");
                if (i >= text.size()) return;
                if (text[i] == '\n') {
                    ++line;
                    line_start = i + 1;
                }
                out += text[i++];
                continue;
            }
            out += c;
            ++i;
        }
    };
    char last = '\n';     // the last character other than space and tab
    bool value = false;   // a value may start here
    bool header = false;  // inside a table header
    int depth = 0;        // arrays and inline tables opened in value position
    while (i < text.size()) {
        const char c = text[i];
        if (static_cast<unsigned char>(c) >= 0x80)
            fail_at(i,
                    "a non-ASCII character outside a string or comment (TOML allows them only in "
                    "quoted strings and comments)");
        if (c == ' ' || c == '\t') {
            out += c;
            ++i;
            continue;
        }
        if (c == '\n') {
            out += c;
            ++line;
            line_start = ++i;
            header = false;
            if (depth == 0) value = false;
            last = c;
            continue;
        }
        if (c == '#') {
            for (; i < text.size() && text[i] != '\n'; ++i)
                out += static_cast<unsigned char>(text[i]) >= 0x80 ? '?' : text[i];
            continue;
        }
        if (c == '"' || c == '\'') {
            const bool key = depth == 0 && (last == '\n' || last == '.');
            const bool header_key = header && (last == '[' || last == '.');
            if (value || key || header_key) {
                string(c);
                value = false;
                last = c;
                continue;
            }
            value = false;
        } else if (value && (c == '[' || c == '{')) {
            ++depth;  // an array's items or an inline table's keys follow
        } else if (depth > 0 && (c == ',' || c == '=')) {
            value = true;
        } else if (depth > 0 && (c == ']' || c == '}')) {
            --depth;
            value = false;
        } else if (c == '=') {
            value = true;
        } else {
            if (c == '[' && last == '\n' && depth == 0) header = true;
            value = false;
        }
        out += c;
        ++i;
        last = c;
    }
    return out;
}

}  // namespace

Config parse_config(std::string_view text, const fs::path& source_name) {
    const std::string ascii = ascii_for_toml(text, source_name);
    try {
        const toml::table root = toml::parse(ascii, source_name.string());
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
