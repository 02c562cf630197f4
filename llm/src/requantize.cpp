#include "switchyard/llm/requantize.hpp"

#include <algorithm>
#include <cstring>
#include <thread>

#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/tensor_types.hpp"
#include "switchyard/quants.hpp"

namespace sy::llm {
namespace {

uint64_t tensor_bytes(int32_t type, std::span<const int64_t> ne) {
    const sy_dtype_traits t = sy_dtype_info(type);
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    return static_cast<uint64_t>(n / t.block_size) * static_cast<uint64_t>(t.type_size);
}

// Keys that describe the source file rather than the model.
bool copied_key(std::string_view key) {
    return key != "general.file_type" && key != "general.alignment" && !key.starts_with("split.");
}

}  // namespace

QuantRule parse_quant_rule(std::string_view rule) {
    const std::string text(rule);
    const size_t eq = rule.rfind('=');
    if (eq == std::string_view::npos) {
        throw Error("rule '" + text + "': expected REGEX=TYPE");
    }
    const std::string regex(rule.substr(0, eq));
    const std::string type(rule.substr(eq + 1));
    if (regex.empty()) throw Error("rule '" + text + "': empty regular expression");
    QuantRule out;
    out.text = text;
    const auto id = parse_type_name(type);
    if (!id) {
        throw Error("rule '" + text + "': unknown type '" + type +
                    "' (known: " + writable_type_names() + ")");
    }
    out.type = *id;
    try {
        out.pattern = std::regex(regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
        throw Error("rule '" + text + "': invalid regular expression '" + regex + "': " + e.what());
    }
    return out;
}

TensorDecision decide_tensor_type(std::string_view name, std::span<const int64_t> ne,
                                  int32_t target, const std::vector<QuantRule>& rules) {
    TensorDecision d;
    const std::string s(name);
    if (keeps_f32(name, ne)) {
        d.wanted = d.type = SY_TYPE_F32;
        return d;
    }
    for (const QuantRule& rule : rules) {
        if (std::regex_search(s, rule.pattern)) {
            d.rule = &rule;
            d.wanted = rule.type;
            if (is_attn_k_b(name) && d.wanted == SY_TYPE_F16) d.wanted = SY_TYPE_BF16;
            d.type = fit_block(name, ne.empty() ? 1 : ne[0], d.wanted);
            return d;
        }
    }
    d.wanted = preferred_tensor_type(name, ne, target);
    d.type = fit_block(name, ne.empty() ? 1 : ne[0], d.wanted);
    return d;
}

RequantizeResult requantize(const std::filesystem::path& in, const std::filesystem::path& out,
                            const RequantizeOptions& options,
                            const std::function<void(const RequantizeEvent&)>& progress) {
    const int threads = options.threads > 0
                            ? options.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const gguf::Reader reader = gguf::Reader::open(in);
    gguf::Writer writer(out, reader.alignment());
    bool has_file_type = false;
    for (const gguf::KeyValue& kv : reader.metadata()) {
        if (kv.key == "general.file_type") {
            writer.add(kv.key, gguf::Value::u32(file_type_of(options.target)));
            has_file_type = true;
        } else if (copied_key(kv.key)) {
            writer.add(kv.key, kv.value);
        }
    }
    if (!has_file_type) {
        writer.add("general.file_type", gguf::Value::u32(file_type_of(options.target)));
    }

    RequantizeResult result;
    std::vector<TensorDecision> decisions;
    for (const gguf::TensorInfo& t : reader.tensors()) {
        const std::span<const int64_t> ne(t.ne, t.n_dims);
        TensorDecision d = decide_tensor_type(t.name, ne, options.target, options.rules);
        if (d.type != t.type &&
            (!quants::can_dequantize(t.type) || !quants::can_quantize(d.type))) {
            throw Error(in.string() + ": tensor " + t.name + ": cannot convert " +
                        type_name(t.type) + " to " + type_name(d.type));
        }
        if (d.fell_back()) {
            result.fallbacks.push_back(t.name + ": " + type_name(d.wanted) + " -> " +
                                       type_name(d.type) + " (ne0 " + std::to_string(t.ne[0]) +
                                       " is not a multiple of " +
                                       std::to_string(sy_dtype_info(d.wanted).block_size) + ")");
        }
        writer.declare_tensor(t.name, d.type, ne);
        decisions.push_back(d);
        result.bytes_in += t.nbytes;
    }
    writer.write_header();

    RequantizeEvent event;
    event.count = reader.tensors().size();
    event.bytes_total = result.bytes_in;
    std::vector<uint8_t> bytes;
    std::vector<float> staging;
    for (size_t i = 0; i < reader.tensors().size(); ++i) {
        const gguf::TensorInfo& t = reader.tensors()[i];
        const TensorDecision& d = decisions[i];
        event.index = i;
        event.name = t.name;
        event.from = t.type;
        event.decision = d;
        if (progress) progress(event);
        const std::span<const int64_t> ne(t.ne, t.n_dims);
        if (d.type == t.type) {
            writer.write_tensor(std::span<const uint8_t>(t.data, t.nbytes));
        } else {
            const int64_t n0 = t.ne[0];
            const int64_t rows =
                n0 ? static_cast<int64_t>(tensor_bytes(SY_TYPE_F32, ne) / 4) / n0 : 0;
            const uint64_t in_row = rows ? t.nbytes / static_cast<uint64_t>(rows) : 0;
            const uint64_t out_total = tensor_bytes(d.type, ne);
            const uint64_t out_row = rows ? out_total / static_cast<uint64_t>(rows) : 0;
            bytes.resize(out_total);
            const int64_t chunk =
                std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(1, n0));
            for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
                const int64_t nr = std::min(chunk, rows - r0);
                float* f32 = d.type == SY_TYPE_F32
                                 ? reinterpret_cast<float*>(bytes.data() + r0 * out_row)
                                 : (staging.resize(static_cast<size_t>(nr * n0)), staging.data());
                for (int64_t r = 0; r < nr; ++r) {
                    quants::dequantize_row(t.type, t.data + (r0 + r) * in_row, f32 + r * n0, n0);
                }
                if (d.type != SY_TYPE_F32) {
                    quants::quantize_rows(d.type, f32, bytes.data() + r0 * out_row, nr, n0,
                                          threads);
                }
            }
            writer.write_tensor(bytes);
            ++result.converted;
        }
        result.bytes_out += tensor_bytes(d.type, ne);
        event.bytes_done += t.nbytes;
        ++result.tensors;
    }
    writer.finish();
    return result;
}

}  // namespace sy::llm
