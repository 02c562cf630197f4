#include "switchyard/llm/requantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>

#include "quant_preset_ik.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/dtype.h"
#include "switchyard/interleaved.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/tensor_types.hpp"
#include "switchyard/quants.hpp"

namespace sy::llm {
namespace {

// Rows of ne[0] values, each with a row-scaled type's scale in front.
uint64_t tensor_bytes(int32_t type, std::span<const int64_t> ne) {
    const sy_dtype_traits t = sy_dtype_info(type);
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    const int64_t rows = ne.empty() || ne[0] == 0 ? 0 : n / ne[0];
    return static_cast<uint64_t>(n / t.block_size) * static_cast<uint64_t>(t.type_size) +
           static_cast<uint64_t>(rows) * static_cast<uint64_t>(t.row_meta_size);
}

// Keys that describe the source file rather than the model (and the source's imatrix record,
// replaced when this run has an importance matrix).
bool copied_key(std::string_view key, bool imatrix) {
    return key != "general.file_type" && key != "general.alignment" && !key.starts_with("split.") &&
           !(imatrix && key.starts_with("quantize.imatrix."));
}

bool is_block_type(int32_t type) {
    return sy_dtype_info(type).block_size > 1;
}

// The first matching rule's type, or nullopt.
std::optional<TensorDecision> rule_decision(std::string_view name, std::span<const int64_t> ne,
                                            const std::vector<QuantRule>& rules) {
    const std::string s(name);
    for (const QuantRule& rule : rules) {
        if (rule.pattern.search(s)) {
            TensorDecision d;
            d.rule = &rule;
            d.wanted = rule.type;
            if (is_attn_k_b(name) && d.wanted == SY_TYPE_F16) d.wanted = SY_TYPE_BF16;
            d.type = fit_block(name, ne.empty() ? 1 : ne[0], d.wanted);
            if (rule.interleave && d.type == rule.type && name != "token_embd.weight")
                d.interleave = rule.interleave;
            return d;
        }
    }
    return std::nullopt;
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
    auto id = parse_type_name(type);
    int32_t interleave = 0;
    if (const quants::InterleavedType* layout = quants::interleaved_type(type); layout && !id) {
        id = layout->base;
        interleave = layout->id;
    }
    if (!id) {
        throw Error("rule '" + text + "': unknown type '" + type + "' (known: " +
                    writable_type_names() + ", and their interleaved forms such as iq4_k_r4)");
    }
    return {text, Pattern(regex, "rule '" + text + "'"), *id, interleave};
}

TensorDecision decide_tensor_type(std::string_view name, std::span<const int64_t> ne,
                                  int32_t target, const std::vector<QuantRule>& rules) {
    TensorDecision d;
    if (keeps_f32(name, ne)) {
        d.wanted = d.type = SY_TYPE_F32;
        return d;
    }
    if (auto ruled = rule_decision(name, ne, rules)) return *ruled;
    d.wanted = preferred_tensor_type(name, ne, target);
    d.type = fit_block(name, ne.empty() ? 1 : ne[0], d.wanted);
    return d;
}

TensorDecision decide_tensor_type(std::string_view name, std::span<const int64_t> ne,
                                  const QuantPreset& preset, const MixModel& model,
                                  MixCounters& counters, const std::vector<QuantRule>& rules) {
    if (keeps_f32(name, ne)) return decide_tensor_type(name, ne, SY_TYPE_F32, {});
    const int32_t mixed = mix_tensor_type(preset, model, counters, name, ne);
    if (auto ruled = rule_decision(name, ne, rules)) return *ruled;
    if (!preset.ik) return decide_tensor_type(name, ne, mixed, {});
    // ik's mix: an interleaved type is quantized as its base; ik's fallback, then ours (a type
    // that still does not fit: f16, or bf16 for attn_k_b).
    const quants::InterleavedType* layout = quants::interleaved_type(mixed);
    TensorDecision d;
    d.wanted = preferred_tensor_type(name, ne, layout ? layout->base : mixed);
    const int64_t ne0 = ne.empty() ? 1 : ne[0];
    d.type = fit_block(name, ne0, detail::ik_fit_block(ne0, d.wanted));
    if (layout && d.type == layout->base && name != "token_embd.weight") d.interleave = layout->id;
    return d;
}

RequantizeResult requantize(const std::filesystem::path& in, const std::filesystem::path& out,
                            const RequantizeOptions& options,
                            const std::function<void(const RequantizeEvent&)>& progress) {
    const int threads = options.threads > 0
                            ? options.threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const gguf::Reader reader = gguf::Reader::open(in);
    const Imatrix* imatrix = options.imatrix;
    const uint32_t file_type = options.file_type ? options.file_type
                               : options.preset  ? static_cast<uint32_t>(options.preset->ftype)
                                                 : file_type_of(options.target);

    // Every tensor's type first (a mix's counters advance in llama.cpp's order), and whether
    // its quantizer has the importance it needs: nothing is written before all are known.
    RequantizeResult result;
    const std::vector<gguf::TensorInfo>& tensors = reader.tensors();
    std::vector<TensorDecision> decisions(tensors.size());
    if (options.preset) {
        std::vector<std::string> names;
        for (const gguf::TensorInfo& t : tensors) names.push_back(t.name);
        const MixModel model = MixModel::from_file(reader, imatrix != nullptr);
        MixCounters counters;
        std::vector<size_t> order = mix_order(names);
        if (options.preset->ik)  // ik visits the tensors in the file's order
            for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        for (size_t i : order)
            decisions[i] = decide_tensor_type(
                tensors[i].name, std::span<const int64_t>(tensors[i].ne, tensors[i].n_dims),
                *options.preset, model, counters, options.rules);
    } else {
        for (size_t i = 0; i < tensors.size(); ++i)
            decisions[i] = decide_tensor_type(
                tensors[i].name, std::span<const int64_t>(tensors[i].ne, tensors[i].n_dims),
                options.target, options.rules);
    }
    // A row-interleaved input is read as its base type's rows; with repack, what can be
    // written interleaved is.
    std::vector<int32_t> source_type(tensors.size()), written_type(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const gguf::TensorInfo& t = tensors[i];
        const quants::InterleavedType* in_layout = quants::interleaved_type(t.type);
        source_type[i] = in_layout ? in_layout->base : t.type;
        const quants::InterleavedType* as = quants::interleaved_type(options.repack_as);
        const quants::InterleavedType* out_layout =
            decisions[i].interleave ? quants::interleaved_type(decisions[i].interleave)
            : as && as->base == decisions[i].type ? as
            : options.repack                      ? quants::interleaved_of(decisions[i].type)
                                                  : nullptr;
        const bool fits = out_layout && t.n_dims >= 2 && t.ne[1] % out_layout->rows == 0 &&
                          t.name != "token_embd.weight";
        written_type[i] = fits ? out_layout->id : decisions[i].type;
        // IQ1_M_R4 exists in files only interleaved (its rows are switchyard's in-memory form):
        // a tensor that cannot be is written as IQ1_M, with a note.
        if (decisions[i].type == SY_TYPE_IQ1_M_R4_ROWS) {
            const bool groups = t.n_dims >= 2 && t.ne[1] % 4 == 0 && t.name != "token_embd.weight";
            if (groups) {
                written_type[i] = quants::interleaved_of(SY_TYPE_IQ1_M_R4_ROWS)->id;
            } else {  // (reported here, not again as a block fallback)
                decisions[i].type = decisions[i].wanted = written_type[i] = SY_TYPE_IQ1_M;
                result.fallbacks.push_back(t.name + ": iq1_m_r4 -> iq1_m (" +
                                           (t.name == "token_embd.weight"
                                                ? std::string("token_embd is not interleaved")
                                                : "its " +
                                                      std::to_string(t.n_dims < 2 ? 1 : t.ne[1]) +
                                                      " rows are not groups of 4") +
                                           ")");
            }
        }
    }
    const bool q2_k_s = options.preset && options.preset->ftype == FileType::kMostlyQ2_K_S;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const gguf::TensorInfo& t = tensors[i];
        const TensorDecision& d = decisions[i];
        if (d.type != source_type[i] &&
            (!quants::can_dequantize(source_type[i]) || !quants::can_quantize(d.type))) {
            throw Error(in.string() + ": tensor " + t.name + ": cannot convert " +
                        type_name(source_type[i]) + " to " + type_name(d.type));
        }
        if (d.fell_back()) {
            result.fallbacks.push_back(t.name + ": " + type_name(d.wanted) + " -> " +
                                       type_name(d.type) + " (ne0 " + std::to_string(t.ne[0]) +
                                       " is not a multiple of " +
                                       std::to_string(sy_dtype_info(d.wanted).block_size) + ")");
        }
        if (d.type == source_type[i] || !is_block_type(d.type)) continue;
        // As llama.cpp, the token embeddings and the output (which no imatrix covers) are exempt.
        const bool needs =
            (quants::requires_importance(d.type) || (q2_k_s && d.type == SY_TYPE_Q2_K)) &&
            t.name != "token_embd.weight" && t.name != "output.weight";
        const bool has = imatrix && imatrix->entries.count(t.name);
        if (needs && !has)
            throw Error(in.string() + ": missing importance matrix for tensor " + t.name +
                        " in a very low-bit quantization (" + type_name(d.type) + "): " +
                        (imatrix ? imatrix->source + " has no entry for it"
                                 : "give one with --imatrix (switchyard imatrix makes it)"));
        if (imatrix && !has) result.warnings.push_back(t.name);
        // An entry of the wrong size (another model's imatrix) stops the run before writing.
        if (has && t.ne[0] > 0) imatrix->importance(t.name, t.ne[0], t.ne[2] * t.ne[3]);
    }

    gguf::Writer writer(out, reader.alignment());
    bool has_file_type = false;
    for (const gguf::KeyValue& kv : reader.metadata()) {
        if (kv.key == "general.file_type") {
            writer.add(kv.key, gguf::Value::u32(file_type));
            has_file_type = true;
        } else if (copied_key(kv.key, imatrix != nullptr)) {
            writer.add(kv.key, kv.value);
        }
    }
    if (!has_file_type) writer.add("general.file_type", gguf::Value::u32(file_type));
    if (imatrix) {
        writer.add("quantize.imatrix.file", gguf::Value::string(imatrix->source));
        if (!imatrix->datasets.empty())
            writer.add("quantize.imatrix.dataset", gguf::Value::string(imatrix->datasets[0]));
        writer.add("quantize.imatrix.entries_count",
                   gguf::Value::u32(static_cast<uint32_t>(imatrix->entries.size())));
        if (imatrix->chunk_count > 0)
            writer.add("quantize.imatrix.chunks_count", gguf::Value::u32(imatrix->chunk_count));
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
        writer.declare_tensor(tensors[i].name, written_type[i],
                              std::span<const int64_t>(tensors[i].ne, tensors[i].n_dims));
        result.bytes_in += tensors[i].nbytes;
    }
    writer.write_header();

    RequantizeEvent event;
    event.count = reader.tensors().size();
    event.bytes_total = result.bytes_in;
    std::vector<uint8_t> bytes, source, packed;
    std::vector<float> staging;
    // Groups of rows from one layout to the other (n0 values a row).
    // `rows` is the tensor's row count; the two layouts' rows can differ in size (IQ1_S_R4).
    const auto regroup = [](const quants::InterleavedType& layout, const uint8_t* from, uint8_t* to,
                            uint64_t rows, int64_t n0, bool to_base) {
        const uint64_t base = uint64_t(layout.rows * quants::row_size(layout.base, n0));
        const uint64_t own = uint64_t(layout.rows * quants::interleaved_row_size(layout, n0));
        for (uint64_t g = 0; g < rows / uint64_t(layout.rows); ++g) {
            if (to_base)
                quants::deinterleave(layout, from + g * own, to + g * base, n0);
            else
                quants::interleave(layout, from + g * base, to + g * own, n0);
        }
    };
    for (size_t i = 0; i < reader.tensors().size(); ++i) {
        const gguf::TensorInfo& t = reader.tensors()[i];
        const TensorDecision& d = decisions[i];
        event.index = i;
        event.name = t.name;
        event.from = t.type;
        event.decision = d;
        if (progress) progress(event);
        const std::span<const int64_t> ne(t.ne, t.n_dims);
        // The input's rows in its base type.
        const uint8_t* data = t.data;
        uint64_t data_bytes = t.nbytes;
        const uint64_t tensor_rows =
            t.ne[0] ? tensor_bytes(SY_TYPE_F32, ne) / 4 / uint64_t(t.ne[0]) : 0;
        if (const quants::InterleavedType* layout = quants::interleaved_type(t.type)) {
            data_bytes = tensor_rows * uint64_t(quants::row_size(layout->base, t.ne[0]));
            allocating("tensor " + t.name + " de-interleaved", data_bytes,
                       [&] { source.resize(data_bytes); });
            regroup(*layout, t.data, source.data(), tensor_rows, t.ne[0], true);
            data = source.data();
        }
        // Writes the tensor's bytes in its base type, interleaved where it is written so.
        const auto write = [&](const uint8_t* rows, uint64_t size) {
            if (const quants::InterleavedType* layout = quants::interleaved_type(written_type[i])) {
                size = tensor_rows * uint64_t(quants::interleaved_row_size(*layout, t.ne[0]));
                allocating("tensor " + t.name + " interleaved", size, [&] { packed.resize(size); });
                try {
                    regroup(*layout, rows, packed.data(), tensor_rows, t.ne[0], false);
                } catch (const std::invalid_argument& e) {  // iq1_s rows with several scales
                    throw Error(in.string() + ": tensor " + t.name + ": " + e.what() +
                                "; quantize it from a higher-precision file");
                }
                rows = packed.data();
            }
            writer.write_tensor(std::span<const uint8_t>(rows, size));
            result.bytes_out += size;
        };
        if (d.type == source_type[i]) {
            write(data, data_bytes);
        } else {
            const int64_t n0 = t.ne[0];
            const int64_t rows =
                n0 ? static_cast<int64_t>(tensor_bytes(SY_TYPE_F32, ne) / 4) / n0 : 0;
            const uint64_t in_row = rows ? data_bytes / static_cast<uint64_t>(rows) : 0;
            const uint64_t out_total = tensor_bytes(d.type, ne);
            // Written as a layout with one scale per row (iq1_s_r4): quantized so.
            const quants::InterleavedType* out_layout = quants::interleaved_type(written_type[i]);
            const bool one_scale = out_layout && !out_layout->repackable;
            const uint64_t out_row = rows ? out_total / static_cast<uint64_t>(rows) : 0;
            allocating("tensor " + t.name + " in " + type_name(d.type), out_total,
                       [&] { bytes.resize(out_total); });
            const int64_t chunk =
                std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(1, n0));
            // Each matrix (expert) of ne1 rows has its own importance: chunks stay inside one.
            const int64_t per_matrix = std::max<int64_t>(1, t.ne[1]);
            std::optional<std::vector<float>> importance;
            if (imatrix && is_block_type(d.type))
                importance = imatrix->importance(t.name, n0, rows / per_matrix);
            if (importance) ++result.with_importance;
            for (int64_t r0 = 0; r0 < rows;) {
                const int64_t nr = std::min({chunk, rows - r0, per_matrix - r0 % per_matrix});
                float* f32 = d.type == SY_TYPE_F32
                                 ? reinterpret_cast<float*>(bytes.data() + r0 * out_row)
                                 : (staging.resize(static_cast<size_t>(nr * n0)), staging.data());
                for (int64_t r = 0; r < nr; ++r) {
                    quants::dequantize_row(source_type[i], data + (r0 + r) * in_row, f32 + r * n0,
                                           n0);
                }
                if (d.type != SY_TYPE_F32) {
                    const float* imp =
                        importance ? importance->data() + (r0 / per_matrix) * n0 : nullptr;
                    try {
                        (one_scale ? quants::quantize_rows_one_scale : quants::quantize_rows)(
                            d.type, f32, bytes.data() + r0 * out_row, nr, n0, threads, imp);
                    } catch (const quants::NonFiniteValue& e) {
                        throw Error(in.string() + ": tensor " + t.name + ", row " +
                                    std::to_string(r0 + e.row) + ", column " +
                                    std::to_string(e.column) + " holds " +
                                    (std::isnan(e.value) ? "NaN" : "an infinity") + ", which " +
                                    type_name(d.type) + " cannot encode");
                    } catch (const std::invalid_argument& e) {
                        throw Error(in.string() + ": tensor " + t.name + ": " + e.what());
                    }
                }
                r0 += nr;
            }
            write(bytes.data(), bytes.size());
            ++result.converted;
        }
        event.bytes_done += t.nbytes;
        ++result.tensors;
    }
    writer.finish();
    return result;
}

}  // namespace sy::llm
