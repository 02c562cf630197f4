#include "profile.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "switchyard/dtype.h"
#include "switchyard/sdk.hpp"

namespace sy::cuda {
namespace {

// "blk.12.ffn_down_exps.weight" -> "ffn_down_exps"; "l_out-3" -> "l_out".
std::string without_layer(const char* name) {
    static const std::regex blk(R"(^blk\.\d+\.)"), suffix(R"((-\d+|\.weight)$)");
    std::string s = std::regex_replace(name, blk, "");
    s = std::regex_replace(s, suffix, "");
    return s;
}

std::string key_of(const sy_node& node) {
    std::string key = sdk::op_name(node.op) ? sdk::op_name(node.op) : "op";
    if (node.op == SY_OP_NAMED && node.named_op) key = node.named_op;
    const sy_tensor* named = node.src[0] && node.src[0]->name ? node.src[0] : node.dst;
    if (named && named->name) key += " " + without_layer(named->name);
    if (node.src[0]) key += std::string(" ") + sy_dtype_info(node.src[0]->type).name;
    if ((node.op == SY_OP_MUL_MAT || node.op == SY_OP_MUL_MAT_ID) && node.src[1]) {
        const sy_tensor& b = *node.src[1];
        key += " K=" + std::to_string(b.ne[0]) +
               " cols=" + std::to_string(b.ne[1] * b.ne[2] * b.ne[3]);
    }
    return key;
}

}  // namespace

NodeProfile::NodeProfile() {
    const char* v = std::getenv("SWITCHYARD_CUDA_PROFILE");
    enabled_ = v != nullptr && std::strcmp(v, "0") != 0 && v[0] != '\0';
}

NodeProfile::~NodeProfile() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (!enabled_ || calls_ == 0) return;
    std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    double all = 0;
    for (const auto& r : rows) all += r.second.ms;
    std::fprintf(stderr,
                 "cuda profile: %ld compute() calls, %.3f ms of device time between their first "
                 "and last launch, %.3f ms of host time inside them\n",
                 calls_, all, host_seconds_ * 1e3);
    std::fprintf(stderr, "%10s %6s %8s %10s  %s\n", "ms", "%", "count", "us each", "node");
    for (const auto& [key, t] : rows)
        std::fprintf(stderr, "%10.3f %6.1f %8ld %10.2f  %s\n", t.ms,
                     all > 0 ? 100.0 * t.ms / all : 0.0, t.count, 1e3 * t.ms / double(t.count),
                     key.c_str());
}

void NodeProfile::begin(cudaStream_t stream, size_t count) {
    stream_ = stream;
    while (events_.size() < count + 1) {
        cudaEvent_t e;
        cudaEventCreate(&e);
        events_.push_back(e);
    }
    nodes_.assign(count, nullptr);
}

void NodeProfile::mark(const sy_node& node, size_t i) {
    nodes_[i] = &node;
    cudaEventRecord(events_[i], stream_);
}

void NodeProfile::end(double host_seconds) {
    const size_t n = nodes_.size();
    cudaEventRecord(events_[n], stream_);
    cudaEventSynchronize(events_[n]);
    for (size_t i = 0; i < n; ++i) {
        if (nodes_[i] == nullptr) continue;
        size_t next = i + 1;
        while (next < n && nodes_[next] == nullptr) ++next;
        float ms = 0;
        cudaEventElapsedTime(&ms, events_[i], events_[next]);
        Total& t = totals_[key_of(*nodes_[i])];
        t.ms += ms;
        t.count += 1;
    }
    host_seconds_ += host_seconds;
    calls_ += 1;
}

}  // namespace sy::cuda
