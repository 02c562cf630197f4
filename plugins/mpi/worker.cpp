// The worker side of the mpi plugin (a rank other than 0): `switchyard worker` loads its own
// backend plugin and calls sy_mpi_worker with that plugin's function table; this loop then
// answers rank 0's requests (wire.hpp) with it, in order, until rank 0 says goodbye: buffers in
// the local backend's memory, the bytes rank 0 sends, nodes computed there.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/plugin.h"
#include "switchyard/sdk.hpp"
#include "wire.hpp"

namespace sy::mpi {
namespace {

struct Worker {
    const sy_plugin_api* local;
    std::vector<std::string> files;  // this rank's copy of the model, by shard
    std::vector<int> fds;
    int32_t device = 0;
    std::map<uint64_t, sy_buffer> buffers;
    uint64_t next = 1;
    std::string failure;  // the first failure since the last SYNC
    double timeout = 600.0;

    void failed(const std::string& what) {
        if (failure.empty()) failure = what;
    }
    std::string status_text(const sy_status& s, const char* what) {
        return std::string(what) + ": " + (s.message ? s.message : "failed");
    }
};

std::string reply(const Worker& w, Header h, const std::string& text = {}) {
    std::vector<char> bytes(sizeof h + text.size());
    std::memcpy(bytes.data(), &h, sizeof h);
    std::memcpy(bytes.data() + sizeof h, text.data(), text.size());
    return send(bytes.data(), bytes.size(), 0, kReply, w.timeout);
}

// The description rank 0 plans with: version, device properties, capability rows, named ops.
std::vector<char> describe(const Worker& w, const char* version) {
    Writer out;
    out.put(Header{SY_OK});
    out.put_string(version);
    sy_device_props props{};
    props.struct_size = sizeof props;
    w.local->device_props(w.local->ctx, w.device, &props);
    out.put(uint32_t(sizeof props));
    out.put(props);
    const sy_capability* rows = nullptr;
    size_t count = 0;
    if (w.local->capabilities(w.local->ctx, &rows, &count).code != SY_OK) count = 0;
    out.put(uint32_t(count));
    for (size_t i = 0; i < count; ++i) {
        out.put(rows[i].op);
        out.put_string(rows[i].named_op ? rows[i].named_op : "");
        out.put(rows[i].named_op_version);
        out.put(rows[i].dst_type);
        out.put(rows[i].src_type);
    }
    const sy_named_op_info* ops = nullptr;
    size_t n_ops = 0;
    if (w.local->named_ops == nullptr || w.local->named_ops(w.local->ctx, &ops, &n_ops).code)
        n_ops = 0;
    out.put(uint32_t(n_ops));
    for (size_t i = 0; i < n_ops; ++i) {
        out.put_string(ops[i].name);
        out.put(ops[i].schema_version);
        out.put_string(ops[i].summary ? ops[i].summary : "");
    }
    return out.bytes;
}

// Nodes as rank 0 serialized them, on this rank's buffers.
// With `estimate` the tensors are descriptors only (no buffer) and the first node's estimate is
// returned in *ns instead of computing.
void compute(Worker& w, const char* p, size_t n, uint64_t count, bool estimate = false,
             double* ns = nullptr, WireTensor* last = nullptr) {
    std::vector<sy_node> nodes(count);
    std::vector<sy_tensor> tensors(count * (SY_MAX_SRC + 1));
    std::vector<std::string> names(count);
    std::vector<const sy_node*> pointers(count);
    Reader in(p, n);
    // A tensor's descriptor; for a computation also its place in this rank's buffer.
    const auto tensor = [&](const WireTensor& t, size_t slot, std::string& why) -> sy_tensor* {
        if (!t.present) return nullptr;
        sy_tensor& out = tensors[slot];
        out = sy_tensor{};
        out.struct_size = sizeof out;
        out.type = t.type;
        std::memcpy(out.ne, t.ne, sizeof out.ne);
        std::memcpy(out.nb, t.nb, sizeof out.nb);
        if (estimate) return &out;
        const auto it = w.buffers.find(t.handle);
        if (it == w.buffers.end()) {
            why = "a tensor in buffer " + std::to_string(t.handle) +
                  ", which this rank does not hold";
            return nullptr;
        }
        out.buffer = &it->second;
        out.data = static_cast<char*>(it->second.base) + t.offset;
        out.constant_id = t.constant_id;
        return &out;
    };
    for (uint64_t i = 0; i < count; ++i) {
        WireNode wn;
        if (!in.get(wn) || in.left() < size_t(std::max(0, wn.named_op_length)))
            return w.failed("compute: a malformed node list");
        names[i].assign(in.at(), size_t(std::max(0, wn.named_op_length)));
        in = Reader(in.at() + std::max(0, wn.named_op_length),
                    in.left() - size_t(std::max(0, wn.named_op_length)));
        sy_node& node = nodes[i];
        node = sy_node{};
        node.struct_size = sizeof node;
        node.op = wn.op;
        node.n_src = std::min<int32_t>(wn.n_src, SY_MAX_SRC);
        node.named_op = names[i].empty() ? nullptr : names[i].c_str();
        node.named_op_version = wn.named_op_version;
        std::memcpy(node.iparams, wn.iparams, sizeof node.iparams);
        std::memcpy(node.fparams, wn.fparams, sizeof node.fparams);
        std::string why;
        node.dst = tensor(wn.dst, i * (SY_MAX_SRC + 1), why);
        if (!why.empty() || node.dst == nullptr)
            return w.failed("compute: node " + std::to_string(i) + ": dst is " +
                            (why.empty() ? "missing" : why));
        for (int32_t s = 0; s < node.n_src; ++s) {
            node.src[s] = tensor(wn.src[s], i * (SY_MAX_SRC + 1) + 1 + size_t(s), why);
            if (!why.empty())
                return w.failed("compute: node " + std::to_string(i) + ": src" + std::to_string(s) +
                                " is " + why);
        }
        pointers[i] = &node;
        if (last) *last = wn.dst;
    }
    if (estimate) {
        const sy_status s = count == 1 && w.local->estimate
                                ? w.local->estimate(w.local->ctx, w.device, pointers[0], ns)
                                : sy::sdk::error(SY_ERR_UNSUPPORTED, "no estimate");
        if (s.code != SY_OK) *ns = -1;
        return;
    }
    sy_status s = w.local->compute(w.local->ctx, w.device, pointers.data(), count);
    if (s.code == SY_OK && w.local->synchronize) s = w.local->synchronize(w.local->ctx, w.device);
    if (s.code != SY_OK) w.failed(w.status_text(s, "compute"));
}

// Where the bytes of a set go: the buffer's own memory when host visible, else `staging` (then
// commit_set hands them to the local backend); nullptr (the failure recorded) for a range
// outside this rank's buffers.
char* set_target(Worker& w, uint64_t handle, uint64_t offset, uint64_t size,
                 std::vector<char>& staging) {
    const auto it = w.buffers.find(handle);
    if (it == w.buffers.end() || offset > it->second.size || size > it->second.size - offset) {
        w.failed("set: bytes past buffer " + std::to_string(handle) + "'s end");
        return nullptr;
    }
    if (it->second.host_visible) return static_cast<char*>(it->second.base) + offset;
    staging.resize(size);
    return staging.data();
}

void commit_set(Worker& w, uint64_t handle, uint64_t offset, uint64_t size, const char* at) {
    sy_buffer& b = w.buffers.at(handle);
    if (b.host_visible) return;
    const sy_status s = w.local->buffer_set(w.local->ctx, &b, offset, at, size);
    if (s.code) w.failed(w.status_text(s, "buffer_set"));
}

// A compute request: the sets it carries, then its nodes; answered when they are done, with the
// last node's result when it is contiguous and small enough (rank 0 reads it next, as a rule:
// an expert part's weighted sum, a pipeline stage's output).
std::string compute_request(Worker& w, const Header& h, const char* rest, size_t rest_size) {
    Reader in(rest, rest_size);
    for (uint64_t i = 0; i < h.b; ++i) {
        WireSet ws{};
        if (!in.get(ws) || in.left() < ws.payload) {
            w.failed("compute: a malformed set");
            in = Reader(in.at(), 0);
            break;
        }
        std::vector<char> staging;
        if (char* at = set_target(w, ws.handle, ws.offset, ws.size, staging)) {
            const bool ok =
                ws.sparse ? unpack_sparse(in.at(), ws.payload, at, ws.size) : ws.payload == ws.size;
            if (ok && !ws.sparse) std::memcpy(at, in.at(), ws.size);
            if (ok)
                commit_set(w, ws.handle, ws.offset, ws.size, at);
            else
                w.failed("compute: a malformed set");
        }
        in = Reader(in.at() + ws.payload, in.left() - ws.payload);
    }
    WireTensor last{};
    if (w.failure.empty()) compute(w, in.at(), in.left(), h.a, false, nullptr, &last);
    const std::string failure = std::exchange(w.failure, std::string());
    Header answer{failure.empty() ? uint64_t(SY_OK) : uint64_t(SY_ERR_BACKEND)};
    ComputeAnswer ca;
    ca.text = uint32_t(failure.size());
    std::vector<char> dense, sparse;
    const char* payload = nullptr;
    if (failure.empty() && last.present && h.c == 0) {
        sy_tensor t{};
        t.struct_size = sizeof t;
        t.type = last.type;
        std::memcpy(t.ne, last.ne, sizeof t.ne);
        std::memcpy(t.nb, last.nb, sizeof t.nb);
        const auto it = w.buffers.find(last.handle);
        const auto size = uint64_t(sy::sdk::nbytes(t));
        if (sy::sdk::is_contiguous(t) && size <= kPushLimit && it != w.buffers.end() &&
            last.offset <= it->second.size && size <= it->second.size - last.offset) {
            const char* at = static_cast<const char*>(it->second.base) + last.offset;
            bool ok = true;
            if (!it->second.host_visible) {
                dense.resize(size);
                ok = w.local->buffer_get(w.local->ctx, &it->second, last.offset, dense.data(), size)
                         .code == SY_OK;
                at = dense.data();
            }
            if (ok) {
                sparse = sparse_message(at, size);
                answer.b = 1;
                answer.c = last.handle;
                answer.d = last.offset;
                ca.size = size;
                ca.sparse = sparse.empty() ? 0 : 1;
                ca.payload = sparse.empty() ? size : sparse.size();
                payload = sparse.empty() ? at : sparse.data();
            }
        }
    }
    std::vector<char> message(sizeof answer + sizeof ca + failure.size() + ca.payload);
    char* q = message.data();
    std::memcpy(q, &answer, sizeof answer);
    std::memcpy(q + sizeof answer, &ca, sizeof ca);
    std::memcpy(q + sizeof answer + sizeof ca, failure.data(), failure.size());
    if (ca.payload)
        std::memcpy(q + sizeof answer + sizeof ca + failure.size(), payload, ca.payload);
    return send(message.data(), message.size(), 0, kReply, w.timeout);
}

// One request; false when the loop ends (BYE, or rank 0 cannot be answered).
bool handle(Worker& w, int tag, const std::vector<char>& bytes, std::string& error) {
    Header h;
    if (bytes.size() < sizeof h) {
        error = "a request shorter than its header (tag " + std::to_string(tag) + ")";
        return false;
    }
    std::memcpy(&h, bytes.data(), sizeof h);
    const char* rest = bytes.data() + sizeof h;
    const size_t rest_size = bytes.size() - sizeof h;
    std::string e;
    switch (tag) {
        case kPing: {
            std::vector<char> echo(sizeof h + rest_size);
            std::memcpy(echo.data(), bytes.data(), echo.size());
            e = send(echo.data(), echo.size(), 0, kReply, w.timeout);
            break;
        }
        case kAlloc: {
            sy_buffer b{};
            b.struct_size = sizeof b;
            const sy_status s = w.local->buffer_alloc(w.local->ctx, w.device, h.a, &b);
            if (s.code != SY_OK) {
                e = reply(w, {uint64_t(s.code)}, w.status_text(s, "buffer_alloc"));
                break;
            }
            const uint64_t id = w.next++;
            w.buffers[id] = b;
            e = reply(w, {SY_OK, id});
            break;
        }
        case kFree: {
            const auto it = w.buffers.find(h.a);
            if (it == w.buffers.end()) {
                w.failed("free: no buffer " + std::to_string(h.a));
                break;
            }
            w.local->buffer_free(w.local->ctx, &it->second);
            w.buffers.erase(it);
            break;
        }
        case kSet: {
            // The bytes come whether or not they can be kept.
            std::vector<char> staging;
            char* at = set_target(w, h.a, h.b, h.c, staging);
            if (at == nullptr) staging.resize(h.c);
            e = h.d == 1 ? receive_sparse(at ? at : staging.data(), h.c, 0, w.timeout)
                         : receive_data(at ? at : staging.data(), h.c, 0, w.timeout);
            if (at != nullptr && e.empty()) commit_set(w, h.a, h.b, h.c, at);
            break;
        }
        case kGet: {
            const auto it = w.buffers.find(h.a);
            const bool bad =
                it == w.buffers.end() || h.b > it->second.size || h.c > it->second.size - h.b;
            std::vector<char> staging;
            char* at = nullptr;
            if (!bad && it->second.host_visible) at = static_cast<char*>(it->second.base) + h.b;
            if (!bad && at == nullptr) {
                staging.resize(h.c);
                at = staging.data();
            }
            if (bad) {
                e = reply(w, {SY_ERR_INVALID_ARGUMENT}, "get: bytes past the buffer's end");
                break;
            }
            if (!it->second.host_visible) {
                const sy_status s = w.local->buffer_get(w.local->ctx, &it->second, h.b, at, h.c);
                if (s.code) {
                    e = reply(w, {uint64_t(s.code)}, w.status_text(s, "buffer_get"));
                    break;
                }
            }
            // Zero blocks (rows of tokens routed to none of this rank's experts) stay here.
            const std::vector<char> sparse = sparse_message(at, h.c);
            e = reply(w, {SY_OK, sparse.empty() ? 0u : 1u});
            if (e.empty())
                e = sparse.empty() ? send_data(at, h.c, 0, w.timeout)
                                   : send(sparse.data(), sparse.size(), 0, kData, w.timeout);
            break;
        }
        case kFile: {
            // Is this rank's shard the same file as rank 0's (size, fingerprint)?
            if (h.a >= w.files.size()) {
                e = reply(w, {SY_ERR_UNSUPPORTED}, "no model file given to this worker (-m)");
                break;
            }
            const std::string& path = w.files[h.a];
            const int fd = w.fds[h.a];
            struct stat st {};
            if (fd < 0 || ::fstat(fd, &st) != 0) {
                e = reply(w, {SY_ERR_INVALID_ARGUMENT}, "cannot read its model file " + path);
                break;
            }
            const uint64_t size = uint64_t(st.st_size), n = std::min(size, kFingerprintBytes);
            std::vector<unsigned char> first(n), last(n);
            const bool read = ::pread(fd, first.data(), n, 0) == ssize_t(n) &&
                              ::pread(fd, last.data(), n, off_t(size - n)) == ssize_t(n);
            if (!read || size != h.b || fingerprint(first.data(), n, last.data(), n, size) != h.c) {
                e = reply(w, {SY_ERR_INVALID_ARGUMENT},
                          "its model file " + path + " (" + std::to_string(size) +
                              " bytes) is not rank 0's (" + std::to_string(h.b) + " bytes" +
                              (size == h.b ? ", other contents" : "") + ")");
                break;
            }
            e = reply(w, {SY_OK});
            break;
        }
        case kSetFile: {
            uint32_t shard = 0;
            Reader extra(rest, rest_size);
            const auto it = w.buffers.find(h.a);
            if (!extra.get(shard) || shard >= w.fds.size() || it == w.buffers.end() ||
                h.b > it->second.size || h.c > it->second.size - h.b) {
                w.failed("loading weights: a bad request");
                break;
            }
            std::vector<char> staging;
            if (!it->second.host_visible) staging.resize(h.c);
            char* at = it->second.host_visible ? static_cast<char*>(it->second.base) + h.b
                                               : staging.data();
            for (uint64_t done = 0; done < h.c;) {
                const ssize_t got = ::pread(w.fds[shard], at + done, h.c - done, off_t(h.d + done));
                if (got <= 0) {
                    w.failed("loading weights from " + w.files[shard] + ": a short read");
                    break;
                }
                done += uint64_t(got);
            }
            if (!it->second.host_visible && w.failure.empty()) {
                const sy_status s = w.local->buffer_set(w.local->ctx, &it->second, h.b, at, h.c);
                if (s.code) w.failed(w.status_text(s, "buffer_set"));
            }
            break;
        }
        case kCompute: e = compute_request(w, h, rest, rest_size); break;
        case kEstimate: {
            double ns = -1;
            const std::string before = w.failure;
            compute(w, rest, rest_size, 1, true, &ns);
            w.failure = before;  // a node it cannot judge is no failure of the rank
            uint64_t bits = 0;
            std::memcpy(&bits, &ns, sizeof bits);
            e = reply(w, {ns >= 0 ? uint64_t(SY_OK) : uint64_t(SY_ERR_UNSUPPORTED), bits});
            break;
        }
        case kSync: {
            const std::string f = w.failure;
            w.failure.clear();
            e = f.empty() ? reply(w, {SY_OK}) : reply(w, {SY_ERR_BACKEND}, f);
            break;
        }
        case kOption: {
            const std::string key(rest, strnlen(rest, rest_size));
            const std::string value =
                key.size() + 1 < rest_size
                    ? std::string(rest + key.size() + 1,
                                  strnlen(rest + key.size() + 1, rest_size - key.size() - 1))
                    : std::string();
            const sy_status s = w.local->set_option
                                    ? w.local->set_option(w.local->ctx, key.c_str(), value.c_str())
                                    : sy::sdk::error(SY_ERR_UNSUPPORTED, "no options");
            e = reply(w, {uint64_t(s.code)}, s.code ? w.status_text(s, "option") : std::string());
            break;
        }
        case kBye: return false;
        default: error = "an unknown request (tag " + std::to_string(tag) + ")"; return false;
    }
    if (!e.empty()) {
        error = "answering rank 0: " + e;
        return false;
    }
    return true;
}

}  // namespace
}  // namespace sy::mpi

// Serves rank 0 with `local` (device `device`) until it says goodbye; `files` are this rank's
// copy of the model (its shards in order), from which it loads the weights rank 0 places here.
// Returns 0, or 1 with `error` filled: not under mpirun, this is rank 0, no rank 0 contacted us
// within wait_seconds, rank 0 runs another version, or a transfer failed.
extern "C" SY_EXPORT int32_t sy_mpi_worker(const sy_plugin_api* local, int32_t device,
                                           const char* version, const char* const* files,
                                           size_t n_files, double wait_seconds, char* error,
                                           size_t error_size) {
    using namespace sy::mpi;
    const auto out = [&](const std::string& message) {
        std::snprintf(error, error_size, "%s", message.c_str());
        return 1;
    };
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        int provided = 0;
        if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
            return out("MPI_Init_thread failed");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const auto finish = [&](int code, const std::string& message) {
        MPI_Finalize();
        return code == 0 ? 0 : out(message);
    };
    if (size < 2 || rank == 0)
        return finish(
            1, size < 2 ? "the only rank of its job (not started by mpirun beside a rank 0: mpirun "
                          "-np 1 switchyard run ... : -np N switchyard worker)"
                        : "this is rank 0, which runs the model (run, serve, bench ...)"
                          ", not a worker");
    Worker w;
    w.local = local;
    w.device = device;
    for (size_t i = 0; i < n_files; ++i) {
        w.files.emplace_back(files[i]);
        w.fds.push_back(::open(files[i], O_RDONLY | O_CLOEXEC));
    }
    std::vector<char> bytes;
    std::string error_text;
    // One session per load of rank 0's backend: HELLO, requests, BYE; EXIT when rank 0 exits.
    for (bool first = true;; first = false) {
        int tag = 0;
        if (std::string e =
                receive(bytes, 0, MPI_ANY_TAG, first ? wait_seconds : 1e9, nullptr, &tag);
            !e.empty()) {
            error_text = first ? "rank 0 did not contact this worker (" + e + ")"
                               : "waiting for rank 0: " + e;
            break;
        }
        if (tag == kExit) break;
        if (tag != kHello) {
            error_text = "a request (tag " + std::to_string(tag) + ") before rank 0's HELLO";
            break;
        }
        Reader in(bytes.data() + std::min(bytes.size(), sizeof(Header)),
                  bytes.size() - std::min(bytes.size(), sizeof(Header)));
        uint32_t protocol = 0;
        std::string theirs;
        if (!in.get(protocol) || !in.get_string(theirs)) return finish(1, "a malformed HELLO");
        const std::string ours = version ? version : "";
        if (protocol != kProtocol || theirs != ours) {
            Writer no;
            no.put(Header{SY_ERR_ABI});
            no.put_string("it runs switchyard " + ours + " (mpi protocol " +
                          std::to_string(kProtocol) + "), rank 0 runs " + theirs + " (protocol " +
                          std::to_string(protocol) + ")");
            send(no.bytes.data(), no.bytes.size(), 0, kReply, w.timeout);
            return finish(1, "rank " + std::to_string(rank) + ": rank 0 runs switchyard " + theirs +
                                 " (mpi protocol " + std::to_string(protocol) + "), this rank " +
                                 ours + " (protocol " + std::to_string(kProtocol) + ")");
        }
        const std::vector<char> description = describe(w, ours.c_str());
        if (std::string e = send(description.data(), description.size(), 0, kReply, w.timeout);
            !e.empty())
            return finish(1, "answering rank 0: " + e);
        int got = 0;
        while (true) {
            // Idle while rank 0 works or waits for its user: no deadline here.
            if (std::string e = receive(bytes, 0, MPI_ANY_TAG, 1e9, nullptr, &got); !e.empty()) {
                error_text = "waiting for rank 0: " + e;
                break;
            }
            if (got == kExit || !handle(w, got, bytes, error_text)) break;
        }
        for (auto& [id, b] : w.buffers) local->buffer_free(local->ctx, &b);
        w.buffers.clear();
        w.failure.clear();
        if (got == kExit || !error_text.empty()) break;
    }
    for (int fd : w.fds)
        if (fd >= 0) ::close(fd);
    return finish(error_text.empty() ? 0 : 1, "rank " + std::to_string(rank) + ": " + error_text);
}
