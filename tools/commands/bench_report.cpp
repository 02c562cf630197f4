#include "commands/bench_report.hpp"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "switchyard/core/error.hpp"
#include "switchyard/version.hpp"

namespace sy::tools {
namespace {

using Json = nlohmann::ordered_json;

// The record as llama-bench's fields, in its order where the concept is the same; samples and
// warnings are arrays (json, jsonl) or joined text (csv, sql).
Json record_json(const BenchRecord& r, bool arrays) {
    Json j;
    j["build_commit"] = SWITCHYARD_GIT_COMMIT;
    j["build_number"] = SWITCHYARD_BUILD_NUMBER;
    j["cpu_info"] = r.cpu_info;
    j["gpu_info"] = r.gpu_info;
    j["backends"] = r.backends;
    j["model_filename"] = r.model_filename;
    j["model_type"] = r.model_type;
    j["model_size"] = r.model_size;
    j["model_n_params"] = r.model_n_params;
    j["n_batch"] = r.n_batch;
    j["n_ubatch"] = r.n_ubatch;
    j["n_threads"] = r.n_threads;
    j["type_k"] = r.type_k;
    j["type_v"] = r.type_v;
    j["n_gpu_layers"] = r.n_gpu_layers;
    j["n_cpu_moe"] = r.n_cpu_moe;
    // llama-bench's multi-GPU and embedding fields, as switchyard runs: layers split by -ts
    // (split_mode stays "none": the scheduler places ops, not llama.cpp's row/layer modes), the
    // KV cache with its layer's weights, no embeddings mode.
    j["split_mode"] = "none";
    j["main_gpu"] = 0;
    j["no_kv_offload"] = false;
    j["flash_attn"] = r.flash_attn;
    j["tensor_split"] = r.tensor_split;
    j["mla_attn"] = r.mla_attn;
    j["attn_max_batch"] = r.attn_max_batch;
    j["ser"] = r.ser;
    j["use_mmap"] = r.use_mmap;
    j["repack"] = r.repack;
    j["embeddings"] = false;
    j["fused_moe"] = r.fused_moe;
    j["grouped_er"] = r.grouped_er;
    j["override_tensor"] = r.override_tensor;
    j["config"] = r.config;
    j["placement"] = r.placement;
    j["offload_policy"] = r.offload_policy;
    j["n_prompt"] = r.test.n_prompt;
    j["n_gen"] = r.test.n_gen;
    j["n_depth"] = r.test.n_depth;
    j["test_time"] = r.test_time;
    j["avg_ns"] = int64_t(r.samples.avg_ns());
    j["stddev_ns"] = int64_t(r.samples.stddev_ns());
    j["avg_ts"] = r.samples.avg_ts();
    j["stddev_ts"] = r.samples.stddev_ts();
    j["test"] = r.test.label();
    // Shares of the timed evaluation time (switchyard's): what a hybrid run loses to
    // synchronization, copies between backends and the host's work, and each part.
    const llm::EvalTimeShares shares = r.samples.shares.value_or(llm::EvalTimeShares{});
    j["overhead_share"] = shares.overhead();
    j["sync_share"] = shares.sync;
    j["copy_share"] = shares.copies;
    j["staging_share"] = shares.staging;
    j["host_share"] = shares.host;
    if (arrays) {
        j["samples_ns"] = r.samples.ns;
        j["samples_ts"] = r.samples.ts;
        j["warnings"] = r.warnings;
    } else {
        j["warnings"] = fmt::format("{}", fmt::join(r.warnings, "; "));
    }
    return j;
}

// A value as csv and sql hold it: text as is, booleans as 1/0 (as llama-bench's).
std::string plain(const Json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
    if (v.is_number_float()) return fmt::format("{:.6f}", v.get<double>());
    return v.dump();
}

std::string csv_field(const std::string& s) {
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

std::string sql_value(const Json& v) {
    if (v.is_boolean() || v.is_number()) return plain(v);
    std::string out = "'";
    for (char c : plain(v)) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
}

const char* sql_type(const Json& v) {
    if (v.is_boolean() || v.is_number_integer()) return "INTEGER";
    if (v.is_number_float()) return "REAL";
    return "TEXT";
}

std::string size_text(uint64_t bytes) {
    const double gib = double(bytes) / double(uint64_t(1) << 30);
    if (gib >= 1) return fmt::format("{:.2f} GiB", gib);
    return fmt::format("{:.2f} MiB", double(bytes) / double(1 << 20));
}

std::string params_text(uint64_t n) {
    if (n >= 1000000000) return fmt::format("{:.2f} B", double(n) / 1e9);
    return fmt::format("{:.2f} M", double(n) / 1e6);
}

// "1-3, 5"
std::string ranges_text(const std::vector<size_t>& rows) {
    std::string out;
    for (size_t i = 0; i < rows.size();) {
        size_t j = i;
        while (j + 1 < rows.size() && rows[j + 1] == rows[j] + 1) ++j;
        out += (out.empty() ? "" : ", ") +
               (j == i ? std::to_string(rows[i]) : fmt::format("{}-{}", rows[i], rows[j]));
        i = j + 1;
    }
    return out;
}

// A markdown column: shown when `always` or when some record differs from `dflt`.
struct Column {
    std::string name;
    bool right;  // numbers are right-aligned
    std::string (*value)(const BenchRecord&);
    std::string dflt;  // shown only when some value differs from this ("" with always)
    bool always = false;
};

std::string bool_text(bool b) {
    return b ? "1" : "0";
}

const std::vector<Column>& md_columns() {
    static const std::vector<Column> columns = {
        {"model", false, [](const BenchRecord& r) { return r.model_type; }, "", true},
        {"size", true, [](const BenchRecord& r) { return size_text(r.model_size); }, "", true},
        {"params", true, [](const BenchRecord& r) { return params_text(r.model_n_params); }, "",
         true},
        {"backend", false, [](const BenchRecord& r) { return r.backends; }, "", true},
        {"ngl", true, [](const BenchRecord& r) { return std::to_string(r.n_gpu_layers); }, "-1"},
        {"threads", true, [](const BenchRecord& r) { return std::to_string(r.n_threads); }, "",
         true},
        {"n_batch", true, [](const BenchRecord& r) { return std::to_string(r.n_batch); }, "2048"},
        {"n_ubatch", true, [](const BenchRecord& r) { return std::to_string(r.n_ubatch); }, "512"},
        {"type_k", false, [](const BenchRecord& r) { return r.type_k; }, "f16"},
        {"type_v", false, [](const BenchRecord& r) { return r.type_v; }, "f16"},
        {"fa", true, [](const BenchRecord& r) { return bool_text(r.flash_attn); }, "1"},
        {"mla", true, [](const BenchRecord& r) { return std::to_string(r.mla_attn); }, "3"},
        {"amb", true, [](const BenchRecord& r) { return std::to_string(r.attn_max_batch); }, "256"},
        {"ser", false, [](const BenchRecord& r) { return r.ser; }, ""},
        {"ncmoe", true, [](const BenchRecord& r) { return std::to_string(r.n_cpu_moe); }, "0"},
        {"mmap", true, [](const BenchRecord& r) { return bool_text(r.use_mmap); }, "1"},
        {"rtr", false, [](const BenchRecord& r) { return r.repack; }, "auto"},
        {"ot", false, [](const BenchRecord& r) { return r.override_tensor; }, ""},
        {"ts", false, [](const BenchRecord& r) { return r.tensor_split; }, "0.00"},
        {"config", false, [](const BenchRecord& r) { return r.config; }, ""},
        {"fmoe", true, [](const BenchRecord& r) { return bool_text(r.fused_moe); }, "1"},
        {"ger", true, [](const BenchRecord& r) { return bool_text(r.grouped_er); }, "1"},
        {"placement", false, [](const BenchRecord& r) { return r.placement; }, ""},
        {"policy", false, [](const BenchRecord& r) { return r.offload_policy; }, ""},
        // Copies + synchronization + host, of the timed evaluation time (print_markdown shows
        // it where weights or ops were split).
        {"overhead", true,
         [](const BenchRecord& r) {
             return r.samples.shares ? fmt::format("{:.1f}%", 100 * r.samples.shares->overhead())
                                     : std::string("-");
         },
         ""},
        {"test", true, [](const BenchRecord& r) { return r.test.label(); }, "", true},
        {"t/s", true,
         [](const BenchRecord& r) {
             return fmt::format("{:.2f} ± {:.2f}", r.samples.avg_ts(), r.samples.stddev_ts());
         },
         "", true},
    };
    return columns;
}

// Display width of UTF-8 text (the ± sign is one column, two bytes).
size_t width(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

std::string pad(const std::string& s, size_t w, bool right) {
    const std::string fill(w > width(s) ? w - width(s) : 0, ' ');
    return right ? fill + s : s + fill;
}

void print_markdown(std::FILE* out, const std::vector<BenchRecord>& records) {
    std::vector<const Column*> shown;
    for (const Column& c : md_columns()) {
        bool show = c.always;
        for (const BenchRecord& r : records) show = show || c.value(r) != c.dflt;
        // Placement, policy and the hybrid overhead only say something when weights or ops
        // were split.
        if (c.name == "placement" || c.name == "policy" || c.name == "overhead") {
            show = false;
            for (const BenchRecord& r : records)
                show = show || r.backends.find(',') != std::string::npos;
        }
        if (show) shown.push_back(&c);
    }
    std::vector<std::vector<std::string>> cells;
    std::vector<size_t> widths;
    for (const Column* c : shown) widths.push_back(width(c->name));
    for (const BenchRecord& r : records) {
        std::vector<std::string> row;
        for (size_t i = 0; i < shown.size(); ++i) {
            std::string cell;
            for (char ch : shown[i]->value(r))
                cell += ch == '|' ? std::string("\\|") : std::string(1, ch);
            row.push_back(std::move(cell));
            widths[i] = std::max(widths[i], width(row.back()));
        }
        cells.push_back(std::move(row));
    }
    std::string line = "|";
    std::string rule = "|";
    for (size_t i = 0; i < shown.size(); ++i) {
        line += " " + pad(shown[i]->name, widths[i], shown[i]->right) + " |";
        rule += " " +
                (shown[i]->right ? std::string(widths[i] - 1, '-') + ":"
                                 : std::string(widths[i], '-')) +
                " |";
    }
    std::fprintf(out, "%s\n%s\n", line.c_str(), rule.c_str());
    for (const auto& row : cells) {
        line = "|";
        for (size_t i = 0; i < shown.size(); ++i)
            line += " " + pad(row[i], widths[i], shown[i]->right) + " |";
        std::fprintf(out, "%s\n", line.c_str());
    }
    std::fprintf(out, "\nbuild: %s (%d)\n", SWITCHYARD_GIT_COMMIT, SWITCHYARD_BUILD_NUMBER);
    // Each warning once, with the table rows it applies to.
    std::map<std::string, std::vector<size_t>> warnings;
    std::vector<std::string> order;
    for (size_t i = 0; i < records.size(); ++i)
        for (const std::string& w : records[i].warnings) {
            if (!warnings.contains(w)) order.push_back(w);
            warnings[w].push_back(i + 1);
        }
    if (!order.empty()) std::fprintf(out, "\nwarnings:\n");
    for (const std::string& w : order)
        std::fprintf(out, "- %s (row%s %s)\n", w.c_str(), warnings[w].size() == 1 ? "" : "s",
                     ranges_text(warnings[w]).c_str());
}

}  // namespace

BenchFormat parse_bench_format(const std::string& name) {
    if (name == "md") return BenchFormat::md;
    if (name == "csv") return BenchFormat::csv;
    if (name == "json") return BenchFormat::json;
    if (name == "jsonl") return BenchFormat::jsonl;
    if (name == "sql") return BenchFormat::sql;
    throw Error("-o '" + name + "': unknown format (md, csv, json, jsonl, sql)");
}

void BenchPrinter::add(const BenchRecord& record) {
    records_.push_back(record);
    const Json j = record_json(record, format_ != BenchFormat::csv && format_ != BenchFormat::sql);
    switch (format_) {
        case BenchFormat::jsonl:
            std::fprintf(out_, "%s\n",
                         j.dump(-1, ' ', false, Json::error_handler_t::replace).c_str());
            break;
        case BenchFormat::csv: {
            std::string head, row;
            for (const auto& [key, value] : j.items()) {
                head += (head.empty() ? "" : ",") + key;
                row += (row.empty() ? "" : ",") + csv_field(plain(value));
            }
            if (!header_done_) std::fprintf(out_, "%s\n", head.c_str());
            std::fprintf(out_, "%s\n", row.c_str());
            break;
        }
        case BenchFormat::sql: {
            std::string cols, defs, values;
            for (const auto& [key, value] : j.items()) {
                cols += (cols.empty() ? "" : ", ") + key;
                defs += fmt::format("{}  {} {}", defs.empty() ? "" : ",\n", key, sql_type(value));
                values += (values.empty() ? "" : ", ") + sql_value(value);
            }
            if (!header_done_)
                std::fprintf(out_, "CREATE TABLE IF NOT EXISTS llama_bench (\n%s\n);\n\n",
                             defs.c_str());
            std::fprintf(out_, "INSERT INTO llama_bench (%s) VALUES (%s);\n", cols.c_str(),
                         values.c_str());
            break;
        }
        case BenchFormat::md:
        case BenchFormat::json: break;
    }
    header_done_ = true;
    std::fflush(out_);
}

void BenchPrinter::finish() {
    if (format_ == BenchFormat::md && !records_.empty()) print_markdown(out_, records_);
    if (format_ == BenchFormat::json) {
        Json all = Json::array();
        for (const BenchRecord& r : records_) all.push_back(record_json(r, true));
        std::fprintf(out_, "%s\n", all.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    }
    std::fflush(out_);
}

}  // namespace sy::tools
