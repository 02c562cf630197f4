// The KV cache's memory, whatever the model: per layer a K and a V tensor, their homes (host
// memory or a plugin device's buffers), and the cells of each sequence.
#include <algorithm>
#include <cstring>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/model.hpp"
#include "switchyard/sdk.hpp"

namespace sy::llm {

namespace {

size_t layer_bytes(const KvCache::Layout& l, int64_t n_ctx) {
    return l.rows > 0 ? size_t(l.rows * n_ctx * l.element_bytes) : size_t(l.row_bytes * n_ctx);
}

}  // namespace

KvCache::KvCache(uint32_t n_layer, int64_t n_ctx, Layout k, Layout v, Plugin* plugin,
                 int32_t device)
    : n_ctx_(n_ctx), n_layer_(n_layer), k_layout_(k), v_layout_(v) {
    if (n_ctx_ <= 0) throw Error("the KV cache needs a positive context length");
    set_homes(std::vector<Home>(n_layer, Home{plugin, device}));
    k_layer_bytes_ = layer_bytes(k, n_ctx);
    v_layer_bytes_ = layer_bytes(v, n_ctx);
}

void KvCache::set_homes(std::vector<Home> layers) {
    if (allocated_) throw Error("the KV cache's homes change only before it is allocated");
    if (layers.size() != n_layer_)
        throw Error("the KV cache needs a home for each of the " + std::to_string(n_layer_) +
                    " layers, got " + std::to_string(layers.size()));
    // A backend that computes on host memory keeps its layers in host memory.
    for (Home& h : layers)
        if (h.plugin != nullptr && h.plugin->device_props(h.device).host_memory != 0) h = Home{};
    homes_ = std::move(layers);
}

bool KvCache::on_device() const {
    return !homes_.empty() && std::all_of(homes_.begin(), homes_.end(),
                                          [](const Home& h) { return h.plugin != nullptr; });
}

void KvCache::set_sequences(int64_t n) {
    if (n < 1 || n > n_ctx_)
        throw Error("the KV cache of " + std::to_string(n_ctx_) + " tokens cannot hold " +
                    std::to_string(n) + " sequences");
    n_seqs_ = n;
}

void KvCache::copy_sequence(int64_t src, int64_t dst, int64_t n) {
    const int64_t cells = sequence_cells();
    if (src < 0 || src >= n_seqs_ || dst < 0 || dst >= n_seqs_)
        throw Error("copy of sequence " + std::to_string(src) + " to " + std::to_string(dst) +
                    ": the cache holds sequences 0 .. " + std::to_string(n_seqs_ - 1));
    if (n < 0 || n > cells)
        throw Error("copy of " + std::to_string(n) + " tokens: a sequence has " +
                    std::to_string(cells) + " cells");
    if (!allocated_) throw Error("copy of a sequence before the KV cache is allocated");
    if (src == dst || n == 0) return;
    // Token-major: n rows from one stretch to the other. Transposed: n elements of each row.
    const auto copy = [&](const Layout& l, std::byte* base) {
        if (l.rows == 0) {
            const size_t row = size_t(l.row_bytes);
            std::memmove(base + size_t(dst * cells) * row, base + size_t(src * cells) * row,
                         size_t(n) * row);
            return;
        }
        const size_t e = size_t(l.element_bytes);
        for (int64_t r = 0; r < l.rows; ++r) {
            std::byte* row = base + size_t(r * n_ctx_) * e;
            std::memmove(row + size_t(dst * cells) * e, row + size_t(src * cells) * e,
                         size_t(n) * e);
        }
    };
    // On a device: token-major rows pass through host memory, n rows from src's cells to dst's;
    // a transposed tensor (n elements of every row) is read, changed and written back whole.
    std::vector<std::byte> staging;
    const auto on_device = [&](Plugin* plugin, const Buffer& b, size_t bytes, const Layout& l) {
        if (l.rows == 0) {
            const size_t row = size_t(l.row_bytes);
            staging.resize(size_t(n) * row);
            plugin->get(b, size_t(src * cells) * row, staging.data(), staging.size());
            plugin->set(b, size_t(dst * cells) * row, staging.data(), staging.size());
            return;
        }
        staging.resize(bytes);
        plugin->get(b, 0, staging.data(), bytes);
        copy(l, staging.data());
        plugin->set(b, 0, staging.data(), bytes);
    };
    for (uint32_t il = 0; il < n_layer_; ++il) {
        Layer& l = layers_[il];
        if (Plugin* plugin = homes_[il].plugin; plugin != nullptr) {
            on_device(plugin, l.k_device, k_layer_bytes_, k_layout_);
            if (v_layer_bytes_ > 0) on_device(plugin, l.v_device, v_layer_bytes_, v_layout_);
        } else {
            copy(k_layout_, l.k.data());
            if (v_layer_bytes_ > 0) copy(v_layout_, l.v.data());
        }
    }
}

uint64_t KvCache::sequence_bytes(int64_t n) const {
    const auto one = [&](const Layout& l, size_t layer_bytes) -> uint64_t {
        if (layer_bytes == 0) return 0;
        return l.rows == 0 ? uint64_t(n) * uint64_t(l.row_bytes)
                           : uint64_t(n) * uint64_t(l.rows) * uint64_t(l.element_bytes);
    };
    return uint64_t(n_layer_) * (one(k_layout_, k_layer_bytes_) + one(v_layout_, v_layer_bytes_));
}

// Token-major: the n rows of the sequence's first cells, as they are. Transposed: of every row
// the sequence's n elements, row after row. Per layer K then V. Into `save` (from the cache) or
// from `load` (into it): one of the two is null.
void KvCache::move_sequence(int64_t seq, int64_t n, std::byte* save, const std::byte* load) {
    const bool out = save != nullptr;
    const int64_t cells = sequence_cells();
    size_t at = 0;
    std::vector<std::byte> staging;
    const auto one = [&](const Layout& l, std::byte* host, Plugin* plugin, const Buffer& b,
                         size_t layer_bytes) {
        if (layer_bytes == 0) return;
        if (l.rows == 0) {
            const size_t count = size_t(n) * size_t(l.row_bytes);
            const size_t cache_at = size_t(seq * cells) * size_t(l.row_bytes);
            if (plugin && out)
                plugin->get(b, cache_at, save + at, count);
            else if (plugin)
                plugin->set(b, cache_at, load + at, count);
            else if (out)
                std::memcpy(save + at, host + cache_at, count);
            else
                std::memcpy(host + cache_at, load + at, count);
            at += count;
            return;
        }
        // Transposed on a device: the whole tensor passes through host memory.
        if (plugin) {
            staging.resize(layer_bytes);
            plugin->get(b, 0, staging.data(), layer_bytes);
            host = staging.data();
        }
        const size_t e = size_t(l.element_bytes), count = size_t(n) * e;
        for (int64_t r = 0; r < l.rows; ++r, at += count) {
            std::byte* cell = host + (size_t(r * n_ctx_) + size_t(seq * cells)) * e;
            if (out)
                std::memcpy(save + at, cell, count);
            else
                std::memcpy(cell, load + at, count);
        }
        if (plugin && !out) plugin->set(b, 0, staging.data(), layer_bytes);
    };
    for (uint32_t il = 0; il < n_layer_; ++il) {
        Layer& l = layers_[il];
        Plugin* plugin = homes_[il].plugin;
        one(k_layout_, l.k.data(), plugin, l.k_device, k_layer_bytes_);
        one(v_layout_, l.v.data(), plugin, l.v_device, v_layer_bytes_);
    }
}

std::vector<std::byte> KvCache::save_sequence(int64_t seq, int64_t n) {
    if (seq < 0 || seq >= n_seqs_ || n < 0 || n > sequence_cells())
        throw Error("save of " + std::to_string(n) + " tokens of sequence " + std::to_string(seq) +
                    ": the cache holds sequences 0 .. " + std::to_string(n_seqs_ - 1) + " of " +
                    std::to_string(sequence_cells()) + " cells");
    if (!allocated_) throw Error("save of a sequence before the KV cache is allocated");
    std::vector<std::byte> out(size_t(sequence_bytes(n)));
    move_sequence(seq, n, out.data(), nullptr);
    return out;
}

void KvCache::load_sequence(int64_t seq, int64_t n, std::span<const std::byte> bytes) {
    if (seq < 0 || seq >= n_seqs_ || n < 0 || n > sequence_cells())
        throw Error("load of " + std::to_string(n) + " tokens into sequence " +
                    std::to_string(seq) + ": the cache holds sequences 0 .. " +
                    std::to_string(n_seqs_ - 1) + " of " + std::to_string(sequence_cells()) +
                    " cells");
    if (bytes.size() != sequence_bytes(n))
        throw Error("load of " + std::to_string(n) + " tokens: " + std::to_string(bytes.size()) +
                    " bytes, expected " + std::to_string(sequence_bytes(n)));
    if (!allocated_) throw Error("load of a sequence before the KV cache is allocated");
    move_sequence(seq, n, nullptr, bytes.data());
}

void KvCache::allocate() {
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

uint64_t KvCache::bytes() const {
    return uint64_t(n_layer_) * (k_layer_bytes_ + v_layer_bytes_);
}

uint64_t KvCache::bytes_on(const Plugin* plugin, int32_t device) const {
    uint64_t total = 0;
    for (const Home& h : homes_)
        if (h.plugin == plugin && (plugin == nullptr || h.device == device))
            total += k_layer_bytes_ + v_layer_bytes_;
    return total;
}

namespace {

// A cache tensor's memory: the device buffer when the cache lives there, else host memory
// (null before allocate()).
void place(Tensor* t, void* host, const Buffer* device) {
    if (device != nullptr)
        t->set_data(*device, 0);
    else
        t->set_data(host);
}

}  // namespace

Tensor* KvCache::k_input(Graph& g, uint32_t il, sy_dtype type, const Shape& shape) {
    Tensor* t = g.input("cache_k-" + std::to_string(il), type, shape);
    place(t, k(il), k_buffer(il));
    return t;
}

Tensor* KvCache::v_input(Graph& g, uint32_t il, sy_dtype type, const Shape& shape) {
    Tensor* t = g.input("cache_v-" + std::to_string(il), type, shape);
    place(t, v(il), v_buffer(il));
    return t;
}

std::optional<uint32_t> KvCache::layer_of(const Tensor& t) {
    if (t.kind() != TensorKind::input) return std::nullopt;
    const std::string& name = t.name();
    if (!name.starts_with("cache_k-") && !name.starts_with("cache_v-")) return std::nullopt;
    uint32_t il = 0;
    for (size_t i = 8; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9' || il > 100000000) return std::nullopt;
        il = il * 10 + uint32_t(name[i] - '0');
    }
    return name.size() > 8 ? std::optional<uint32_t>(il) : std::nullopt;
}

}  // namespace sy::llm
