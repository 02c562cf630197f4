// Measured op times (`switchyard calibrate`), which op placement prefers over the plugins' cost
// hints. One entry is one node shape on one backend: the op, the types and shapes of its sources
// and result, its integer parameters, and the median of the times measured.
//
// A node gets the time of the entry with its exact signature. A matrix product (mul_mat,
// mul_mat_id, the moe.* named ops) without one is interpolated between the entries that share its
// op, types, parameters and first source (the weight, {K, N} or {K, N, E}) by its product rows
// (result elements / result row length: tokens, or slots x tokens for the expert products):
// log-log between the two measured neighbours, the smallest measurement below them (a product's
// fixed cost: reading the weight), proportional to the rows above the largest one. Anything
// else without an entry keeps the plugin's hint.
//
// The file (TOML; written by `switchyard calibrate`, read with [offload] cost_table or
// --cost-table):
//
//   [calibration]                       # what was measured, for readers; not checked
//   model = "mini-q8_0.gguf"
//   [[op]]
//   backend = "blas"
//   op = "mul_mat"                      # as `switchyard plan` labels it ("moe.fused_up_gate v1")
//   types = ["bf16", "f32", "f32"]      # the sources, then the result
//   shapes = [[2048, 10944], [2048, 512], [10944, 512]]   # trailing 1s left out
//   params = []                         # iparams up to the last non-zero one
//   ns = 2.1e6                          # median time, nanoseconds
//   samples = 12                        # how many times were measured
//   node = "blk.1.ffn_up-1"             # a node that had this signature
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "switchyard/plugin.h"

namespace sy {

class Graph;

// Times that placement takes before a plugin's hint: a calibrated CostTable, or (while
// calibrating) a source that sends every node it can to one backend.
class MeasuredCosts {
  public:
    virtual ~MeasuredCosts() = default;
    // Nanoseconds for `node` on `backend`, or nullopt to fall back to the plugin's hint.
    virtual std::optional<double> ns(std::string_view backend, const sy_node& node) const = 0;
};

class CostTable final : public MeasuredCosts {
  public:
    struct Entry {
        std::string backend;
        std::string op;                            // Node::label()
        std::vector<std::string> types;            // sources, then the result
        std::vector<std::vector<int64_t>> shapes;  // the same order, trailing 1s left out
        std::vector<int32_t> params;               // iparams, trailing zeros left out
        double ns = 0;
        int64_t samples = 1;
        std::string node;  // a node name, for readers

        // The backend and the signature (op, types, shapes, params): equal for one node shape.
        std::string key() const;
    };

    // Describes `node` (node `index` of `graph`) as an entry (ns 0).
    static Entry describe(std::string_view backend, const sy_node& node);
    static Entry describe(std::string_view backend, const Graph& graph, int32_t index);

    // Adds an entry; a second entry with the same backend and signature replaces the first.
    void add(Entry entry);
    const std::vector<Entry>& entries() const { return entries_; }
    size_t size() const { return entries_.size(); }

    std::optional<double> ns(std::string_view backend, const sy_node& node) const override;

    // The TOML text: `about` (what was measured, for readers) under [calibration], then every
    // entry in the order added.
    std::string to_toml(const std::vector<std::pair<std::string, std::string>>& about) const;
    // Reads a table; throws ConfigError naming the file, the position and the key at fault
    // (files over 64 MiB are refused before reading).
    static CostTable load(const std::filesystem::path& file);
    static CostTable parse(std::string_view text, const std::filesystem::path& source_name);

  private:
    struct Point {
        double rows = 0;
        size_t entry = 0;
    };
    std::vector<Entry> entries_;
    std::map<std::string, size_t, std::less<>> exact_;  // backend + signature -> entry
    // backend + product key (op, types, params, weight shape) -> measurements by rows
    std::map<std::string, std::vector<Point>, std::less<>> products_;
};

}  // namespace sy
