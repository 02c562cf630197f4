// The mpi plugin's messages between rank 0 (the backend, mpi_backend.cpp) and a worker rank
// (worker.cpp), over MPI_COMM_WORLD point to point. Every request is one message whose tag is
// its opcode and whose bytes start with a Header; bulk bytes follow as kData messages of at most
// kChunk bytes. A worker handles requests in order, so an answer comes after every earlier
// request's work. SET and FREE are not answered (their first failure is the next answer's);
// COMPUTE carries the small sets before it and is answered when done, with its last node's
// result: in a decode step, one message each way per rank and MoE layer. Waits poll MPI_Test
// against a deadline, so a peer that stopped answering is an error naming its rank, not a
// hang.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "switchyard/plugin.h"

namespace sy::mpi {

// Bumped whenever a message changes; both sides refuse another.
constexpr uint32_t kProtocol = 3;

enum Tag : int {
    kHello = 101,     // rank 0 -> worker: protocol, version string; answer: Info
    kPing = 102,      // answered with the same bytes (link measurement)
    kAlloc = 103,     // a = size; answer: status, a = handle
    kFree = 104,      // a = handle
    kSet = 105,       // a = handle, b = offset, c = size, d = 1 sparse; then the bytes (kData)
    kGet = 106,       // a = handle, b = offset, c = size; answer: status, b = 1 sparse; bytes
    kCompute = 107,   // a = node count, b = sets (WireSet + bytes each) before the nodes,
                      // c = 1: no result pushed back;
                      // answer: ComputeAnswer (status, the last node's result pushed back)
    kSync = 108,      // answer: status (the first failure since the last SYNC)
    kOption = 109,    // key \0 value; answer: status
    kBye = 110,       // the backend is unloaded: the worker waits for the next HELLO
    kExit = 114,      // rank 0 exits: so does the worker
    kFile = 111,      // a = shard, b = size, c = fingerprint; answer: status (the worker's copy)
    kEstimate = 113,  // one node, descriptors only; answer: status, b = the nanoseconds' bits
    kSetFile = 112,   // a = handle, b = offset, c = size, d = file offset; then u32 shard
    kReply = 120,     // answers
    kData = 121,      // bulk bytes
};

constexpr uint64_t kChunk = uint64_t(1) << 28;  // 256 MiB per data message

struct Header {
    uint64_t a = 0, b = 0, c = 0, d = 0;
};

// A model file's fingerprint: FNV-1a over its first and last MiB (the header names every tensor
// and its offset; the end holds the last tensors' bytes) and its size.
inline uint64_t fingerprint(const unsigned char* first, size_t n_first, const unsigned char* last,
                            size_t n_last, uint64_t size) {
    uint64_t h = 1469598103934665603ull;
    const auto mix = [&](const unsigned char* p, size_t n) {
        for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    };
    mix(first, n_first);
    mix(last, n_last);
    mix(reinterpret_cast<const unsigned char*>(&size), sizeof size);
    return h;
}
constexpr uint64_t kFingerprintBytes = uint64_t(1) << 20;

// A set sent with a compute request (rank 0 holds small sets until the next request): its
// bytes follow, `payload` of them (a sparse message when `sparse`).
struct WireSet {
    uint64_t handle, offset, size, payload;
    uint32_t sparse, pad;
};

// The answer to a compute request, sent when the nodes are done: the status (a = code), and,
// when b = 1, the bytes of the last node's result (handle c, offset d) that follow the failure
// text: `size` bytes as `payload` bytes (a sparse message when `sparse`). Rank 0 reads it on
// synchronize and answers a get of those bytes from it, without a request.
struct ComputeAnswer {
    uint64_t size = 0, payload = 0;
    uint32_t sparse = 0, text = 0;
};
// Results up to this size are pushed back with the compute answer.
constexpr uint64_t kPushLimit = uint64_t(64) << 20;
// Sets up to this size wait for the next compute request (which carries them).
constexpr uint64_t kBundleLimit = uint64_t(4) << 20;

// Decodes a sparse message (sparse_message) of n bytes from memory into p.
inline bool unpack_sparse(const char* message, uint64_t size, char* p, uint64_t n);

// A tensor as the other side rebuilds it: its buffer's handle and the offset of element 0.
struct WireTensor {
    int32_t type;
    int32_t present;
    int64_t ne[SY_MAX_DIMS];
    int64_t nb[SY_MAX_DIMS];
    uint64_t handle;
    uint64_t offset;
    uint64_t constant_id;
};

struct WireNode {
    int32_t op;
    int32_t n_src;
    uint32_t named_op_version;
    int32_t named_op_length;  // bytes of the name that follow the tensors (0: none)
    int32_t iparams[SY_MAX_PARAMS];
    float fparams[SY_MAX_PARAMS];
    WireTensor dst;
    WireTensor src[SY_MAX_SRC];
};

// Appends and reads plain bytes.
class Writer {
  public:
    template <class T>
    void put(const T& v) {
        const auto* p = reinterpret_cast<const char*>(&v);
        bytes.insert(bytes.end(), p, p + sizeof v);
    }
    void put_string(const std::string& s) {
        put(uint32_t(s.size()));
        bytes.insert(bytes.end(), s.begin(), s.end());
    }
    std::vector<char> bytes;
};

class Reader {
  public:
    Reader(const char* p, size_t n) : p_(p), end_(p + n) {}
    template <class T>
    bool get(T& v) {
        if (size_t(end_ - p_) < sizeof v) return false;
        std::memcpy(&v, p_, sizeof v);
        p_ += sizeof v;
        return true;
    }
    bool get_string(std::string& s) {
        uint32_t n = 0;
        if (!get(n) || size_t(end_ - p_) < n) return false;
        s.assign(p_, n);
        p_ += n;
        return true;
    }
    const char* at() const { return p_; }
    size_t left() const { return size_t(end_ - p_); }

  private:
    const char* p_;
    const char* end_;
};

// Waits for a request to finish, polling until the deadline. Returns an empty string, or what
// went wrong.
inline std::string wait(MPI_Request& request, double seconds, MPI_Status* status = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int done = 0;
    int spins = 0;
    while (true) {
        MPI_Status st;
        if (MPI_Test(&request, &done, &st) != MPI_SUCCESS) return "MPI_Test failed";
        if (done) {
            if (status) *status = st;
            return {};
        }
        if (std::chrono::steady_clock::now() > deadline) {
            MPI_Cancel(&request);
            return "no answer within " + std::to_string(int(seconds)) + " s";
        }
        // Spin briefly (a loopback or fabric answer comes in microseconds), then yield.
        if (++spins > 200) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
}

// Sends bytes with a tag (blocking until the buffer may be reused, within the deadline).
inline std::string send(const void* data, uint64_t size, int rank, int tag, double seconds) {
    MPI_Request r;
    if (MPI_Isend(data, int(size), MPI_BYTE, rank, tag, MPI_COMM_WORLD, &r) != MPI_SUCCESS)
        return "MPI_Isend failed";
    return wait(r, seconds);
}

// Receives one message of any size with a tag from a rank into `out`.
inline std::string receive(std::vector<char>& out, int rank, int tag, double seconds,
                           int* source = nullptr, int* got_tag = nullptr) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int flag = 0, spins = 0;
    MPI_Status st;
    while (true) {
        if (MPI_Iprobe(rank, tag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
            return "MPI_Iprobe failed";
        if (flag) break;
        if (std::chrono::steady_clock::now() > deadline)
            return "no message within " + std::to_string(int(seconds)) + " s";
        if (++spins > 200) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    out.resize(size_t(count));
    if (MPI_Recv(out.data(), count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return "MPI_Recv failed";
    if (source) *source = st.MPI_SOURCE;
    if (got_tag) *got_tag = st.MPI_TAG;
    return {};
}

// Bulk bytes as kData chunks, and their receipt into memory.
inline std::string send_data(const char* p, uint64_t size, int rank, double seconds) {
    for (uint64_t done = 0; done < size || size == 0; done += kChunk) {
        const uint64_t n = std::min(kChunk, size - done);
        if (std::string e = send(p + done, n, rank, kData, seconds); !e.empty()) return e;
        if (size == 0) break;
    }
    return {};
}

inline std::string receive_data(char* p, uint64_t size, int rank, double seconds) {
    for (uint64_t done = 0; done < size || size == 0; done += kChunk) {
        const uint64_t n = std::min(kChunk, size - done);
        MPI_Request r;
        if (MPI_Irecv(p + done, int(n), MPI_BYTE, rank, kData, MPI_COMM_WORLD, &r) != MPI_SUCCESS)
            return "MPI_Irecv failed";
        if (std::string e = wait(r, seconds); !e.empty()) return e;
        if (size == 0) break;
    }
    return {};
}

// Bulk bytes with runs of zeros (the rows of tokens that no expert of a rank is routed to) go as
// one kData message: a bitmap of the kSparseBlock-byte blocks that are not all zero, then those
// blocks; the receiver zeroes the others. Used when it saves more than the bitmap and 1 KiB.
constexpr uint64_t kSparseBlock = 256;

// The sparse message for n bytes at p, or an empty vector when the dense bytes are better.
inline std::vector<char> sparse_message(const char* p, uint64_t n) {
    if (n < 8 * kSparseBlock || n > kChunk) return {};
    const uint64_t blocks = (n + kSparseBlock - 1) / kSparseBlock, map = (blocks + 7) / 8;
    std::vector<unsigned char> kept(map, 0);
    uint64_t zero = 0;
    for (uint64_t b = 0; b < blocks; ++b) {
        const char* q = p + b * kSparseBlock;
        const uint64_t len = std::min(kSparseBlock, n - b * kSparseBlock);
        bool all_zero = true;
        for (uint64_t i = 0; i < len && all_zero; i += 8) {
            uint64_t v = 0;
            std::memcpy(&v, q + i, std::min<uint64_t>(8, len - i));
            all_zero = v == 0;
        }
        if (all_zero)
            ++zero;
        else
            kept[b / 8] |= uint8_t(1u << (b % 8));
    }
    if (zero * kSparseBlock <= map + 1024) return {};  // saves less than the bitmap and 1 KiB
    std::vector<char> out(map);
    std::memcpy(out.data(), kept.data(), map);
    out.reserve(map + n - zero * kSparseBlock);
    for (uint64_t b = 0; b < blocks; ++b)
        if (kept[b / 8] & (1u << (b % 8))) {
            const char* q = p + b * kSparseBlock;
            out.insert(out.end(), q, q + std::min(kSparseBlock, n - b * kSparseBlock));
        }
    return out;
}

inline bool unpack_sparse(const char* message, uint64_t size, char* p, uint64_t n) {
    const uint64_t blocks = (n + kSparseBlock - 1) / kSparseBlock, map = (blocks + 7) / 8;
    if (size < map) return false;
    const auto* kept = reinterpret_cast<const unsigned char*>(message);
    uint64_t at = map;
    for (uint64_t b = 0; b < blocks; ++b) {
        const uint64_t len = std::min(kSparseBlock, n - b * kSparseBlock);
        char* q = p + b * kSparseBlock;
        if (kept[b / 8] & (1u << (b % 8))) {
            if (size - at < len) return false;
            std::memcpy(q, message + at, len);
            at += len;
        } else {
            std::memset(q, 0, len);
        }
    }
    return at == size;
}

// Receives a sparse message for n bytes into p. Returns what went wrong, or an empty string.
inline std::string receive_sparse(char* p, uint64_t n, int rank, double seconds,
                                  uint64_t* wire_bytes = nullptr) {
    std::vector<char> message;
    if (std::string e = receive(message, rank, kData, seconds); !e.empty()) return e;
    if (wire_bytes) *wire_bytes = message.size();
    return unpack_sparse(message.data(), message.size(), p, n) ? std::string()
                                                               : "a malformed sparse message";
}

}  // namespace sy::mpi
