#include "device_facts.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "switchyard/sdk.hpp"
#include "thread_pool.hpp"

namespace sy::cpu {
namespace {

// Value of the first line "key<spaces>: value" of a /proc file, or "".
std::string proc_field(const char* file, const char* key) {
    std::ifstream in(file);
    std::string line;
    const size_t key_len = std::strlen(key);
    while (std::getline(in, line)) {
        if (line.compare(0, key_len, key) != 0) continue;
        const size_t colon = line.find(':', key_len);
        if (colon == std::string::npos) continue;
        // The key must end at the colon (modulo padding): "cpu MHz" must not match "cpu MHz2".
        if (line.find_first_not_of(" \t", key_len) != colon) continue;
        const size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? std::string() : line.substr(start);
    }
    return {};
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};

// Best of several passes of summing 64-bit words of a 64 MiB buffer, one slice per thread. The
// buffer is written first so that every page is really mapped.
double measure_read_bandwidth(ThreadPool& pool) {
    constexpr size_t kBytes = size_t(64) << 20;
    std::unique_ptr<void, FreeDeleter> memory(std::aligned_alloc(4096, kBytes));
    if (!memory) return 0.0;
    auto* words = static_cast<uint64_t*>(memory.get());
    const int64_t n_words = int64_t(kBytes / sizeof(uint64_t));
    const int64_t n_tasks = pool.size();
    const int64_t per_task = (n_words + n_tasks - 1) / n_tasks;
    auto slice = [&](int64_t task) {
        const int64_t begin = task * per_task;
        return std::pair{begin, std::min(n_words, begin + per_task)};
    };
    pool.parallel_for(n_tasks, [&](int64_t task) {
        const auto [begin, end] = slice(task);
        for (int64_t i = begin; i < end; ++i) words[i] = uint64_t(i);
    });
    std::vector<uint64_t> sums(size_t(n_tasks), 0);
    double best = 1e30;
    // At least ten passes over at least 40 ms: on a shared host a worker's core can be taken
    // for a few milliseconds at a time, so a few short passes can all measure far less than the
    // bandwidth (docs/design-measurements.md#cpu-bandwidth-passes), and the cost model would then
    // underrate the cpu's speed for the whole run.
    const Clock::time_point first = Clock::now();
    for (int pass = 0; pass < 10 || seconds_since(first) < 0.04; ++pass) {
        const Clock::time_point start = Clock::now();
        pool.parallel_for(n_tasks, [&](int64_t task) {
            const auto [begin, end] = slice(task);
            uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
            int64_t i = begin;
            for (; i + 4 <= end; i += 4) {
                s0 += words[i];
                s1 += words[i + 1];
                s2 += words[i + 2];
                s3 += words[i + 3];
            }
            for (; i < end; ++i) s0 += words[i];
            sums[size_t(task)] += s0 + s1 + s2 + s3;  // keeps the loads alive
        });
        best = std::min(best, seconds_since(start));
    }
    return best > 0.0 ? double(kBytes) / best : 0.0;
}

// Best of several batches, like the bandwidth: on a busy machine a single batch measures the
// other processes as much as the pool.
// The fastest of 200 jobs, each timed alone: on a machine that other processes keep busy, most
// jobs wait for a descheduled worker (milliseconds), which is the load's cost, not the pool's.
double measure_empty_job_ns(ThreadPool& pool) {
    constexpr int kJobs = 200;
    const int64_t n_tasks = pool.size();
    pool.parallel_for(n_tasks, [](int64_t) {});  // wake everything once
    double best = 1e30;
    for (int i = 0; i < kJobs; ++i) {
        const Clock::time_point start = Clock::now();
        pool.parallel_for(n_tasks, [](int64_t) {});
        best = std::min(best, seconds_since(start) * 1e9);
    }
    return best;
}

}  // namespace

std::string cpu_model_name() {
    std::string name = proc_field("/proc/cpuinfo", "model name");
    return name.empty() ? "x86-64 CPU" : name;
}

double nominal_clock_hz() {
    const std::string mhz = proc_field("/proc/cpuinfo", "cpu MHz");
    const double value = mhz.empty() ? 0.0 : std::strtod(mhz.c_str(), nullptr);
    return value > 100.0 ? value * 1e6 : 2.5e9;
}

uint64_t memory_total_bytes() {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

uint64_t memory_available_bytes() {
    if (const uint64_t available = sdk::available_memory(); available > 0) return available;
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

Calibration measure_calibration(ThreadPool& pool) {
    Calibration c;
    c.memory_bandwidth = measure_read_bandwidth(pool);
    if (c.memory_bandwidth <= 0.0)
        c.memory_bandwidth = 20e9;  // could not allocate: a DDR4-ish guess
    c.launch_overhead_ns = measure_empty_job_ns(pool);
    return c;
}

}  // namespace sy::cpu
