// Importance matrices: per weight matrix a model multiplies, the sum of the squared activations
// each input column met and how many rows (tokens) that was; the quantizers weigh their error by
// the mean (sum / count) so that columns that carry large activations are kept more precisely.
// The files of llama.cpp's imatrix tool, both read and written:
//
//   GGUF (llama.cpp): general.type = "imatrix", imatrix.datasets (array of strings),
//     imatrix.chunk_count and imatrix.chunk_size (u32); per weight W the F32 tensors
//     "W.in_sum2" {n, c} (the sums) and "W.counts" {1, c}: c = the experts of a 3-D expert
//     weight, each expert's sums and count its own; 1 for other weights, whose n then covers
//     every matrix of a 3-D weight (attn_k_b's heads: {n_in * n_head, 1}). An optional
//     "W.in_sum" (plain sums) is accepted and ignored.
//   legacy .dat (ik_llama.cpp's, older llama.cpp): int32 n_entries, then per entry int32 name
//     length, the name, int32 ncall, int32 nval, float values[nval]; then int32 chunk count and
//     int32 length + the dataset's name. values = mean squared activation * ncall (per expert,
//     each expert's own mean; 1 for an expert that saw no token), ncall = the chunks the
//     entry's busiest matrix saw, rounded up; readers divide by ncall.
//
// Collection follows llama-imatrix: every product whose first source is a weight named "blk.*"
// (and output.weight on request), its F32 activations; expert products (mul_mat_id and
// moe.fused_up_gate) count for each expert only the tokens routed to it. A 3-D weight that is
// not an expert tensor (llama.cpp's attn_k_b {qk_nope, kv_lora, n_head}, attn_v_b) keeps one
// block of sums per head and one count, as llama-imatrix; a weight stored 2-D but multiplied as
// a 3-D view (ik_llama.cpp's 2-D attn_k_b/attn_v_b) folds its heads into one block.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "switchyard/core/executor.hpp"

namespace sy {
struct Node;
}

namespace sy::llm {

struct ImatrixEntry {
    std::vector<float> sums;    // sum of x^2 per column: counts.size() equal blocks
    std::vector<float> counts;  // rows seen: one per expert, or one for the whole weight
};

enum class ImatrixFormat { gguf, dat };

struct Imatrix {
    std::map<std::string, ImatrixEntry> entries;  // by weight name
    std::vector<std::string> datasets;            // text files it was computed on
    uint32_t chunk_count = 0;
    uint32_t chunk_size = 0;
    std::string source;  // the file it was read from, for messages

    // The importance quantize_rows takes for weight `name` of `n_mat` matrices (experts; 1 for
    // a 2-D weight) with rows of n_per_row: n_mat blocks of n_per_row means (sums / count; 1
    // for a matrix that saw no row, as llama-quantize). nullopt without an entry; throws
    // sy::Error naming the file and the entry when its size is not n_per_row * n_mat.
    std::optional<std::vector<float>> importance(const std::string& name, int64_t n_per_row,
                                                 int64_t n_mat) const;
};

// Reads either format (GGUF by its magic, else legacy). A legacy file stores no chunk size:
// its counts are taken as ncall * legacy_chunk_size (llama-imatrix uses its -c). Throws
// sy::Error naming the file and the entry for a truncated or malformed file, an entry whose
// counts are all zero, sizes that do not divide, negative or non-finite values.
Imatrix read_imatrix(const std::filesystem::path& path, uint32_t legacy_chunk_size = 512);

// Writes `m` in `format` (entries in name order), atomically for GGUF. The legacy format needs
// m.chunk_size > 0 (its ncall is counted in chunks).
void write_imatrix(const std::filesystem::path& path, const Imatrix& m, ImatrixFormat format);

// "gguf" or "dat"; throws sy::Error naming the flag otherwise.
ImatrixFormat parse_imatrix_format(const std::string& text);

// Accumulates the activations of the products an executor runs (set it as the session's node
// observer). Sums in double; throws sy::Error naming the weight when one is multiplied with
// rows of another width than before, an expert id is out of range or a value is not finite.
class ImatrixCollector {
  public:
    // `accept` says which weights to collect (by name); default: names starting "blk.".
    explicit ImatrixCollector(std::function<bool(const std::string&)> accept = {});
    const Executor::NodeObserver& observer() const { return observer_; }

    // One product's activations (exposed for tests): x {n_in, ne1, ne2, ne3} F32 at `x` with
    // byte strides xnb; `weight_ne` the weight as stored; for expert products the ids {U, T}
    // (ids_nb byte strides; negative = no expert), x's dim 1 being U or 1 and dim 2 T.
    struct Product {
        std::string weight;
        int64_t weight_ne[4] = {1, 1, 1, 1};
        const std::byte* x = nullptr;
        int64_t x_ne[4] = {1, 1, 1, 1};
        int64_t x_nb[4] = {0, 0, 0, 0};
        const std::byte* ids = nullptr;
        int64_t ids_ne[2] = {1, 1};
        int64_t ids_nb[2] = {0, 0};
    };
    void add(const Product& p);

    size_t weights() const { return accum_.size(); }
    // The entries so far, with the given metadata.
    Imatrix result(std::vector<std::string> datasets, uint32_t chunk_count,
                   uint32_t chunk_size) const;

  private:
    struct Accum {
        std::vector<double> sums;
        std::vector<int64_t> counts;
    };
    void observe(const Node& node, const Executor& executor);
    Accum& entry(const std::string& weight, size_t n_sums, size_t n_counts);

    std::function<bool(const std::string&)> accept_;
    Executor::NodeObserver observer_;
    std::map<std::string, Accum> accum_;
    std::vector<std::byte> scratch_x_, scratch_ids_;  // sources copied from device memory
};

}  // namespace sy::llm
