#include "switchyard/core/executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

#include "node_abi.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/placement.hpp"
#include "switchyard/core/profile.hpp"

namespace sy {

namespace {

// More distinct shape signatures than this (a model with many batch sizes) starts a new cache.
constexpr size_t kMaxCachedPlans = 16;

// Buffer addresses may be device addresses (or 0): offsets are added as integers.
void* at_offset(void* base, uint64_t offset) {
    return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(base) + offset);
}

uint64_t offset_from(const void* base, const void* p) {
    return reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(base);
}

}  // namespace

void check_supported(const Plugin& plugin, int32_t device, const Graph& graph) {
    const std::vector<sy_tensor> descriptors = tensor_descriptors(graph);
    for (size_t index = 0; index < graph.nodes().size(); ++index) {
        const Node& node = graph.nodes()[index];
        if (!plugin.supports(device, raw_node(node, descriptors)))
            throw Error("backend '" + plugin.name() + "' device " + std::to_string(device) +
                        " does not support " + node_text(graph, static_cast<int32_t>(index)));
    }
}

Executor::Executor(Plugin& plugin, int32_t device)
    : plugin_(plugin),
      device_(device),
      host_memory_(plugin.device_props(device).host_memory != 0) {}

Executor::~Executor() {
    // A device left running by a run that failed half way: it still holds this executor's nodes.
    try {
        finish();
    } catch (const std::exception&) {
    }
    unregister_compute();
}

void Executor::grow_compute(uint64_t size) {
    if (size == 0 || (compute_ && compute_.size() >= size)) return;
    unregister_compute();
    grow(plugin_, device_, compute_, size);
    if (!host_memory_ || !compute_.base()) return;
    for (Plugin* p : partners_)
        if (p->register_host(compute_.base(), compute_.size())) registered_.push_back(p);
    registered_base_ = compute_.base();
}

void Executor::unregister_compute() noexcept {
    for (Plugin* p : registered_) p->unregister_host(registered_base_);
    registered_.clear();
    registered_base_ = nullptr;
}

const RunReport& Executor::run(const Graph& graph) {
    const std::vector<int32_t> order = graph.all_nodes();
    return run(graph, order);
}

const RunReport& Executor::run(const Graph& graph, std::span<const int32_t> order) {
    const auto start = std::chrono::steady_clock::now();
    begin(graph, order, {});
    bind({});
    report_.setup_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    compute(0, order.size());
    return report_;
}

void Executor::begin(const Graph& graph, std::span<const int32_t> order,
                     std::span<const int32_t> imports) {
    finish();
    report_ = RunReport{};
    // Until this sequence is planned and bound: plan_for may drop the plan plan_ points at, and
    // a throw below must not leave it dangling for a later compute().
    plan_ = nullptr;
    nodes_.clear();
    // A graph only grows (its views move, their shapes do not), so the same graph with as many
    // tensors, the same sequence and imports has the plan it had, while that plan is cached.
    external_state(graph, externals_now_);
    const bool again = begun_.plan != nullptr && begun_.generation == cache_generation_ &&
                       begun_.graph == graph.stamp() && std::ranges::equal(order, order_) &&
                       std::ranges::equal(imports, imports_) && begun_.externals == externals_now_;
    const CachedPlan* kept = again ? begun_.plan : nullptr;
    begun_ = Begun{};
    graph_ = &graph;
    order_.assign(order.begin(), order.end());
    imports_.assign(imports.begin(), imports.end());
    import_of_.assign(graph.tensors().size(), -1);
    for (size_t k = 0; k < imports_.size(); ++k) {
        const auto id = static_cast<size_t>(imports_[k]);
        if (id >= graph.tensors().size() || graph.tensors()[id]->is_view())
            throw Error("executor: import " + std::to_string(imports_[k]) +
                        " is not a base tensor of the graph");
        import_of_[id] = static_cast<int32_t>(k);
    }
    if (kept) report_.plan_reused = true;
    const CachedPlan& plan = kept ? *kept : plan_for(graph, order);
    if (!kept) check_sources(graph, order, plan);
    grow_compute(plan.memory.peak_bytes);
    if (plan.staging_bytes > staging_.size()) {
        grow(plugin_, device_, staging_, plan.staging_bytes);
        resident_.clear();  // a new buffer holds nothing yet
    }
    plan_ = &plan;
    begun_ = {graph.stamp(), &plan, cache_generation_, std::move(externals_now_)};
    externals_now_.clear();
    last_graph_serial_ = graph.serial();
    report_.compute_buffer_bytes = compute_.size();
    report_.planned_peak_bytes = plan.memory.peak_bytes;
    report_.naive_bytes = plan.memory.naive_bytes;
    report_.staging_buffer_bytes = staging_.size();
    report_.staged_per_use = plan.per_use;
    report_.nodes = order.size();
}

const void* Executor::planned_host_data(const Tensor& t) const {
    if (!plan_ || t.graph_serial() != last_graph_serial_)
        throw Error("tensor " + t.describe() + " is not from the graph this executor began");
    const auto offset = plan_->memory.offset_of(t);
    if (!offset || !compute_.host_visible()) return nullptr;
    return at_offset(compute_.base(), *offset);
}

// The upload steps of the staged weights: the ones the order reads only as the expert weights of
// expert products (whole weight tensors, not views) are staged by experts at each such product;
// the others whole, at the first node that reads them.
void Executor::find_steps(const Graph& graph, std::span<const int32_t> order,
                          std::span<const char> staged, std::span<const int32_t> first_read,
                          CachedPlan& plan) {
    const size_t n = graph.tensors().size();
    std::vector<char> as_experts(n, 0), otherwise(n, 0);
    for (int32_t index : order) {
        const Node& node = graph.nodes()[static_cast<size_t>(index)];
        Node::ExpertSources experts = node.expert_sources();
        // Ids of another type are the plugin's to refuse; the weights are then staged whole.
        if (experts.ids != nullptr && experts.ids->type() != SY_TYPE_I32) experts.weights.clear();
        for (const Tensor* t : node.touched()) {
            const bool expert = std::find(experts.weights.begin(), experts.weights.end(), t) !=
                                experts.weights.end();
            const auto id = static_cast<size_t>(t->base()->id());
            if (expert && !t->is_view() && t->kind() == TensorKind::weight && t->is_contiguous() &&
                t->ne(3) == 1)
                as_experts[id] = 1;
            else
                otherwise[id] = 1;
        }
    }
    plan.routed.assign(n, 0);
    std::map<size_t, StageStep> whole;  // by the position of the first reader
    for (size_t id = 0; id < n; ++id) {
        if (!staged[id]) continue;
        plan.routed[id] = as_experts[id] && !otherwise[id];
        if (plan.routed[id]) continue;
        const auto position = static_cast<size_t>(first_read[id]);
        StageStep& step = whole.try_emplace(position, StageStep{position, -1, {}}).first->second;
        step.weights.push_back(static_cast<int32_t>(id));
    }
    std::vector<StageStep> experts;
    for (size_t position = 0; position < order.size(); ++position) {
        const Node& node = graph.nodes()[static_cast<size_t>(order[position])];
        const Node::ExpertSources sources = node.expert_sources();
        if (sources.ids == nullptr || sources.ids->type() != SY_TYPE_I32) continue;
        StageStep step{position, sources.ids->id(), {}};
        for (const Tensor* w : sources.weights)
            if (plan.routed[static_cast<size_t>(w->id())]) step.weights.push_back(w->id());
        if (!step.weights.empty()) experts.push_back(std::move(step));
    }
    // Whole weights first where both upload before one node.
    plan.steps.clear();
    for (auto& [position, step] : whole) plan.steps.push_back(std::move(step));
    plan.steps.insert(plan.steps.end(), experts.begin(), experts.end());
    std::stable_sort(
        plan.steps.begin(), plan.steps.end(),
        [](const StageStep& a, const StageStep& b) { return a.position < b.position; });
}

// Slots in the staging buffer for what the order reads from the host: each input and import
// one for the plan; each host weight one too, or, when the weights are more than the staging
// limit, room that weights read at different times share (the memory planner's best-fit ranges
// over the positions from a weight's first to its last reader).
void Executor::plan_staging(const Graph& graph, std::span<const int32_t> order,
                            std::span<const int32_t> import_of,
                            const std::function<uint64_t()>& limit,
                            const std::function<bool(const Tensor&)>& homed_here,
                            CachedPlan& plan) {
    const size_t n = graph.tensors().size();
    const auto slot = [](const Tensor& t) {
        return aligned_size(static_cast<uint64_t>(t.bytes()));
    };
    plan.staging_offset.assign(n, -1);
    std::vector<char> staged(n, 0);
    std::vector<int32_t> first(n, -1), last(n, -1);
    std::vector<int32_t> weights;  // by first read
    std::vector<int32_t> others;   // inputs and imports, by first read
    uint64_t weight_bytes = 0;
    for (size_t position = 0; position < order.size(); ++position) {
        const Node& node = graph.nodes()[static_cast<size_t>(order[position])];
        for (const Tensor* t : node.touched()) {
            const Tensor* root = t->base();
            const auto id = static_cast<size_t>(root->id());
            const bool imported = import_of[id] >= 0;
            // An import gets a slot even when it lives in another plugin's buffer: the
            // scheduler fetches it and uploads it there.
            if (!imported && (!root->is_external() || root->device_buffer() ||
                              (homed_here && homed_here(*root))))
                continue;
            if (!imported && root->kind() == TensorKind::weight) {
                if (!staged[id]) {
                    staged[id] = 1;
                    first[id] = static_cast<int32_t>(position);
                    weights.push_back(static_cast<int32_t>(id));
                    weight_bytes += slot(*root);
                }
                last[id] = static_cast<int32_t>(position);
                continue;
            }
            if (plan.staging_offset[id] >= 0) continue;
            plan.staging_offset[id] = 0;  // placed below, after the weights
            others.push_back(static_cast<int32_t>(id));
        }
    }
    // Weights first: graphs of other sizes (a prompt's last, shorter ubatch) read the same
    // weights in the same order, so their plans put them at the same offsets and find them
    // there (the buffer's records are by offset); inputs and imports, whose sizes differ
    // between such graphs, come after.
    plan.per_use = weight_bytes > 0 && weight_bytes > limit();
    if (!plan.per_use) {
        for (int32_t id : weights) {
            plan.staging_offset[size_t(id)] = static_cast<int64_t>(plan.staging_bytes);
            plan.staging_bytes += slot(*graph.tensors()[size_t(id)]);
        }
    } else {
        // Taken at a weight's first reader, given back after its last one (the executor
        // uploads a weight only after the nodes before its first reader ran).
        RangeAllocator ranges;
        std::vector<std::vector<int32_t>> ending(order.size());
        std::vector<uint64_t> at(n, 0);
        size_t next = 0;
        for (size_t position = 0; position < order.size(); ++position) {
            for (; next < weights.size() && size_t(first[size_t(weights[next])]) == position;
                 ++next) {
                const auto id = static_cast<size_t>(weights[next]);
                at[id] = ranges.allocate(slot(*graph.tensors()[id]));
                ending[size_t(last[id])].push_back(weights[next]);
            }
            for (int32_t id : ending[position])
                ranges.release(at[size_t(id)], slot(*graph.tensors()[size_t(id)]));
        }
        for (int32_t id : weights)
            plan.staging_offset[size_t(id)] =
                static_cast<int64_t>(plan.staging_bytes + at[size_t(id)]);
        plan.staging_bytes += ranges.peak();
    }
    for (int32_t id : others) {
        plan.staging_offset[size_t(id)] = static_cast<int64_t>(plan.staging_bytes);
        plan.staging_bytes += slot(*graph.tensors()[size_t(id)]);
    }
    find_steps(graph, order, staged, first, plan);
}

uint64_t Executor::auto_staging_limit(const sy_device_props& props, uint64_t held,
                                      uint64_t compute) {
    if (props.memory_free == 0) return UINT64_MAX;  // the plugin does not say
    const uint64_t free = props.memory_free + held;
    return free > compute ? (free - compute) / 2 : 1;
}

Executor::StagingLayout Executor::staging_layout(
    const Graph& graph, std::span<const int32_t> order, std::span<const int32_t> imports,
    uint64_t limit, const std::function<bool(const Tensor&)>& homed_here) {
    std::vector<int32_t> import_of(graph.tensors().size(), -1);
    for (size_t k = 0; k < imports.size(); ++k) import_of.at(size_t(imports[k])) = int32_t(k);
    CachedPlan plan;
    plan_staging(
        graph, order, import_of, [limit] { return limit; }, homed_here, plan);
    return {plan.staging_bytes, plan.per_use};
}

// The key is the sequence's structure, the sizes of what is staged (external tensors and
// imports) and where external tensors live (it decides what is staged); the intermediates'
// sizes are not in it. A cached plan serves a graph whose intermediates all fit the room it
// reserved for them. When one has grown (a decode step's attention over one more cached token),
// the plan is made again with a quarter more room for each tensor that grew, so the steps after
// it reuse that plan (planning every node and binding them anew each step took a noticeable
// share of a decode step: docs/design-measurements.md#memory-plan-reuse).
const Executor::CachedPlan& Executor::plan_for(const Graph& graph, std::span<const int32_t> order) {
    std::string key = graph.structure_signature(order);
    for (const auto& t : graph.tensors()) {
        if (t->is_view() || !t->is_external()) continue;
        key += t->device_buffer() ? 'd' : 'h';
        key += std::to_string(t->bytes());
    }
    for (int32_t id : imports_)
        key +=
            "i" + std::to_string(id) + ":" + std::to_string(graph.tensors()[size_t(id)]->bytes());
    std::vector<uint64_t> room;
    if (auto it = cache_.find(key); it != cache_.end()) {
        const std::vector<PlannedTensor>& planned = it->second.memory.tensors;
        const auto bytes_of = [&](const PlannedTensor& p) {
            return std::max<uint64_t>(1, graph.tensors()[size_t(p.tensor)]->bytes());
        };
        if (std::all_of(planned.begin(), planned.end(), [&](const PlannedTensor& p) {
                return aligned_size(bytes_of(p)) <= p.size;
            })) {
            report_.plan_reused = true;
            return it->second;
        }
        room.assign(graph.tensors().size(), 0);
        for (const PlannedTensor& p : planned) {
            const uint64_t bytes = bytes_of(p);
            room[size_t(p.tensor)] = bytes > p.size ? bytes + bytes / 4 : p.size;
        }
        cache_.erase(it);
        ++cache_generation_;
    }
    if (cache_.size() >= kMaxCachedPlans) {
        cache_.clear();
        ++cache_generation_;
    }
    CachedPlan plan;
    plan.memory = plan_memory(graph, order, room);
    if (!host_memory_) {
        const auto limit = [&] {
            if (staging_limit_ != 0) return staging_limit_;
            return auto_staging_limit(plugin_.device_props(device_),
                                      staging_.size() + compute_.size(), plan.memory.peak_bytes);
        };
        plan_staging(graph, order, import_of_, limit, {}, plan);
    }
    return cache_.emplace(std::move(key), std::move(plan)).first->second;
}

void Executor::external_state(const Graph& graph, std::vector<uint8_t>& out) {
    out.assign(graph.tensors().size(), 0);
    for (const auto& t : graph.tensors())
        if (!t->is_view() && t->is_external())
            out[size_t(t->id())] = uint8_t((t->device_buffer() ? 2 : 1) | (t->has_data() ? 0 : 4));
}

void Executor::check_sources(const Graph& graph, std::span<const int32_t> order,
                             const CachedPlan& plan) const {
    for (int32_t index : order) {
        const Node& n = graph.nodes()[static_cast<size_t>(index)];
        for (const Tensor* t : n.touched()) {
            const Tensor* root = t->base();
            if (import_of_[static_cast<size_t>(root->id())] >= 0) continue;
            if (root->is_external()) {
                if (!root->has_data()) {
                    throw Error(node_text(graph, index) + ": " + kind_name(root->kind()) + " " +
                                root->describe() + " has no data (call set_data before running)");
                }
            } else if (!plan.memory.offset_of(*root)) {
                throw Error(node_text(graph, index) + ": " + root->describe() +
                            " is written by node " + std::to_string(root->producer()) +
                            ", which is not in this sequence");
            }
        }
    }
}

void Executor::grow(Plugin& plugin, int32_t device, Buffer& buffer, uint64_t size) {
    if (size == 0 || (buffer && buffer.size() >= size)) return;
    buffer = Buffer{};  // free the old one first: peak device memory is the new size only
    buffer = plugin.alloc(device, size);
}

void Executor::bind_external(const Tensor& root, const CachedPlan& plan) {
    const auto id = static_cast<size_t>(root.id());
    sy_tensor& d = bound_[id];
    if (const Buffer* buffer = root.device_buffer()) {
        if (buffer->owner() != &plugin_ || buffer->device() != device_) {
            throw Error(std::string(kind_name(root.kind())) + " " + root.describe() +
                        " lives in a buffer of '" +
                        (buffer->owner() ? backend_name(*buffer->owner(), buffer->device())
                                         : std::string("none")) +
                        "', not of '" + backend_name(plugin_, device_) + "' that runs this graph");
        }
        d.data = at_offset(buffer->base(), root.device_offset());
        d.buffer = buffer->get();
        bound_buffer_[id] = buffer;
        return;
    }
    if (host_memory_) {
        d.data = root.host_data();
        return;
    }
    const auto offset = static_cast<uint64_t>(plan.staging_offset[id]);
    d.data = at_offset(staging_.base(), offset);
    d.buffer = staging_.get();
    bound_buffer_[id] = &staging_;
    // Inputs change every run; weights are uploaded by compute(), before their first reader.
    if (root.kind() == TensorKind::input) {
        const auto bytes = static_cast<uint64_t>(root.bytes());
        forget(offset, bytes);
        plugin_.set(staging_, offset, root.host_data(), bytes);
        report_.staged_bytes += bytes;
    }
}

void Executor::bind_import(const Tensor& root, const CachedPlan& plan, const void* host) {
    const auto id = static_cast<size_t>(root.id());
    sy_tensor& d = bound_[id];
    if (host_memory_) {
        if (host == nullptr)
            throw Error("executor: import " + root.describe() + " has no host memory to read");
        d.data = const_cast<void*>(host);
        return;
    }
    d.data = at_offset(staging_.base(), static_cast<uint64_t>(plan.staging_offset[id]));
    d.buffer = staging_.get();
    bound_buffer_[id] = &staging_;
}

void Executor::bind(std::span<const void* const> import_host) {
    finish();
    if (!plan_) throw Error("executor: bind() before begin()");
    if (!import_host.empty() && import_host.size() != imports_.size())
        throw Error("executor: bind() got " + std::to_string(import_host.size()) +
                    " import addresses for " + std::to_string(imports_.size()) + " imports");
    const Graph& graph = *graph_;
    const std::span<const int32_t> order = order_;
    const CachedPlan& plan = *plan_;
    const size_t n = graph.tensors().size();

    // The sequence bound last time again, in the same buffers and with the same imports (a kept
    // decode graph): only its external tensors (inputs have new data each run, a weight may have
    // another address) and its views (moved) are bound anew.
    const bool again = bound_as_.plan == &plan && bound_as_.generation == cache_generation_ &&
                       bound_as_.graph == graph.stamp() && bound_as_.compute == compute_.base() &&
                       bound_as_.staging == staging_.base() &&
                       std::ranges::equal(bound_as_.import_host, import_host);
    if (!again) {
        bound_as_ = BoundAs{};
        bound_.assign(n, sy_tensor{});
        bound_buffer_.assign(n, nullptr);
        std::vector<int32_t> externals, views;
        const auto visit = [&](const Tensor* t) {
            // The root first (a view's address is its root's plus the offset).
            const Tensor* root = t->base();
            if (bound_[size_t(root->id())].struct_size == 0) {
                bind_root(*root, plan, import_host);
                if (root->is_external() && import_of_[size_t(root->id())] < 0)
                    externals.push_back(root->id());
            }
            if (t != root && bound_[size_t(t->id())].struct_size == 0) {
                bind_view(*t);
                views.push_back(t->id());
            }
        };
        for (int32_t index : order) {
            const Node& node = graph.nodes()[static_cast<size_t>(index)];
            for (const Tensor* t : node.src) visit(t);
            visit(node.dst);
        }
        bound_as_.graph = graph.stamp();
        bound_as_.plan = &plan;
        bound_as_.generation = cache_generation_;
        bound_as_.compute = compute_.base();
        bound_as_.staging = staging_.base();
        bound_as_.import_host.assign(import_host.begin(), import_host.end());
        bound_as_.externals = std::move(externals);
        bound_as_.views = std::move(views);
    } else {
        for (int32_t id : bound_as_.externals) bind_root(*graph.tensors()[size_t(id)], plan, {});
        for (int32_t id : bound_as_.views) bind_view(*graph.tensors()[size_t(id)]);
    }

    nodes_.clear();
    nodes_.reserve(order.size());
    for (int32_t index : order) {
        const Node& node = graph.nodes()[static_cast<size_t>(index)];
        nodes_.push_back(raw_node(node, bound_));
    }
}

void Executor::bind_root(const Tensor& root, const CachedPlan& plan,
                         std::span<const void* const> import_host) {
    const auto id = static_cast<size_t>(root.id());
    bound_[id] = root.descriptor();
    bound_buffer_[id] = nullptr;
    if (const int32_t k = import_of_[id]; k >= 0) {
        bind_import(root, plan, import_host.empty() ? nullptr : import_host[size_t(k)]);
    } else if (root.is_external()) {
        bind_external(root, plan);
    } else {
        bound_[id].data = at_offset(compute_.base(), *plan.memory.offset_of(root));
        bound_[id].buffer = compute_.get();
        bound_buffer_[id] = &compute_;
    }
    // A weight's constant id describes its own bytes only: a staged copy (other plans put other
    // bytes there) or an imported copy carries none. Its resident copy on a device keeps it:
    // those bytes are the weight's for the buffer's life, and a plugin keys what it derives by id
    // and address (a remote rank's cpu plugin builds its interleaved copies).
    const bool resident =
        root.device_buffer() != nullptr && bound_buffer_[id] == root.device_buffer();
    if (bound_[id].data != root.host_data() && !resident) bound_[id].constant_id = 0;
}

void Executor::bind_view(const Tensor& t) {
    const auto id = static_cast<size_t>(t.id());
    const auto root = static_cast<size_t>(t.base()->id());
    bound_[id] = t.descriptor();
    bound_[id].data = at_offset(bound_[root].data, t.offset());
    bound_[id].buffer = bound_[root].buffer;
    bound_[id].constant_id = bound_[root].constant_id;
    bound_buffer_[id] = bound_buffer_[root];
}

void Executor::compute(size_t first, size_t end, bool wait) {
    if (first == end && end <= nodes_.size()) return;
    finish();
    if (!plan_ || end > nodes_.size() || first > end)
        throw Error("executor: compute(" + std::to_string(first) + ", " + std::to_string(end) +
                    ") outside the bound sequence of " + std::to_string(nodes_.size()) + " nodes");
    // Up to each node with weights to upload, run what comes before it (an expert product's ids
    // may be among the results; per-use room is free once earlier readers ran), then upload.
    size_t at = first;
    for (const StageStep& step : plan_->steps) {
        if (step.position < first || step.position >= end || !needs_upload(step)) continue;
        run_nodes(at, step.position);
        const auto start = std::chrono::steady_clock::now();
        stage(step);
        report_.stage_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        at = step.position;
    }
    if (!wait && observer_ == nullptr && !profile_) return run_batch(at, end, false);
    run_nodes(at, end);
}

void Executor::finish() {
    if (!running_) return;
    running_ = false;
    const double seconds = synchronize();
    report_.backend_seconds += seconds;
}

void Executor::run_nodes(size_t first, size_t end) {
    if (observer_ == nullptr) return run_batch(first, end);
    size_t from = first;
    for (size_t i = first; i < end; ++i) {
        const Node& node = graph_->nodes()[static_cast<size_t>(order_[i])];
        if (!observer_->wants(node)) continue;
        run_batch(from, i);
        observer_->observe(node, *this);
        from = i;
    }
    run_batch(from, end);
}

void Executor::run_batch(size_t first, size_t end, bool wait) {
    if (first == end) return;
    std::vector<const sy_node*> pointers;
    pointers.reserve(end - first);
    for (size_t i = first; i < end; ++i) pointers.push_back(&nodes_[i]);
    try {
        const auto start = std::chrono::steady_clock::now();
        if (profile_) {
            const std::string backend = backend_name(plugin_, device_);
            for (size_t i = first; i < end; ++i) {
                const auto node_start = std::chrono::steady_clock::now();
                plugin_.compute(device_, std::span<const sy_node* const>(&pointers[i - first], 1));
                profile_->add_sync(backend, synchronize());
                profile_->add_node(
                    backend, *graph_, order_[i],
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - node_start)
                        .count());
            }
        } else {
            plugin_.compute(device_, pointers);
            if (wait)
                synchronize();
            else
                running_ = true;
        }
        report_.backend_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } catch (const Error& e) {
        // Say which node the backend cannot run, when it tells us.
        for (size_t i = first; i < end; ++i) {
            if (!plugin_.supports(device_, nodes_[i])) {
                throw Error(std::string(e.what()) + "; backend '" + plugin_.name() + "' device " +
                            std::to_string(device_) + " does not support " +
                            node_text(*graph_, order_[i]));
            }
        }
        throw;
    }
}

double Executor::synchronize() {
    const auto start = std::chrono::steady_clock::now();
    plugin_.synchronize(device_);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report_.sync_seconds += seconds;
    return seconds;
}

const Executor::Resident* Executor::resident(uint64_t offset, const Tensor& weight) const {
    const auto it = resident_.find(offset);
    if (it == resident_.end() || it->second.host != weight.host_data() ||
        it->second.bytes != static_cast<uint64_t>(weight.bytes()))
        return nullptr;
    return &it->second;
}

// The record of `weight` at `offset`, a new one (nothing there yet) unless the buffer holds
// its bytes there already; records of what the new one overlaps are dropped.
Executor::Resident& Executor::hold(uint64_t offset, const Tensor& weight, size_t pieces) {
    if (const Resident* r = resident(offset, weight); r && r->have.size() == pieces)
        return resident_[offset];
    const auto bytes = static_cast<uint64_t>(weight.bytes());
    forget(offset, bytes);
    return resident_[offset] = Resident{weight.host_data(), bytes, std::vector<char>(pieces, 0)};
}

// Drops the records of ranges that overlap [offset, offset + bytes): about to be overwritten.
void Executor::forget(uint64_t offset, uint64_t bytes) {
    auto it = resident_.upper_bound(offset);
    if (it != resident_.begin()) {
        const auto before = std::prev(it);
        if (before->first + before->second.bytes > offset) it = before;
    }
    while (it != resident_.end() && it->first < offset + bytes) it = resident_.erase(it);
}

bool Executor::needs_upload(const StageStep& step) const {
    return std::any_of(step.weights.begin(), step.weights.end(), [&](int32_t w) {
        const Tensor& root = *graph_->tensors()[static_cast<size_t>(w)];
        const Resident* r = resident(static_cast<uint64_t>(plan_->staging_offset[size_t(w)]), root);
        return r == nullptr || std::find(r->have.begin(), r->have.end(), 0) != r->have.end();
    });
}

// Uploads the step's weights that the buffer lacks: whole, or the experts named by the ids of
// the expert product at step.position (in runs of consecutive experts; ids outside [0, E) are
// left to the plugin to refuse).
void Executor::stage(const StageStep& step) {
    std::vector<int32_t> ids;
    if (step.ids >= 0) ids = read_ids(*graph_->tensors()[static_cast<size_t>(step.ids)]);
    for (int32_t w : step.weights) {
        const Tensor& root = *graph_->tensors()[static_cast<size_t>(w)];
        const auto pieces = static_cast<size_t>(step.ids >= 0 ? root.ne(2) : 1);
        const auto offset = static_cast<uint64_t>(plan_->staging_offset[static_cast<size_t>(w)]);
        std::vector<char>& have = hold(offset, root, pieces).have;
        std::vector<char> wanted(pieces, 0);
        if (step.ids < 0) wanted[0] = !have[0];
        for (int32_t e : ids)
            if (e >= 0 && size_t(e) < pieces && !have[size_t(e)]) wanted[size_t(e)] = 1;
        const uint64_t per_piece = static_cast<uint64_t>(root.bytes()) / pieces;
        const auto* host = static_cast<const std::byte*>(root.host_data());
        for (size_t e = 0; e < pieces;) {
            if (!wanted[e]) {
                ++e;
                continue;
            }
            size_t last = e;
            while (last + 1 < pieces && wanted[last + 1]) ++last;
            const uint64_t begin = e * per_piece;
            const uint64_t bytes = (last + 1 - e) * per_piece;
            plugin_.set(staging_, offset + begin, host + begin, bytes);
            report_.staged_bytes += bytes;
            for (size_t k = e; k <= last; ++k) have[k] = 1;
            e = last + 1;
        }
    }
}

// The values of an I32 tensor of the sequence (a view, say the first U columns of an argsort),
// read from wherever it lies: its root is read whole, then indexed by the view's strides.
std::vector<int32_t> Executor::read_ids(const Tensor& ids) const {
    const Tensor& root = *ids.base();
    std::vector<std::byte> bytes(static_cast<size_t>(root.bytes()));
    const sy_tensor& d = bound(root);
    const Buffer* buffer = bound_buffer_[static_cast<size_t>(root.id())];
    if (!buffer || buffer->host_visible())
        std::memcpy(bytes.data(), d.data, bytes.size());
    else
        buffer->owner()->get(*buffer, offset_from(buffer->base(), d.data), bytes.data(),
                             bytes.size());
    std::vector<int32_t> out;
    out.reserve(static_cast<size_t>(ids.elements()));
    for (int64_t i3 = 0; i3 < ids.ne(3); ++i3)
        for (int64_t i2 = 0; i2 < ids.ne(2); ++i2)
            for (int64_t i1 = 0; i1 < ids.ne(1); ++i1)
                for (int64_t i0 = 0; i0 < ids.ne(0); ++i0) {
                    const uint64_t at = ids.offset() + uint64_t(i0 * ids.nb(0) + i1 * ids.nb(1) +
                                                                i2 * ids.nb(2) + i3 * ids.nb(3));
                    int32_t v;
                    std::memcpy(&v, bytes.data() + at, sizeof v);
                    out.push_back(v);
                }
    return out;
}

void Executor::upload(size_t import, const void* host) {
    finish();
    if (!plan_ || import >= imports_.size())
        throw Error("executor: upload of import " + std::to_string(import) + " of " +
                    std::to_string(imports_.size()));
    if (host_memory_) return;  // bound to the host bytes themselves
    const Tensor& root = *graph_->tensors()[static_cast<size_t>(imports_[import])];
    const auto bytes = static_cast<uint64_t>(root.bytes());
    forget(static_cast<uint64_t>(plan_->staging_offset[size_t(root.id())]), bytes);
    plugin_.set(staging_, static_cast<uint64_t>(plan_->staging_offset[size_t(root.id())]), host,
                bytes);
}

const sy_tensor& Executor::bound(const Tensor& t) const {
    if (t.graph_serial() != last_graph_serial_) {
        throw Error("tensor " + t.describe() + " is not from the graph this executor ran last");
    }
    const auto id = static_cast<size_t>(t.id());
    if (id >= bound_.size() || bound_[id].struct_size == 0) {
        throw Error("tensor " + t.describe() + " was not touched by the last run");
    }
    return bound_[id];
}

const void* Executor::host_data(const Tensor& t) const {
    const sy_tensor& d = bound(t);
    const Buffer* buffer = bound_buffer_[static_cast<size_t>(t.id())];
    if (buffer && !buffer->host_visible()) return nullptr;
    return d.data;
}

void Executor::read(const Tensor& t, std::span<std::byte> dst) const {
    const sy_tensor& d = bound(t);
    if (!t.is_contiguous()) {
        throw Error("read: tensor " + t.describe() + " is not contiguous; read a cont() of it");
    }
    const auto bytes = static_cast<uint64_t>(t.bytes());
    if (dst.size() != bytes) {
        throw Error("read: tensor " + t.describe() + " has " + std::to_string(bytes) +
                    " bytes, the destination " + std::to_string(dst.size()));
    }
    const Buffer* buffer = bound_buffer_[static_cast<size_t>(t.id())];
    if (!buffer || buffer->host_visible()) {
        std::memcpy(dst.data(), d.data, bytes);
        return;
    }
    buffer->owner()->get(*buffer, offset_from(buffer->base(), d.data), dst.data(), bytes);
}

}  // namespace sy
