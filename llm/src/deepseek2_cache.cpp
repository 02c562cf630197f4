// deepseek2: the KV cache's layout per attention mode and its homes (host memory or a plugin
// device's buffers).
#include <algorithm>

#include "switchyard/core/error.hpp"
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
    : n_ctx_(o.n_ctx), n_layer_(hp.n_layer) {
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

}  // namespace sy::llm
