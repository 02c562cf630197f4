#include "switchyard/core/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include "node_abi.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/profile.hpp"

namespace sy {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

// A thread that runs one job at a time beside its caller: start() hands it over, wait() returns
// when it is done and rethrows what it threw.
class Scheduler::OverlapThread {
  public:
    OverlapThread() : thread_([this] { loop(); }) {}
    ~OverlapThread() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    OverlapThread(const OverlapThread&) = delete;
    OverlapThread& operator=(const OverlapThread&) = delete;

    void start(std::function<void()> job) {
        {
            std::lock_guard lock(mutex_);
            job_ = std::move(job);
            busy_ = true;
        }
        wake_.notify_all();
    }
    void wait() {
        std::unique_lock lock(mutex_);
        done_.wait(lock, [this] { return !busy_; });
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }

  private:
    void loop() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [this] { return stopping_ || job_; });
            if (!job_) return;  // stopping, nothing handed over
            std::function<void()> job = std::exchange(job_, nullptr);
            lock.unlock();
            std::exception_ptr error;
            try {
                job();
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            error_ = error;
            busy_ = false;
            done_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::function<void()> job_;
    std::exception_ptr error_;
    bool busy_ = false;
    bool stopping_ = false;
    std::thread thread_;  // last: starts once the members above exist
};

Scheduler::Scheduler(std::vector<Backend> backends) : backends_(std::move(backends)) {
    if (backends_.empty()) throw Error("scheduler: no backend");
    for (size_t b = 0; b < backends_.size(); ++b)
        if (backends_[b].plugin == nullptr)
            throw Error("scheduler: backend " + std::to_string(b) + " has no plugin");
    lanes_.resize(backends_.size());
    for (const Backend& b : backends_) {
        host_memory_.push_back(b.plugin->device_props(b.device).host_memory != 0);
        if (!host_memory_.back() &&
            std::find(devices_.begin(), devices_.end(), b.plugin) == devices_.end())
            devices_.push_back(b.plugin);
    }
}

Scheduler::HostCopy::HostCopy(HostCopy&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      registered_(std::move(o.registered_)) {
    o.registered_.clear();
}

Scheduler::HostCopy& Scheduler::HostCopy::operator=(HostCopy&& o) noexcept {
    if (this != &o) {
        release();
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        registered_ = std::move(o.registered_);
        o.registered_.clear();
    }
    return *this;
}

void Scheduler::HostCopy::reserve(size_t bytes, std::span<Plugin* const> plugins) {
    if (bytes <= size_) return;
    release();
    // Whole pages: a pinned range never shares a page with another one.
    constexpr size_t kPage = 4096;
    const size_t size = (bytes + kPage - 1) / kPage * kPage;
    data_ = static_cast<std::byte*>(std::aligned_alloc(kPage, size));
    if (data_ == nullptr) throw std::bad_alloc();
    std::memset(data_, 0, size);
    size_ = size;
    for (Plugin* p : plugins)
        if (p->register_host(data_, size_)) registered_.push_back(p);
}

void Scheduler::HostCopy::release() noexcept {
    for (Plugin* p : registered_) p->unregister_host(data_);
    registered_.clear();
    std::free(data_);
    data_ = nullptr;
    size_ = 0;
}

Scheduler::~Scheduler() = default;

const ScheduleReport& Scheduler::run(const Graph& graph, const OpPlan& plan) {
    // A device left running by a run that failed half way: waited for, its error dropped.
    for (Lane& lane : lanes_) {
        try {
            if (lane.executor) lane.executor->finish();
        } catch (const std::exception&) {
        }
    }
    report_ = ScheduleReport{};
    const auto setup_start = Clock::now();
    collect(graph, plan);

    // Plan every lane first: the addresses of results in host-visible compute buffers are then
    // known, and a reader on host memory binds them in place.
    bool reused = true;
    for (size_t b = 0; b < lanes_.size(); ++b) {
        Lane& lane = lanes_[b];
        if (lane.order.empty()) continue;
        std::vector<int32_t> ids;
        for (const Import& im : lane.imports) ids.push_back(im.tensor);
        lane.executor->begin(graph, lane.order, ids);
        reused = reused && lane.executor->last_run().plan_reused;
    }
    for (Lane& lane : lanes_)
        for (Import& im : lane.imports) {
            const Tensor& root = *graph.tensors()[size_t(im.tensor)];
            im.host = nullptr;
            im.fetch = false;
            if (im.from == kHostInput) {  // an external tensor in another plugin's memory
                im.fetch = true;
            } else if (const void* p = lanes_[size_t(im.from)].executor->planned_host_data(root)) {
                im.host = p;
            } else {
                im.fetch = true;
            }
            if (im.fetch) im.host = fetch_buffer(root);
        }
    for (Lane& lane : lanes_) {
        if (lane.order.empty()) continue;
        std::vector<const void*> hosts;
        for (const Import& im : lane.imports) hosts.push_back(im.host);
        lane.executor->bind(hosts);
    }
    report_.setup_seconds = seconds_since(setup_start);

    Hidden hidden;  // by overlap
    for (size_t s = 0; s < plan.splits.size(); ++s) {
        const Split& split = plan.splits[s];
        const Split* next = s + 1 < plan.splits.size() ? &plan.splits[s + 1] : nullptr;
        const bool async = runs_async(split.backend);
        const size_t beside = async ? 0 : nodes_beside(graph, split, next);
        if (beside == 0) {
            run_split(graph, split, async);
            ++report_.splits;
            continue;
        }
        run_beside(graph, split, *next, beside, hidden);
        report_.splits += 2;
        ++s;
    }
    for (size_t b = 0; b < lanes_.size(); ++b) settle(int32_t(b));

    report_.plans_reused = reused;
    report_.compute_buffer_bytes.assign(lanes_.size(), 0);
    report_.staging_buffer_bytes.assign(lanes_.size(), 0);
    for (size_t b = 0; b < lanes_.size(); ++b) {
        if (lanes_[b].order.empty()) continue;
        const RunReport& r = lanes_[b].executor->last_run();
        report_.backend_seconds += r.backend_seconds;
        report_.sync_seconds += r.sync_seconds;
        report_.stage_seconds += r.stage_seconds;
        report_.compute_buffer_bytes[b] = r.compute_buffer_bytes;
        report_.staging_buffer_bytes[b] = r.staging_buffer_bytes;
        report_.staged_bytes += r.staged_bytes;
    }
    report_.backend_seconds -= hidden.backend;
    report_.sync_seconds -= hidden.sync;
    report_.stage_seconds -= hidden.stage;
    return report_;
}

// A split on a device with its own memory returns as soon as its nodes are sent (with overlap,
// outside a profile): the splits after it run meanwhile, on other backends (the other ranks'
// experts, rank 0's own), until one reads its results.
bool Scheduler::runs_async(int32_t backend) const {
    return overlap_ && !profile_ && !host_memory_[size_t(backend)];
}

bool Scheduler::running(int32_t backend) const {
    if (backend < 0) return false;
    const Lane& lane = lanes_[size_t(backend)];
    return lane.executor && lane.executor->running();
}

void Scheduler::settle(int32_t backend) {
    // The wait is the executor's synchronize time.
    if (running(backend)) lanes_[size_t(backend)].executor->finish();
}

// Runs a split in stretches: up to the first node that reads a result of a backend still
// running, then (once that one is done) on.
void Scheduler::run_split(const Graph& graph, const Split& split, bool async) {
    Lane& lane = lanes_[size_t(split.backend)];
    const size_t first = position_of(split, split.first);
    const size_t end = first + static_cast<size_t>(split.end - split.first);
    size_t at = first;
    while (at < end) {
        size_t cut = end;
        for (const Import& im : lane.imports)
            if (!im.done && im.first_position >= at && im.first_position < end && running(im.from))
                cut = std::min(cut, im.first_position);
        if (cut == at) {
            for (const Import& im : lane.imports)
                if (!im.done && im.first_position == at) settle(im.from);
            continue;
        }
        move_imports(graph, split.backend, at, cut);
        lane.executor->compute(at, cut, !async);
        at = cut;
    }
}

// How many of the next split's first nodes run beside `split` on the overlap thread: those that
// do not depend on it, where overlap is on and the two backends may overlap.
size_t Scheduler::nodes_beside(const Graph& graph, const Split& split, const Split* next) const {
    if (!overlap_ || profile_ || next == nullptr) return 0;
    const auto a = size_t(split.backend), b = size_t(next->backend);
    if (!may_overlap(backends_[a].plugin, host_memory_[a], backends_[b].plugin, host_memory_[b]))
        return 0;
    return size_t(independent_nodes(graph, split, *next));
}

void Scheduler::run_beside(const Graph& graph, const Split& split, const Split& next, size_t beside,
                           Hidden& hidden) {
    Lane& lane = lanes_[size_t(split.backend)];
    Lane& other = lanes_[size_t(next.backend)];
    const size_t first = position_of(split, split.first);
    const size_t end = first + static_cast<size_t>(split.end - split.first);
    const size_t next_first = position_of(next, next.first);
    const size_t cut = next_first + beside;
    settle(split.backend);
    settle(next.backend);
    if (runs_async(next.backend)) {
        // This split's inputs first (the device is idle: its results come at once, not after
        // the nodes sent below), then the device's independent nodes, which run while this split
        // does; the rest of its split after (queued behind them), without waiting.
        move_imports(graph, split.backend, first, end);
        move_imports(graph, next.backend, next_first, cut);
        other.executor->compute(next_first, cut, false);
        run_split(graph, split, false);
        report_.overlapped += beside;
        const size_t next_end = next_first + static_cast<size_t>(next.end - next.first);
        move_imports(graph, next.backend, cut, next_end);
        other.executor->compute(cut, next_end, false);
        return;
    }
    move_imports(graph, split.backend, first, end);
    move_imports(graph, next.backend, next_first, cut);
    if (!overlap_thread_) overlap_thread_ = std::make_unique<OverlapThread>();
    // The two lanes' times in their executors count the overlapped stretch twice.
    const RunReport &mine = lane.executor->last_run(), &theirs = other.executor->last_run();
    const double mine_before = mine.backend_seconds + mine.stage_seconds;
    const RunReport theirs_before = theirs;
    const auto start = Clock::now();
    overlap_thread_->start([&other, next_first, cut] { other.executor->compute(next_first, cut); });
    try {
        lane.executor->compute(first, end);
    } catch (...) {
        try {
            overlap_thread_->wait();
        } catch (...) {  // the split's own error is the one reported
        }
        throw;
    }
    overlap_thread_->wait();
    // Time saved: both lanes' time minus the stretch's wall time (a lower bound: the wall time
    // includes handing over). It is taken off the overlapped lane's time, each kind (ops,
    // synchronize, staging) in proportion, so the report's sums are wall time.
    const double wall = seconds_since(start);
    const double backend = theirs.backend_seconds - theirs_before.backend_seconds;
    const double stage = theirs.stage_seconds - theirs_before.stage_seconds;
    const double saved = std::max(
        0.0, mine.backend_seconds + mine.stage_seconds - mine_before + backend + stage - wall);
    const double share = backend + stage > 0 ? std::min(1.0, saved / (backend + stage)) : 0.0;
    hidden.backend += share * backend;
    hidden.sync += share * (theirs.sync_seconds - theirs_before.sync_seconds);
    hidden.stage += share * stage;
    report_.overlap_seconds += saved;
    report_.overlapped += beside;
    const size_t next_end = next_first + static_cast<size_t>(next.end - next.first);
    move_imports(graph, next.backend, cut, next_end);
    other.executor->compute(cut, next_end);
}

size_t Scheduler::position_of(const Split& split, int32_t node) const {
    const std::vector<int32_t>& order = lanes_[size_t(split.backend)].order;
    return static_cast<size_t>(std::lower_bound(order.begin(), order.end(), node) - order.begin());
}

// Which backend runs what, and what each backend reads from elsewhere.
void Scheduler::collect(const Graph& graph, const OpPlan& plan) {
    const auto& nodes = graph.nodes();
    if (plan.nodes.size() != nodes.size())
        throw Error(fmt::format("scheduler: the plan places {} nodes, the graph has {}",
                                plan.nodes.size(), nodes.size()));
    const bool again =
        collected_.graph == graph.stamp() &&
        std::ranges::equal(collected_.backends, plan.nodes, {}, {}, &NodePlacement::backend);
    fetched_now_.assign(graph.tensors().size(), false);
    if (again) {
        for (Lane& lane : lanes_)
            for (Import& im : lane.imports) im.done = false;
        return;
    }
    collected_ = Collected{};
    for (Lane& lane : lanes_) {
        lane.order.clear();
        lane.imports.clear();
    }
    writer_.assign(graph.tensors().size(), kHostInput);
    if (fetched_.size() < graph.tensors().size()) fetched_.resize(graph.tensors().size());

    for (size_t i = 0; i < nodes.size(); ++i) {
        const int32_t b = plan.nodes[i].backend;
        if (b < 0 || size_t(b) >= lanes_.size())
            throw Error(fmt::format("scheduler: the plan puts {} on backend {}, of {} loaded",
                                    node_text(graph, int32_t(i)), b, lanes_.size()));
        Lane& lane = lanes_[size_t(b)];
        const auto position = lane.order.size();
        lane.order.push_back(int32_t(i));
        const Plugin* plugin = backends_[size_t(b)].plugin;
        for (const Tensor* s : nodes[i].src) {
            const Tensor* root = s->base();
            const auto id = size_t(root->id());
            int32_t from = 0;
            if (root->is_external()) {
                const Buffer* buffer = root->device_buffer();
                if (buffer == nullptr ||
                    (buffer->owner() == plugin && buffer->device() == backends_[size_t(b)].device))
                    continue;
                from = kHostInput;
            } else {
                from = writer_[id];
                if (from == b) continue;
                if (from == kHostInput)
                    throw Error(fmt::format("scheduler: {} reads {} before any node writes it",
                                            node_text(graph, int32_t(i)), root->describe()));
            }
            const bool known =
                std::any_of(lane.imports.begin(), lane.imports.end(),
                            [&](const Import& im) { return im.tensor == root->id(); });
            if (!known) lane.imports.push_back({root->id(), from, nullptr, false, position, false});
        }
        const Tensor* written = nodes[i].dst->base();
        if (written->is_external()) continue;
        int32_t& writer = writer_[size_t(written->id())];
        if (writer != kHostInput && writer != b)
            throw Error(fmt::format(
                "scheduler: {} writes into {}, which backend {} wrote; a tensor is written on "
                "one backend only",
                node_text(graph, int32_t(i)), written->describe(), writer));
        writer = b;
    }
    for (size_t b = 0; b < lanes_.size(); ++b)
        if (!lanes_[b].order.empty() && !lanes_[b].executor) {
            lanes_[b].executor =
                std::make_unique<Executor>(*backends_[b].plugin, backends_[b].device);
            lanes_[b].executor->set_profile(profile_);
            lanes_[b].executor->set_staging_limit(staging_limit_);
            // A host lane's results go up to the devices, and theirs come into its buffer.
            if (host_memory_[b]) lanes_[b].executor->set_transfer_partners(devices_);
        }
    collected_.graph = graph.stamp();
    collected_.backends.clear();
    for (const NodePlacement& p : plan.nodes) collected_.backends.push_back(p.backend);
}

void Scheduler::set_staging_limit(uint64_t bytes) {
    staging_limit_ = bytes;
    for (Lane& lane : lanes_)
        if (lane.executor) lane.executor->set_staging_limit(bytes);
}

void Scheduler::set_profile(Profile* profile) {
    profile_ = profile;
    for (Lane& lane : lanes_)
        if (lane.executor) lane.executor->set_profile(profile);
}

std::byte* Scheduler::fetch_buffer(const Tensor& root) {
    HostCopy& copy = fetched_[size_t(root.id())];
    const auto size = std::max<size_t>(1, static_cast<size_t>(root.bytes()));
    if (copy.size() < size)
        allocating("a host copy of tensor " + root.name(), size,
                   [&] { copy.reserve(size, devices_); });
    return copy.data();  // page-aligned
}

// Brings the imports first read at positions [first, end) of `backend`'s order to it.
void Scheduler::move_imports(const Graph& graph, int32_t backend, size_t first, size_t end) {
    Lane& lane = lanes_[size_t(backend)];
    for (size_t k = 0; k < lane.imports.size(); ++k) {
        Import& im = lane.imports[k];
        if (im.done || im.first_position < first || im.first_position >= end) continue;
        settle(im.from);
        if (im.from == kHostInput && im.fetch)  // another plugin's memory: whoever may write it
            for (size_t b = 0; b < lanes_.size(); ++b) settle(int32_t(b));
        settle(backend);
        const auto start = Clock::now();
        const Tensor& root = *graph.tensors()[size_t(im.tensor)];
        const auto bytes = static_cast<uint64_t>(root.bytes());
        MovedTensor moved{im.tensor, im.from, backend, 0};
        if (im.fetch && !fetched_now_[size_t(im.tensor)]) {
            auto* dst = static_cast<std::byte*>(const_cast<void*>(im.host));
            if (im.from == kHostInput) {
                const Buffer& buffer = *root.device_buffer();
                buffer.owner()->get(buffer, root.device_offset(), dst, bytes);
            } else {
                lanes_[size_t(im.from)].executor->read(root, std::span<std::byte>(dst, bytes));
            }
            fetched_now_[size_t(im.tensor)] = true;
            moved.bytes += bytes;
        }
        if (!lane.executor->computes_on_host_memory()) {
            lane.executor->upload(k, im.host);
            moved.bytes += bytes;
        }
        im.done = true;
        const double seconds = seconds_since(start);
        report_.copy_seconds += seconds;
        if (profile_) profile_->add_copy(seconds, moved.bytes);
        report_.link_bytes += moved.bytes;
        report_.moves.push_back(moved);
    }
}

void Scheduler::read(const Tensor& t, std::span<std::byte> dst) const {
    const Tensor* root = t.base();
    const auto id = size_t(root->id());
    if (id >= writer_.size() || writer_[id] == kHostInput)
        throw Error("read: tensor " + t.describe() + " was not written by the last run");
    lanes_[size_t(writer_[id])].executor->read(t, dst);
}

}  // namespace sy
