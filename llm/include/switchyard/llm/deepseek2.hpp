// The deepseek2 architecture (DeepSeek-V2, V2-Lite, V2.5, V3, R1, Kimi-K2-style GGUFs): its
// hyperparameters read from GGUF metadata, its weights bound in place from the memory-mapped
// file, the KV cache of each attention mode, and the compute graph of one ubatch built from the
// core's ops (docs/deepseek2.md holds the facts matched here).
//
//   gguf::Reader file = gguf::Reader::open(path);
//   Deepseek2Model model(std::move(file), options);   // checks every key and tensor
//   Deepseek2Session session(model, cpu_plugin);       // KV cache + executor
//   std::vector<float> logits = session.eval(tokens);  // logits of the last token
//
// Attention modes (--mla, as ik_llama.cpp defines them):
//   0  standard attention: per-head K {n_head * (qk_nope + qk_rope)} and V (stored transposed)
//      in the cache, both decompressed from the latent with attn_kv_b as tokens arrive;
//   1  latent attention: the cache holds [k_rope | c_kv] rows plus a transposed copy of c_kv,
//      queries absorb W_UK (attn_k_b), outputs go through W_UV (attn_v_b);
//   2  as 1 without the transposed copy (c_kv is transposed from the cache rows per step);
//   3  as 2 for generation; ubatches of kMla3DecompressTokens tokens or more decompress the
//      cached latents with attn_kv_b and run standard attention (cheaper for prompts).
// Weight layouts: attn_kv_b alone, ik_llama.cpp's 2-D attn_k_b/attn_v_b, llama.cpp's 3-D ones
// (with its MLA head metadata: head_count_kv 1, key_length 576, value_length 512). Whatever a
// mode needs and the file lacks is derived at load: attn_k_b from attn_kv_b, attn_kv_b from
// attn_k_b + attn_v_b, in F32, BF16 or Q8_0 (never F16: W_UK overflows it).
//
// Routed experts: softmax or sigmoid gating, the selection-only bias exp_probs_b, weight
// normalization and scaling, group-limited routing where the metadata asks for it
// (expert_group_count / expert_group_used_count), and smart expert reduction (-ser K,t).
// Fused MoE is the plugin-provided named op moe.fused_up_gate; without it the graph uses
// mul_mat_id, silu and mul. Flash attention is attn.flash (mla 0, and mla 3's decompressed
// prompts) and attn.mla (latent attention): no K.Q matrix in the compute buffer; without them
// (or with --flash-attn off) the scores are materialized, soft-maxed and multiplied by V.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "switchyard/core/cost_table.hpp"
#include "switchyard/core/executor.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/placement.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/policy.hpp"
#include "switchyard/core/scheduler.hpp"
#include "switchyard/llm/gguf.hpp"

namespace sy {
class Profile;
}  // namespace sy

namespace sy::llm {

struct Deepseek2HParams {
    uint32_t n_layer = 0;  // the blocks the graph runs: block_count less n_nextn
    // nextn_predict_layers: the last blocks of block_count are MTP (multi-token prediction)
    // layers with blk.N.nextn.* tensors; left out, as llama.cpp runs block_count - n_nextn.
    uint32_t n_nextn = 0;
    uint32_t n_ctx_train = 0;
    uint32_t n_embd = 0;
    uint32_t n_ff = 0;  // leading dense blocks' FFN width
    uint32_t n_head = 0;
    uint32_t q_lora_rank = 0;  // 0: plain attn_q
    uint32_t kv_lora_rank = 0;
    uint32_t qk_nope = 0;
    uint32_t qk_rope = 0;
    uint32_t v_head = 0;
    uint32_t n_dense_lead = 0;
    uint32_t n_expert = 0;
    uint32_t n_expert_used = 0;
    uint32_t n_expert_shared = 0;
    uint32_t n_ff_exp = 0;
    uint32_t n_vocab = 0;
    float rms_eps = 1e-6f;
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor
    bool yarn = false;
    uint32_t yarn_orig_ctx = 0;
    float yarn_log_mul = 0.0f;
    float expert_weights_scale = 1.0f;
    bool expert_weights_norm = false;
    uint32_t gating_func = 1;  // 1 softmax, 2 sigmoid
    uint32_t expert_group_count = 0;
    uint32_t expert_group_used = 0;

    // Reads and checks every key; throws gguf::FormatError naming the file and the missing or
    // out-of-range key.
    static Deepseek2HParams from_gguf(const gguf::Reader& file);

    uint32_t qk_head() const { return qk_nope + qk_rope; }
    uint32_t latent_width() const { return kv_lora_rank + qk_rope; }  // one latent cache row
    // softmax scale of the attention scores: mscale^2 / sqrt(qk_nope + qk_rope), mscale =
    // 1 + yarn_log_mul * ln(1 / freq_scale) (DEEPSEEK2.md section 6).
    float kq_scale() const;
    // The rope op's attn_factor that keeps rotary magnitudes at 1 under YaRN.
    float rope_attn_factor() const;
};

struct Deepseek2Options {
    int mla = 3;          // --mla 0|1|2|3
    int fused_moe = -1;   // --fused-moe: -1 when a backend provides it, 0 never, 1 required
    int flash_attn = -1;  // --flash-attn (attn.flash + attn.mla): as fused_moe
    int32_t cache_type_k = SY_TYPE_F16;  // -ctk: f32, f16, bf16, q8_0
    int32_t cache_type_v = SY_TYPE_F16;  // -ctv (modes 0 and 1; q8_0: mode 0 with flash)
    int64_t n_ctx = 0;                   // cache length in tokens; 0: min(4096, trained)
    int64_t n_ubatch = 512;              // tokens per graph
    bool group_routing = true;           // honour expert_group_count when the file sets it
    int64_t attn_max_bytes = 0;          // -amb: compute buffer per attention step, 0: no limit
    int ser_min_experts = 0;             // -ser K,t: 0 off
    float ser_threshold = 1.0f;          // t >= 1: exactly ser_min_experts
};

// Validates option values against the model; throws sy::Error naming the flag.
void validate(const Deepseek2Options& options, const Deepseek2HParams& hp);

inline constexpr int64_t kMla3DecompressTokens = 128;

// A weight as a graph needs it: the bytes of a packed `base` tensor (in the file or derived)
// and, when `viewed`, the strided view of it that the model uses.
struct WeightRef {
    std::string name;
    int32_t type = SY_TYPE_NONE;
    Shape base_shape;
    const void* data = nullptr;
    bool viewed = false;
    Shape shape;
    Strides strides{};
    uint64_t offset = 0;

    bool present() const { return data != nullptr; }
};

struct Deepseek2Layer {
    WeightRef attn_norm, q_a, q_a_norm, q_b, q;
    WeightRef kv_a_mqa, kv_a_norm;
    WeightRef kv_b;  // {kv_lora, n_head * (qk_nope + v_head)}: per head qk_nope rows, v_head rows
    WeightRef k_b;   // {qk_nope, kv_lora, n_head}: W_UK^T per head
    WeightRef v_b;   // {kv_lora, v_head, n_head}: W_UV per head
    WeightRef attn_output;
    WeightRef ffn_norm;
    WeightRef ffn_gate, ffn_up, ffn_down;  // leading dense blocks
    WeightRef gate_inp, exp_probs_b;
    WeightRef gate_exps, up_exps, down_exps;
    WeightRef gate_shexp, up_shexp, down_shexp;
    bool dense = false;
};

class Deepseek2Model {
  public:
    // Takes the file, checks every hyperparameter and every tensor's type and shape (errors name
    // the tensor), and derives what `options.mla` needs that the file lacks.
    Deepseek2Model(gguf::Reader file, const Deepseek2Options& options);
    Deepseek2Model(const Deepseek2Model&) = delete;
    Deepseek2Model& operator=(const Deepseek2Model&) = delete;

    const Deepseek2HParams& hparams() const { return hp_; }
    const Deepseek2Options& options() const { return options_; }
    const gguf::Reader& file() const { return file_; }
    const std::vector<Deepseek2Layer>& layers() const { return layers_; }
    const WeightRef& token_embd() const { return token_embd_; }
    const WeightRef& output_norm() const { return output_norm_; }
    const WeightRef& output() const { return output_; }
    // 0, 1, ..., n_expert - 1: the table group-limited routing gathers expert ids from.
    const std::vector<int32_t>& expert_ids() const { return expert_ids_; }
    // The constant id of every weight of this model (plugin.h's sy_tensor.constant_id): plugins
    // may keep what they derive from the weights until PluginHost::release_constants(id).
    uint64_t constant_id() const { return constant_id_; }
    // Bytes of weights derived at load (attn_k_b or attn_kv_b), 0 when the file had them all.
    uint64_t derived_bytes() const;
    // Bytes of weights one token's forward pass reads (routed experts: n_expert_used of them).
    uint64_t weight_bytes_per_token() const;

  private:
    WeightRef file_weight(const std::string& name, std::initializer_list<int64_t> shape,
                          bool required = true) const;
    void derive_attention(Deepseek2Layer& layer, uint32_t il);

    gguf::Reader file_;
    Deepseek2HParams hp_;
    Deepseek2Options options_;
    std::vector<Deepseek2Layer> layers_;
    WeightRef token_embd_, output_norm_, output_;
    std::vector<std::unique_ptr<std::vector<std::byte>>> derived_;
    std::vector<int32_t> expert_ids_;
    uint64_t constant_id_ = new_constant_id();
};

// The KV cache of one session: per layer, memory laid out for the attention mode.
//   mla 0: K {n_head * (qk_nope + qk_rope), n_ctx}, V transposed {n_ctx, n_head * v_head}
//          (as rows {n_head * v_head, n_ctx} with flash attention: set_v_rows(); a q8_0 V
//          cache exists only as these rows);
//   mla 1: K {qk_rope + kv_lora, n_ctx} ([k_rope | c_kv] rows), c_kv transposed {n_ctx, kv_lora};
//   mla 2, 3: the K rows only.
// The n_ctx cells are split into equal stretches, one per sequence (set_sequences(); llama-
// server's slots): sequence s owns cells [s * R, (s + 1) * R), R = n_ctx / sequences, and its
// token at position p is in cell s * R + p.
// The memory is allocated (and zeroed) by allocate(), so its size can be reported and checked
// first; until then k() and v() are null. Given a plugin device that does not compute on host
// memory, the cache lives in that device's buffers instead (k_buffer(), v_buffer(); k() and
// v() stay null): written in place by every step, never copied back and forth.
//
// A graph sees the cache through Views, by meaning (the latents of a layer, a sequence's keys):
// the byte layout stays in here.
class Deepseek2Cache {
  public:
    // Where one layer's cache lives: a device that does not compute on host memory, or (plugin
    // null, or a host-memory backend's) host memory.
    struct Home {
        Plugin* plugin = nullptr;
        int32_t device = 0;
    };
    Deepseek2Cache(const Deepseek2HParams& hp, const Deepseek2Options& options,
                   Plugin* plugin = nullptr, int32_t device = 0);
    // One home per layer (-ngl N: the offloaded layers' caches on the GPU); before allocate().
    void set_homes(std::vector<Home> layers);
    // mla 0's V as rows (flash attention reads them in place) instead of transposed; before
    // allocate().
    void set_v_rows(bool rows);
    bool v_rows_layout() const { return v_as_rows_; }
    // Splits the cells into n sequences of n_ctx / n cells (throws sy::Error for n < 1 or more
    // sequences than cells). What the cells held is not moved: call it on an empty cache.
    void set_sequences(int64_t n);
    int64_t sequences() const { return n_seqs_; }
    int64_t sequence_cells() const { return n_ctx_ / n_seqs_; }
    // Copies the first n tokens of sequence src into sequence dst, every layer (allocate()
    // first; throws sy::Error for a sequence out of range or n past a sequence's cells).
    void copy_sequence(int64_t src, int64_t dst, int64_t n);

    // What the cache holds per token (all layers): the formulas of docs/deepseek2.md.
    static uint64_t bytes_per_token(const Deepseek2HParams& hp, const Deepseek2Options& options);
    uint64_t bytes() const;  // allocated or not
    // Bytes of the layers on `plugin`'s device `device` (plugin nullptr: in host memory).
    uint64_t bytes_on(const Plugin* plugin, int32_t device = 0) const;
    void allocate();
    bool allocated() const { return allocated_; }
    // Every layer on a device (the whole model on a GPU).
    bool on_device() const;
    // Where layer il's cache lives (plugin nullptr: host memory).
    const Home& layer_home(uint32_t il) const { return homes_.at(il); }
    int64_t n_ctx() const { return n_ctx_; }
    int64_t k_row_elements() const { return k_row_; }  // elements of one token's K row
    int64_t v_rows() const { return v_rows_; }         // rows of the transposed V (0: none)
    // Layer il's K and V: host memory (k, v) or a device buffer (k_buffer, v_buffer); null
    // before allocate() and for the other kind.
    void* k(uint32_t il) { return layers_.empty() ? nullptr : layers_[il].k.data(); }
    void* v(uint32_t il) { return layers_.empty() ? nullptr : layers_[il].v.data(); }
    const Buffer* k_buffer(uint32_t il) const {
        return layers_.empty() || !layers_[il].k_device ? nullptr : &layers_[il].k_device;
    }
    const Buffer* v_buffer(uint32_t il) const {
        return layers_.empty() || !layers_[il].v_device ? nullptr : &layers_[il].v_device;
    }

    // The cache in one graph: each layer's K and V are one input of the graph (external
    // memory, written in place), and every method returns views of them for one sequence.
    // Writes take the ubatch's tokens of that sequence at positions n_past ..; reads take the
    // first n_kv tokens. Shapes in ggml order; T is the sequence's tokens in the ubatch.
    class Views {
      public:
        // `cells`: each sequence's cells in this graph (the cache's sequence_cells(), or a
        // hypothetical split for planning).
        Views(Deepseek2Cache& cache, Graph& graph, int64_t cells);

        // mla 1-3: stores [k_pe | c] rows (c {kv_lora, T}, k_pe {qk_rope, 1, T}), and for
        // mla 1 the transposed copy of c.
        void write_latents(uint32_t il, int64_t seq, int64_t n_past, Tensor* c, Tensor* k_pe);
        Tensor* latent_rows(uint32_t il, int64_t seq, int64_t n_kv);  // {qk_rope + kv_lora, n_kv}
        Tensor* latents(uint32_t il, int64_t seq, int64_t n_kv);      // c {kv_lora, n_kv}
        Tensor* latent_k_pe(uint32_t il, int64_t seq, int64_t n_kv);  // {qk_rope, n_kv}
        // k_pe once per head {qk_rope, n_kv, heads}: the same rows for every head (stride 0).
        Tensor* latent_k_pe_heads(uint32_t il, int64_t seq, int64_t n_kv, int64_t heads);
        // mla 1's transposed copy of c {n_kv, kv_lora}.
        Tensor* latents_transposed(uint32_t il, int64_t seq, int64_t n_kv);

        // mla 0: stores per head K = [k_nope | k_pe] (k_nope {qk_nope, H, T}, k_pe {qk_rope, 1,
        // T} shared by the heads) and V {v_head, H, T}.
        void write_kv(uint32_t il, int64_t seq, int64_t n_past, Tensor* k_nope, Tensor* k_pe,
                      Tensor* v);
        Tensor* keys(uint32_t il, int64_t seq, int64_t n_kv);       // {qk_head, n_kv, H}
        Tensor* keys_nope(uint32_t il, int64_t seq, int64_t n_kv);  // {qk_nope, n_kv, H}
        Tensor* keys_rope(uint32_t il, int64_t seq, int64_t n_kv);  // {qk_rope, n_kv, H}
        Tensor* values(uint32_t il, int64_t seq, int64_t n_kv);     // rows: {v_head, n_kv, H}
        // transposed: {n_kv, v_head, H}
        Tensor* values_transposed(uint32_t il, int64_t seq, int64_t n_kv);

      private:
        Tensor* k_input(uint32_t il);
        Tensor* v_input(uint32_t il);
        Tensor* view(Tensor* t, const Shape& shape, const Strides& strides, uint64_t offset);
        uint64_t k_row_at(int64_t seq, int64_t pos) const;  // K bytes before cell (seq, pos)
        int64_t kb(int64_t n) const;                        // bytes of n K elements
        int64_t vb(int64_t n) const;

        Deepseek2Cache& cache_;
        Graph& g_;
        int64_t cells_;
        std::unordered_map<uint32_t, Tensor*> k_, v_;
    };

  private:
    struct Layer {
        std::vector<std::byte> k, v;
        Buffer k_device, v_device;
    };
    std::vector<Home> homes_;  // per layer; plugin null for host memory
    Deepseek2HParams hp_;
    int32_t type_k_ = SY_TYPE_F16, type_v_ = SY_TYPE_F16;
    int mla_ = 3;
    int64_t n_ctx_ = 0;
    int64_t n_seqs_ = 1;
    int64_t k_row_ = 0;
    int64_t v_rows_ = 0;
    bool v_as_rows_ = false;
    uint32_t n_layer_ = 0;
    size_t k_layer_bytes_ = 0, v_layer_bytes_ = 0;
    std::vector<Layer> layers_;
    bool allocated_ = false;
};

// The weights one session's graphs read, copied once into one buffer of a device that does not
// compute on host memory (the whole model on a GPU): found by the host memory they come from.
class DeviceWeights {
  public:
    DeviceWeights() = default;
    // Collects the weights of `graphs` (each distinct host range once; only those `include`
    // accepts when given); uploads nothing yet.
    DeviceWeights(Plugin& plugin, int32_t device, std::span<const Graph* const> graphs,
                  const std::function<bool(const Tensor&)>& include = {});
    uint64_t bytes() const { return bytes_; }  // the device buffer's size
    // Elements of the largest weight matrix (ne0 x ne1) among them.
    uint64_t largest_matrix_elements() const { return largest_; }
    bool uploaded() const { return static_cast<bool>(buffer_); }
    // Allocates the buffer and copies every weight into it (once).
    void upload();
    // Where the weight read from `host` lives on the device (upload() first); throws Error
    // naming `name` when it was not collected.
    std::pair<const Buffer*, uint64_t> find(const void* host, const std::string& name) const;
    // The same, or nullopt when the weight read from `host` is not here.
    std::optional<std::pair<const Buffer*, uint64_t>> try_find(const void* host) const;

  private:
    struct Range {
        uint64_t bytes;
        uint64_t offset;
    };
    Plugin* plugin_ = nullptr;
    int32_t device_ = 0;
    std::unordered_map<const void*, Range> ranges_;  // by host address
    uint64_t bytes_ = 0;
    uint64_t largest_ = 0;
    Buffer buffer_;
};

struct EvalStats {
    uint64_t compute_buffer_bytes = 0;  // largest compute buffer of the session so far
    uint64_t staging_buffer_bytes = 0;  // largest staging buffers (devices' copies of host
                                        // weights and inputs) of the session so far
    double graph_build_seconds = 0;     // building graphs (host overhead)
    double plan_bind_seconds = 0;       // executor runs outside the backends, their copies and
                                        // staging: planning, binding, buffer growth (host
                                        // overhead)
    double placement_seconds = 0;       // of plan_bind_seconds: choosing each node's backend
                                        // (or finding the choice in the cache)
    int64_t placements = 0;             // graphs placed anew (not found in the cache)
    double setup_seconds = 0;           // of plan_bind_seconds: memory plans and binding
                                        // before the first node; the rest is spent between
                                        // and around the backends' calls
    double compute_seconds = 0;         // executor runs, the backend's compute included
    double backend_seconds = 0;         // of compute_seconds: inside the plugins' compute and
                                        // synchronize calls
    double sync_seconds = 0;            // of backend_seconds: inside synchronize()
    double copy_seconds = 0;            // of compute_seconds: tensors moved between backends
    double stage_seconds = 0;           // of compute_seconds: weights and inputs uploaded
    int64_t overlapped_nodes = 0;       // nodes run beside the split before theirs
    int64_t graphs = 0;
    uint64_t staged_bytes = 0;  // bytes copied to devices and between backends: staged
                                // weights (experts as routed) and inputs, results passed on
};

// The backends a session may use, and the policy that places weights and nodes on them.
struct SessionBackends {
    std::vector<Scheduler::Backend> backends;  // plugin devices; names must differ
    PlacementPolicy placement;  // default_backend (else the first backend) holds the KV cache
    OffloadPolicy offload;
    // Measured op times (a calibrated cost table) that placement takes before the hints.
    std::shared_ptr<const MeasuredCosts> costs;
};

// One conversation with a model: a KV cache and an executor on one backend device, or a
// scheduler over several (SessionBackends).
class Deepseek2Session {
  public:
    // Chooses the fused and flash ops and checks that the backend supports every node of a
    // generation step and of a full ubatch at the end of the context (throws sy::Error naming
    // the flag or the node otherwise); the KV cache is allocated by the first eval() or by
    // allocate(). On a device that does not compute on host memory, the weights the graphs
    // read and the KV cache live in that device's memory (uploaded by allocate()).
    Deepseek2Session(const Deepseek2Model& model, Plugin& plugin, int32_t device = 0);
    // Several backends: each weight gets a home from the placement rules (weights homed on a
    // device with its own memory are copied there by allocate(); host ones stay where they
    // are), the KV cache lives on the default backend, which also decides fused MoE and flash
    // attention; every graph's nodes are placed by place_ops (cost hints + the offload policy,
    // plans cached per graph shape) and run by a Scheduler. Throws sy::Error for an unknown
    // backend or rule, weights that do not fit, or a node no backend supports.
    Deepseek2Session(const Deepseek2Model& model, const SessionBackends& backends);
    void allocate();
    // The model on the device: bytes of its weight copy there (0 on a host-memory device).
    uint64_t device_weight_bytes() const;
    uint64_t largest_weight_elements() const;
    // Device memory kept for the backend's own temporaries besides weights, KV cache and compute
    // buffer: a GPU's prompt products may expand the largest weight matrix to F16, plus room for
    // its libraries' workspaces.
    static uint64_t device_reserve(uint64_t largest_matrix_elements) {
        return largest_matrix_elements * 2 + (uint64_t(256) << 20);
    }
    bool on_device() const { return cache_.on_device(); }

    // --- sequences ---------------------------------------------------------------------------
    // The cache holds `sequences()` independent sequences (1 until set_sequences()), each in its
    // own n_ctx / sequences() cells (llama-server's slots). Each has its own length: its tokens
    // so far, the positions of the next ones.
    //
    // Splits the cache into n sequences; only while every sequence is empty (after reset()).
    // Throws sy::Error otherwise, or for n < 1 or more sequences than cells.
    void set_sequences(int64_t n);
    int64_t sequences() const { return int64_t(seq_len_.size()); }
    int64_t sequence_capacity() const { return cache_.sequence_cells(); }
    int64_t sequence_length(int64_t seq) const;
    // Keeps the first n_keep tokens of sequence seq and drops the rest (0: empties it; the next
    // tokens overwrite their cells). Throws sy::Error for an unknown sequence or more than its
    // length.
    void truncate(int64_t seq, int64_t n_keep);
    // Makes dst's first n tokens those of src (a shared prompt prefix, computed once): their
    // cache cells are copied and dst continues at position n. Throws sy::Error for an unknown
    // sequence or more than src's length.
    void copy_prefix(int64_t src, int64_t dst, int64_t n);

    // Tokens that continue one sequence.
    struct SequenceTokens {
        int64_t seq = 0;
        std::span<const int32_t> tokens;
    };
    // Runs several sequences' tokens together: each entry's tokens at its sequence's positions,
    // appended to its cache. Graphs hold up to n_ubatch tokens: each entry with tokens left
    // gets an equal share, and what short entries leave of it goes to the others in order, so
    // decoding sequences (one token each) share a pass over the weights with a prompt. Returns
    // each entry's logits in turn, n_vocab floats per token: of every token (all_logits) or of
    // its last. Throws sy::Error, leaving every sequence unchanged, for an unknown or repeated
    // sequence, an entry without tokens, tokens past a sequence's capacity, or an id outside
    // the vocabulary.
    std::vector<float> decode(std::span<const SequenceTokens> batch, bool all_logits = false);

    // Runs `tokens` on sequence 0 at positions n_past() .. n_past() + size - 1 (in ubatches).
    // Returns the logits of every token (all_logits) or of the last one. Throws as decode().
    std::vector<float> eval(std::span<const int32_t> tokens, bool all_logits = false);
    // n_seqs sequences side by side (perplexity's chunks): `tokens` holds n_seqs equally long
    // runs, one per sequence 0 .. n_seqs - 1; with an empty cache it first sets n_seqs
    // sequences. Each graph takes n_ubatch / n_seqs (at least one) tokens of every sequence, so
    // the weights are read once for all of them. Returns each sequence's logits in turn, as
    // decode(). Throws sy::Error as decode() does, for a count the tokens do not divide into,
    // or another count than the cached sequences'.
    std::vector<float> eval_sequences(std::span<const int32_t> tokens, int64_t n_seqs,
                                      bool all_logits = false);

    // Sequence 0's length (every sequence's, after eval_sequences).
    int64_t n_past() const { return seq_len_[0]; }
    int64_t n_ctx() const { return cache_.n_ctx(); }
    // Empties every sequence.
    void reset() { std::fill(seq_len_.begin(), seq_len_.end(), 0); }
    // Keeps the first `n_past` tokens of every sequence. Throws sy::Error for more than a
    // sequence's length or a negative count.
    void rewind(int64_t n_past);
    void clear_stats() { stats_ = EvalStats{}; }
    const Deepseek2Cache& cache() const { return cache_; }
    bool uses_fused_moe() const { return fused_moe_; }
    bool uses_flash_attention() const { return flash_; }
    const EvalStats& stats() const { return stats_; }
    // Times every node, copy and graph of the following evals into `profile` (profile.hpp):
    // the nodes then run one at a time. nullptr stops.
    void set_profile(Profile* profile);
    // Shows each node `observer` picks to it just before the node runs (the collection of an
    // importance matrix, imatrix.hpp); nullptr stops. Throws sy::Error for a session over
    // several backends (its nodes run in the scheduler's executors).
    void set_node_observer(const Executor::NodeObserver* observer);

    // The graph of one ubatch (exposed for `switchyard plan` and tests): `tokens` at n_past, as
    // n_seqs sequences of n_tokens / n_seqs tokens each, each in n_ctx / n_seqs cells.
    struct UbatchGraph {
        Graph graph;
        Tensor* tokens = nullptr;       // input {T} I32
        Tensor* positions = nullptr;    // input {T} I32
        Tensor* output_rows = nullptr;  // input {parts} I32 when parts differ in length: the
                                        // row of each part's last token
        Tensor* logits = nullptr;       // output {n_vocab, T, or one per part}
    };
    UbatchGraph build(int64_t n_tokens, int64_t n_past, bool all_logits, int64_t n_seqs = 1);
    // One part of a ubatch: n_tokens of sequence seq at positions n_past ...
    struct UbatchPart {
        int64_t seq = 0;
        int64_t n_tokens = 0;
        int64_t n_past = 0;
    };
    // The graph of parts in order, each sequence in `cells` cache cells; logits of every token
    // (all_logits) or of each part's last.
    UbatchGraph build(std::span<const UbatchPart> parts, int64_t cells, bool all_logits);

    // What the backends are, where each weight lives and why, and the node placement of a graph
    // this session built (cached per shape, as eval() uses it with several backends; with one,
    // every node is on it). Valid before allocate().
    bool multi_backend() const { return scheduler_ != nullptr; }
    const SessionBackends& session_backends() const { return backends_; }
    size_t primary() const { return primary_; }  // the default backend
    // Bytes of the KV cache in backend b's memory: its device's layers, or the layers in host
    // memory for the primary when it computes there (else the first backend that does).
    uint64_t cache_bytes_on(size_t b) const;
    std::span<const BackendInfo> backend_infos() const { return infos_; }
    const WeightPlan& weight_plan() const { return weight_plan_; }
    std::span<const WeightInfo> weights() const { return weight_infos_; }
    // The placement of a graph built for n_tokens after n_past cached tokens (kept for graphs
    // of the same structure, batch and power-of-two range of n_past).
    const OpPlan& plan(const Graph& graph, int64_t n_tokens, int64_t n_past);
    // Where a weight or cache tensor of this session's graphs lives: the index of the backend
    // holding it in its own memory, kHostInput for host memory.
    int32_t home_of(const Tensor& t) const;
    const ScheduleReport* last_schedule() const {
        return scheduler_ ? &scheduler_->last_run() : nullptr;
    }

  private:
    Deepseek2Session(const Deepseek2Model& model, const SessionBackends& backends, size_t primary);
    void check_graphs(std::vector<UbatchGraph>& graphs);
    void check_sequence(int64_t seq, const char* what) const;
    // Runs one graph of `parts` (their tokens in `tokens`, in order) and returns the logits it
    // outputs (none unless read_logits).
    std::vector<float> run_ubatch(std::span<const UbatchPart> parts,
                                  std::span<const int32_t> tokens, bool all_logits,
                                  bool read_logits);

    const Deepseek2Model& model_;
    SessionBackends backends_;
    size_t primary_ = 0;
    Plugin& plugin_;  // the primary backend's
    int32_t device_ = 0;
    bool fused_moe_ = false;
    bool flash_ = false;
    Executor executor_;  // one backend
    Deepseek2Cache cache_;
    std::vector<DeviceWeights> weights_;  // per device with its own memory that holds weights
    std::vector<BackendInfo> infos_;      // several backends
    std::vector<WeightInfo> weight_infos_;
    WeightPlan weight_plan_;
    std::unordered_map<const void*, int32_t> weight_home_;  // by host address
    std::unordered_map<std::string, OpPlan> plans_;         // by phase + shape signature
    std::unique_ptr<Scheduler> scheduler_;
    std::vector<int64_t> seq_len_ = {0};  // each sequence's tokens in the cache
    EvalStats stats_;
    Profile* profile_ = nullptr;
};

}  // namespace sy::llm
