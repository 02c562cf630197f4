// deepseek2: the KV cache's layout per attention mode, its sequences, its homes (host memory or
// a plugin device's buffers), and the views a graph reads and writes it through.
#include <algorithm>
#include <cstring>

#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/llm/deepseek2.hpp"
#include "switchyard/sdk.hpp"

namespace sy::llm {

uint64_t Deepseek2Cache::bytes_per_token(const Deepseek2HParams& hp, const Deepseek2Options& o) {
    // Bytes of n values of the K / V cache type (q8_0: 34 bytes per 32).
    const auto k = [&](uint64_t n) { return uint64_t(sdk::row_bytes(o.cache_type_k, int64_t(n))); };
    const auto v = [&](uint64_t n) { return uint64_t(sdk::row_bytes(o.cache_type_v, int64_t(n))); };
    const uint64_t heads = hp.n_head;
    uint64_t per_layer = 0;
    switch (o.mla) {
        case 0: per_layer = heads * k(hp.qk_head()) + heads * v(hp.v_head); break;
        case 1: per_layer = k(hp.latent_width()) + v(hp.kv_lora_rank); break;
        default: per_layer = k(hp.latent_width()); break;
    }
    return per_layer * hp.n_layer;
}

Deepseek2Cache::Deepseek2Cache(const Deepseek2HParams& hp, const Deepseek2Options& o,
                               Plugin* plugin, int32_t device)
    : hp_(hp),
      type_k_(o.cache_type_k),
      type_v_(o.cache_type_v),
      mla_(o.mla),
      n_ctx_(o.n_ctx),
      n_layer_(hp.n_layer) {
    set_homes(std::vector<Home>(hp.n_layer, Home{plugin, device}));
    if (n_ctx_ <= 0) throw Error("the KV cache needs a positive context length");
    const int64_t heads = hp.n_head;
    k_row_ = o.mla == 0 ? heads * hp.qk_head() : hp.latent_width();
    v_rows_ = o.mla == 0 ? heads * hp.v_head : o.mla == 1 ? hp.kv_lora_rank : 0;
    // mla 0 K rows are whole heads of whole blocks (validate()), so a row's bytes are the
    // heads' bytes; the V cache is a block type only as mla 0's rows.
    k_layer_bytes_ = size_t(sdk::row_bytes(o.cache_type_k, k_row_)) * size_t(n_ctx_);
    v_layer_bytes_ = v_rows_ > 0 ? size_t(sdk::row_bytes(o.cache_type_v, v_rows_ * n_ctx_)) : 0;
}

void Deepseek2Cache::set_homes(std::vector<Home> layers) {
    if (allocated_) throw Error("the KV cache's homes change only before it is allocated");
    if (layers.size() != n_layer_)
        throw Error("the KV cache needs a home for each of the " + std::to_string(n_layer_) +
                    " layers, got " + std::to_string(layers.size()));
    // A backend that computes on host memory keeps its layers in host memory.
    for (Home& h : layers)
        if (h.plugin != nullptr && h.plugin->device_props(h.device).host_memory != 0) h = Home{};
    homes_ = std::move(layers);
}

void Deepseek2Cache::set_v_rows(bool rows) {
    if (allocated_ && rows != v_as_rows_)
        throw Error("the V cache's layout changes only before it is allocated");
    v_as_rows_ = rows;
}

void Deepseek2Cache::set_sequences(int64_t n) {
    if (n < 1 || n > n_ctx_)
        throw Error("the KV cache of " + std::to_string(n_ctx_) + " tokens cannot hold " +
                    std::to_string(n) + " sequences");
    n_seqs_ = n;
}

void Deepseek2Cache::copy_sequence(int64_t src, int64_t dst, int64_t n) {
    const int64_t cells = sequence_cells();
    if (src < 0 || src >= n_seqs_ || dst < 0 || dst >= n_seqs_)
        throw Error("copy of sequence " + std::to_string(src) + " to " + std::to_string(dst) +
                    ": the cache holds sequences 0 .. " + std::to_string(n_seqs_ - 1));
    if (n < 0 || n > cells)
        throw Error("copy of " + std::to_string(n) + " tokens: a sequence has " +
                    std::to_string(cells) + " cells");
    if (!allocated_) throw Error("copy of a sequence before the KV cache is allocated");
    if (src == dst || n == 0) return;
    // Token-major rows (K, and V as rows): n rows of `row` bytes from one stretch to the other.
    const auto rows = [&](std::byte* base, size_t row) {
        std::memmove(base + size_t(dst * cells) * row, base + size_t(src * cells) * row,
                     size_t(n) * row);
    };
    // V transposed {n_ctx, v_rows}: n elements of each of the v_rows rows.
    const auto transposed = [&](std::byte* base) {
        const size_t sv = sy_dtype_info(type_v_).type_size;
        for (int64_t r = 0; r < v_rows_; ++r) {
            std::byte* row = base + size_t(r * n_ctx_) * sv;
            std::memmove(row + size_t(dst * cells) * sv, row + size_t(src * cells) * sv,
                         size_t(n) * sv);
        }
    };
    const size_t k_row = size_t(sdk::row_bytes(type_k_, k_row_));
    const size_t v_row = v_rows_ > 0 ? size_t(sdk::row_bytes(type_v_, v_rows_)) : 0;
    const auto copy_v = [&](std::byte* base) {
        if (v_rows_ == 0) return;
        if (v_as_rows_)
            rows(base, v_row);
        else
            transposed(base);
    };
    std::vector<std::byte> staging;  // a device layer's tensor, read, changed and written back
    const auto on_device = [&](Plugin* plugin, const Buffer& b, size_t bytes, auto&& change) {
        staging.resize(bytes);
        plugin->get(b, 0, staging.data(), bytes);
        change(staging.data());
        plugin->set(b, 0, staging.data(), bytes);
    };
    for (uint32_t il = 0; il < n_layer_; ++il) {
        Layer& l = layers_[il];
        if (Plugin* plugin = homes_[il].plugin; plugin != nullptr) {
            on_device(plugin, l.k_device, k_layer_bytes_, [&](std::byte* p) { rows(p, k_row); });
            if (v_layer_bytes_ > 0) on_device(plugin, l.v_device, v_layer_bytes_, copy_v);
        } else {
            rows(l.k.data(), k_row);
            if (v_layer_bytes_ > 0) copy_v(l.v.data());
        }
    }
}

bool Deepseek2Cache::on_device() const {
    return !homes_.empty() && std::all_of(homes_.begin(), homes_.end(),
                                          [](const Home& h) { return h.plugin != nullptr; });
}

void Deepseek2Cache::allocate() {
    if (allocated_) return;
    // Zeroed on devices as in host memory (rows past the causal limit enter tiles with weight 0).
    const std::vector<std::byte> zeros(
        std::min<size_t>(std::max(k_layer_bytes_, v_layer_bytes_), size_t(8) << 20));
    const auto zeroed = [&](const Home& h, size_t bytes) {
        Buffer b = h.plugin->alloc(h.device, bytes);
        for (size_t at = 0; at < bytes; at += zeros.size())
            h.plugin->set(b, at, zeros.data(), std::min(zeros.size(), bytes - at));
        return b;
    };
    // Built aside and moved in, so a failed allocation leaves the cache unallocated.
    std::vector<Layer> layers(n_layer_);
    for (uint32_t il = 0; il < n_layer_; ++il) {
        Layer& l = layers[il];
        if (const Home& h = homes_[il]; h.plugin != nullptr) {
            l.k_device = zeroed(h, k_layer_bytes_);
            if (v_layer_bytes_ > 0) l.v_device = zeroed(h, v_layer_bytes_);
        } else {
            allocating("the KV cache of " + std::to_string(n_ctx_) + " tokens (-c)", bytes(), [&] {
                l.k.assign(k_layer_bytes_, std::byte{0});
                l.v.assign(v_layer_bytes_, std::byte{0});
            });
        }
    }
    layers_ = std::move(layers);
    allocated_ = true;
}

uint64_t Deepseek2Cache::bytes() const {
    return uint64_t(n_layer_) * (k_layer_bytes_ + v_layer_bytes_);
}

uint64_t Deepseek2Cache::bytes_on(const Plugin* plugin, int32_t device) const {
    uint64_t total = 0;
    for (const Home& h : homes_)
        if (h.plugin == plugin && (plugin == nullptr || h.device == device))
            total += k_layer_bytes_ + v_layer_bytes_;
    return total;
}

// --- views -------------------------------------------------------------------------------------

namespace {

Strides strides_of(int64_t nb0, int64_t nb1, int64_t nb2 = 0, int64_t nb3 = 0) {
    return {nb0, nb1, nb2, nb3};
}

// A cache tensor's memory: the device buffer when the cache lives there.
void place(Tensor* t, void* host, const Buffer* device) {
    if (device != nullptr)
        t->set_data(*device, 0);
    else
        t->set_data(host);
}

}  // namespace

Deepseek2Cache::Views::Views(Deepseek2Cache& cache, Graph& graph, int64_t cells)
    : cache_(cache), g_(graph), cells_(cells) {}

int64_t Deepseek2Cache::Views::kb(int64_t n) const {
    return sdk::row_bytes(cache_.type_k_, n);
}
int64_t Deepseek2Cache::Views::vb(int64_t n) const {
    return sdk::row_bytes(cache_.type_v_, n);
}

uint64_t Deepseek2Cache::Views::k_row_at(int64_t seq, int64_t pos) const {
    return uint64_t((seq * cells_ + pos) * kb(cache_.k_row_));
}

// One input per cache tensor and graph (every sequence views it), so that the graph's writes
// and reads of it are of one tensor.
Tensor* Deepseek2Cache::Views::k_input(uint32_t il) {
    Tensor*& t = k_[il];
    if (t == nullptr) {
        t = g_.input("cache_k-" + std::to_string(il), static_cast<sy_dtype>(cache_.type_k_),
                     {cache_.k_row_, cache_.n_ctx_});
        place(t, cache_.k(il), cache_.k_buffer(il));
    }
    return t;
}

Tensor* Deepseek2Cache::Views::v_input(uint32_t il) {
    Tensor*& t = v_[il];
    if (t == nullptr) {
        const Shape shape = cache_.v_as_rows_ ? Shape{cache_.v_rows_, cache_.n_ctx_}
                                              : Shape{cache_.n_ctx_, cache_.v_rows_};
        t = g_.input("cache_v-" + std::to_string(il), static_cast<sy_dtype>(cache_.type_v_), shape);
        place(t, cache_.v(il), cache_.v_buffer(il));
    }
    return t;
}

Tensor* Deepseek2Cache::Views::view(Tensor* t, const Shape& shape, const Strides& strides,
                                    uint64_t offset) {
    return g_.view(t, shape, strides, offset);
}

void Deepseek2Cache::Views::write_latents(uint32_t il, int64_t seq, int64_t n_past, Tensor* c,
                                          Tensor* k_pe) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t lat = hp.latent_width(), kvl = hp.kv_lora_rank, rope = hp.qk_rope;
    const int64_t T = c->ne(1), nb0 = sy_dtype_info(cache_.type_k_).type_size;
    Tensor* kc = k_input(il);
    const uint64_t at = k_row_at(seq, n_past);
    g_.cpy(k_pe, view(kc, {rope, 1, T}, strides_of(nb0, kb(lat), kb(lat), kb(lat) * T), at));
    g_.cpy(c, view(kc, {kvl, T}, strides_of(nb0, kb(lat), kb(lat) * T, kb(lat) * T),
                   at + uint64_t(kb(rope))));
    if (cache_.mla_ == 1) {
        const int64_t sv = sy_dtype_info(cache_.type_v_).type_size, n_ctx = cache_.n_ctx_;
        Tensor* dst = view(v_input(il), {T, kvl}, strides_of(sv, n_ctx * sv, n_ctx * sv * kvl),
                           uint64_t((seq * cells_ + n_past) * sv));
        g_.cpy(c, g_.transpose(dst));
    }
}

Tensor* Deepseek2Cache::Views::latent_rows(uint32_t il, int64_t seq, int64_t n_kv) {
    const int64_t row = kb(cache_.hp_.latent_width());
    return view(k_input(il), {cache_.hp_.latent_width(), n_kv},
                strides_of(sy_dtype_info(cache_.type_k_).type_size, row, row * n_kv, row * n_kv),
                k_row_at(seq, 0));
}

Tensor* Deepseek2Cache::Views::latents(uint32_t il, int64_t seq, int64_t n_kv) {
    const int64_t row = kb(cache_.hp_.latent_width());
    return view(k_input(il), {cache_.hp_.kv_lora_rank, n_kv},
                strides_of(sy_dtype_info(cache_.type_k_).type_size, row, row * n_kv, row * n_kv),
                k_row_at(seq, 0) + uint64_t(kb(cache_.hp_.qk_rope)));
}

Tensor* Deepseek2Cache::Views::latent_k_pe(uint32_t il, int64_t seq, int64_t n_kv) {
    const int64_t row = kb(cache_.hp_.latent_width());
    return view(k_input(il), {cache_.hp_.qk_rope, n_kv},
                strides_of(sy_dtype_info(cache_.type_k_).type_size, row, row * n_kv, row * n_kv),
                k_row_at(seq, 0));
}

Tensor* Deepseek2Cache::Views::latent_k_pe_heads(uint32_t il, int64_t seq, int64_t n_kv,
                                                 int64_t heads) {
    return view(
        k_input(il), {cache_.hp_.qk_rope, n_kv, heads},
        strides_of(sy_dtype_info(cache_.type_k_).type_size, kb(cache_.hp_.latent_width()), 0, 0),
        k_row_at(seq, 0));
}

Tensor* Deepseek2Cache::Views::latents_transposed(uint32_t il, int64_t seq, int64_t n_kv) {
    const int64_t sv = sy_dtype_info(cache_.type_v_).type_size, n_ctx = cache_.n_ctx_,
                  kvl = cache_.hp_.kv_lora_rank;
    return view(v_input(il), {n_kv, kvl}, strides_of(sv, n_ctx * sv, n_ctx * sv * kvl),
                uint64_t(seq * cells_ * sv));
}

void Deepseek2Cache::Views::write_kv(uint32_t il, int64_t seq, int64_t n_past, Tensor* k_nope,
                                     Tensor* k_pe, Tensor* v) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t H = hp.n_head, qk = hp.qk_head(), nope = hp.qk_nope, rope = hp.qk_rope,
                  vh = hp.v_head, T = k_nope->ne(2);
    const int64_t k_nb0 = sy_dtype_info(cache_.type_k_).type_size;
    Tensor* kc = k_input(il);
    const Strides kc_strides = strides_of(k_nb0, kb(qk), H * kb(qk), H * kb(qk) * T);
    const uint64_t at = k_row_at(seq, n_past);
    g_.cpy(k_nope, view(kc, {nope, H, T}, kc_strides, at));
    // k_pe is shared by all heads: a view that repeats it (stride 0 over heads).
    g_.cpy(view(k_pe, {rope, H, T}, strides_of(k_pe->nb(0), 0, k_pe->nb(2), k_pe->nb(2) * T), 0),
           view(kc, {rope, H, T}, kc_strides, at + uint64_t(kb(nope))));
    Tensor* vc = v_input(il);
    if (cache_.v_as_rows_) {
        const int64_t v_nb0 = sy_dtype_info(cache_.type_v_).type_size;
        g_.cpy(v, view(vc, {vh, H, T}, strides_of(v_nb0, vb(vh), H * vb(vh), H * vb(vh) * T),
                       uint64_t((seq * cells_ + n_past) * H * vb(vh))));
        return;
    }
    // Transposed {n_ctx, H*vh}: element (cell, h*vh + d).
    const int64_t sv = sy_dtype_info(cache_.type_v_).type_size, n_ctx = cache_.n_ctx_;
    Tensor* dst =
        view(vc, {T, vh, H}, strides_of(sv, n_ctx * sv, vh * n_ctx * sv, vh * n_ctx * sv * H),
             uint64_t((seq * cells_ + n_past) * sv));
    g_.cpy(v, g_.permute(dst, {2, 0, 1, 3}));
}

Tensor* Deepseek2Cache::Views::keys(uint32_t il, int64_t seq, int64_t n_kv) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t H = hp.n_head, qk = hp.qk_head();
    return view(
        k_input(il), {qk, n_kv, H},
        strides_of(sy_dtype_info(cache_.type_k_).type_size, H * kb(qk), kb(qk), H * kb(qk) * n_kv),
        k_row_at(seq, 0));
}

Tensor* Deepseek2Cache::Views::keys_nope(uint32_t il, int64_t seq, int64_t n_kv) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t H = hp.n_head, qk = hp.qk_head();
    return view(
        k_input(il), {int64_t(hp.qk_nope), n_kv, H},
        strides_of(sy_dtype_info(cache_.type_k_).type_size, H * kb(qk), kb(qk), H * kb(qk) * n_kv),
        k_row_at(seq, 0));
}

Tensor* Deepseek2Cache::Views::keys_rope(uint32_t il, int64_t seq, int64_t n_kv) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t H = hp.n_head, qk = hp.qk_head();
    return view(
        k_input(il), {int64_t(hp.qk_rope), n_kv, H},
        strides_of(sy_dtype_info(cache_.type_k_).type_size, H * kb(qk), kb(qk), H * kb(qk) * n_kv),
        k_row_at(seq, 0) + uint64_t(kb(hp.qk_nope)));
}

Tensor* Deepseek2Cache::Views::values(uint32_t il, int64_t seq, int64_t n_kv) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t H = hp.n_head, vh = hp.v_head, n_ctx = cache_.n_ctx_;
    return view(
        v_input(il), {vh, n_kv, H},
        strides_of(sy_dtype_info(cache_.type_v_).type_size, H * vb(vh), vb(vh), H * vb(vh) * n_ctx),
        uint64_t(seq * cells_ * H * vb(vh)));
}

Tensor* Deepseek2Cache::Views::values_transposed(uint32_t il, int64_t seq, int64_t n_kv) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t H = hp.n_head, vh = hp.v_head, n_ctx = cache_.n_ctx_;
    const int64_t sv = sy_dtype_info(cache_.type_v_).type_size;
    return view(v_input(il), {n_kv, vh, H},
                strides_of(sv, n_ctx * sv, vh * n_ctx * sv, vh * n_ctx * sv * H),
                uint64_t(seq * cells_ * sv));
}

}  // namespace sy::llm
