// The session: one model on one backend or several, sequences in its KV cache, ubatches through
// an executor or the scheduler.
#include "switchyard/llm/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "switchyard/core/error.hpp"
#include "switchyard/core/memory_planner.hpp"
#include "switchyard/core/profile.hpp"
#include "switchyard/sdk.hpp"

namespace sy::llm {

namespace {

// Elements of one matrix of a weight {K, N, ...} (one expert's, for expert tensors).
uint64_t matrix_elements(const Tensor& t) {
    return static_cast<uint64_t>(t.ne(0) * t.ne(1));
}

using Clock = std::chrono::steady_clock;

// Ubatches of at most this many tokens (decode steps, a few sequences' steps at once, drafts)
// run graphs kept for the steps after (building and keying a graph every step was the largest
// host cost of a decode step: docs/design-measurements.md#kept-decode-graphs); their attention
// then reads up to kReusableKeys - 1 keys past the causal window, which a larger batch would pay
// for in every query.
constexpr int64_t kReusableTokens = 16;
// Graphs kept: a few shapes of parts at once (sequences joining and leaving a served batch).
constexpr size_t kMaxReusableGraphs = 8;

SessionBackends one_backend(Plugin& plugin, int32_t device) {
    SessionBackends b;
    b.backends = {{&plugin, device}};
    return b;
}

// The backend that holds the KV cache: placement.default_backend, else the first.
size_t primary_backend(const SessionBackends& b) {
    if (b.backends.empty()) throw Error("a session needs at least one backend");
    std::string loaded;
    for (const Scheduler::Backend& x : b.backends) {
        if (x.plugin == nullptr) throw Error("a session backend has no plugin");
        loaded += (loaded.empty() ? "" : ", ") + backend_name(*x.plugin, x.device);
    }
    if (b.placement.default_backend.empty()) return 0;
    for (size_t i = 0; i < b.backends.size(); ++i)
        if (backend_name(*b.backends[i].plugin, b.backends[i].device) ==
            b.placement.default_backend)
            return i;
    throw Error("placement: the default backend '" + b.placement.default_backend +
                "' is not loaded (loaded: " + loaded + ")");
}

}  // namespace

Session::Session(const Model& model, Plugin& plugin, int32_t device)
    : Session(model, one_backend(plugin, device), 0) {}

Session::Session(const Model& model, const SessionBackends& backends)
    : Session(model, backends, primary_backend(backends)) {}

Session::Session(const Model& model, const SessionBackends& backends, size_t primary)
    : model_(model),
      backends_(backends),
      primary_(primary),
      plugin_(*backends.backends.at(primary).plugin),
      device_(backends.backends.at(primary).device),
      ops_(model.choose_named_ops(plugin_)),
      executor_(plugin_, device_),
      cache_(model.make_cache(ops_, &plugin_, device_)) {
    // Every node of a generation step and of a full prompt ubatch (mla 3 differs between
    // them) must be one a backend supports, with this model's weight and cache types; at
    // the end of the context, where -amb splits the attention into steps.
    const int64_t ubatch = std::min(model.options().n_ubatch, cache_->n_ctx());
    std::vector<UbatchGraph> graphs;
    for (int64_t t : {int64_t{1}, ubatch}) graphs.push_back(build(t, cache_->n_ctx() - t, false));
    const Graph* g[] = {&graphs[0].graph, &graphs[1].graph};
    for (const Scheduler::Backend& b : backends_.backends) {
        infos_.push_back(backend_info(*b.plugin, b.device));
        if (backends_.costs)
            infos_.back().measured = [costs = backends_.costs, name = infos_.back().name](
                                         const sy_node& node) { return costs->ns(name, node); };
        for (size_t i = 0; i + 1 < infos_.size(); ++i)
            if (infos_[i].name == infos_.back().name)
                throw Error("backend '" + infos_.back().name + "' is given twice");
    }
    // Every weight the graphs read, once, then its home (with one backend: the rules are
    // checked and the total reported).
    std::vector<const void*> hosts;
    std::unordered_map<const void*, size_t> index;
    for (const Graph* graph : g)
        for (const auto& t : graph->tensors()) {
            if (t->kind() != TensorKind::weight || t->host_data() == nullptr) continue;
            const auto bytes = static_cast<uint64_t>(t->bytes());
            const auto [it, fresh] = index.try_emplace(t->host_data(), weight_infos_.size());
            if (fresh) {
                weight_infos_.push_back({t->name(), bytes});
                hosts.push_back(t->host_data());
            } else {
                weight_infos_[it->second].bytes = std::max(weight_infos_[it->second].bytes, bytes);
            }
        }
    // --fit leaves room on the default backend for the KV cache, a full ubatch's compute buffer
    // (as if every node ran there: an upper bound) and the device reserve that
    // check_session_memory asks for (of any weight matrix: an upper bound too); on the other
    // devices for the reserve. A device that does not compute on host memory also keeps room
    // for the staging buffer of the host-resident weights the scheduler may offload to it: what
    // the executor needs over its staging limit, where weights share room by when they are
    // read (as if every node ran there with every weight on the host: one layer's routed
    // experts, about), unless the policy never offloads.
    std::vector<uint64_t> reserved(infos_.size(), 0);
    if (backends_.placement.fit) {
        uint64_t largest = 0, staging = 0;
        for (const Graph* graph : g) {
            for (const auto& t : graph->tensors())
                if (t->kind() == TensorKind::weight)
                    largest = std::max(largest, matrix_elements(*t));
            // The caches (inputs without host memory yet) live in a device's memory, not staged.
            const auto cache = [](const Tensor& t) { return t.host_data() == nullptr; };
            staging = std::max(
                staging, Executor::staging_layout(*graph, graph->all_nodes(), {}, 1, cache).bytes);
        }
        for (size_t b = 0; b < reserved.size(); ++b) {
            reserved[b] = device_reserve(largest) + cache_->bytes_on(backends_.backends[b].plugin,
                                                                     backends_.backends[b].device);
            if (!infos_[b].host_memory() && backends_.offload.mode != OffloadMode::never)
                reserved[b] += staging;
        }
        reserved[primary_] += plan_memory(graphs[1].graph).peak_bytes;
    }
    weight_plan_ =
        place_weights(weight_infos_, backends_.placement, infos_, infos_[primary_].name, reserved);
    for (size_t i = 0; i < hosts.size(); ++i)
        weight_home_[hosts[i]] = weight_plan_.homes[i].backend;
    if (backends_.backends.size() == 1) {
        check_graphs(graphs);
        // On a device with its own memory, these two graphs' weights (every weight any ubatch
        // reads) are copied there once, by allocate().
        if (cache_->on_device()) weights_.emplace_back(plugin_, device_, g);
        return;
    }
    // Each layer's KV cache goes with its attention (the home of attn_kv_a_mqa, whose output it
    // holds): -ngl's layers, a rule's, --tensor-split's share. --fit keeps it on the default
    // backend, where it reserved the room.
    if (!backends_.placement.fit) {
        std::vector<KvCache::Home> homes;
        for (uint32_t il = 0; il < model.n_layer(); ++il) {
            const std::string name = model.cache_anchor(il);
            size_t b = primary_;
            for (size_t i = 0; i < weight_infos_.size(); ++i)
                if (weight_infos_[i].name == name) b = size_t(weight_plan_.homes[i].backend);
            homes.push_back({backends_.backends[b].plugin, backends_.backends[b].device});
        }
        cache_->set_homes(std::move(homes));
    }
    // A device's weights and the cache layers it holds (place_weights checked the weights).
    for (size_t b = 0; b < infos_.size(); ++b) {
        const uint64_t cache =
            cache_->bytes_on(backends_.backends[b].plugin, backends_.backends[b].device);
        const uint64_t weights = weight_plan_.bytes_per_backend[b],
                       free = infos_[b].props.memory_free;
        if (infos_[b].host_memory() || cache == 0 || free == 0 || weights + cache <= free) continue;
        throw Error(fmt::format(
            "{}: the weights placed there ({:.0f} MiB) and the KV cache of its layers ({:.0f} "
            "MiB) do not fit in its {:.0f} MiB free: lower -c or offload fewer layers (-ngl)",
            infos_[b].name, double(weights) / 1048576.0, double(cache) / 1048576.0,
            double(free) / 1048576.0));
    }
    for (size_t b = 0; b < infos_.size(); ++b) {
        if (infos_[b].host_memory() || weight_plan_.bytes_per_backend[b] == 0) continue;
        const auto homed_here = [this, b](const Tensor& t) {
            const auto it = weight_home_.find(t.host_data());
            return it != weight_home_.end() && it->second == int32_t(b);
        };
        weights_.emplace_back(*backends_.backends[b].plugin, backends_.backends[b].device, g,
                              homed_here);
    }
    scheduler_ = std::make_unique<Scheduler>(backends_.backends);
    scheduler_->set_staging_limit(backends_.offload.staging_limit);
    scheduler_->set_overlap(backends_.offload.overlap);
    check_graphs(graphs);
}

void Session::check_graphs(std::vector<UbatchGraph>& graphs) {
    for (UbatchGraph& ug : graphs) {
        const int64_t t = ug.tokens->ne(0);
        try {
            if (scheduler_)
                place_ops(ug.graph, infos_, backends_.offload,
                          {t > 1 ? Phase::prompt : Phase::decode, t,
                           [this](const Tensor& x) { return home_of(x); }});
            else
                check_supported(plugin_, device_, ug.graph);
        } catch (const Error& e) {
            throw Error(std::string(e.what()) + " (in the graph of " + std::to_string(t) +
                        (t == 1 ? " token" : " tokens") +
                        "; the weight types, -ctk/-ctv, -mla or -fa decide its nodes)");
        }
    }
}

uint64_t Session::cache_bytes_on(size_t b) const {
    if (!infos_.empty() && !infos_.at(b).host_memory())
        return cache_->bytes_on(backends_.backends[b].plugin, backends_.backends[b].device);
    size_t host = primary_;
    for (size_t i = 0; i < infos_.size() && !infos_[host].host_memory(); ++i)
        if (infos_[i].host_memory()) host = i;
    return b == host ? cache_->bytes_on(nullptr) : 0;
}

uint64_t Session::device_weight_bytes() const {
    uint64_t total = 0;
    for (const DeviceWeights& w : weights_) total += w.bytes();
    return total;
}

uint64_t Session::largest_weight_elements() const {
    uint64_t largest = 0;
    for (const DeviceWeights& w : weights_)
        largest = std::max(largest, w.largest_matrix_elements());
    return largest;
}

void Session::allocate() {
    std::vector<const Plugin*> told;
    for (DeviceWeights& w : weights_) {
        if (w.uploaded()) continue;
        // The model file's mappings, so that a backend that can read the same file where it
        // computes (an MPI worker with its own copy) loads the weights from there instead of
        // being sent them: option "file_mapping" = "SHARD:BASE:SIZE" (BASE in hex), once per
        // shard. A backend without the option ignores it.
        if (w.plugin() && std::find(told.begin(), told.end(), w.plugin()) == told.end()) {
            told.push_back(w.plugin());
            const gguf::Reader& file = model_.file();
            // Tensors converted in place (interleaved rows) are no longer the file's bytes.
            for (size_t i = 0; !file.modified() && i < file.files().size(); ++i) {
                const std::span<const uint8_t> bytes = file.shard_bytes(i);
                if (bytes.empty()) continue;
                char value[96];
                std::snprintf(
                    value, sizeof value, "%zu:%llx:%zu", i,
                    static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(bytes.data())),
                    bytes.size());
                w.plugin()->set_option("file_mapping", value);
            }
        }
        w.upload();
    }
    cache_->allocate();
}

UbatchGraph Session::build(int64_t n_tokens, int64_t n_past, bool all_logits, int64_t n_seqs) {
    if (n_seqs < 1 || n_tokens % n_seqs != 0 || n_seqs > cache_->n_ctx())
        throw Error("a graph of " + std::to_string(n_tokens) + " tokens cannot hold " +
                    std::to_string(n_seqs) + " equal sequences");
    std::vector<UbatchPart> parts;
    for (int64_t s = 0; s < n_seqs; ++s) parts.push_back({s, n_tokens / n_seqs, n_past});
    return build(parts, cache_->n_ctx() / n_seqs, all_logits);
}

UbatchGraph Session::build(std::span<const UbatchPart> parts, int64_t cells, bool all_logits,
                           bool reusable) {
    if (parts.empty()) throw Error("a graph needs at least one token");
    for (const UbatchPart& p : parts)
        if (p.n_tokens < 1 || p.n_past < 0 || p.seq < 0 || p.n_past + p.n_tokens > cells ||
            (p.seq + 1) * cells > cache_->n_ctx())
            throw Error("a graph part of " + std::to_string(p.n_tokens) + " tokens at " +
                        std::to_string(p.n_past) + " of sequence " + std::to_string(p.seq) +
                        " does not fit its " + std::to_string(cells) + " cache cells");
    Model::GraphRequest request;
    request.parts = parts;
    request.cells = cells;
    request.all_logits = all_logits;
    request.cache = cache_.get();
    request.ops = ops_;
    request.overlap = backends_.backends.size() > 1 && backends_.offload.overlap;
    request.bind_weight = [this](Tensor& t) { bind_weight(t); };
    request.reusable = reusable;
    return model_.build(request);
}

UbatchGraph& Session::reusable_graph(std::span<const UbatchPart> parts, bool all_logits) {
    const int64_t cells = cache_->sequence_cells();
    std::string key = all_logits ? "all" : "last";
    for (const UbatchPart& p : parts)
        key +=
            fmt::format("/{},{},{}", p.seq, p.n_tokens, reusable_keys(p.n_past, p.n_tokens, cells));
    if (auto it = reusable_.find(key); it != reusable_.end()) {
        try {
            move_to(it->second, parts, cells);
        } catch (...) {
            reusable_.erase(it);  // half moved: built again next time
            throw;
        }
        return it->second;
    }
    if (reusable_.size() >= kMaxReusableGraphs) reusable_.clear();
    stats_.graphs_built += 1;
    UbatchGraph ug = build(parts, cells, all_logits, true);
    if (ug.parts.empty()) {  // a model that does not list its moves: not kept
        unkept_ = std::move(ug);
        return unkept_;
    }
    return reusable_.emplace(std::move(key), std::move(ug)).first->second;
}

// A weight read from host memory, or from a device's copy of it. With one backend on a device
// every weight has a copy there once allocate() uploaded them (an error names one that has not).
void Session::bind_weight(Tensor& t) const {
    const void* host = t.host_data();
    for (const DeviceWeights& dw : weights_)
        if (const auto found = dw.try_find(host)) {
            t.set_data(*found->first, found->second);
            return;
        }
    if (!scheduler_ && !weights_.empty() && weights_[0].uploaded()) {
        const auto [buffer, offset] = weights_[0].find(host, t.name());  // throws: not copied
        t.set_data(*buffer, offset);
    }
}

// A backend index for memory in a plugin's buffer (the weights and the cache on devices), else
// host memory. Before allocate() the same answer from where they will be: a weight's home from
// the placement, a layer's cache (the builder's "cache_" inputs, without memory yet) from the
// cache's homes, so that plans made before (`switchyard plan`) and after allocation agree.
int32_t Session::home_of(const Tensor& t) const {
    const auto backend_of = [this](const Plugin* plugin, int32_t device) {
        for (size_t b = 0; b < backends_.backends.size(); ++b)
            if (backends_.backends[b].plugin == plugin && backends_.backends[b].device == device)
                return int32_t(b);
        return kHostInput;
    };
    if (const Buffer* buffer = t.device_buffer())
        return backend_of(buffer->owner(), buffer->device());
    if (t.kind() == TensorKind::weight && t.host_data() != nullptr) {
        const auto it = weight_home_.find(t.host_data());
        if (it != weight_home_.end() && !infos_[size_t(it->second)].host_memory())
            return it->second;
    } else if (const auto layer = KvCache::layer_of(t);
               layer && t.host_data() == nullptr && *layer < cache_->n_layer()) {
        // A layer's cache: its home.
        const KvCache::Home& home = cache_->layer_home(*layer);
        if (home.plugin != nullptr) return backend_of(home.plugin, home.device);
    }
    return kHostInput;
}

// Placing a node asks every backend whether it supports the node and what it would cost; on a
// real device that adds up to a sizeable share of a decode step when every step is placed anew
// (docs/design-measurements.md#placement-reuse). The graphs of successive decode steps differ
// only in the sizes that follow the cache length, so a placement is kept for graphs of the same
// structure, batch and power-of-two range of cached tokens (the costs that grow with the cache
// are re-weighed when it doubles).
const OpPlan& Session::plan(const Graph& graph, int64_t n_tokens, int64_t n_past) {
    // A kept graph placed before in the same range of n_past: its placement without the key.
    const int bits = std::bit_width(uint64_t(n_past));
    for (const PlacedGraph& p : placed_)
        if (p.graph == graph.stamp() && p.n_tokens == n_tokens && p.bits == bits &&
            p.generation == plans_generation_)
            return *p.plan;
    const std::vector<int32_t> all = graph.all_nodes();
    std::string key = fmt::format("{}/{}/", n_tokens, bits) + graph.structure_signature(all);
    for (const auto& t : graph.tensors())
        if (t->is_external()) key += std::to_string(home_of(*t)) + ",";
    const auto remember = [&](const OpPlan& p) -> const OpPlan& {
        if (placed_.size() >= kMaxReusableGraphs) placed_.erase(placed_.begin());
        placed_.push_back({graph.stamp(), n_tokens, bits, plans_generation_, &p});
        return p;
    };
    if (const auto it = plans_.find(key); it != plans_.end()) return remember(it->second);
    if (plans_.size() >= 16) {  // many shapes: start again
        plans_.clear();
        ++plans_generation_;
    }
    stats_.placements += 1;
    OpPlan p = place_ops(graph, infos_, backends_.offload,
                         {n_tokens > 1 ? Phase::prompt : Phase::decode, n_tokens,
                          [this](const Tensor& x) { return home_of(x); }});
    return remember(plans_.emplace(std::move(key), std::move(p)).first->second);
}

DeviceWeights::DeviceWeights(Plugin& plugin, int32_t device, std::span<const Graph* const> graphs,
                             const std::function<bool(const Tensor&)>& include)
    : plugin_(&plugin), device_(device) {
    // The largest extent read from each host address (one weight may be seen as two shapes).
    for (const Graph* g : graphs)
        for (const auto& t : g->tensors()) {
            if (t->kind() != TensorKind::weight || t->host_data() == nullptr) continue;
            if (include && !include(*t)) continue;
            Range& r = ranges_.try_emplace(t->host_data(), Range{0, 0}).first->second;
            r.bytes = std::max(r.bytes, static_cast<uint64_t>(t->bytes()));
            largest_ = std::max(largest_, matrix_elements(*t));
        }
    for (auto& [host, r] : ranges_) {
        r.offset = bytes_;
        bytes_ += aligned_size(r.bytes);
    }
}

void DeviceWeights::upload() {
    if (uploaded() || bytes_ == 0) return;
    Buffer buffer = plugin_->alloc(device_, bytes_);
    for (const auto& [host, r] : ranges_) plugin_->set(buffer, r.offset, host, r.bytes);
    buffer_ = std::move(buffer);
}

std::pair<const Buffer*, uint64_t> DeviceWeights::find(const void* host,
                                                       const std::string& name) const {
    const auto it = ranges_.find(host);
    if (it == ranges_.end() || !buffer_)
        throw Error(
            "weight " + name +
            " has no copy on the device (not in the graphs checked when the session started)");
    return {&buffer_, it->second.offset};
}

std::optional<std::pair<const Buffer*, uint64_t>> DeviceWeights::try_find(const void* host) const {
    const auto it = ranges_.find(host);
    if (it == ranges_.end() || !buffer_) return std::nullopt;
    return std::make_pair(&buffer_, it->second.offset);
}

void Session::set_profile(Profile* profile) {
    profile_ = profile;
    executor_.set_profile(profile);
    if (scheduler_) scheduler_->set_profile(profile);
}

void Session::set_node_observer(const Executor::NodeObserver* observer) {
    if (observer != nullptr && scheduler_)
        throw Error(
            "observing nodes (imatrix collection) needs a session on one backend; this one "
            "runs on " +
            std::to_string(backends_.backends.size()));
    executor_.set_observer(observer);
}

void Session::check_sequence(int64_t seq, const char* what) const {
    if (seq < 0 || seq >= sequences())
        throw Error(std::string(what) + ": sequence " + std::to_string(seq) +
                    " does not exist (the session has " + std::to_string(sequences()) +
                    (sequences() == 1 ? " sequence" : " sequences") + ")");
}

void Session::set_sequences(int64_t n) {
    if (n == sequences()) return;
    if (std::any_of(seq_len_.begin(), seq_len_.end(), [](int64_t l) { return l > 0; }))
        throw Error("the cache holds " + std::to_string(sequences()) + " sequences, not " +
                    std::to_string(n) + " (reset() first)");
    cache_->set_sequences(n);
    reusable_.clear();
    seq_len_.assign(size_t(n), 0);
}

int64_t Session::sequence_length(int64_t seq) const {
    check_sequence(seq, "sequence_length");
    return seq_len_[size_t(seq)];
}

void Session::truncate(int64_t seq, int64_t n_keep) {
    check_sequence(seq, "truncate");
    if (n_keep < 0 || n_keep > seq_len_[size_t(seq)])
        throw Error("truncate sequence " + std::to_string(seq) + " to " + std::to_string(n_keep) +
                    " tokens: it holds " + std::to_string(seq_len_[size_t(seq)]));
    seq_len_[size_t(seq)] = n_keep;
}

void Session::copy_prefix(int64_t src, int64_t dst, int64_t n) {
    check_sequence(src, "copy_prefix");
    check_sequence(dst, "copy_prefix");
    if (n < 0 || n > seq_len_[size_t(src)])
        throw Error("copy_prefix: " + std::to_string(n) + " tokens of sequence " +
                    std::to_string(src) + ", which holds " + std::to_string(seq_len_[size_t(src)]));
    allocate();
    cache_->copy_sequence(src, dst, n);
    seq_len_[size_t(dst)] = n;
}

std::vector<std::byte> Session::save_prefix(int64_t seq, int64_t n) {
    check_sequence(seq, "save_prefix");
    if (n < 0 || n > seq_len_[size_t(seq)])
        throw Error("save_prefix: " + std::to_string(n) + " tokens of sequence " +
                    std::to_string(seq) + ", which holds " + std::to_string(seq_len_[size_t(seq)]));
    allocate();
    return cache_->save_sequence(seq, n);
}

void Session::load_prefix(int64_t seq, int64_t n, std::span<const std::byte> bytes) {
    check_sequence(seq, "load_prefix");
    allocate();
    cache_->load_sequence(seq, n, bytes);
    seq_len_[size_t(seq)] = n;
}

void Session::rewind(int64_t n_past) {
    for (const int64_t len : seq_len_)
        if (n_past < 0 || n_past > len)
            throw Error("rewind to " + std::to_string(n_past) + " tokens: the cache holds " +
                        std::to_string(len));
    std::fill(seq_len_.begin(), seq_len_.end(), n_past);
}

std::vector<float> Session::eval(std::span<const int32_t> tokens, bool all_logits) {
    const SequenceTokens one{0, tokens};
    return decode({&one, 1}, all_logits);
}

std::vector<float> Session::eval_sequences(std::span<const int32_t> tokens, int64_t n_seqs,
                                           bool all_logits) {
    const int64_t n = static_cast<int64_t>(tokens.size());
    if (n == 0) throw Error("eval: no tokens");
    if (n_seqs < 1 || n % n_seqs != 0)
        throw Error("eval: " + std::to_string(n) + " tokens are not " + std::to_string(n_seqs) +
                    " sequences of equal length");
    set_sequences(n_seqs);
    std::vector<SequenceTokens> batch;
    const size_t per = size_t(n / n_seqs);
    for (int64_t s = 0; s < n_seqs; ++s) batch.push_back({s, tokens.subspan(size_t(s) * per, per)});
    return decode(batch, all_logits);
}

std::vector<float> Session::decode(std::span<const SequenceTokens> batch, bool all_logits) {
    const uint32_t n_vocab = model_.n_vocab();
    const int64_t cells = cache_->sequence_cells();
    if (batch.empty()) throw Error("eval: no tokens");
    std::vector<bool> seen(seq_len_.size(), false);
    for (const SequenceTokens& e : batch) {
        check_sequence(e.seq, "eval");
        if (seen[size_t(e.seq)])
            throw Error("eval: sequence " + std::to_string(e.seq) + " is given twice in a batch");
        seen[size_t(e.seq)] = true;
        if (e.tokens.empty()) throw Error("eval: no tokens for sequence " + std::to_string(e.seq));
        const int64_t len = seq_len_[size_t(e.seq)], n = int64_t(e.tokens.size());
        if (len + n > cells)
            throw Error("the context is full: " + std::to_string(len) + " cached + " +
                        std::to_string(n) + " new tokens exceed the context of " +
                        std::to_string(cells) +
                        (sequences() > 1 ? " per sequence (" + std::to_string(cache_->n_ctx()) +
                                               " / " + std::to_string(sequences()) + ")"
                                         : std::string()) +
                        " (raise it with -c)");
        for (size_t i = 0; i < e.tokens.size(); ++i)
            if (e.tokens[i] < 0 || uint32_t(e.tokens[i]) >= n_vocab)
                throw Error("token " + std::to_string(e.tokens[i]) + " at index " +
                            std::to_string(i) +
                            (batch.size() > 1 ? " of sequence " + std::to_string(e.seq) : "") +
                            " is outside the vocabulary of " + std::to_string(n_vocab));
    }
    allocate();

    // Where each entry's logits go in the result: all its tokens', or its last token's.
    const size_t V = n_vocab;
    std::vector<size_t> out_at(batch.size() + 1, 0);
    for (size_t i = 0; i < batch.size(); ++i)
        out_at[i + 1] = out_at[i] + (all_logits ? batch[i].tokens.size() : 1) * V;
    std::vector<float> logits(out_at.back());

    std::vector<int64_t> done(batch.size(), 0);  // tokens of each entry run so far
    std::vector<UbatchPart> parts;
    std::vector<size_t> part_entry;
    std::vector<int32_t> tokens;
    for (;;) {
        // Each entry with tokens left takes an equal share of n_ubatch (at least one token);
        // what the short ones leave goes to the others in order.
        std::vector<size_t> active;
        for (size_t i = 0; i < batch.size(); ++i)
            if (done[i] < int64_t(batch[i].tokens.size())) active.push_back(i);
        if (active.empty()) break;
        const int64_t share =
            std::max<int64_t>(1, model_.options().n_ubatch / int64_t(active.size()));
        std::vector<int64_t> take(active.size());
        int64_t spare = 0;
        for (size_t k = 0; k < active.size(); ++k) {
            const int64_t left = int64_t(batch[active[k]].tokens.size()) - done[active[k]];
            take[k] = std::min(left, share);
            spare += share - take[k];
        }
        for (size_t k = 0; k < active.size() && spare > 0; ++k) {
            const int64_t left = int64_t(batch[active[k]].tokens.size()) - done[active[k]];
            const int64_t more = std::min(left - take[k], spare);
            take[k] += more;
            spare -= more;
        }
        parts.clear();
        part_entry.clear();
        tokens.clear();
        for (size_t k = 0; k < active.size(); ++k) {
            const SequenceTokens& e = batch[active[k]];
            parts.push_back({e.seq, take[k], seq_len_[size_t(e.seq)]});
            part_entry.push_back(active[k]);
            const auto from = e.tokens.begin() + done[active[k]];
            tokens.insert(tokens.end(), from, from + take[k]);
        }
        bool finishes = all_logits;
        for (size_t k = 0; k < parts.size(); ++k)
            finishes |= done[part_entry[k]] + parts[k].n_tokens ==
                        int64_t(batch[part_entry[k]].tokens.size());
        const std::vector<float> out = run_ubatch(parts, tokens, all_logits, finishes);
        // The graph's logits: every token's in part order, or each part's last token's.
        size_t row = 0;
        for (size_t k = 0; k < parts.size(); ++k) {
            const size_t i = part_entry[k];
            const int64_t before = done[i];
            done[i] += parts[k].n_tokens;
            seq_len_[size_t(parts[k].seq)] += parts[k].n_tokens;
            const size_t rows = all_logits ? size_t(parts[k].n_tokens) : 1;
            if (all_logits)
                std::copy_n(out.begin() + row * V, rows * V,
                            logits.begin() + out_at[i] + size_t(before) * V);
            else if (done[i] == int64_t(batch[i].tokens.size()))
                std::copy_n(out.begin() + row * V, V, logits.begin() + out_at[i]);
            row += rows;
        }
    }
    return logits;
}

std::vector<float> Session::run_ubatch(std::span<const UbatchPart> parts,
                                       std::span<const int32_t> tokens, bool all_logits,
                                       bool read_logits) {
    const int64_t t = int64_t(tokens.size());
    int64_t n_past = 0;
    for (const UbatchPart& p : parts) n_past = std::max(n_past, p.n_past);
    const auto t0 = Clock::now();
    if (profile_) profile_->begin_graph(t > 1 ? Profile::Phase::prompt : Profile::Phase::decode, t);
    const bool kept = t <= kReusableTokens;
    UbatchGraph built;
    if (!kept) {
        built = build(parts, cache_->sequence_cells(), all_logits);
        stats_.graphs_built += 1;
    }
    UbatchGraph& ug = kept ? reusable_graph(parts, all_logits) : built;
    std::vector<int32_t> positions, rows;
    for (int64_t end = 0; const UbatchPart& p : parts) {
        for (int64_t j = 0; j < p.n_tokens; ++j) positions.push_back(int32_t(p.n_past + j));
        end += p.n_tokens;
        rows.push_back(int32_t(end - 1));
    }
    ug.tokens->set_data(const_cast<int32_t*>(tokens.data()));
    ug.positions->set_data(positions.data());
    if (ug.output_rows) ug.output_rows->set_data(rows.data());
    const auto t1 = Clock::now();
    double backend_seconds = 0, sync_seconds = 0, copy_seconds = 0, stage_seconds = 0;
    uint64_t staged = 0, compute_buffer = 0, staging_buffer = 0;
    if (scheduler_) {
        // A kept graph reads its keys rounded up: its shapes, and so its costs, are those of
        // that length whatever n_past is below it.
        int64_t keys = n_past;
        if (kept)
            for (const UbatchPart& p : parts)
                keys =
                    std::max(keys, reusable_keys(p.n_past, p.n_tokens, cache_->sequence_cells()) -
                                       p.n_tokens);
        const OpPlan& placed = plan(ug.graph, t, keys);
        stats_.placement_seconds += std::chrono::duration<double>(Clock::now() - t1).count();
        const ScheduleReport& r = scheduler_->run(ug.graph, placed);
        stats_.setup_seconds += r.setup_seconds;
        backend_seconds = r.backend_seconds;
        sync_seconds = r.sync_seconds;
        copy_seconds = r.copy_seconds;
        stage_seconds = r.stage_seconds;
        stats_.overlapped_nodes += int64_t(r.overlapped);
        staged = r.staged_bytes + r.link_bytes;
        for (uint64_t b : r.compute_buffer_bytes) compute_buffer += b;
        for (uint64_t b : r.staging_buffer_bytes) staging_buffer += b;
    } else {
        const RunReport& r = executor_.run(ug.graph);
        stats_.setup_seconds += r.setup_seconds;
        backend_seconds = r.backend_seconds;
        sync_seconds = r.sync_seconds;
        stage_seconds = r.stage_seconds;
        staged = r.staged_bytes;
        compute_buffer = r.compute_buffer_bytes;
        staging_buffer = r.staging_buffer_bytes;
    }
    const auto t2 = Clock::now();
    stats_.graph_build_seconds += std::chrono::duration<double>(t1 - t0).count();
    const double run_seconds = std::chrono::duration<double>(t2 - t1).count();
    stats_.compute_seconds += run_seconds;
    stats_.backend_seconds += backend_seconds;
    stats_.sync_seconds += sync_seconds;
    stats_.copy_seconds += copy_seconds;
    stats_.stage_seconds += stage_seconds;
    stats_.plan_bind_seconds +=
        std::max(0.0, run_seconds - backend_seconds - copy_seconds - stage_seconds);
    if (profile_)
        profile_->end_graph(std::chrono::duration<double>(t1 - t0).count(),
                            std::chrono::duration<double>(t2 - t1).count());
    stats_.graphs += 1;
    stats_.staged_bytes += staged;
    stats_.compute_buffer_bytes = std::max(stats_.compute_buffer_bytes, compute_buffer);
    stats_.staging_buffer_bytes = std::max(stats_.staging_buffer_bytes, staging_buffer);
    if (!read_logits) return {};
    return scheduler_ ? scheduler_->read<float>(*ug.logits) : executor_.read<float>(*ug.logits);
}

void EvalTimeShares::add(const EvalTimeShares& o) {
    const double all = seconds + o.seconds;
    if (all <= 0) return;
    const auto mix = [&](double a, double b) { return (a * seconds + b * o.seconds) / all; };
    ops = mix(ops, o.ops);
    sync = mix(sync, o.sync);
    copies = mix(copies, o.copies);
    staging = mix(staging, o.staging);
    host = mix(host, o.host);
    overlapped_nodes = (overlapped_nodes * double(graphs) + o.overlapped_nodes * double(o.graphs)) /
                       double(std::max<int64_t>(graphs + o.graphs, 1));
    seconds = all;
    graphs += o.graphs;
}

std::optional<EvalTimeShares> eval_time_shares(const EvalStats& before, const EvalStats& after) {
    const double build = after.graph_build_seconds - before.graph_build_seconds;
    const double total = build + after.compute_seconds - before.compute_seconds;
    if (after.graphs == before.graphs || total <= 0) return std::nullopt;
    EvalTimeShares s;
    s.sync = (after.sync_seconds - before.sync_seconds) / total;
    s.ops = (after.backend_seconds - before.backend_seconds) / total - s.sync;
    s.copies = (after.copy_seconds - before.copy_seconds) / total;
    s.staging = (after.stage_seconds - before.stage_seconds) / total;
    s.host = (build + after.plan_bind_seconds - before.plan_bind_seconds) / total;
    s.seconds = total;
    s.graphs = after.graphs - before.graphs;
    s.overlapped_nodes =
        double(after.overlapped_nodes - before.overlapped_nodes) / double(s.graphs);
    return s;
}

}  // namespace sy::llm
