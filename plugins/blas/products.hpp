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
#include <map>
#include <memory>
#include <string>
#include <utility>

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

// Weights prepared once and kept (the option weight_cache_mib): a constant weight (one with a
// sy_tensor.constant_id, a model's) is, on first use, converted into its operand type and put in
// the engine's packed layout (oneDNN's blocked weights), or only converted (block types, f16
// rounded to bf16; see worth_keeping) on an engine without one, and the copy is reused by every
// later product, as long as the copies fit in the budget; a weight that does not fit is used in
// place or converted on every call, as without a cache. Nothing is evicted (a model's prompt passes
// read every weight in turn: an eviction order would only trade one weight's conversion for
// another's); release(id) frees a model's copies when the host unloads it, clear() all of them.
class WeightCache {
  public:
    struct Key {
        uint64_t constant_id;
        const void* data;  // the matrix's first byte (an expert's, for expert products)
        int32_t type;
        int64_t K, N, nb0, nb1;
        GemmType to;
        auto operator<=>(const Key&) const = default;
    };

    // The kept copy (rows of K values, packed), or nullptr.
    const void* find(const Key& key) const;
    // Memory for a new copy of `bytes`, or nullptr when it would exceed the budget (the caller
    // converts into scratch memory instead). Throws std::bad_alloc when the budget allows but
    // the allocation fails.
    void* insert(const Key& key, size_t bytes);
    // The cost model's question, asked before any copy exists (while plans are made): whether
    // the copies of the weight `name` of this constant id (`bytes` in all) will be kept. The
    // first weights asked about are promised room until the promises fill the budget, so that
    // a model larger than the budget is costed as kept only for the weights that will fit.
    bool promise(uint64_t constant_id, const std::string& name, size_t bytes);
    void erase(const Key& key);
    void release(uint64_t constant_id);
    void clear();

    uint64_t bytes() const { return bytes_; }
    // The budget in bytes; "auto" is resolved at the first copy or promise (when the model is
    // loaded), and shown as it would be now before that.
    uint64_t budget() const;
    void set_budget(uint64_t bytes) { budget_ = bytes, automatic_ = false; }
    void set_automatic_budget() { automatic_ = true, resolved_ = false; }

  private:
    uint64_t resolved_budget();

    struct Free {
        void operator()(void* p) const { std::free(p); }
    };
    struct Entry {
        std::unique_ptr<void, Free> data;
        size_t bytes = 0;
    };
    std::map<Key, Entry> entries_;
    std::map<std::pair<uint64_t, std::string>, size_t> promised_;
    uint64_t bytes_ = 0, budget_ = 0, promised_bytes_ = 0;
    bool automatic_ = true, resolved_ = false;
};

// The automatic budget: a quarter of the machine's memory, and at most half of what is available
// when it is resolved (MemAvailable, after the model was loaded), so that the copies leave room
// for a memory-mapped model in the page cache. A model larger than about half the memory wants
// weight_cache_mib set by hand (or 0).
uint64_t default_weight_cache_budget();

struct Workspace {
    Engine* engine = nullptr;
    int threads = 1;
    // Operand types: block-quantized weights are widened to bf16 when true (and the engine has
    // bf16 products), else to f32; f16 weights to f32 (exact), or rounded to bf16 when
    // f16_to_bf16 (the option f16_weights = "bf16": bf16's speed, bf16's precision).
    bool block_to_bf16 = true;
    bool f16_to_bf16 = false;
    Scratch a, w, w2, c, c2;
    WeightCache weights;
};

// Expert products pad each expert's rows to a multiple of this (zero rows), so that a prompt's
// products need a handful of prepared shapes instead of one per row count.
constexpr int64_t kExpertRowQuantum = 16;

// The engine operand type a weight type is multiplied in.
GemmType gemm_type(const Workspace& ws, int32_t weight_type);

// The cache key of the weight matrix {K, N} of `a` at `w` (a.data, or an expert's first byte)
// multiplied in type `to`; constant_id 0 when `a` is not constant.
WeightCache::Key weight_key(const sy_tensor& a, const void* w, GemmType to);

// Whether products take the weights of `a` as they are in type `to` (f32 or bf16 rows with
// element-sized steps).
bool operand_in_place(const sy_tensor& a, GemmType to);

// Whether a converted copy pays for its memory: block types (their decoding costs more than
// reading the copy) and roundings to bf16 do; f16 widened to f32 does not, packed or not (the
// copy is twice the source's bytes and the widening runs at memory speed: on mini F16, pp512
// 0.91x of the cpu alone with packed f32 copies, ~1.0x converting per call). Weights that the
// engine takes in place are kept only in its packed layout.
bool worth_keeping(int32_t type, GemmType to);

// Whether products of `a` in type `to` run on kept copies: `a` is constant, a copy is made for it
// (the engine packs its weights, or worth_keeping), and the copies of its `matrices` matrices
// are kept already (the first one is, when a.data is set) or would fit. `packed`: the copies are
// in the engine's packed layout.
bool weights_kept(Workspace& ws, const sy_tensor& a, GemmType to, double matrices, bool* packed);

// Runs one node already validated (kFull). Throws std::runtime_error on an engine failure.
void mul_mat(Workspace& ws, const sy_node& node);
void mul_mat_id(Workspace& ws, const sy_node& node);  // also moe.fused_up_gate

// Converts n values of `type` (a float or block type) at src into the operand type at dst.
void convert_row(int32_t type, const void* src, GemmType to, void* dst, int64_t n);

}  // namespace sy::blas
