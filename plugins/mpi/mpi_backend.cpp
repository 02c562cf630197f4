// The mpi backend, on rank 0: its devices are the other ranks of MPI_COMM_WORLD, each running
// `switchyard worker` (worker.cpp), which computes with its own backends. A device's buffers
// live in its worker's memory (not host visible: the host reaches them through buffer_set and
// buffer_get, as for a GPU), compute() sends the nodes (and the small sets held since the last
// request) and returns, synchronize() waits for the worker's answer, which brings the last
// node's result for the buffer_get that follows. The worker's device properties, capability rows
// and named ops are this device's; the link (latency and bandwidth to the rank) is measured at load
// by ping-pong, so placement prices the network like any other link.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "switchyard/plugin.h"
#include "switchyard/sdk.hpp"
#include "switchyard/validation.hpp"
#include "wire.hpp"

namespace sy::mpi {
namespace {

// Seconds a request may wait for its answer (SWITCHYARD_MPI_TIMEOUT overrides): long enough for
// a worker's largest compute, short enough that a dead or stuck rank is an error, not a hang.
double timeout_seconds() {
    const char* v = std::getenv("SWITCHYARD_MPI_TIMEOUT");
    if (v && *v) {
        char* end = nullptr;
        const double s = std::strtod(v, &end);
        if (end != v && *end == '\0' && s > 0 && std::isfinite(s)) return s;
    }
    return 600.0;
}

// A shard of the model file as rank 0 maps it.
struct Mapping {
    uint32_t shard;
    const char* base;
    uint64_t size;
};

// What went over the link to a rank: messages both ways, and the bulk bytes of buffer_set and
// buffer_get as asked for and as sent (zero rows stay behind: wire.hpp's sparse messages).
struct Traffic {
    uint64_t messages = 0, header_bytes = 0;
    uint64_t set_bytes = 0, set_wire = 0, get_bytes = 0, get_wire = 0;
};

struct Rank {
    int rank = 0;
    mutable Traffic traffic;
    std::vector<uint32_t> files;              // shards this rank reads from its own copy
    std::map<std::string, double> estimates;  // by node description; < 0: none
    std::string version;
    sy_device_props props{};
    std::vector<sy_capability> rows;
    std::vector<std::unique_ptr<std::string>> names;  // the rows' and named ops' strings
    std::vector<sy_named_op_info> named;
    double latency_ns = 0, bandwidth = 0;
    // A failure that a compute answer brought, for the next synchronize to report.
    mutable std::string pending;
    // Small sets held for the next compute request, which carries them (or sent on their own
    // before any other request).
    struct Held {
        WireSet set;
        std::vector<char> bytes;
    };
    mutable std::vector<Held> held;
    mutable uint64_t held_bytes = 0;
    mutable int answers = 0;  // compute requests whose answer has not been received
    // The last compute's result as its answer brought it: a get of those bytes is answered from
    // here. Not valid once a set or free followed that compute.
    struct Pushed {
        bool valid = false;
        uint64_t handle = 0, offset = 0;
        std::vector<char> bytes;
    };
    mutable Pushed pushed;
    mutable bool touched_since_compute = false;
    // A set or a free after the last compute: its pushed result may no longer be the buffer's.
    void touched() const {
        touched_since_compute = true;
        pushed.valid = false;
    }
    // Results by buffer, offset and size: pushed back and never read (a stretch of a split
    // whose last node's result stays on the rank), and read with a get after their compute.
    // A compute request asks for its result unless it was unwanted; a result over 64 KiB only
    // once it was read before.
    using Key = std::tuple<uint64_t, uint64_t, uint64_t>;
    mutable std::set<Key> unwanted, wanted;
    mutable std::optional<Key> last_result;
    mutable std::optional<Key> last_push;
    mutable bool last_push_read = false;
};

struct RemoteBuffer {
    int device;
    uint64_t handle;
};

struct State {
    std::vector<Rank> ranks;
    std::vector<Mapping> mappings;
    std::vector<sy_named_op_info> named;  // the first worker's (every worker runs one build)

    uint64_t next_base = 0;
    double timeout = 600.0;
};
State* g = nullptr;

constexpr const char* kNotLaunched =
    "MPI ranks as devices; none: not started by mpirun (start rank 0 and the workers together: "
    "mpirun -np 1 switchyard run ... : -np 1 switchyard worker -m MODEL)";

sy_status fail(int32_t code, const std::string& what) {
    return sy::sdk::error(code, "mpi: %s", what.c_str());
}

sy_status rank_failed(const Rank& r, const std::string& what, const std::string& why) {
    return fail(SY_ERR_BACKEND, "rank " + std::to_string(r.rank) + ": " + what + ": " + why);
}

sy_status no_device(int32_t device) {
    if (g && device >= 0 && device < int32_t(g->ranks.size())) return sy::sdk::ok();
    return fail(SY_ERR_INVALID_ARGUMENT, "no device " + std::to_string(device));
}

std::string flush(const Rank& r);

// Sends a request header (and extra bytes) to a rank; the sets held for a compute request go
// first when this is another request.
std::string request(const Rank& r, int tag, Header h, const std::vector<char>& extra = {}) {
    if (tag != kCompute && !r.held.empty())
        if (std::string e = flush(r); !e.empty()) return e;
    std::vector<char> bytes(sizeof h + extra.size());
    std::memcpy(bytes.data(), &h, sizeof h);
    if (!extra.empty()) std::memcpy(bytes.data() + sizeof h, extra.data(), extra.size());
    r.traffic.messages += 1;
    r.traffic.header_bytes += bytes.size();
    return send(bytes.data(), bytes.size(), r.rank, tag, g->timeout);
}

// The held sets, each as a SET request and its bytes.
std::string flush(const Rank& r) {
    std::vector<Rank::Held> held = std::exchange(r.held, {});
    r.held_bytes = 0;
    for (const Rank::Held& x : held) {
        const WireSet& s = x.set;
        if (std::string e = request(r, kSet, {s.handle, s.offset, s.size, s.sparse}); !e.empty())
            return e;
        if (std::string e = s.sparse
                                ? send(x.bytes.data(), x.bytes.size(), r.rank, kData, g->timeout)
                                : send_data(x.bytes.data(), x.bytes.size(), r.rank, g->timeout);
            !e.empty())
            return e;
        r.traffic.messages += 1;
    }
    return {};
}

// Receives the answers of the compute requests sent so far (in order: a worker answers in the
// order it was asked): the first failure is kept for synchronize, the last one's pushed result
// for the gets that follow.
std::string drain(const Rank& r) {
    std::vector<char> bytes;
    while (r.answers > 0) {
        if (std::string e = receive(bytes, r.rank, kReply, g->timeout); !e.empty()) return e;
        --r.answers;
        Header h;
        ComputeAnswer ca;
        if (bytes.size() < sizeof h + sizeof ca) return "a short compute answer";
        std::memcpy(&h, bytes.data(), sizeof h);
        std::memcpy(&ca, bytes.data() + sizeof h, sizeof ca);
        const char* text = bytes.data() + sizeof h + sizeof ca;
        const size_t left = bytes.size() - sizeof h - sizeof ca;
        if (left < uint64_t(ca.text) + ca.payload) return "a short compute answer";
        r.traffic.messages += 1;
        r.traffic.header_bytes += bytes.size() - ca.payload;
        r.traffic.get_wire += ca.payload;
        if (h.a != SY_OK && r.pending.empty())
            r.pending = std::string(text, ca.text).empty() ? "failed" : std::string(text, ca.text);
        r.pushed.valid = false;
        if (h.b == 1 && r.answers == 0 && !r.touched_since_compute) {
            const char* payload = text + ca.text;
            r.pushed.bytes.resize(ca.size);
            const bool ok = ca.sparse
                                ? unpack_sparse(payload, ca.payload, r.pushed.bytes.data(), ca.size)
                                : ca.payload == ca.size;
            if (ok && !ca.sparse) std::memcpy(r.pushed.bytes.data(), payload, ca.size);
            if (!ok) return "a malformed compute answer";
            r.last_push = Rank::Key{h.c, h.d, ca.size};
            r.last_push_read = false;
            r.pushed = {true, h.c, h.d, std::move(r.pushed.bytes)};
        }
    }
    return {};
}

// An answer: its header and the bytes after it.
std::string answer(const Rank& r, Header& h, std::vector<char>& rest) {
    if (std::string e = drain(r); !e.empty()) return e;
    std::vector<char> bytes;
    if (std::string e = receive(bytes, r.rank, kReply, g->timeout); !e.empty()) return e;
    r.traffic.messages += 1;
    r.traffic.header_bytes += bytes.size();
    if (bytes.size() < sizeof h) return "a short answer";
    std::memcpy(&h, bytes.data(), sizeof h);
    rest.assign(bytes.begin() + sizeof h, bytes.end());
    return {};
}

// An answer that is a status: its code in a, its message after the header.
sy_status status_answer(const Rank& r, const char* what, Header* out = nullptr) {
    Header h;
    std::vector<char> rest;
    if (std::string e = answer(r, h, rest); !e.empty()) return rank_failed(r, what, e);
    if (out) *out = h;
    if (h.a != SY_OK)
        return sy::sdk::error(int32_t(h.a), "mpi: rank %d: %s: %.*s", r.rank, what,
                              int(rest.size()), rest.data());
    return sy::sdk::ok();
}

// HELLO: versions both ways, then the worker's description.
std::string hello(Rank& r, const char* host_version) {
    Writer w;
    w.put(kProtocol);
    w.put_string(host_version ? host_version : "");
    if (std::string e = request(r, kHello, {}, w.bytes); !e.empty()) return e;
    Header h;
    std::vector<char> rest;
    if (std::string e = answer(r, h, rest); !e.empty()) return e;
    Reader in(rest.data(), rest.size());
    if (h.a != SY_OK) {
        std::string message;
        in.get_string(message);
        return message;
    }
    uint32_t props_size = 0, rows = 0, named = 0;
    if (!in.get_string(r.version) || !in.get(props_size) || props_size > sizeof r.props ||
        in.left() < props_size)
        return "a malformed description";
    std::memcpy(&r.props, in.at(), props_size);
    in = Reader(in.at() + props_size, in.left() - props_size);
    if (!in.get(rows)) return "a malformed capability table";
    for (uint32_t i = 0; i < rows; ++i) {
        sy_capability c{};
        c.struct_size = sizeof c;
        std::string name;
        if (!in.get(c.op) || !in.get_string(name) || !in.get(c.named_op_version) ||
            !in.get(c.dst_type) || !in.get(c.src_type))
            return "a malformed capability row";
        if (!name.empty()) {
            r.names.push_back(std::make_unique<std::string>(name));
            c.named_op = r.names.back()->c_str();
        }
        r.rows.push_back(c);
    }
    if (!in.get(named)) return "a malformed named-op list";
    for (uint32_t i = 0; i < named; ++i) {
        std::string name, summary;
        sy_named_op_info info{};
        info.struct_size = sizeof info;
        if (!in.get_string(name) || !in.get(info.schema_version) || !in.get_string(summary))
            return "a malformed named op";
        r.names.push_back(std::make_unique<std::string>(name));
        info.name = r.names.back()->c_str();
        r.names.push_back(std::make_unique<std::string>(summary));
        info.summary = r.names.back()->c_str();
        r.named.push_back(info);
    }
    return {};
}

// One-way latency from round trips of 8 bytes, and bandwidth from round trips of 4 MiB.
std::string measure_link(Rank& r) {
    const auto round_trip = [&](uint64_t size, double& seconds) -> std::string {
        std::vector<char> out(size, 1), back;
        const auto t0 = std::chrono::steady_clock::now();
        if (std::string e = request(r, kPing, {size}, out); !e.empty()) return e;
        Header h;
        if (std::string e = answer(r, h, back); !e.empty()) return e;
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return back.size() == size ? std::string() : "a ping came back with other bytes";
    };
    std::vector<double> small, large;
    for (int i = 0; i < 23; ++i) {
        double s = 0;
        if (std::string e = round_trip(8, s); !e.empty()) return e;
        if (i >= 3) small.push_back(s);
    }
    for (int i = 0; i < 4; ++i) {
        double s = 0;
        if (std::string e = round_trip(uint64_t(4) << 20, s); !e.empty()) return e;
        if (i >= 1) large.push_back(s);
    }
    std::sort(small.begin(), small.end());
    std::sort(large.begin(), large.end());
    const double rtt = small[small.size() / 2];
    r.latency_ns = rtt / 2 * 1e9;
    const double transfer = std::max(large.front() - rtt, 1e-9);
    r.bandwidth = 2.0 * double(uint64_t(4) << 20) / transfer;
    return {};
}

// --- the function table ----------------------------------------------------------------------

sy_status device_count(void*, int32_t* count) {
    *count = int32_t(g->ranks.size());
    return sy::sdk::ok();
}

sy_status device_props(void*, int32_t device, sy_device_props* props) {
    if (sy_status s = no_device(device); s.code) return s;
    const Rank& r = g->ranks[size_t(device)];
    const uint32_t size = std::min<uint32_t>(props->struct_size, sizeof(sy_device_props));
    sy_device_props p = r.props;
    std::snprintf(p.name, sizeof p.name, "rank %d: %.110s", r.rank, r.props.name);
    std::snprintf(p.description, sizeof p.description,
                  "MPI rank %d (switchyard %s); link %.1f us, %.2f GB/s (measured at load)", r.rank,
                  r.version.c_str(), r.latency_ns / 1e3, r.bandwidth / 1e9);
    p.host_memory = 0;
    p.link_bandwidth = r.bandwidth;
    p.link_latency_ns = r.latency_ns;
    p.struct_size = size;
    std::memcpy(props, &p, size);
    return sy::sdk::ok();
}

sy_status capabilities(void*, const sy_capability** rows, size_t* count) {
    *rows = g->ranks.empty() ? nullptr : g->ranks[0].rows.data();
    *count = g->ranks.empty() ? 0 : g->ranks[0].rows.size();
    return sy::sdk::ok();
}

// The worker's capability rows, judged here (descriptors only: the data is on the rank).
sy_status supports(void*, int32_t device, const sy_node* node, int32_t* supported) {
    if (sy_status s = no_device(device); s.code) return s;
    const Rank& r = g->ranks[size_t(device)];
    const validation::Backend rules{"mpi", r.rows.data(), r.rows.size(), false};
    *supported =
        validation::validate_node(node, validation::DataChecks::kDescriptorsOnly, rules).code ==
                SY_OK
            ? 1
            : 0;
    return sy::sdk::ok();
}

sy_status named_ops(void*, const sy_named_op_info** ops, size_t* count) {
    *ops = g->ranks.empty() ? nullptr : g->ranks[0].named.data();
    *count = g->ranks.empty() ? 0 : g->ranks[0].named.size();
    return sy::sdk::ok();
}

sy_status buffer_alloc(void*, int32_t device, uint64_t size, sy_buffer* buffer) {
    if (sy_status s = no_device(device); s.code) return s;
    const Rank& r = g->ranks[size_t(device)];
    if (std::string e = request(r, kAlloc, {size}); !e.empty())
        return rank_failed(r, "allocating " + std::to_string(size) + " bytes", e);
    Header h;
    if (sy_status s = status_answer(r, "allocating a buffer", &h); s.code) return s;
    // An address of our own for the buffer's byte 0 (never dereferenced: not host visible),
    // 1 TiB apart, so that tensor offsets inside it are what the host computes.
    buffer->device = device;
    buffer->handle = new RemoteBuffer{device, h.b};
    buffer->base = reinterpret_cast<void*>((uint64_t(1) << 44) + (g->next_base++ << 40));
    buffer->size = size;
    buffer->host_visible = 0;
    return sy::sdk::ok();
}

sy_status buffer_free(void*, sy_buffer* buffer) {
    auto* b = static_cast<RemoteBuffer*>(buffer->handle);
    const Rank& r = g->ranks[size_t(b->device)];
    r.touched();
    const std::string e = request(r, kFree, {b->handle});
    delete b;
    return e.empty() ? sy::sdk::ok() : rank_failed(r, "freeing a buffer", e);
}

sy_status buffer_set(void*, const sy_buffer* buffer, uint64_t offset, const void* src, uint64_t n) {
    const auto* b = static_cast<const RemoteBuffer*>(buffer->handle);
    const Rank& r = g->ranks[size_t(b->device)];
    if (offset > buffer->size || n > buffer->size - offset)
        return fail(SY_ERR_INVALID_ARGUMENT, "buffer_set past the buffer's end");
    r.touched();
    // Bytes of the model file that the rank holds too: it reads them from its own copy.
    const char* p = static_cast<const char*>(src);
    for (const Mapping& m : g->mappings) {
        if (p < m.base || p + n > m.base + m.size) continue;
        if (std::find(r.files.begin(), r.files.end(), m.shard) == r.files.end()) break;
        Writer w;
        w.put(m.shard);
        if (std::string e =
                request(r, kSetFile, {b->handle, offset, n, uint64_t(p - m.base)}, w.bytes);
            !e.empty())
            return rank_failed(r, "loading weights", e);
        return sy::sdk::ok();
    }
    std::vector<char> sparse = sparse_message(p, n);
    r.traffic.set_bytes += n;
    r.traffic.set_wire += sparse.empty() ? n : sparse.size();
    if (n <= kBundleLimit) {  // held for the next compute request (a copy: src is the caller's)
        if (r.held_bytes + n > kBundleLimit)
            if (std::string e = flush(r); !e.empty()) return rank_failed(r, "sending bytes", e);
        Rank::Held x;
        x.set = {b->handle, offset, n, sparse.empty() ? n : sparse.size(), sparse.empty() ? 0u : 1u,
                 0};
        x.bytes = sparse.empty() ? std::vector<char>(p, p + n) : std::move(sparse);
        r.held_bytes += n;
        r.held.push_back(std::move(x));
        return sy::sdk::ok();
    }
    if (std::string e = request(r, kSet, {b->handle, offset, n, sparse.empty() ? 0u : 1u});
        !e.empty())
        return rank_failed(r, "sending bytes", e);
    const std::string e = sparse.empty()
                              ? send_data(p, n, r.rank, g->timeout)
                              : send(sparse.data(), sparse.size(), r.rank, kData, g->timeout);
    if (!e.empty()) return rank_failed(r, "sending bytes", e);
    r.traffic.messages += 1;
    return sy::sdk::ok();
}

sy_status buffer_get(void*, const sy_buffer* buffer, uint64_t offset, void* dst, uint64_t n) {
    const auto* b = static_cast<const RemoteBuffer*>(buffer->handle);
    const Rank& r = g->ranks[size_t(b->device)];
    if (offset > buffer->size || n > buffer->size - offset)
        return fail(SY_ERR_INVALID_ARGUMENT, "buffer_get past the buffer's end");
    // The last compute's result came with its answer: no request.
    if (r.held.empty())
        if (std::string e = drain(r); !e.empty()) return rank_failed(r, "reading bytes", e);
    const Rank::Pushed& pushed = r.pushed;
    if (pushed.valid && pushed.handle == b->handle && offset >= pushed.offset &&
        n <= pushed.bytes.size() && offset - pushed.offset <= pushed.bytes.size() - n) {
        std::memcpy(dst, pushed.bytes.data() + (offset - pushed.offset), n);
        r.last_push_read = true;
        r.traffic.get_bytes += n;
        return sy::sdk::ok();
    }
    if (r.last_result == Rank::Key{b->handle, offset, n}) r.wanted.insert(*r.last_result);
    if (std::string e = request(r, kGet, {b->handle, offset, n}); !e.empty())
        return rank_failed(r, "reading bytes", e);
    Header h;
    if (sy_status s = status_answer(r, "reading bytes", &h); s.code) return s;
    uint64_t wire = n;
    const std::string e =
        h.b == 1 ? receive_sparse(static_cast<char*>(dst), n, r.rank, g->timeout, &wire)
                 : receive_data(static_cast<char*>(dst), n, r.rank, g->timeout);
    if (!e.empty()) return rank_failed(r, "reading bytes", e);
    r.traffic.messages += 1;
    r.traffic.get_bytes += n;
    r.traffic.get_wire += wire;
    return sy::sdk::ok();
}

sy_status copy_tensors(void*, const sy_copy*, size_t) {
    return fail(SY_ERR_UNSUPPORTED,
                "copy_tensors is not implemented (set and get carry the bytes)");
}

// A tensor of this device's buffers as the worker rebuilds it.
// A tensor as the worker rebuilds it: in a buffer of `device` (false when it is not), or, with
// device -1, its descriptor only.
bool wire_tensor(const sy_tensor* t, int32_t device, WireTensor& w) {
    w = WireTensor{};
    if (t == nullptr) return true;
    w.present = 1;
    w.type = t->type;
    std::memcpy(w.ne, t->ne, sizeof w.ne);
    std::memcpy(w.nb, t->nb, sizeof w.nb);
    if (device < 0) return true;
    if (t->buffer == nullptr || t->buffer->device != device) return false;
    w.handle = static_cast<const RemoteBuffer*>(t->buffer->handle)->handle;
    w.offset =
        uint64_t(static_cast<const char*>(t->data) - static_cast<const char*>(t->buffer->base));
    w.constant_id = SY_HAS_FIELD(t, constant_id) ? t->constant_id : 0;
    return true;
}

constexpr int kAllPlaced = -2;

// Appends a node (its fields, tensors as wire_tensor makes them, then its named op's name).
// Returns kAllPlaced, or the tensor outside the device: -1 dst, s src s (nothing appended).
int put_node(Writer& w, const sy_node& n, int32_t device) {
    WireNode wn{};
    wn.op = n.op;
    wn.n_src = n.n_src;
    wn.named_op_version = n.named_op_version;
    const std::string name = n.named_op ? n.named_op : "";
    wn.named_op_length = int32_t(name.size());
    std::memcpy(wn.iparams, n.iparams, sizeof wn.iparams);
    std::memcpy(wn.fparams, n.fparams, sizeof wn.fparams);
    if (!wire_tensor(n.dst, device, wn.dst)) return -1;
    for (int32_t s = 0; s < n.n_src && s < SY_MAX_SRC; ++s)
        if (!wire_tensor(n.src[s], device, wn.src[s])) return s;
    w.put(wn);
    w.bytes.insert(w.bytes.end(), name.begin(), name.end());
    return kAllPlaced;
}

sy_status compute(void*, int32_t device, const sy_node* const* nodes, size_t count) {
    if (sy_status s = no_device(device); s.code) return s;
    const Rank& r = g->ranks[size_t(device)];
    Writer w;
    // The held sets first: the worker stores them, then computes.
    for (const Rank::Held& x : r.held) {
        w.put(x.set);
        w.bytes.insert(w.bytes.end(), x.bytes.begin(), x.bytes.end());
    }
    for (size_t i = 0; i < count; ++i)
        if (const int bad = put_node(w, *nodes[i], device); bad != kAllPlaced)
            return fail(SY_ERR_INVALID_ARGUMENT,
                        (bad < 0 ? std::string("dst") : "src" + std::to_string(bad)) + " of node " +
                            std::to_string(i) + " (" + sy::sdk::op_name(nodes[i]->op) +
                            ") is not in a buffer of rank " + std::to_string(r.rank));
    // Push the last node's result back unless the last time it was not read.
    if (r.last_push && !r.last_push_read) r.unwanted.insert(*r.last_push);
    r.last_push.reset();
    uint64_t no_push = 0;
    r.last_result.reset();
    if (const sy_tensor* dst = count > 0 ? nodes[count - 1]->dst : nullptr) {
        const auto* buffer = static_cast<const RemoteBuffer*>(dst->buffer->handle);
        const auto offset = uint64_t(static_cast<const char*>(dst->data) -
                                     static_cast<const char*>(dst->buffer->base));
        const Rank::Key key{buffer->handle, offset, uint64_t(sy::sdk::nbytes(*dst))};
        r.last_result = key;
        no_push = r.unwanted.count(key) ||
                  (std::get<2>(key) > (uint64_t(64) << 10) && !r.wanted.count(key));
    }
    if (std::string e = request(r, kCompute, {count, r.held.size(), no_push}, w.bytes); !e.empty())
        return rank_failed(r, "sending nodes", e);
    r.held.clear();
    r.held_bytes = 0;
    r.answers += 1;
    r.touched_since_compute = false;
    r.pushed.valid = false;
    return sy::sdk::ok();
}

// The worker's backend's own estimate of a node (its measured rates, not a roofline of its
// peaks), asked once per distinct node description and kept.
sy_status estimate(void*, int32_t device, const sy_node* node, double* ns) {
    if (sy_status s = no_device(device); s.code) return s;
    Rank& r = g->ranks[size_t(device)];
    Writer w;
    put_node(w, *node, -1);
    const std::string key(w.bytes.begin(), w.bytes.end());
    if (const auto it = r.estimates.find(key); it != r.estimates.end()) {
        if (it->second < 0) return fail(SY_ERR_UNSUPPORTED, "no estimate for this node");
        *ns = it->second;
        return sy::sdk::ok();
    }
    if (std::string e = request(r, kEstimate, {1}, w.bytes); !e.empty())
        return rank_failed(r, "estimate", e);
    Header h;
    std::vector<char> rest;
    if (std::string e = answer(r, h, rest); !e.empty()) return rank_failed(r, "estimate", e);
    double value = -1;
    if (h.a == SY_OK) std::memcpy(&value, &h.b, sizeof value);
    r.estimates[key] = value;
    if (value < 0) return fail(SY_ERR_UNSUPPORTED, "no estimate for this node");
    *ns = value;
    return sy::sdk::ok();
}

sy_status synchronize(void*, int32_t device) {
    if (sy_status s = no_device(device); s.code) return s;
    const Rank& r = g->ranks[size_t(device)];
    // Sets with no compute after them are sent; a compute's answer says when it is done (no
    // request); without one, a SYNC asks for the first failure since the last answer.
    if (std::string e = flush(r); !e.empty()) return rank_failed(r, "synchronize", e);
    if (r.answers == 0) {
        if (std::string e = request(r, kSync, {}); !e.empty())
            return rank_failed(r, "synchronize", e);
        if (sy_status s = status_answer(r, "computing"); s.code) return s;
    }
    if (std::string e = drain(r); !e.empty()) return rank_failed(r, "computing", e);
    if (!r.pending.empty()) {
        const std::string f = std::exchange(r.pending, std::string());
        return sy::sdk::error(SY_ERR_BACKEND, "mpi: rank %d: computing: %s", r.rank, f.c_str());
    }
    return sy::sdk::ok();
}

void forget_mappings() {
    g->mappings.clear();
    for (Rank& r : g->ranks) r.files.clear();
}

// The host unloads a model: its file's mappings go too, so that no later bytes at those
// addresses are taken for the file's.
sy_status release_constants(void*, uint64_t) {
    forget_mappings();
    return sy::sdk::ok();
}

// "file_mapping" = "SHARD:BASE:SIZE": shard SHARD of the model file is mapped at BASE (hex) on
// this rank. Each rank is asked whether its own copy (worker -m) is the same file (size and
// fingerprint); those that have it load weights from it (buffer_set sends the file offset),
// the others are sent the bytes. A rank with another file is an error naming it.
sy_status file_mapping(const char* value) {
    unsigned shard = 0;
    unsigned long long base = 0, size = 0;
    if (std::sscanf(value, "%u:%llx:%llu", &shard, &base, &size) != 3 || base == 0 || size == 0)
        return fail(SY_ERR_INVALID_ARGUMENT,
                    std::string("file_mapping '") + value + "': expected SHARD:BASE:SIZE");
    const auto* bytes = reinterpret_cast<const unsigned char*>(uintptr_t(base));
    // A model's shards come in order: shard 0 starts a new model, whose mappings replace the
    // last one's (which may be unmapped by now).
    if (shard == 0) forget_mappings();
    const uint64_t head = std::min<uint64_t>(size, kFingerprintBytes);
    const uint64_t print = fingerprint(bytes, head, bytes + size - head, head, size);
    g->mappings.push_back({shard, reinterpret_cast<const char*>(bytes), size});
    for (Rank& r : g->ranks) {
        if (std::string e = request(r, kFile, {shard, size, print}); !e.empty())
            return rank_failed(r, "model file", e);
        Header h;
        std::vector<char> rest;
        if (std::string e = answer(r, h, rest); !e.empty()) return rank_failed(r, "model file", e);
        if (h.a == SY_OK) {
            r.files.push_back(shard);
        } else if (h.a != SY_ERR_UNSUPPORTED) {
            return sy::sdk::error(int32_t(h.a), "mpi: rank %d: %.*s", r.rank, int(rest.size()),
                                  rest.data());
        }
    }
    return sy::sdk::ok();
}

sy_status set_option(void*, const char* key, const char* value) {
    if (std::strcmp(key, "file_mapping") == 0) return file_mapping(value);
    // The link every rank's device reports, instead of the measurement at load: planning for
    // another network, and placements that do not move with a loaded machine's timings.
    const bool latency = std::strcmp(key, "link_latency_us") == 0;
    if (latency || std::strcmp(key, "link_gbps") == 0) {
        char* end = nullptr;
        const double v = std::strtod(value, &end);
        if (end == value || *end != '\0' || !std::isfinite(v) || v < 0 || (!latency && v == 0))
            return fail(SY_ERR_INVALID_ARGUMENT, std::string("option ") + key + ": '" + value +
                                                     "' is not a " +
                                                     (latency ? "number >= 0" : "number > 0"));
        for (Rank& r : g->ranks)
            (latency ? r.latency_ns : r.bandwidth) = latency ? v * 1e3 : v * 1e9;
        return sy::sdk::ok();
    }
    // Every rank's backends take it ("threads"); the first refusal is the answer.
    std::vector<char> kv(key, key + std::strlen(key) + 1);
    kv.insert(kv.end(), value, value + std::strlen(value) + 1);
    sy_status result = sy::sdk::ok();
    for (const Rank& r : g->ranks) {
        if (std::string e = request(r, kOption, {}, kv); !e.empty())
            return rank_failed(r, std::string("option ") + key, e);
        if (sy_status s = status_answer(r, key); s.code && result.code == SY_OK) result = s;
    }
    return result;
}

// SWITCHYARD_MPI_STATS=1: what went to and from each rank since the backend loaded.
void print_traffic() {
    const auto kib = [](uint64_t b) { return double(b) / 1024.0; };
    for (const Rank& r : g->ranks) {
        const Traffic& t = r.traffic;
        std::fprintf(stderr,
                     "mpi: rank %d: %llu messages; sent %.1f KiB of %.1f KiB set (zero rows "
                     "stayed), received %.1f KiB of %.1f KiB read; %.1f KiB of requests and "
                     "answers\n",
                     r.rank, static_cast<unsigned long long>(t.messages), kib(t.set_wire),
                     kib(t.set_bytes), kib(t.get_wire), kib(t.get_bytes), kib(t.header_bytes));
    }
}

// The backend is unloaded; the process may load it again (bench, for each model), and MPI can
// be initialized only once per process, so the workers wait for another HELLO and MPI stays up
// until the process exits.
void shutdown(void*) {
    if (const char* v = std::getenv("SWITCHYARD_MPI_STATS"); v && *v && std::strcmp(v, "0") != 0)
        print_traffic();
    for (const Rank& r : g->ranks) request(r, kBye, {});
    delete g;
    g = nullptr;
}

// At exit of a process that initialized MPI: the workers leave, then MPI is finalized. (The
// plugin is never unmapped, -z nodelete, so this code is still there.)
void at_exit() {
    int size = 1, finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const Header h{};
    for (int r = 1; r < size; ++r) send(&h, sizeof h, r, kExit, 10.0);
    MPI_Finalize();
}

}  // namespace
}  // namespace sy::mpi

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    using namespace sy::mpi;
    if (sy_status s = sy::sdk::check_host(host, api, "mpi"); s.code) return s;
    if (g != nullptr) return fail(SY_ERR_BACKEND, "one instance at a time");
    int initialized = 0;
    MPI_Initialized(&initialized);
    // Not started by a launcher (mpirun, srun): there are no other ranks, so MPI is not even
    // initialized (a singleton start costs a second and serves nothing): the backend loads with
    // no devices, as the cuda plugin does on a machine without a GPU, and says why.
    const bool launched = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
                          std::getenv("PMIX_RANK") || std::getenv("MPI_LOCALNRANKS");
    const auto publish = [&](const char* build_info) {
        sy_plugin_api table{};
        table.struct_size = sizeof table;
        table.name = "mpi";
        table.version = "0.1.0";
        table.build_info = build_info;
        table.device_count = device_count;
        table.device_props = device_props;
        table.capabilities = capabilities;
        table.supports = supports;
        table.buffer_alloc = buffer_alloc;
        table.buffer_free = buffer_free;
        table.buffer_set = buffer_set;
        table.buffer_get = buffer_get;
        table.copy_tensors = copy_tensors;
        table.compute = compute;
        table.synchronize = synchronize;
        table.estimate = estimate;
        table.release_constants = release_constants;
        table.named_ops = named_ops;
        table.set_option = set_option;
        table.shutdown = shutdown;
        sy::sdk::publish_api(table, api);
        return sy::sdk::ok();
    };
    if (!initialized && !launched) {
        g = new State{};
        return publish(kNotLaunched);
    }
    auto state = std::make_unique<State>();
    state->timeout = timeout_seconds();
    if (!initialized) {
        int provided = 0;
        if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
            return fail(SY_ERR_REFUSED, "MPI_Init_thread failed");
        std::atexit(at_exit);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const auto refuse = [&](const std::string& why) { return fail(SY_ERR_REFUSED, why); };
    if (rank != 0)
        return refuse("this process is rank " + std::to_string(rank) +
                      "; only rank 0 runs the model (start `switchyard worker` on the others)");
    if (size < 2)
        return refuse(
            "no worker ranks: start under mpirun, e.g. `mpirun -np 1 switchyard run ... : -np 1 "
            "switchyard worker -m MODEL`");
    g = state.release();
    for (int r = 1; r < size; ++r) {
        Rank rk;
        rk.rank = r;
        g->ranks.push_back(std::move(rk));
    }
    for (Rank& r : g->ranks) {
        std::string e = hello(r, host->host_version);
        if (e.empty()) e = measure_link(r);
        if (!e.empty()) {
            const std::string why = "rank " + std::to_string(r.rank) + ": " + e;
            for (const Rank& o : g->ranks) request(o, kBye, {});
            delete g;
            g = nullptr;
            return fail(SY_ERR_REFUSED, why);
        }
        r.traffic = Traffic{};  // the handshake and the link measurement are not the model's
    }
    return publish("MPI ranks as devices (each runs switchyard worker)");
}
