// deepseek2: the KV cache's layout per attention mode, and the views a graph reads and writes it
// through (the memory, its homes and sequences are KvCache's).
#include <algorithm>
#include <cstring>

#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/llm/models/deepseek2.hpp"
#include "switchyard/sdk.hpp"

namespace sy::llm {

namespace {

// mla 0 K rows are whole heads of whole blocks (validate()), so a row's bytes are the heads'
// bytes.
KvCache::Layout k_layout(const Deepseek2HParams& hp, const ContextOptions& o) {
    const int64_t row = o.mla == 0 ? int64_t(hp.n_head) * hp.qk_head() : hp.latent_width();
    return {sdk::row_bytes(o.cache_type_k, row), 0, 0};
}

// mla 0's V as rows: with flash attention, and always for a block type (it cannot be
// transposed).
bool v_as_rows(const ContextOptions& o, bool flash) {
    return o.mla == 0 && (flash || sy_dtype_info(o.cache_type_v).block_size > 1);
}

// mla 0: V as rows or transposed; mla 1: c transposed; mla 2 and 3: none.
KvCache::Layout v_layout(const Deepseek2HParams& hp, const ContextOptions& o, bool flash) {
    if (o.mla >= 2) return {};
    const int64_t n = o.mla == 0 ? int64_t(hp.n_head) * hp.v_head : hp.kv_lora_rank;
    if (v_as_rows(o, flash)) return {sdk::row_bytes(o.cache_type_v, n), 0, 0};
    return {0, n, sy_dtype_info(o.cache_type_v).type_size};
}

}  // namespace

uint64_t Deepseek2Cache::bytes_per_token(const Deepseek2HParams& hp, const ContextOptions& o) {
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

Deepseek2Cache::Deepseek2Cache(const Deepseek2HParams& hp, const ContextOptions& o, bool v_rows,
                               Plugin* plugin, int32_t device)
    : KvCache(hp.n_layer, o.n_ctx, k_layout(hp, o), v_layout(hp, o, v_rows), plugin, device),
      hp_(hp),
      type_k_(o.cache_type_k),
      type_v_(o.cache_type_v),
      mla_(o.mla),
      k_row_(o.mla == 0 ? int64_t(hp.n_head) * hp.qk_head() : hp.latent_width()),
      v_rows_(o.mla == 0   ? int64_t(hp.n_head) * hp.v_head
              : o.mla == 1 ? hp.kv_lora_rank
                           : 0),
      v_as_rows_(v_as_rows(o, v_rows)) {}

// --- views -------------------------------------------------------------------------------------

namespace {

Strides strides_of(int64_t nb0, int64_t nb1, int64_t nb2 = 0, int64_t nb3 = 0) {
    return {nb0, nb1, nb2, nb3};
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
    if (t == nullptr)
        t = cache_.k_input(g_, il, static_cast<sy_dtype>(cache_.type_k_),
                           {cache_.k_row_, cache_.n_ctx()});
    return t;
}

Tensor* Deepseek2Cache::Views::v_input(uint32_t il) {
    Tensor*& t = v_[il];
    if (t == nullptr) {
        const Shape shape = cache_.v_as_rows_ ? Shape{cache_.v_rows_, cache_.n_ctx()}
                                              : Shape{cache_.n_ctx(), cache_.v_rows_};
        t = cache_.v_input(g_, il, static_cast<sy_dtype>(cache_.type_v_), shape);
    }
    return t;
}

void Deepseek2Cache::Views::write(Tensor* src, Tensor* dst, int64_t seq, int64_t per_token) {
    Tensor* written = g_.cpy(src, dst);
    if (moves_ != nullptr) moves_->views.push_back({written, seq, per_token});
}

void Deepseek2Cache::Views::write_latents(uint32_t il, int64_t seq, int64_t n_past, Tensor* c,
                                          Tensor* k_pe) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t lat = hp.latent_width(), kvl = hp.kv_lora_rank, rope = hp.qk_rope;
    const int64_t T = c->ne(1), nb0 = sy_dtype_info(cache_.type_k_).type_size;
    Tensor* kc = k_input(il);
    const uint64_t at = k_row_at(seq, n_past);
    if (sy_dtype_info(cache_.type_k_).row_meta_size > 0) {
        // q8_KV: one scale per row, so each row is quantized whole from [k_pe | c].
        Tensor* pe =
            g_.view(k_pe, {rope, T},
                    strides_of(k_pe->nb(0), k_pe->nb(2), k_pe->nb(2) * T, k_pe->nb(2) * T), 0);
        write(g_.concat(pe, c, 0),
              g_.view(kc, {lat, T}, strides_of(nb0, kb(lat), kb(lat) * T, kb(lat) * T), at), seq,
              kb(lat));
    } else {
        write(k_pe, g_.view(kc, {rope, 1, T}, strides_of(nb0, kb(lat), kb(lat), kb(lat) * T), at),
              seq, kb(lat));
        write(c,
              g_.view(kc, {kvl, T}, strides_of(nb0, kb(lat), kb(lat) * T, kb(lat) * T),
                      at + uint64_t(kb(rope))),
              seq, kb(lat));
    }
    if (cache_.mla_ == 1) {
        const int64_t sv = sy_dtype_info(cache_.type_v_).type_size, n_ctx = cache_.n_ctx();
        Tensor* dst = g_.view(v_input(il), {T, kvl}, strides_of(sv, n_ctx * sv, n_ctx * sv * kvl),
                              uint64_t((seq * cells_ + n_past) * sv));
        write(c, g_.transpose(dst), seq, sv);
    }
}

Tensor* Deepseek2Cache::Views::latent_rows(uint32_t il, int64_t seq, int64_t n_kv) {
    const int64_t row = kb(cache_.hp_.latent_width());
    return g_.view(k_input(il), {cache_.hp_.latent_width(), n_kv},
                   strides_of(sy_dtype_info(cache_.type_k_).type_size, row, row * n_kv, row * n_kv),
                   k_row_at(seq, 0));
}

Tensor* Deepseek2Cache::Views::latents(uint32_t il, int64_t seq, int64_t n_kv) {
    const int64_t row = kb(cache_.hp_.latent_width());
    return g_.view(k_input(il), {cache_.hp_.kv_lora_rank, n_kv},
                   strides_of(sy_dtype_info(cache_.type_k_).type_size, row, row * n_kv, row * n_kv),
                   k_row_at(seq, 0) + uint64_t(kb(cache_.hp_.qk_rope)));
}

Tensor* Deepseek2Cache::Views::latent_k_pe(uint32_t il, int64_t seq, int64_t n_kv) {
    const int64_t row = kb(cache_.hp_.latent_width());
    return g_.view(k_input(il), {cache_.hp_.qk_rope, n_kv},
                   strides_of(sy_dtype_info(cache_.type_k_).type_size, row, row * n_kv, row * n_kv),
                   k_row_at(seq, 0));
}

Tensor* Deepseek2Cache::Views::latent_k_pe_heads(uint32_t il, int64_t seq, int64_t n_kv,
                                                 int64_t heads) {
    return g_.view(
        k_input(il), {cache_.hp_.qk_rope, n_kv, heads},
        strides_of(sy_dtype_info(cache_.type_k_).type_size, kb(cache_.hp_.latent_width()), 0, 0),
        k_row_at(seq, 0));
}

Tensor* Deepseek2Cache::Views::latents_transposed(uint32_t il, int64_t seq, int64_t n_kv) {
    const int64_t sv = sy_dtype_info(cache_.type_v_).type_size, n_ctx = cache_.n_ctx(),
                  kvl = cache_.hp_.kv_lora_rank;
    return g_.view(v_input(il), {n_kv, kvl}, strides_of(sv, n_ctx * sv, n_ctx * sv * kvl),
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
    const int64_t k_per_token = kb(cache_.k_row_);
    write(k_nope, g_.view(kc, {nope, H, T}, kc_strides, at), seq, k_per_token);
    // k_pe is shared by all heads: a view that repeats it (stride 0 over heads).
    write(g_.view(k_pe, {rope, H, T}, strides_of(k_pe->nb(0), 0, k_pe->nb(2), k_pe->nb(2) * T), 0),
          g_.view(kc, {rope, H, T}, kc_strides, at + uint64_t(kb(nope))), seq, k_per_token);
    Tensor* vc = v_input(il);
    if (cache_.v_as_rows_) {
        const int64_t v_nb0 = sy_dtype_info(cache_.type_v_).type_size;
        write(v,
              g_.view(vc, {vh, H, T}, strides_of(v_nb0, vb(vh), H * vb(vh), H * vb(vh) * T),
                      uint64_t((seq * cells_ + n_past) * H * vb(vh))),
              seq, H * vb(vh));
        return;
    }
    // Transposed {n_ctx, H*vh}: element (cell, h*vh + d).
    const int64_t sv = sy_dtype_info(cache_.type_v_).type_size, n_ctx = cache_.n_ctx();
    Tensor* dst =
        g_.view(vc, {T, vh, H}, strides_of(sv, n_ctx * sv, vh * n_ctx * sv, vh * n_ctx * sv * H),
                uint64_t((seq * cells_ + n_past) * sv));
    write(v, g_.permute(dst, {2, 0, 1, 3}), seq, sv);
}

// mla 0's keys per head: `width` elements from element `from` of each head's [k_nope | k_pe].
Tensor* Deepseek2Cache::Views::key_heads(uint32_t il, int64_t seq, int64_t n_kv, int64_t from,
                                         int64_t width) {
    const int64_t H = cache_.hp_.n_head, qk = cache_.hp_.qk_head();
    return g_.view(
        k_input(il), {width, n_kv, H},
        strides_of(sy_dtype_info(cache_.type_k_).type_size, H * kb(qk), kb(qk), H * kb(qk) * n_kv),
        k_row_at(seq, 0) + uint64_t(from > 0 ? kb(from) : 0));
}

Tensor* Deepseek2Cache::Views::keys(uint32_t il, int64_t seq, int64_t n_kv) {
    return key_heads(il, seq, n_kv, 0, cache_.hp_.qk_head());
}

Tensor* Deepseek2Cache::Views::keys_nope(uint32_t il, int64_t seq, int64_t n_kv) {
    return key_heads(il, seq, n_kv, 0, cache_.hp_.qk_nope);
}

Tensor* Deepseek2Cache::Views::keys_rope(uint32_t il, int64_t seq, int64_t n_kv) {
    return key_heads(il, seq, n_kv, cache_.hp_.qk_nope, cache_.hp_.qk_rope);
}

AttentionValues Deepseek2Cache::Views::values(uint32_t il, int64_t seq, int64_t n_kv) {
    const Deepseek2HParams& hp = cache_.hp_;
    const int64_t H = hp.n_head, vh = hp.v_head, n_ctx = cache_.n_ctx();
    if (cache_.v_as_rows_)
        return {g_.view(v_input(il), {vh, n_kv, H},
                        strides_of(sy_dtype_info(cache_.type_v_).type_size, H * vb(vh), vb(vh),
                                   H * vb(vh) * n_ctx),
                        uint64_t(seq * cells_ * H * vb(vh))),
                nullptr};
    const int64_t sv = sy_dtype_info(cache_.type_v_).type_size;
    return {nullptr, g_.view(v_input(il), {n_kv, vh, H},
                             strides_of(sv, n_ctx * sv, vh * n_ctx * sv, vh * n_ctx * sv * H),
                             uint64_t(seq * cells_ * sv))};
}

}  // namespace sy::llm
