// The calibrated cost table (cost_table.hpp): signatures, lookup and interpolation, TOML.
#include "switchyard/core/cost_table.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "node_abi.hpp"
#include "switchyard/core/config.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/text_file.hpp"
#include "switchyard/dtype.h"
#include "toml_text.hpp"

namespace fs = std::filesystem;

namespace sy {
namespace {

constexpr uintmax_t kMaxFileBytes = uintmax_t(64) << 20;

std::string shape_text(const std::vector<int64_t>& shape) {
    return fmt::format("{}", fmt::join(shape, "x"));
}

// "op|types|shapes|params" (every shape, or only the first source's: the product key).
std::string signature(const CostTable::Entry& e, bool weight_only) {
    std::string s = e.op + "|" + fmt::format("{}", fmt::join(e.types, ",")) + "|";
    const size_t shapes = weight_only ? std::min<size_t>(1, e.shapes.size()) : e.shapes.size();
    for (size_t i = 0; i < shapes; ++i) s += (i ? "," : "") + shape_text(e.shapes[i]);
    return s + "|" + fmt::format("{}", fmt::join(e.params, ","));
}

std::string backend_key(std::string_view backend, const std::string& signature) {
    return std::string(backend) + "\n" + signature;
}

// Product rows: result elements / result row length.
double rows_of(const CostTable::Entry& e) {
    if (e.shapes.empty()) return 1;
    const std::vector<int64_t>& result = e.shapes.back();
    double rows = 1;
    for (size_t d = 1; d < result.size(); ++d) rows *= double(result[d]);
    return rows;
}

std::vector<int64_t> trimmed_shape(const sy_tensor& t) {
    std::vector<int64_t> shape(t.ne, t.ne + SY_MAX_DIMS);
    while (shape.size() > 1 && shape.back() == 1) shape.pop_back();
    return shape;
}

std::string dtype_text(int32_t type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "type " + std::to_string(type);
}

// ---- reading ----------------------------------------------------------------------------------

std::string where(const fs::path& file, const toml::node& node) {
    const toml::source_position p = node.source().begin;
    return p.line > 0 ? fmt::format("{}:{}:{}", file.string(), p.line, p.column) : file.string();
}

[[noreturn]] void fail(const fs::path& file, const toml::node& node, const std::string& what) {
    throw ConfigError(where(file, node) + ": " + what);
}

int64_t integer_at(const fs::path& file, const toml::node& node, const std::string& key,
                   int64_t min, int64_t max) {
    const auto* i = node.as_integer();
    if (!i || i->get() < min || i->get() > max)
        fail(file, node, fmt::format("'{}' must be an integer from {} to {}", key, min, max));
    return i->get();
}

const toml::array& array_at(const fs::path& file, const toml::node& node, const std::string& key) {
    const toml::array* a = node.as_array();
    if (!a) fail(file, node, "'" + key + "' must be an array");
    return *a;
}

CostTable::Entry read_entry(const fs::path& file, const toml::node& item) {
    const toml::table* table = item.as_table();
    if (!table) fail(file, item, "every 'op' must be a table ([[op]])");
    CostTable::Entry e;
    bool has_ns = false;
    for (const auto& [key, node] : *table) {
        const std::string k(key.str());
        const std::string at = "op." + k;
        if (k == "backend" || k == "op" || k == "node") {
            const auto* s = node.as_string();
            if (!s || s->get().empty()) fail(file, node, "'" + at + "' must be a non-empty string");
            (k == "backend" ? e.backend : k == "op" ? e.op : e.node) = s->get();
        } else if (k == "types") {
            for (const toml::node& t : array_at(file, node, at)) {
                const auto* s = t.as_string();
                if (!s) fail(file, t, "'op.types' must contain type names (strings)");
                e.types.push_back(s->get());
            }
        } else if (k == "shapes") {
            for (const toml::node& shape : array_at(file, node, at)) {
                const toml::array& dims = array_at(file, shape, "op.shapes entry");
                if (dims.empty() || dims.size() > SY_MAX_DIMS)
                    fail(file, shape, fmt::format("a shape has 1 to {} dimensions", SY_MAX_DIMS));
                std::vector<int64_t> s;
                for (const toml::node& d : dims)
                    s.push_back(integer_at(file, d, "op.shapes", 1, int64_t(1) << 48));
                e.shapes.push_back(std::move(s));
            }
        } else if (k == "params") {
            const toml::array& params = array_at(file, node, at);
            if (params.size() > SY_MAX_PARAMS)
                fail(file, node, fmt::format("'op.params' has at most {} values", SY_MAX_PARAMS));
            for (const toml::node& p : params)
                e.params.push_back(int32_t(integer_at(file, p, "op.params", INT32_MIN, INT32_MAX)));
        } else if (k == "ns") {
            const std::optional<double> v = node.value<double>();
            if (!v || !std::isfinite(*v) || *v <= 0 || *v > 1e15)
                fail(file, node, "'op.ns' must be a time in nanoseconds, > 0 and finite");
            e.ns = *v;
            has_ns = true;
        } else if (k == "samples") {
            e.samples = integer_at(file, node, at, 1, INT64_MAX);
        } else {
            fail(file, node,
                 "unknown key '" + at +
                     "' (known: backend, op, types, shapes, params, ns, samples, node)");
        }
    }
    if (e.backend.empty() || e.op.empty() || e.types.empty() || !has_ns)
        fail(file, item, "an [[op]] needs 'backend', 'op', 'types', 'shapes' and 'ns'");
    if (e.types.size() != e.shapes.size() || e.types.size() > SY_MAX_SRC + 1)
        fail(file, item,
             fmt::format("'types' ({}) and 'shapes' ({}) must both list the sources and then "
                         "the result (at most {})",
                         e.types.size(), e.shapes.size(), SY_MAX_SRC + 1));
    return e;
}

// toml++ writes strings escaped; a lone value is formatted through a one-key table.
std::string toml_value(toml::node&& value) {
    toml::table t;
    t.insert("v", std::move(value));
    std::ostringstream s;
    s << toml::toml_formatter(t, toml::format_flags::none);
    const std::string text = s.str();
    return text.substr(text.find('=') + 2);
}

std::string toml_string(const std::string& s) {
    return toml_value(toml::value<std::string>(s));
}

}  // namespace

std::string CostTable::Entry::key() const {
    return backend_key(backend, signature(*this, false));
}

CostTable::Entry CostTable::describe(std::string_view backend, const sy_node& node) {
    Entry e;
    e.backend = backend;
    e.op = op_label(node.op, node.named_op ? node.named_op : "", node.named_op_version);
    for (int32_t i = 0; i <= node.n_src && i < SY_MAX_SRC + 1; ++i) {
        const sy_tensor* t = i < node.n_src ? node.src[i] : node.dst;
        if (t == nullptr) continue;
        e.types.push_back(dtype_text(t->type));
        e.shapes.push_back(trimmed_shape(*t));
    }
    e.params.assign(node.iparams, node.iparams + SY_MAX_PARAMS);
    while (!e.params.empty() && e.params.back() == 0) e.params.pop_back();
    if (node.dst && node.dst->name) e.node = node.dst->name;
    return e;
}

CostTable::Entry CostTable::describe(std::string_view backend, const Graph& graph, int32_t index) {
    const std::vector<sy_tensor> tensors = tensor_descriptors(graph);
    return describe(backend, raw_node(graph.nodes()[size_t(index)], tensors));
}

void CostTable::add(Entry entry) {
    const std::string key = entry.key();
    if (const auto it = exact_.find(key); it != exact_.end()) {
        entries_[it->second] = std::move(entry);
        return;
    }
    const size_t index = entries_.size();
    exact_.emplace(key, index);
    if (is_product_op(entry.op)) {
        std::vector<Point>& points = products_[backend_key(entry.backend, signature(entry, true))];
        const Point p{rows_of(entry), index};
        points.insert(
            std::upper_bound(points.begin(), points.end(), p,
                             [](const Point& a, const Point& b) { return a.rows < b.rows; }),
            p);
    }
    entries_.push_back(std::move(entry));
}

std::optional<double> CostTable::ns(std::string_view backend, const sy_node& node) const {
    const Entry e = describe(backend, node);
    if (const auto it = exact_.find(e.key()); it != exact_.end()) return entries_[it->second].ns;
    if (!is_product_op(e.op)) return std::nullopt;
    const auto it = products_.find(backend_key(backend, signature(e, true)));
    if (it == products_.end()) return std::nullopt;
    const std::vector<Point>& p = it->second;
    const double rows = rows_of(e);
    const auto time = [this](const Point& x) { return entries_[x.entry].ns; };
    if (rows <= p.front().rows) return time(p.front());
    if (rows >= p.back().rows) return time(p.back()) * rows / p.back().rows;
    size_t i = 1;
    while (p[i].rows < rows) ++i;
    const Point &a = p[i - 1], &b = p[i];
    if (b.rows == a.rows) return time(b);
    const double t = std::log(rows / a.rows) / std::log(b.rows / a.rows);
    return std::exp(std::log(time(a)) + t * (std::log(time(b)) - std::log(time(a))));
}

std::string CostTable::to_toml(
    const std::vector<std::pair<std::string, std::string>>& about) const {
    std::string out =
        "# Measured op times for switchyard's op placement (cost_table.hpp): use with\n"
        "# `--cost-table FILE` or `[offload] cost_table = \"FILE\"`. One [[op]] per node shape\n"
        "# and backend: the median of the times measured, in nanoseconds.\n[calibration]\n";
    for (const auto& [key, value] : about) out += key + " = " + toml_string(value) + "\n";
    const auto list = [](const auto& values, auto&& text) {
        std::string s = "[";
        for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + text(values[i]);
        return s + "]";
    };
    for (const Entry& e : entries_) {
        out += "\n[[op]]\nbackend = " + toml_string(e.backend) + "\nop = " + toml_string(e.op);
        out += "\ntypes = " + list(e.types, toml_string);
        out += "\nshapes = " + list(e.shapes, [&](const std::vector<int64_t>& s) {
                   return list(s, [](int64_t d) { return std::to_string(d); });
               });
        out += "\nparams = " + list(e.params, [](int32_t p) { return std::to_string(p); });
        out += fmt::format("\nns = {:.6g}\nsamples = {}\n", e.ns, e.samples);
        if (!e.node.empty()) out += "node = " + toml_string(e.node) + "\n";
    }
    return out;
}

CostTable CostTable::parse(std::string_view text, const fs::path& source_name) {
    const toml::table root = parse_toml(text, source_name);
    CostTable table;
    for (const auto& [key, node] : root) {
        const std::string k(key.str());
        if (k == "calibration") {
            if (!node.is_table()) fail(source_name, node, "'calibration' must be a table");
        } else if (k == "op") {
            for (const toml::node& item : array_at(source_name, node, "op"))
                table.add(read_entry(source_name, item));
        } else {
            fail(source_name, node,
                 "unknown key '" + k + "' in a cost table (known: calibration, op)");
        }
    }
    return table;
}

CostTable CostTable::load(const fs::path& file) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
        throw ConfigError(file.string() + ": cost table not found (or not a regular file)");
    if (fs::file_size(file, ec) > kMaxFileBytes)
        throw ConfigError(file.string() + ": larger than 64 MiB, not a cost table");
    try {
        return parse(read_text_file("", file.string(), {kMaxFileBytes}), file);
    } catch (const ConfigError&) {
        throw;
    } catch (const Error& e) {
        throw ConfigError(std::string(e.what()) + " (cost table)");
    }
}

}  // namespace sy
