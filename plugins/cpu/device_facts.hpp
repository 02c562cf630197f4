// Facts about the host the CPU device reports: what the OS says (model name, clock, memory) and
// what is measured once (memory bandwidth, the fixed cost of one parallel op).
#pragma once

#include <cstdint>
#include <string>

namespace sy::cpu {

class ThreadPool;

// "model name" of the first processor in /proc/cpuinfo, or "x86-64 CPU" when it is unreadable.
std::string cpu_model_name();

// Nominal clock in Hz: "cpu MHz" from /proc/cpuinfo (the current clock as the kernel last saw it,
// close enough to nominal under load), else 2.5 GHz, a typical server base clock.
double nominal_clock_hz();

uint64_t memory_total_bytes();      // sysconf(_SC_PHYS_PAGES) * page size
uint64_t memory_available_bytes();  // MemAvailable from /proc/meminfo, else _SC_AVPHYS_PAGES

struct Calibration {
    double memory_bandwidth = 0.0;    // bytes/s, streaming reads of 64 MiB over the pool
    double launch_overhead_ns = 0.0;  // one empty job over every thread (the fastest of 200)
};

// Takes a few milliseconds; run it once and cache the result.
Calibration measure_calibration(ThreadPool& pool);

}  // namespace sy::cpu
