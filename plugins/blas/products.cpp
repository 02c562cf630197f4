#include "products.hpp"

#include <immintrin.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/named_ops.h"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace sy::blas {

void* Scratch::get(size_t bytes) {
    if (bytes <= size_ && data_) return data_.get();
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) throw std::bad_alloc();
    data_.reset(p);
    size_ = rounded;
    return p;
}

namespace {

size_t element_bytes(GemmType t) {
    return t == GemmType::bf16 ? 2 : 4;
}

}  // namespace

const void* WeightCache::find(const Key& key) const {
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.data.get();
}

void* WeightCache::insert(const Key& key, size_t bytes) {
    if (bytes_ + bytes > resolved_budget()) return nullptr;
    const size_t rounded = (bytes + 63) / 64 * 64;
    std::unique_ptr<void, Free> p(std::aligned_alloc(64, rounded == 0 ? 64 : rounded));
    if (!p) throw std::bad_alloc();
    Entry& e = entries_[key];
    e.data = std::move(p);
    bytes_ += bytes - e.bytes;
    e.bytes = bytes;
    return e.data.get();
}

bool WeightCache::promise(uint64_t constant_id, const std::string& name, size_t bytes) {
    const auto key = std::make_pair(constant_id, name);
    if (promised_.count(key)) return true;
    if (promised_bytes_ + bytes > resolved_budget()) return false;
    promised_.emplace(key, bytes);
    promised_bytes_ += bytes;
    return true;
}

uint64_t WeightCache::budget() const {
    return automatic_ && !resolved_ ? default_weight_cache_budget() : budget_;
}

uint64_t WeightCache::resolved_budget() {
    if (automatic_ && !resolved_) {
        budget_ = default_weight_cache_budget();
        resolved_ = true;
    }
    return budget_;
}

void WeightCache::erase(const Key& key) {
    const auto it = entries_.find(key);
    if (it == entries_.end()) return;
    bytes_ -= it->second.bytes;
    entries_.erase(it);
}

void WeightCache::release(uint64_t constant_id) {
    std::erase_if(promised_, [&](const auto& p) {
        if (p.first.first != constant_id) return false;
        promised_bytes_ -= p.second;
        return true;
    });
    std::erase_if(entries_, [&](const auto& e) {
        if (e.first.constant_id != constant_id) return false;
        bytes_ -= e.second.bytes;
        return true;
    });
}

void WeightCache::clear() {
    entries_.clear();
    promised_.clear();
    bytes_ = promised_bytes_ = 0;
}

uint64_t default_weight_cache_budget() {
    const auto page = uint64_t(sysconf(_SC_PAGESIZE));
    const uint64_t total = uint64_t(sysconf(_SC_PHYS_PAGES)) * page;
    const uint64_t available = sdk::available_memory();
    return std::min(total / 4, (available > 0 ? available : total) / 2);
}

WeightCache::Key weight_key(const sy_tensor& a, const void* w, GemmType to) {
    const bool has_id = a.struct_size >= offsetof(sy_tensor, constant_id) + sizeof a.constant_id;
    return {has_id ? a.constant_id : 0, w, a.type, a.ne[0], a.ne[1], a.nb[0], a.nb[1], to};
}

bool worth_keeping(int32_t type, GemmType to) {
    return to == GemmType::bf16 || sy_dtype_info(type).block_size > 1;
}

bool operand_in_place(const sy_tensor& a, GemmType to) {
    const int64_t es = int64_t(element_bytes(to));
    const bool same = (to == GemmType::f32 && a.type == SY_TYPE_F32) ||
                      (to == GemmType::bf16 && a.type == SY_TYPE_BF16);
    return same && a.nb[0] == es && a.nb[1] % es == 0 && a.nb[1] >= a.ne[0] * es;
}

// Whether a constant weight gets a kept copy at all: weights used in place only in the engine's
// packed layout (`packed_bytes` > 0), converted ones when worth_keeping.
bool copy_wanted(const sy_tensor& a, GemmType to, size_t packed_bytes) {
    return operand_in_place(a, to) ? packed_bytes > 0 : worth_keeping(a.type, to);
}

bool weights_kept(Workspace& ws, const sy_tensor& a, GemmType to, double matrices, bool* packed) {
    *packed = false;
    const WeightCache::Key key = weight_key(a, a.data, to);
    if (key.constant_id == 0) return false;
    const size_t packed_bytes = ws.engine->packed_weight_bytes(to, a.ne[1], a.ne[0]);
    if (!copy_wanted(a, to, packed_bytes)) return false;
    if (a.data != nullptr && ws.weights.find(key) != nullptr) {
        *packed = packed_bytes > 0;
        return true;
    }
    const double each = packed_bytes > 0 ? double(packed_bytes)
                                         : double(a.ne[0]) * double(a.ne[1]) * element_bytes(to);
    const auto bytes = size_t(std::min(matrices * each, 1e18));
    // Named weights (every model weight) are promised room in the order the plans ask for them;
    // an unnamed one is kept if it fits now.
    const bool kept = a.name != nullptr && *a.name != '\0'
                          ? ws.weights.promise(key.constant_id, a.name, bytes)
                          : ws.weights.bytes() + bytes <= ws.weights.budget();
    *packed = kept && packed_bytes > 0;
    return kept;
}

GemmType gemm_type(const Workspace& ws, int32_t weight_type) {
    if (!ws.engine->has_bf16()) return GemmType::f32;
    if (weight_type == SY_TYPE_BF16) return GemmType::bf16;
    if (sy_dtype_info(weight_type).block_size > 1 && ws.block_to_bf16) return GemmType::bf16;
    if (weight_type == SY_TYPE_F16 && ws.f16_to_bf16) return GemmType::bf16;
    return GemmType::f32;
}

namespace {

// f32 -> bf16, round to nearest even (sdk::f32_to_bf16), written so that it vectorizes.
void round_to_bf16(const float* x, uint16_t* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, &x[i], 4);
        const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
        const uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
        y[i] = nan ? uint16_t((u >> 16) | 0x40) : uint16_t(r);
    }
}

__attribute__((target("avx2,f16c"))) void f16_to_f32_f16c(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
    }
    for (; i < n; ++i) y[i] = sdk::fp16_to_f32(x[i]);
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
    static const bool f16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
    if (f16c) return f16_to_f32_f16c(x, y, n);
    for (int64_t i = 0; i < n; ++i) y[i] = sdk::fp16_to_f32(x[i]);
}

void bf16_to_f32(const uint16_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t u = uint32_t(x[i]) << 16;
        std::memcpy(&y[i], &u, 4);
    }
}

// A row of f32 values read through an element stride.
void gather_f32(const char* src, int64_t stride, float* y, int64_t n) {
    if (stride == 4) {
        std::memcpy(y, src, size_t(n) * 4);
        return;
    }
    for (int64_t i = 0; i < n; ++i) std::memcpy(&y[i], src + i * stride, 4);
}

// Converts the weight matrix {K, N} of `a` at `w` into `t` as packed rows at `out`.
void convert_weights(const Workspace& ws, const sy_tensor& a, const char* w, GemmType t,
                     char* out) {
    const int64_t K = a.ne[0], N = a.ne[1];
    const size_t es = element_bytes(t);
    const int32_t type = a.type;
    const int64_t nb0 = a.nb[0], nb1 = a.nb[1];
    const bool packed = sy_dtype_info(type).block_size > 1 || nb0 == sy_dtype_info(type).type_size;
#pragma omp parallel for num_threads(ws.threads) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
        const char* row = w + n * nb1;
        void* dst = out + size_t(n) * size_t(K) * es;
        if (packed) {
            convert_row(type, row, t, dst, K);
        } else {  // a float type with an element stride: one value at a time
            for (int64_t k = 0; k < K; ++k) {
                const float v = sdk::load_f32(type, row + k * nb0);
                if (t == GemmType::f32)
                    static_cast<float*>(dst)[k] = v;
                else
                    static_cast<uint16_t*>(dst)[k] = sdk::f32_to_bf16(v);
            }
        }
    }
}

// The weight operand of one matrix {K, N} at `w` (row stride nb1) into g.w, g.ldw, g.w_packed.
// A constant weight is kept in the cache while it has room: in the engine's packed layout when
// it has one, else (when worth_keeping) as converted rows. Otherwise the weights are used in
// place when the engine takes them as they are, else converted into `scratch` (rows packed).
void weight_operand(Workspace& ws, Scratch& scratch, const sy_tensor& a, const char* w, GemmType t,
                    Gemm& g) {
    const int64_t K = a.ne[0], N = a.ne[1];
    const size_t es = element_bytes(t);
    const bool in_place = operand_in_place(a, t);
    const size_t bytes = size_t(N) * size_t(K) * es;
    g.w_packed = false;
    g.ldw = K;
    const WeightCache::Key key = weight_key(a, w, t);
    const size_t packed = key.constant_id != 0 ? ws.engine->packed_weight_bytes(t, N, K) : 0;
    if (key.constant_id != 0 && copy_wanted(a, t, packed)) {
        if (const void* kept = ws.weights.find(key)) {
            g.w = kept;
            g.w_packed = packed > 0;
            return;
        }
        if (char* slot = static_cast<char*>(ws.weights.insert(key, packed > 0 ? packed : bytes))) {
            try {
                if (packed == 0) {
                    convert_weights(ws, a, w, t, slot);
                } else if (in_place) {
                    ws.engine->pack_weights(t, N, K, w, a.nb[1] / int64_t(es), slot);
                } else {
                    char* rows = static_cast<char*>(scratch.get(bytes));
                    convert_weights(ws, a, w, t, rows);
                    ws.engine->pack_weights(t, N, K, rows, K, slot);
                }
            } catch (...) {
                ws.weights.erase(key);
                throw;
            }
            g.w = slot;
            g.w_packed = packed > 0;
            return;
        }
    }
    if (in_place) {
        g.w = w;
        g.ldw = a.nb[1] / int64_t(es);
        return;
    }
    char* out = static_cast<char*>(scratch.get(bytes));
    convert_weights(ws, a, w, t, out);
    g.w = out;
}

// Packs `rows` activation rows (K f32 values each, element stride nb0) into the operand type.
void pack_rows(Workspace& ws, const std::vector<const char*>& rows, int64_t nb0, int64_t K,
               GemmType t, void* out) {
    const size_t es = element_bytes(t);
    const int64_t count = int64_t(rows.size());
    // One f32 row per thread for strided rows, allocated here: nothing may throw inside the
    // parallel region.
    std::vector<float> scratch(nb0 != 4 ? size_t(ws.threads) * size_t(K) : 0);
#pragma omp parallel num_threads(ws.threads)
    {
        float* tmp =
            scratch.empty() ? nullptr : scratch.data() + size_t(omp_get_thread_num()) * size_t(K);
#pragma omp for schedule(static)
        for (int64_t r = 0; r < count; ++r) {
            char* dst = static_cast<char*>(out) + size_t(r) * size_t(K) * es;
            if (t == GemmType::f32) {
                gather_f32(rows[size_t(r)], nb0, reinterpret_cast<float*>(dst), K);
            } else if (nb0 == 4) {
                round_to_bf16(reinterpret_cast<const float*>(rows[size_t(r)]),
                              reinterpret_cast<uint16_t*>(dst), K);
            } else {
                gather_f32(rows[size_t(r)], nb0, tmp, K);
                round_to_bf16(tmp, reinterpret_cast<uint16_t*>(dst), K);
            }
        }
    }
}

// Equal spacing of destination rows: the stride in floats, or 0 when they are not evenly spaced.
int64_t even_stride(const std::vector<char*>& rows, int64_t nb0, int64_t N) {
    if (nb0 != 4 || rows.empty()) return 0;
    if (rows.size() == 1) return N;
    const std::ptrdiff_t step = rows[1] - rows[0];
    if (step <= 0 || step % 4 != 0 || step < N * 4) return 0;
    for (size_t i = 2; i < rows.size(); ++i)
        if (rows[i] - rows[i - 1] != step) return 0;
    return step / 4;
}

// Writes row r of a packed {N} x rows result to dst row `to` (element stride nb0).
void write_row(const float* c, char* to, int64_t nb0, int64_t N) {
    if (nb0 == 4) {
        std::memcpy(to, c, size_t(N) * 4);
        return;
    }
    for (int64_t n = 0; n < N; ++n) std::memcpy(to + n * nb0, &c[n], 4);
}

// exp(x) for the activations, branch-free so that the loops over a row vectorize: 2^(x log2 e)
// split into an integer power (exponent bits) and the degree-6 Taylor polynomial of 2^f for the
// remainder f in [-0.5, 0.5] (truncation error < 1.3e-7 relative), over the clamped range
// [-87, 88] (exp(-87) and below give ~1e-38, not 0).
inline float fast_exp(float x) {
    x = std::min(88.0f, std::max(-87.0f, x));
    const float t = x * 1.44269504088896341f;  // log2(e)
    const float fi = std::floor(t + 0.5f);
    const float f = t - fi;  // [-0.5, 0.5]
    // 2^f = sum (f ln 2)^k / k!
    float p = 1.535336188319500e-4f;
    p = p * f + 1.339887440266574e-3f;
    p = p * f + 9.618437357674640e-3f;
    p = p * f + 5.550332471162809e-2f;
    p = p * f + 2.402264791363012e-1f;
    p = p * f + 6.931472028550421e-1f;
    p = p * f + 1.0f;
    const int32_t e = int32_t(fi) + 127;
    uint32_t bits = uint32_t(e) << 23;
    float scale;
    std::memcpy(&scale, &bits, 4);
    return p * scale;
}

// c[n] *= act(g[n]) over a row.
void activate_row(float* c, const float* g, int64_t n, bool use_gelu) {
    if (!use_gelu) {
        for (int64_t i = 0; i < n; ++i) c[i] *= g[i] / (1.0f + fast_exp(-g[i]));
        return;
    }
    // gelu (tanh form): 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)).
    for (int64_t i = 0; i < n; ++i) {
        const float x = g[i];
        const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
        c[i] *= x / (1.0f + fast_exp(-2.0f * u));
    }
}

}  // namespace

void convert_row(int32_t type, const void* src, GemmType to, void* dst, int64_t n) {
    if (to == GemmType::f32) {
        float* y = static_cast<float*>(dst);
        switch (type) {
            case SY_TYPE_F32: std::memcpy(y, src, size_t(n) * 4); return;
            case SY_TYPE_F16: f16_to_f32(static_cast<const uint16_t*>(src), y, n); return;
            case SY_TYPE_BF16: bf16_to_f32(static_cast<const uint16_t*>(src), y, n); return;
            default: quants::dequantize_row(type, src, y, n); return;
        }
    }
    uint16_t* y = static_cast<uint16_t*>(dst);
    if (type == SY_TYPE_BF16) {
        std::memcpy(y, src, size_t(n) * 2);
        return;
    }
    if (sy_dtype_info(type).row_meta_size > 0) {
        // A row-scaled type decodes only as a whole row (its scale is in front).
        thread_local std::vector<float> row;
        row.resize(size_t(n));
        quants::dequantize_row(type, src, row.data(), n);
        round_to_bf16(row.data(), y, n);
        return;
    }
    // Through f32 in pieces that stay in L1.
    constexpr int64_t kPiece = 1024;
    float tmp[kPiece];
    const int64_t bs = sy_dtype_info(type).block_size;
    const int64_t piece = std::max<int64_t>(bs, kPiece / bs * bs);
    const char* s = static_cast<const char*>(src);
    for (int64_t i = 0; i < n; i += piece) {
        const int64_t m = std::min(piece, n - i);
        convert_row(type, s + i / bs * sy_dtype_info(type).type_size, GemmType::f32, tmp, m);
        round_to_bf16(tmp, y + i, m);
    }
}

void mul_mat(Workspace& ws, const sy_node& node) {
    const sy_tensor& a = *node.src[0];
    const sy_tensor& b = *node.src[1];
    const sy_tensor& d = *node.dst;
    const int64_t K = a.ne[0], N = a.ne[1], M = b.ne[1];
    if (sdk::nelements(d) == 0) return;
    if (K == 0) {
        for (int64_t i3 = 0; i3 < d.ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < d.ne[2]; ++i2)
                for (int64_t i1 = 0; i1 < d.ne[1]; ++i1)
                    for (int64_t i0 = 0; i0 < d.ne[0]; ++i0)
                        std::memset(static_cast<char*>(d.data) + i0 * d.nb[0] + i1 * d.nb[1] +
                                        i2 * d.nb[2] + i3 * d.nb[3],
                                    0, 4);
        return;
    }
    const GemmType t = gemm_type(ws, a.type);
    const int64_t r2 = b.ne[2] / a.ne[2], r3 = b.ne[3] / a.ne[3];
    std::vector<const char*> a_rows;
    std::vector<char*> d_rows;
    for (int64_t a3 = 0; a3 < a.ne[3]; ++a3)
        for (int64_t a2 = 0; a2 < a.ne[2]; ++a2) {
            a_rows.clear();
            d_rows.clear();
            for (int64_t b3 = a3 * r3; b3 < (a3 + 1) * r3; ++b3)
                for (int64_t b2 = a2 * r2; b2 < (a2 + 1) * r2; ++b2)
                    for (int64_t m = 0; m < M; ++m) {
                        a_rows.push_back(static_cast<const char*>(b.data) + m * b.nb[1] +
                                         b2 * b.nb[2] + b3 * b.nb[3]);
                        d_rows.push_back(static_cast<char*>(d.data) + m * d.nb[1] + b2 * d.nb[2] +
                                         b3 * d.nb[3]);
                    }
            const int64_t rows = int64_t(a_rows.size());
            Gemm g;
            g.M = rows, g.N = N, g.K = K, g.type = t;
            g.a = ws.a.get(size_t(rows) * size_t(K) * element_bytes(t));
            g.lda = K;
            pack_rows(ws, a_rows, b.nb[0], K, t, const_cast<void*>(g.a));
            weight_operand(ws, ws.w, a,
                           static_cast<const char*>(a.data) + a2 * a.nb[2] + a3 * a.nb[3], t, g);
            if (const int64_t ldc = even_stride(d_rows, d.nb[0], N); ldc > 0) {
                g.c = reinterpret_cast<float*>(d_rows[0]);
                g.ldc = ldc;
                ws.engine->gemm(g);
                continue;
            }
            g.c = static_cast<float*>(ws.c.get(size_t(rows) * size_t(N) * 4));
            g.ldc = N;
            ws.engine->gemm(g);
            for (int64_t r = 0; r < rows; ++r)
                write_row(g.c + r * N, d_rows[size_t(r)], d.nb[0], N);
        }
}

void mul_mat_id(Workspace& ws, const sy_node& node) {
    const bool fused = node.op == SY_OP_NAMED;
    const sy_tensor& up = *node.src[0];
    const sy_tensor* gate = fused ? node.src[1] : nullptr;
    const sy_tensor& x = *node.src[fused ? 2 : 1];
    const sy_tensor& ids = *node.src[fused ? 3 : 2];
    const sy_tensor& d = *node.dst;
    const bool use_gelu = fused && node.iparams[0] == 1;
    const int64_t K = up.ne[0], N = up.ne[1], E = up.ne[2];
    const int64_t U = ids.ne[0], T = ids.ne[1], U1 = x.ne[1];
    if (sdk::nelements(d) == 0) return;

    // (slot, token) pairs per expert; dropped slots get zeros.
    std::vector<std::vector<std::pair<int64_t, int64_t>>> by_expert(static_cast<size_t>(E));
    for (int64_t t = 0; t < T; ++t)
        for (int64_t u = 0; u < U; ++u) {
            int32_t e;
            std::memcpy(&e, static_cast<const char*>(ids.data) + u * ids.nb[0] + t * ids.nb[1], 4);
            char* row = static_cast<char*>(d.data) + u * d.nb[1] + t * d.nb[2];
            if (e == SY_ID_NONE || K == 0) {
                for (int64_t n = 0; n < N; ++n) std::memset(row + n * d.nb[0], 0, 4);
                continue;
            }
            by_expert[size_t(e)].push_back({u, t});
        }
    if (K == 0) return;
    const GemmType type = gemm_type(ws, up.type);
    std::vector<const char*> a_rows;
    for (int64_t e = 0; e < E; ++e) {
        const auto& pairs = by_expert[size_t(e)];
        if (pairs.empty()) continue;
        const int64_t rows = int64_t(pairs.size());
        a_rows.clear();
        for (const auto& [u, t] : pairs)
            a_rows.push_back(static_cast<const char*>(x.data) + (u % U1) * x.nb[1] + t * x.nb[2]);
        const int64_t padded =
            (rows + kExpertRowQuantum - 1) / kExpertRowQuantum * kExpertRowQuantum;
        Gemm g;
        g.M = padded, g.N = N, g.K = K, g.type = type;
        char* a_pack =
            static_cast<char*>(ws.a.get(size_t(padded) * size_t(K) * element_bytes(type)));
        g.a = a_pack;
        g.lda = K;
        pack_rows(ws, a_rows, x.nb[0], K, type, a_pack);
        std::memset(a_pack + size_t(rows) * size_t(K) * element_bytes(type), 0,
                    size_t(padded - rows) * size_t(K) * element_bytes(type));
        g.ldc = N;
        weight_operand(ws, ws.w, up, static_cast<const char*>(up.data) + e * up.nb[2], type, g);
        float* c_up = static_cast<float*>(ws.c.get(size_t(padded) * size_t(N) * 4));
        g.c = c_up;
        ws.engine->gemm(g);
        float* c_gate = nullptr;
        if (fused) {
            weight_operand(ws, ws.w2, *gate, static_cast<const char*>(gate->data) + e * gate->nb[2],
                           type, g);
            c_gate = static_cast<float*>(ws.c2.get(size_t(padded) * size_t(N) * 4));
            g.c = c_gate;
            ws.engine->gemm(g);
        }
#pragma omp parallel for num_threads(ws.threads) schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            float* c = c_up + r * N;
            if (fused) activate_row(c, c_gate + r * N, N, use_gelu);
            const auto [u, t] = pairs[size_t(r)];
            write_row(c, static_cast<char*>(d.data) + u * d.nb[1] + t * d.nb[2], d.nb[0], N);
        }
    }
}

}  // namespace sy::blas
