// MUL_MAT, MUL_MAT_ID and moe.fused_up_gate as engine GEMMs (ops.h, named_ops.h).
//
// Each weight matrix (or expert) becomes one GEMM: its activation rows are packed into the
// engine's operand type, the weights are used in place when the engine takes their type and
// layout (f32, and bf16 on an engine with bf16 products) or converted once per call (f16 to
// f32, which is exact; block types to bf16, or to f32 on an engine without bf16), and the
// results go straight into dst when its rows are evenly spaced, else through a scratch and a
// scatter. Expert products group the (slot, token) pairs by expert first.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "engine.hpp"
#include "switchyard/plugin.h"

namespace sy::blas {

// A growable 64-byte aligned scratch area, kept between calls.
class Scratch {
  public:
    void* get(size_t bytes);

  private:
    struct Free {
        void operator()(void* p) const { std::free(p); }
    };
    std::unique_ptr<void, Free> data_;
    size_t size_ = 0;
};

struct Workspace {
    Engine* engine = nullptr;
    int threads = 1;
    // Operand types: block-quantized weights are widened to bf16 when true (and the engine has
    // bf16 products), else to f32; f16 weights to f32 (exact), or rounded to bf16 when
    // f16_to_bf16 (the option f16_weights = "bf16": bf16's speed, bf16's precision).
    bool block_to_bf16 = true;
    bool f16_to_bf16 = false;
    Scratch a, w, w2, c, c2;
};

// Expert products pad each expert's rows to a multiple of this (zero rows), so that a prompt's
// products need a handful of prepared shapes instead of one per row count.
constexpr int64_t kExpertRowQuantum = 16;

// The engine operand type a weight type is multiplied in.
GemmType gemm_type(const Workspace& ws, int32_t weight_type);

// Runs one node already validated (kFull). Throws std::runtime_error on an engine failure.
void mul_mat(Workspace& ws, const sy_node& node);
void mul_mat_id(Workspace& ws, const sy_node& node);  // also moe.fused_up_gate

// Converts n values of `type` (a float or block type) at src into the operand type at dst.
void convert_row(int32_t type, const void* src, GemmType to, void* dst, int64_t n);

}  // namespace sy::blas
