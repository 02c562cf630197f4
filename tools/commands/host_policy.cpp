#include "commands/host_policy.hpp"

#include <fmt/format.h>
#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "switchyard/core/error.hpp"

namespace sy::tools {
namespace {

// "0-3,8,10-11" (sysfs cpulist) -> {0, 1, 2, 3, 8, 10, 11}.
std::vector<int> parse_cpu_list(const std::string& text) {
    std::vector<int> cpus;
    size_t start = 0;
    while (start < text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, comma - start);
        start = comma + 1;
        if (item.empty() || item == "\n") continue;
        const size_t dash = item.find('-');
        const int first = std::stoi(item.substr(0, dash));
        const int last = dash == std::string::npos ? first : std::stoi(item.substr(dash + 1));
        for (int c = first; c <= last; ++c) cpus.push_back(c);
    }
    return cpus;
}

// NUMA node -> its CPUs, from sysfs; nodes without CPUs are left out.
std::map<int, std::vector<int>> numa_nodes() {
    std::map<int, std::vector<int>> nodes;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with("node") || name.size() == 4 ||
            name.find_first_not_of("0123456789", 4) != std::string::npos)
            continue;
        std::ifstream in(entry.path() / "cpulist");
        std::string list;
        std::getline(in, list);
        std::vector<int> cpus = parse_cpu_list(list);
        if (!cpus.empty()) nodes[std::stoi(name.substr(4))] = std::move(cpus);
    }
    return nodes;
}

void set_cpus(const std::vector<int>& cpus, const std::string& mode) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        throw Error(fmt::format("--numa {}: cannot run on CPUs {}: {}", mode, cpus.front(),
                                std::strerror(errno)));
}

std::string cpu_range(const std::vector<int>& cpus) {
    return cpus.size() == 1 ? std::to_string(cpus.front())
                            : fmt::format("{}-{}", cpus.front(), cpus.back());
}

}  // namespace

std::string apply_numa(const std::string& mode) {
    const std::map<int, std::vector<int>> nodes = numa_nodes();
    if (nodes.size() <= 1)
        return fmt::format(
            "--numa {}: this machine has {} NUMA node, so there is nothing to place: threads and "
            "memory stay as they are",
            mode, nodes.empty() ? "no more than one" : "one");
    if (mode == "numactl") {
        cpu_set_t set;
        CPU_ZERO(&set);
        sched_getaffinity(0, sizeof set, &set);
        return fmt::format(
            "--numa numactl: threads stay on the {} CPUs this command was given "
            "(numactl's choice); {} NUMA nodes",
            CPU_COUNT(&set), nodes.size());
    }
    if (mode == "isolate") {
        const int cpu = sched_getcpu();
        for (const auto& [node, cpus] : nodes)
            if (std::find(cpus.begin(), cpus.end(), cpu) != cpus.end()) {
                set_cpus(cpus, mode);
                return fmt::format(
                    "--numa isolate: threads on node {} (CPUs {}), the node this "
                    "command started on; {} NUMA nodes",
                    node, cpu_range(cpus), nodes.size());
            }
        throw Error(fmt::format("--numa isolate: CPU {} belongs to no NUMA node in sysfs", cpu));
    }
    // distribute: every node's CPUs, and pages interleaved over the nodes.
    std::vector<int> all;
    unsigned long mask = 0;
    for (const auto& [node, cpus] : nodes) {
        all.insert(all.end(), cpus.begin(), cpus.end());
        if (node < int(8 * sizeof mask)) mask |= 1UL << node;
    }
    set_cpus(all, mode);
    const bool interleaved =
        syscall(SYS_set_mempolicy, MPOL_INTERLEAVE, &mask, 8 * sizeof mask) == 0;
    return fmt::format(
        "--numa distribute: threads over the {} CPUs of {} NUMA nodes{}", all.size(), nodes.size(),
        interleaved ? ", new memory interleaved over the nodes"
                    : fmt::format(" (memory not interleaved: {})", std::strerror(errno)));
}

WeightLock lock_weights(const gguf::Reader& file) {
    // One range per shard: from its first tensor's bytes to the end of its last.
    std::map<uint32_t, std::pair<const uint8_t*, const uint8_t*>> ranges;
    for (const gguf::TensorInfo& t : file.tensors()) {
        auto [it, fresh] = ranges.try_emplace(t.shard, t.data, t.data + t.nbytes);
        it->second.first = std::min(it->second.first, t.data);
        it->second.second = std::max(it->second.second, t.data + t.nbytes);
    }
    WeightLock out;
    const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
    for (const auto& [shard, range] : ranges) {
        const uintptr_t begin = reinterpret_cast<uintptr_t>(range.first) & ~(page - 1);
        const uintptr_t end = reinterpret_cast<uintptr_t>(range.second);
        if (mlock(reinterpret_cast<const void*>(begin), end - begin) != 0) {
            const int err = errno;
            rlimit limit{};
            getrlimit(RLIMIT_MEMLOCK, &limit);
            const std::string allowed =
                limit.rlim_cur == RLIM_INFINITY
                    ? "unlimited"
                    : fmt::format("{} KiB", static_cast<unsigned long long>(limit.rlim_cur / 1024));
            out.warning = fmt::format(
                "--mlock: could not lock {:.1f} MiB of weights in memory ({}); the limit of "
                "locked memory is {} (raise it with ulimit -l, or run with CAP_IPC_LOCK); "
                "going on without locking",
                double(end - begin) / 1048576.0, std::strerror(err), allowed);
            for (const auto& [s, r] : ranges) {
                const uintptr_t b = reinterpret_cast<uintptr_t>(r.first) & ~(page - 1);
                if (s == shard) break;
                munlock(reinterpret_cast<const void*>(b),
                        reinterpret_cast<uintptr_t>(r.second) - b);
            }
            out.bytes = 0;
            return out;
        }
        out.bytes += end - begin;
    }
    return out;
}

}  // namespace sy::tools
