// A model as the runtime sees it, whatever its architecture: what it needs to be run (its KV
// cache, the graph of one ubatch), and the registry that loads one from a GGUF file by its
// general.architecture.
//
//   std::unique_ptr<Model> model = load_model(gguf::Reader::open(path), options);
//   Session session(*model, cpu_plugin);                 // session.hpp: cache + executor
//   std::vector<float> logits = session.eval(tokens);    // logits of the last token
//
// An architecture is a class under llm/models/ that derives from Model (the graph, read top to
// bottom like its paper) and usually from KvCache (its cache's layout and the views its graph
// reads the cache through), and one line in the registry (llm/src/models.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "switchyard/core/graph.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/llm/gguf.hpp"

namespace sy::llm {

// How a model is run (llama.cpp's context parameters, with ik_llama.cpp's additions). Options an
// architecture does not have (mla, expert routing) are ignored by the others.
struct ContextOptions {
    int mla = 3;          // --mla 0|1|2|3
    int fused_moe = -1;   // --fused-moe: -1 when a backend provides it, 0 never, 1 required
    int flash_attn = -1;  // --flash-attn (attn.flash + attn.mla): as fused_moe
    int32_t cache_type_k = SY_TYPE_F16;  // -ctk: f32, f16, bf16, q8_0, q8_kv
    int32_t cache_type_v = SY_TYPE_F16;  // -ctv (modes 0 and 1; q8_0: mode 0 with flash)
    int64_t n_ctx = 0;                   // cache length in tokens; 0: min(4096, trained)
    int64_t n_ubatch = 512;              // tokens per graph
    bool group_routing = true;           // honour expert_group_count when the file sets it
    int64_t attn_max_bytes = 0;          // -amb: compute buffer per attention step, 0: no limit
    int ser_min_experts = 0;             // -ser K,t: 0 off
    float ser_threshold = 1.0f;          // t >= 1: exactly ser_min_experts
    // --expert-parallel N: each MoE layer's routed experts in N contiguous parts, each with
    // weights of its own (NAME[r/N]) that placement can put on another rank; part r reads only
    // the tokens routed to its experts, and the parts' weighted sums are added.
    int expert_parallel = 1;
    // --expert-parallel-exact: each part returns its experts' weighted outputs per slot {embd,
    // k, T} (zero for the other parts' slots, which the link does not carry) instead of their
    // sum, and rank 0 sums the slots in one process's order: its logits exactly, for about k/N
    // times the bytes back.
    bool expert_parallel_exact = false;
};

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

// The KV cache of one session: per layer a K and a V tensor (V may be absent) in host memory or
// in a plugin device's buffers. Each tensor is either token-major (one row of row_bytes per
// cell) or transposed (`rows` rows of n_ctx elements of element_bytes each: one element per row
// per cell). The n_ctx cells are split into equal stretches, one per sequence (set_sequences();
// llama-server's slots): sequence s owns cells [s * R, (s + 1) * R), R = n_ctx / sequences, and
// its token at position p is in cell s * R + p.
//
// The memory is allocated (and zeroed) by allocate(), so its size can be reported and checked
// first; until then k() and v() are null. A layer whose home is a device that does not compute
// on host memory lives in that device's buffers instead (k_buffer(), v_buffer(); k() and v()
// stay null): written in place by every step, never copied back and forth.
class KvCache {
  public:
    struct Layout {
        int64_t row_bytes = 0;  // token-major: bytes per cell (0 with `rows`: transposed)
        int64_t rows = 0;       // transposed: rows of n_ctx elements
        int64_t element_bytes = 0;
    };
    // Where one layer's cache lives: a device that does not compute on host memory, or (plugin
    // null, or a host-memory backend's) host memory.
    struct Home {
        Plugin* plugin = nullptr;
        int32_t device = 0;
    };
    // Throws sy::Error for a context that is not positive.
    KvCache(uint32_t n_layer, int64_t n_ctx, Layout k, Layout v, Plugin* plugin = nullptr,
            int32_t device = 0);
    virtual ~KvCache() = default;
    KvCache(const KvCache&) = delete;
    KvCache& operator=(const KvCache&) = delete;

    // One home per layer (-ngl N: the offloaded layers' caches on the GPU); before allocate().
    void set_homes(std::vector<Home> layers);
    const Home& layer_home(uint32_t il) const { return homes_.at(il); }
    // Every layer on a device (the whole model on a GPU).
    bool on_device() const;

    // Splits the cells into n sequences of n_ctx / n cells (throws sy::Error for n < 1 or more
    // sequences than cells). What the cells held is not moved: call it on an empty cache.
    void set_sequences(int64_t n);
    int64_t sequences() const { return n_seqs_; }
    int64_t sequence_cells() const { return n_ctx_ / n_seqs_; }
    // Copies the first n tokens of sequence src into sequence dst, every layer (allocate()
    // first; throws sy::Error for a sequence out of range or n past a sequence's cells).
    void copy_sequence(int64_t src, int64_t dst, int64_t n);
    // The first n tokens of sequence seq, every layer's K and V, as bytes in host memory (to be
    // put back by load_sequence, into any sequence of a cache of the same model and layout).
    // Throws sy::Error as copy_sequence.
    std::vector<std::byte> save_sequence(int64_t seq, int64_t n);
    // Writes what save_sequence gave for n tokens into sequence seq's first n cells. Throws
    // sy::Error for bytes of another size.
    void load_sequence(int64_t seq, int64_t n, std::span<const std::byte> bytes);
    // Bytes save_sequence gives for n tokens.
    uint64_t sequence_bytes(int64_t n) const;

    uint64_t bytes() const;  // allocated or not
    // Bytes of the layers on `plugin`'s device `device` (plugin nullptr: in host memory).
    uint64_t bytes_on(const Plugin* plugin, int32_t device = 0) const;
    void allocate();
    bool allocated() const { return allocated_; }
    int64_t n_ctx() const { return n_ctx_; }
    uint32_t n_layer() const { return n_layer_; }

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

    // Layer il's K or V as an input of graph g (external memory, written in place), named
    // "cache_k-IL" / "cache_v-IL" so that layer_of() finds its layer before allocation.
    Tensor* k_input(Graph& g, uint32_t il, sy_dtype type, const Shape& shape);
    Tensor* v_input(Graph& g, uint32_t il, sy_dtype type, const Shape& shape);
    // The layer whose cache a graph input made by k_input / v_input stands for; nullopt for any
    // other tensor.
    static std::optional<uint32_t> layer_of(const Tensor& t);

  private:
    struct Layer {
        std::vector<std::byte> k, v;
        Buffer k_device, v_device;
    };
    // The copy of save_sequence (into `save`) and load_sequence (from `load`).
    void move_sequence(int64_t seq, int64_t n, std::byte* save, const std::byte* load);
    std::vector<Home> homes_;  // per layer; plugin null for host memory
    int64_t n_ctx_ = 0;
    int64_t n_seqs_ = 1;
    uint32_t n_layer_ = 0;
    Layout k_layout_, v_layout_;
    size_t k_layer_bytes_ = 0, v_layer_bytes_ = 0;
    std::vector<Layer> layers_;
    bool allocated_ = false;
};

// One part of a ubatch: n_tokens of sequence seq at positions n_past ...
struct UbatchPart {
    int64_t seq = 0;
    int64_t n_tokens = 0;
    int64_t n_past = 0;
};

// What a graph built for reuse (Model::GraphRequest::reusable) changes when its sequences'
// n_past move: the views its new tokens' cache rows are written to, and the attention's causal
// offsets. Their keys are read up to a length rounded up (kReusableKeys), so the graph's shapes
// hold for that many steps.
struct StepMoves {
    struct View {
        Tensor* view;             // a cache write's destination
        int64_t seq;              // the sequence whose n_past places it
        int64_t bytes_per_token;  // how far it moves per token of n_past
    };
    struct Param {
        int32_t node;  // a node whose integer parameter `index` is its sequence's n_past
        int32_t index;
        int64_t seq;
    };
    std::vector<View> views;
    std::vector<Param> params;
};

// The keys a reusable graph's attention reads: n_past + T rounded up to this many (at most the
// sequence's cells); those past n_past + T are masked as the causal window's.
inline constexpr int64_t kReusableKeys = 256;

// The graph of one ubatch.
struct UbatchGraph {
    Graph graph;
    Tensor* tokens = nullptr;       // input {T} I32
    Tensor* positions = nullptr;    // input {T} I32
    Tensor* output_rows = nullptr;  // input {parts} I32 when parts differ in length: the row of
                                    // each part's last token
    Tensor* logits = nullptr;       // output {n_vocab, T, or one per part}
    // A reusable graph: the parts it is placed for now, and what moves with them.
    std::vector<UbatchPart> parts;
    StepMoves moves;
};

// Keys read by a reusable graph's part of n_tokens after n_past, in a sequence of `cells`.
inline int64_t reusable_keys(int64_t n_past, int64_t n_tokens, int64_t cells) {
    const int64_t n = n_past + n_tokens;
    return std::min(cells, (n + kReusableKeys - 1) / kReusableKeys * kReusableKeys);
}

// Places a reusable graph for `parts` (the same sequences and token counts it was built for, each
// within the keys it reads): its cache writes and causal offsets move by each part's n_past
// change. Throws where the parts do not fit the graph.
void move_to(UbatchGraph& ug, std::span<const UbatchPart> parts, int64_t cells);

// The named ops a session's graphs use, chosen once from the backend that holds the cache.
struct NamedOps {
    bool fused_moe = false;  // moe.fused_up_gate
    bool flash = false;      // attn.flash and attn.mla
};

class Model {
  public:
    virtual ~Model() = default;

    virtual std::string_view architecture() const = 0;
    virtual const gguf::Reader& file() const = 0;
    virtual const ContextOptions& options() const = 0;
    virtual uint32_t n_vocab() const = 0;
    virtual uint32_t n_layer() const = 0;  // the layers the graph runs
    // "27 layers, 64 experts (6 used), mla 3": what the tools print when they load it.
    virtual std::string summary() const = 0;
    // What loading left out or changed that a user should know (printed once).
    virtual std::vector<std::string> notes() const { return {}; }
    // The constant id of every weight of this model (plugin.h's sy_tensor.constant_id): plugins
    // may keep what they derive from the weights until PluginHost::release_constants(id).
    virtual uint64_t constant_id() const = 0;
    // Bytes of weights one token's forward pass reads (routed experts: those it uses).
    virtual uint64_t weight_bytes_per_token() const = 0;
    // Bytes the KV cache holds per token, all layers.
    virtual uint64_t cache_bytes_per_token() const = 0;

    // The named ops to use when `plugin` holds the cache; throws sy::Error naming the flag when
    // the options require one it does not provide, or a cache type needs one.
    virtual NamedOps choose_named_ops(const Plugin& plugin) const = 0;
    // The KV cache of options().n_ctx tokens, laid out for `ops`, at home on plugin's device
    // (null: host memory) until set_homes().
    virtual std::unique_ptr<KvCache> make_cache(const NamedOps& ops, Plugin* plugin,
                                                int32_t device) const = 0;
    // The weight whose home decides where layer il's cache lives (its attention's input).
    virtual std::string cache_anchor(uint32_t il) const = 0;

    // What a graph of one ubatch is built from.
    struct GraphRequest {
        std::span<const UbatchPart> parts;  // in graph order
        int64_t cells = 0;                  // each sequence's cells in the cache
        bool all_logits = false;            // every token's logits, or each part's last
        KvCache* cache = nullptr;           // made by this model's make_cache()
        NamedOps ops;
        // The scheduler may run two backends' independent nodes at once: the model may order
        // nodes so that they can (the shared experts beside the routed ones).
        bool overlap = false;
        // Gives a weight tensor (its host data set) its device copy where the session has one.
        std::function<void(Tensor&)> bind_weight;
        // A graph to run again for later steps (move_to): its attention reads reusable_keys()
        // keys, and it lists what moves with n_past (UbatchGraph::moves).
        bool reusable = false;
    };
    virtual UbatchGraph build(const GraphRequest& request) const = 0;
};

// The architectures the registry knows, by general.architecture ("deepseek2", ...).
std::vector<std::string> architectures();
// The model of the file's general.architecture, its options checked (throws gguf::FormatError
// for a file that is not one, sy::Error for an unknown architecture or a bad option).
std::unique_ptr<Model> load_model(gguf::Reader file, const ContextOptions& options);
// ARCH.context_length of the file (-c 0); throws gguf::FormatError when missing.
int64_t trained_context(const gguf::Reader& file);

}  // namespace sy::llm
