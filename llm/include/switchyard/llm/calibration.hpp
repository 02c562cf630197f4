// Calibration (`switchyard calibrate`): real op times per backend over a model's mix of ops,
// shapes and types, as a cost table (core/cost_table.hpp) that placement then prefers over the
// plugins' hints.
//
// For each backend in turn, a session in which every node that backend supports runs on it (the
// rest where the hints put them) evaluates `batch` random tokens from an empty cache for every
// batch size: once to warm up, then `repetitions` times timed node by node (profile.hpp). Each
// node shape's median on each backend that ran it is one entry. Batch 1 is a generation step;
// larger batches are prompt ubatches (with --mla 3, those of 128 tokens or more take the
// decompressing prompt graph, as they will at run time).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "switchyard/core/cost_table.hpp"
#include "switchyard/llm/session.hpp"

namespace sy::llm {

struct CalibrationOptions {
    std::vector<int64_t> batches{1, 16, 64, 256, 512};  // each at most the ubatch and the context
    int repetitions = 3;
    // Told before each (backend, batch) measurement: "blas: batch 64 (7 of 10)".
    std::function<void(const std::string&)> progress;
};

// What one backend measured at one batch size: the sum of its nodes' medians, products apart.
struct CalibrationTotal {
    std::string backend;
    int64_t batch = 0;
    double product_ns = 0, other_ns = 0;
    int64_t product_nodes = 0, other_nodes = 0;
};

struct Calibration {
    CostTable table;
    std::vector<CalibrationTotal> totals;  // per measured backend and batch, in order
};

// Throws sy::Error for an empty or out-of-range batch list, a repetition count below 1, or a
// backend that supports none of the model's nodes.
Calibration calibrate(const Model& model, const SessionBackends& backends,
                      const CalibrationOptions& options);

}  // namespace sy::llm
