#include "switchyard/core/executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

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

const RunReport& Executor::run(const Graph& graph) {
    const std::vector<int32_t> order = graph.all_nodes();
    return run(graph, order);
}

const RunReport& Executor::run(const Graph& graph, std::span<const int32_t> order) {
    begin(graph, order, {});
    bind({});
    compute(0, order.size());
    return report_;
}

void Executor::begin(const Graph& graph, std::span<const int32_t> order,
                     std::span<const int32_t> imports) {
    report_ = RunReport{};
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
    const CachedPlan& plan = plan_for(graph, order);
    check_sources(graph, order, plan);
    grow(plugin_, device_, compute_, plan.memory.peak_bytes);
    if (plan.staging_bytes > staging_.size()) {
        grow(plugin_, device_, staging_, plan.staging_bytes);
        staged_plan_ = nullptr;  // a new buffer holds nothing yet
    }
    plan_ = &plan;
    last_graph_serial_ = graph.serial();
    report_.compute_buffer_bytes = compute_.size();
    report_.planned_peak_bytes = plan.memory.peak_bytes;
    report_.naive_bytes = plan.memory.naive_bytes;
    report_.nodes = order.size();
}

const void* Executor::planned_host_data(const Tensor& t) const {
    if (!plan_ || t.graph_serial() != last_graph_serial_)
        throw Error("tensor " + t.describe() + " is not from the graph this executor began");
    const auto offset = plan_->memory.offset_of(t);
    if (!offset || !compute_.host_visible()) return nullptr;
    return at_offset(compute_.base(), *offset);
}

// Staged weights that the order reads only as the expert weights of expert products (whole
// weight tensors, not views) are staged by experts; the products that read them are recorded.
void Executor::find_routed(const Graph& graph, std::span<const int32_t> order, CachedPlan& plan) {
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
    for (size_t id = 0; id < n; ++id)
        plan.routed[id] = as_experts[id] && !otherwise[id] && plan.staging_offset[id] >= 0;
    for (size_t position = 0; position < order.size(); ++position) {
        const Node& node = graph.nodes()[static_cast<size_t>(order[position])];
        const Node::ExpertSources experts = node.expert_sources();
        if (experts.ids == nullptr || experts.ids->type() != SY_TYPE_I32) continue;
        RoutedRead read{position, experts.ids->id(), {}};
        for (const Tensor* w : experts.weights)
            if (plan.routed[static_cast<size_t>(w->id())]) read.weights.push_back(w->id());
        if (!read.weights.empty()) plan.routed_reads.push_back(std::move(read));
    }
}

const Executor::CachedPlan& Executor::plan_for(const Graph& graph, std::span<const int32_t> order) {
    // Where external tensors live is part of the key: it decides what is staged.
    std::string key = graph.shape_signature(order);
    for (const auto& t : graph.tensors()) {
        if (t->is_external()) key += t->device_buffer() ? 'd' : 'h';
    }
    for (int32_t id : imports_) key += "i" + std::to_string(id);
    if (auto it = cache_.find(key); it != cache_.end()) {
        report_.plan_reused = true;
        return it->second;
    }
    if (cache_.size() >= kMaxCachedPlans) {
        cache_.clear();
        staged_plan_ = nullptr;
    }
    CachedPlan plan;
    plan.memory = plan_memory(graph, order);
    plan.staging_offset.assign(graph.tensors().size(), -1);
    if (!host_memory_) {
        for (int32_t index : order) {
            const Node& n = graph.nodes()[static_cast<size_t>(index)];
            for (const Tensor* t : n.touched()) {
                const Tensor* root = t->base();
                const auto id = static_cast<size_t>(root->id());
                const bool imported = import_of_[id] >= 0;
                // An import gets a slot even when it lives in another plugin's buffer: the
                // scheduler fetches it and uploads it there.
                if ((!root->is_external() && !imported) || (root->device_buffer() && !imported) ||
                    plan.staging_offset[id] >= 0) {
                    continue;
                }
                plan.staging_offset[id] = static_cast<int64_t>(plan.staging_bytes);
                const auto bytes = static_cast<uint64_t>(root->bytes());
                plan.staging_bytes +=
                    (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
            }
        }
        find_routed(graph, order, plan);
    }
    return cache_.emplace(std::move(key), std::move(plan)).first->second;
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
                        "', not of '" + backend_name(plugin_, device_) +
                        "' that runs this graph");
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
    // Inputs change every run; weights only when the layout or their host memory changes, and
    // routed expert weights expert by expert (stage_experts).
    const bool stale = staged_plan_ != &plan || staged_from_[id] != root.host_data();
    if (plan.routed[id]) {
        if (stale) {
            staged_from_[id] = root.host_data();
            staged_experts_[id].assign(static_cast<size_t>(root.ne(2)), 0);
        }
        return;
    }
    if (root.kind() == TensorKind::input || stale) {
        const auto bytes = static_cast<uint64_t>(root.bytes());
        plugin_.set(staging_, offset, root.host_data(), bytes);
        staged_from_[id] = root.host_data();
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
    if (!plan_) throw Error("executor: bind() before begin()");
    if (!import_host.empty() && import_host.size() != imports_.size())
        throw Error("executor: bind() got " + std::to_string(import_host.size()) +
                    " import addresses for " + std::to_string(imports_.size()) + " imports");
    const Graph& graph = *graph_;
    const std::span<const int32_t> order = order_;
    const CachedPlan& plan = *plan_;

    const size_t n = graph.tensors().size();
    bound_.assign(n, sy_tensor{});
    bound_buffer_.assign(n, nullptr);
    if (staged_from_.size() != n || staged_plan_ != &plan) {
        staged_from_.assign(n, nullptr);
        staged_experts_.assign(n, {});
    }

    std::vector<const Tensor*> touched;
    for (int32_t index : order) {
        const Node& node = graph.nodes()[static_cast<size_t>(index)];
        touched.insert(touched.end(), node.src.begin(), node.src.end());
        touched.push_back(node.dst);
    }
    // Roots first (a view's address is its root's plus the offset).
    for (const Tensor* t : touched) {
        const Tensor* root = t->base();
        const auto id = static_cast<size_t>(root->id());
        if (bound_[id].struct_size != 0) continue;
        bound_[id] = root->descriptor();
        if (const int32_t k = import_of_[id]; k >= 0) {
            bind_import(*root, plan, import_host.empty() ? nullptr : import_host[size_t(k)]);
        } else if (root->is_external()) {
            bind_external(*root, plan);
        } else {
            bound_[id].data = at_offset(compute_.base(), *plan.memory.offset_of(*root));
            bound_[id].buffer = compute_.get();
            bound_buffer_[id] = &compute_;
        }
        // A weight's constant id describes its own bytes only: a device copy (another session
        // may put another weight of the model at that address), a staged copy (other plans put
        // other bytes there) or an imported copy carries none.
        if (bound_[id].data != root->host_data()) bound_[id].constant_id = 0;
    }
    for (const Tensor* t : touched) {
        const auto id = static_cast<size_t>(t->id());
        if (bound_[id].struct_size != 0) continue;
        const auto root = static_cast<size_t>(t->base()->id());
        bound_[id] = t->descriptor();
        bound_[id].data = at_offset(bound_[root].data, t->offset());
        bound_[id].buffer = bound_[root].buffer;
        bound_[id].constant_id = bound_[root].constant_id;
        bound_buffer_[id] = bound_buffer_[root];
    }

    nodes_.clear();
    nodes_.reserve(order.size());
    for (int32_t index : order) {
        const Node& node = graph.nodes()[static_cast<size_t>(index)];
        nodes_.push_back(raw_node(node, bound_));
    }
    staged_plan_ = &plan;
}

void Executor::compute(size_t first, size_t end) {
    if (!plan_ || end > nodes_.size() || first > end)
        throw Error("executor: compute(" + std::to_string(first) + ", " + std::to_string(end) +
                    ") outside the bound sequence of " + std::to_string(nodes_.size()) + " nodes");
    // Up to each expert product with routed weights, run what comes before it (its ids may be
    // among the results), then upload the experts it needs.
    size_t at = first;
    for (const RoutedRead& read : plan_->routed_reads) {
        if (read.position < first || read.position >= end) continue;
        run_nodes(at, read.position);
        stage_experts(read);
        at = read.position;
    }
    run_nodes(at, end);
}

void Executor::run_nodes(size_t first, size_t end) {
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
                plugin_.synchronize(device_);
                profile_->add_node(
                    backend, *graph_, order_[i],
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - node_start)
                        .count());
            }
        } else {
            plugin_.compute(device_, pointers);
            plugin_.synchronize(device_);
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

// The experts named by the ids of the product at read.position that the staging buffer lacks are
// uploaded, in runs of consecutive experts; ids outside [0, E) are left to the plugin to refuse.
void Executor::stage_experts(const RoutedRead& read) {
    const auto missing = [&](int32_t w) {
        const std::vector<char>& have = staged_experts_[static_cast<size_t>(w)];
        return std::find(have.begin(), have.end(), 0) != have.end();
    };
    if (std::none_of(read.weights.begin(), read.weights.end(), missing)) return;
    const std::vector<int32_t> ids = read_ids(*graph_->tensors()[static_cast<size_t>(read.ids)]);
    for (int32_t w : read.weights) {
        const Tensor& root = *graph_->tensors()[static_cast<size_t>(w)];
        std::vector<char>& have = staged_experts_[static_cast<size_t>(w)];
        const auto experts = static_cast<int64_t>(have.size());
        std::vector<char> wanted(have.size(), 0);
        for (int32_t e : ids)
            if (e >= 0 && e < experts && !have[static_cast<size_t>(e)])
                wanted[static_cast<size_t>(e)] = 1;
        const auto per_expert = static_cast<uint64_t>(root.nb(2));
        const auto offset = static_cast<uint64_t>(plan_->staging_offset[static_cast<size_t>(w)]);
        const auto* host = static_cast<const std::byte*>(root.host_data());
        for (int64_t e = 0; e < experts;) {
            if (!wanted[static_cast<size_t>(e)]) {
                ++e;
                continue;
            }
            int64_t last = e;
            while (last + 1 < experts && wanted[static_cast<size_t>(last + 1)]) ++last;
            const uint64_t begin = static_cast<uint64_t>(e) * per_expert;
            const uint64_t bytes = static_cast<uint64_t>(last + 1 - e) * per_expert;
            plugin_.set(staging_, offset + begin, host + begin, bytes);
            report_.staged_bytes += bytes;
            for (int64_t k = e; k <= last; ++k) have[static_cast<size_t>(k)] = 1;
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
    if (!plan_ || import >= imports_.size())
        throw Error("executor: upload of import " + std::to_string(import) + " of " +
                    std::to_string(imports_.size()));
    if (host_memory_) return;  // bound to the host bytes themselves
    const Tensor& root = *graph_->tensors()[static_cast<size_t>(imports_[import])];
    const auto bytes = static_cast<uint64_t>(root.bytes());
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
