// `switchyard inspect MODEL.gguf [--json]`: what a GGUF file holds — version, files, metadata,
// tensors, totals per type and bits per weight.
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "commands/commands.hpp"
#include "switchyard/dtype.h"
#include "switchyard/interleaved.hpp"
#include "switchyard/llm/file_type.hpp"
#include "switchyard/llm/gguf.hpp"

namespace sy::tools {
namespace {

using gguf::Value;
using gguf::ValueType;
using nlohmann::json;

constexpr size_t kTextItems = 8;     // array items shown in the text listing
constexpr size_t kJsonItems = 1024;  // array items kept in JSON (the length is always given)

std::string file_type_label(int32_t type) {
    if (const quants::InterleavedType* layout = quants::interleaved_type(type)) return layout->name;
    const char* name = sy_dtype_info(type).name;
    return name ? name : "type" + std::to_string(type);
}

uint64_t elements(const gguf::TensorInfo& t) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) n *= static_cast<uint64_t>(t.ne[d]);
    return n;
}

std::string shape(const gguf::TensorInfo& t) {
    std::string s = "{";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "}";
}

// Text from the file as it may be shown on a terminal: control characters (C0, DEL and the C1
// range U+0080-U+009F, which terminals take as escape sequences) and bytes that are not UTF-8
// become \n, \t, \r, \xHH or \u00HH; at most `max` characters, then "…".
std::string printable(std::string_view s, size_t max = SIZE_MAX) {
    std::string out;
    size_t shown = 0, i = 0;
    while (i < s.size() && shown < max) {
        const auto c = static_cast<unsigned char>(s[i]);
        ++shown;
        if (c < 0x80) {
            if (c == '\n')
                out += "\\n";
            else if (c == '\t')
                out += "\\t";
            else if (c == '\r')
                out += "\\r";
            else if (c < 0x20 || c == 0x7f)
                out += fmt::format("\\x{:02x}", c);
            else
                out += char(c);
            ++i;
            continue;
        }
        // A UTF-8 sequence: its length from the lead byte, continuation bytes 10xxxxxx, no
        // overlong or surrogate forms (the first continuation byte's range depends on the lead).
        const int len = c >= 0xc2 && c <= 0xdf   ? 2
                        : c >= 0xe0 && c <= 0xef ? 3
                        : c >= 0xf0 && c <= 0xf4 ? 4
                                                 : 0;
        bool valid = len > 0 && i + size_t(len) <= s.size();
        for (int k = 1; valid && k < len; ++k) {
            const auto b = static_cast<unsigned char>(s[i + size_t(k)]);
            unsigned lo = 0x80, hi = 0xbf;
            if (k == 1 && c == 0xe0) lo = 0xa0;
            if (k == 1 && c == 0xed) hi = 0x9f;
            if (k == 1 && c == 0xf0) lo = 0x90;
            if (k == 1 && c == 0xf4) hi = 0x8f;
            valid = b >= lo && b <= hi;
        }
        if (!valid) {
            out += fmt::format("\\x{:02x}", c);
            ++i;
        } else if (c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned char>(s[i + 1]));  // C1
            i += 2;
        } else {
            out.append(s.substr(i, size_t(len)));
            i += size_t(len);
        }
    }
    return i < s.size() ? out + "…" : out;
}

std::string short_text(const std::string& s, size_t max = 60) {
    return printable(s, max);
}

std::string scalar_text(const Value& v) {
    switch (v.type()) {
        case ValueType::F32:
        case ValueType::F64: return fmt::format("{}", v.as_f64());
        case ValueType::BOOL: return v.as_bool() ? "true" : "false";
        case ValueType::STRING: return "\"" + short_text(v.as_string()) + "\"";
        case ValueType::U8:
        case ValueType::U16:
        case ValueType::U32:
        case ValueType::U64: return std::to_string(v.as_u64());
        default: return std::to_string(v.as_i64());
    }
}

std::string value_text(const Value& v) {
    if (v.type() != ValueType::ARRAY) return scalar_text(v);
    const gguf::Array& a = v.as_array();
    std::string s = fmt::format("[{} × {}] [", a.size(), value_type_name(a.element_type));
    for (size_t i = 0; i < a.size() && i < kTextItems; ++i) {
        s += (i ? ", " : "") + value_text(a[i]);
    }
    return s + (a.size() > kTextItems ? ", …]" : "]");
}

json value_json(const Value& v) {
    switch (v.type()) {
        case ValueType::F32:
        case ValueType::F64: return v.as_f64();
        case ValueType::BOOL: return v.as_bool();
        case ValueType::STRING: return v.as_string();
        case ValueType::ARRAY: {
            const gguf::Array& a = v.as_array();
            json items = json::array();
            for (size_t i = 0; i < a.size() && i < kJsonItems; ++i) {
                items.push_back(value_json(a[i]));
            }
            return {{"element_type", value_type_name(a.element_type)},
                    {"length", a.size()},
                    {"truncated", a.size() > kJsonItems},
                    {"items", std::move(items)}};
        }
        case ValueType::U8:
        case ValueType::U16:
        case ValueType::U32:
        case ValueType::U64: return v.as_u64();
        default: return v.as_i64();
    }
}

struct TypeTotal {
    uint64_t count = 0, bytes = 0, params = 0;
};

double bits_per_weight(uint64_t bytes, uint64_t params) {
    return params ? 8.0 * static_cast<double>(bytes) / static_cast<double>(params) : 0.0;
}

int inspect(const std::string& path, bool as_json) {
    const gguf::Reader r = gguf::Reader::open(path);
    std::map<std::string, TypeTotal> per_type;
    uint64_t params = 0, tensor_bytes = 0;
    for (const gguf::TensorInfo& t : r.tensors()) {
        TypeTotal& tt = per_type[file_type_label(t.type)];
        ++tt.count;
        tt.bytes += t.nbytes;
        tt.params += elements(t);
        params += elements(t);
        tensor_bytes += t.nbytes;
    }
    const double bpw = bits_per_weight(tensor_bytes, params);

    if (as_json) {
        json files = json::array();
        for (const auto& f : r.files()) files.push_back(f.string());
        json metadata = json::array();
        for (const gguf::KeyValue& kv : r.metadata()) {
            metadata.push_back({{"key", kv.key},
                                {"type", value_type_name(kv.value.type())},
                                {"value", value_json(kv.value)}});
        }
        json tensors = json::array();
        for (const gguf::TensorInfo& t : r.tensors()) {
            tensors.push_back({{"name", t.name},
                               {"type", file_type_label(t.type)},
                               {"type_id", t.type},
                               {"shape", std::vector<int64_t>(t.ne, t.ne + t.n_dims)},
                               {"params", elements(t)},
                               {"bytes", t.nbytes},
                               {"offset", t.offset},
                               {"shard", t.shard}});
        }
        json types = json::object();
        for (const auto& [name, tt] : per_type) {
            types[name] = {{"count", tt.count},
                           {"bytes", tt.bytes},
                           {"params", tt.params},
                           {"bits_per_weight", bits_per_weight(tt.bytes, tt.params)}};
        }
        const json out = {{"version", r.version()},
                          {"alignment", r.alignment()},
                          {"files", files},
                          {"file_size", r.file_size()},
                          {"metadata", metadata},
                          {"tensors", tensors},
                          {"types", types},
                          {"tensor_count", r.tensors().size()},
                          {"tensor_bytes", tensor_bytes},
                          {"params", params},
                          {"bits_per_weight", bpw}};
        std::puts(out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
        return 0;
    }

    fmt::print("GGUF v{}, alignment {}, {} file(s), {} bytes\n", r.version(), r.alignment(),
               r.files().size(), r.file_size());
    for (size_t i = 0; i < r.files().size(); ++i)
        fmt::print("  [{}] {}\n", i, printable(r.files()[i].string()));
    fmt::print("\nmetadata ({} keys)\n", r.metadata().size());
    for (const gguf::KeyValue& kv : r.metadata()) {
        // general.file_type with llama.cpp's name for it: "15 (Q4_K - Medium)".
        const bool file_type = kv.key == "general.file_type" && kv.value.is_integer();
        fmt::print("  {:<48} {:<7} {}{}\n", printable(kv.key), value_type_name(kv.value.type()),
                   value_text(kv.value),
                   file_type ? " (" + llm::file_type_name(uint32_t(kv.value.as_u64())) + ")" : "");
    }
    fmt::print("\ntensors ({})\n", r.tensors().size());
    fmt::print("  {:<40} {:<8} {:<28} {:>14} {:>14} {:>5}\n", "name", "type", "shape", "bytes",
               "offset", "shard");
    for (const gguf::TensorInfo& t : r.tensors()) {
        fmt::print("  {:<40} {:<8} {:<28} {:>14} {:>14} {:>5}\n", printable(t.name),
                   file_type_label(t.type), shape(t), t.nbytes, t.offset, t.shard);
    }
    fmt::print("\n  {:<10} {:>7} {:>16} {:>16} {:>8}\n", "type", "count", "bytes", "params", "bpw");
    for (const auto& [name, tt] : per_type) {
        fmt::print("  {:<10} {:>7} {:>16} {:>16} {:>8.3f}\n", name, tt.count, tt.bytes, tt.params,
                   bits_per_weight(tt.bytes, tt.params));
    }
    const double p = static_cast<double>(params);
    const std::string human =
        p >= 1e9 ? fmt::format("{:.2f} B", p / 1e9) : fmt::format("{:.2f} M", p / 1e6);
    fmt::print("\nparameters: {} ({}), tensor bytes: {}, bits per weight: {:.4f}\n", params, human,
               tensor_bytes, bpw);
    return 0;
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
    auto* cmd = app.add_subcommand("inspect", "Show a GGUF file's metadata, tensors and sizes");
    auto path = std::make_shared<std::string>();
    auto as_json = std::make_shared<bool>(false);
    cmd->add_option("model", *path, "GGUF file (the first shard of a split model)")->required();
    cmd->add_flag("--json", *as_json, "Machine-readable output");
    return [path, as_json] { return inspect(*path, *as_json); };
}

}  // namespace sy::tools
