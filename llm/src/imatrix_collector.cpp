// Collecting an importance matrix: the activations of every weight product, read just before
// the product runs (Executor::NodeObserver), accumulated as llama-imatrix does (imatrix.hpp).
#include <cmath>
#include <cstring>

#include "switchyard/core/error.hpp"
#include "switchyard/core/graph.hpp"
#include "switchyard/llm/imatrix.hpp"
#include "switchyard/named_ops.h"

namespace sy::llm {
namespace {

bool starts_with_blk(const std::string& name) {
    return name.rfind("blk.", 0) == 0;
}

// The product's weight (as stored), activations and expert ids; null weight for other nodes.
struct ProductSources {
    std::vector<const Tensor*> weights;
    const Tensor* x = nullptr;
    const Tensor* ids = nullptr;
};

ProductSources product_sources(const Node& node) {
    ProductSources p;
    if (node.op == SY_OP_MUL_MAT && node.src.size() >= 2) {
        p.weights = {node.src[0]};
        p.x = node.src[1];
    } else if (node.op == SY_OP_MUL_MAT_ID && node.src.size() >= 3) {
        p.weights = {node.src[0]};
        p.x = node.src[1];
        p.ids = node.src[2];
    } else if (node.op == SY_OP_NAMED && node.named_op == SY_NAMED_MOE_FUSED_UP_GATE &&
               node.src.size() >= 4) {
        p.weights = {node.src[0], node.src[1]};  // up, gate: the same activations
        p.x = node.src[2];
        p.ids = node.src[3];
    }
    std::erase_if(p.weights, [](const Tensor* w) { return w->base()->kind() != TensorKind::weight; });
    if (p.x == nullptr || p.x->type() != SY_TYPE_F32 || (p.ids && p.ids->type() != SY_TYPE_I32))
        p.weights.clear();
    return p;
}

// t's element (0,0,0,0) in host memory: where the executor holds it, or a copy of its base
// tensor from device memory into `scratch`.
const std::byte* host_bytes(const Executor& executor, const Tensor& t,
                            std::vector<std::byte>& scratch) {
    if (const void* p = executor.host_data(t)) return static_cast<const std::byte*>(p);
    const Tensor& root = *t.base();
    scratch.resize(static_cast<size_t>(root.bytes()));
    executor.read(root, scratch);
    return scratch.data() + t.offset();
}

}  // namespace

ImatrixCollector::ImatrixCollector(std::function<bool(const std::string&)> accept)
    : accept_(accept ? std::move(accept) : starts_with_blk) {
    observer_.wants = [this](const Node& node) {
        for (const Tensor* w : product_sources(node).weights)
            if (accept_(w->base()->name())) return true;
        return false;
    };
    observer_.observe = [this](const Node& node, const Executor& executor) {
        observe(node, executor);
    };
}

void ImatrixCollector::observe(const Node& node, const Executor& executor) {
    const ProductSources s = product_sources(node);
    Product p;
    p.x = host_bytes(executor, *s.x, scratch_x_);
    for (int d = 0; d < 4; ++d) {
        p.x_ne[d] = s.x->ne(d);
        p.x_nb[d] = s.x->nb(d);
    }
    if (s.ids) {
        p.ids = host_bytes(executor, *s.ids, scratch_ids_);
        for (int d = 0; d < 2; ++d) {
            p.ids_ne[d] = s.ids->ne(d);
            p.ids_nb[d] = s.ids->nb(d);
        }
    }
    for (const Tensor* w : s.weights) {
        const Tensor& stored = *w->base();
        if (!accept_(stored.name())) continue;
        p.weight = stored.name();
        for (int d = 0; d < 4; ++d) p.weight_ne[d] = stored.ne(d);
        add(p);
    }
}

ImatrixCollector::Accum& ImatrixCollector::entry(const std::string& weight, size_t n_sums,
                                                 size_t n_counts) {
    auto [it, fresh] = accum_.try_emplace(weight);
    Accum& a = it->second;
    if (fresh) {
        a.sums.assign(n_sums, 0.0);
        a.counts.assign(n_counts, 0);
    } else if (a.sums.size() != n_sums || a.counts.size() != n_counts) {
        throw Error("imatrix: weight " + weight + " is multiplied as " + std::to_string(n_sums) +
                    " columns in " + std::to_string(n_counts) + " parts here, as " +
                    std::to_string(a.sums.size()) + " in " + std::to_string(a.counts.size()) +
                    " before");
    }
    return a;
}

void ImatrixCollector::add(const Product& p) {
    const int64_t n_in = p.x_ne[0];
    if (n_in != p.weight_ne[0])
        throw Error("imatrix: weight " + p.weight + " has rows of " +
                    std::to_string(p.weight_ne[0]) + " values, its activations " +
                    std::to_string(n_in));
    if (p.x_nb[0] != int64_t(sizeof(float)))
        throw Error("imatrix: the activations of " + p.weight + " are not contiguous rows");
    const auto row = [&p](int64_t i1, int64_t i2, int64_t i3) {
        return reinterpret_cast<const float*>(p.x + i1 * p.x_nb[1] + i2 * p.x_nb[2] +
                                              i3 * p.x_nb[3]);
    };
    const auto accumulate = [&](double* sums, const float* x) {
        for (int64_t j = 0; j < n_in; ++j) sums[j] += double(x[j]) * double(x[j]);
    };
    if (p.ids != nullptr) {
        // Expert product: ids {U, T}, x {n_in, U or 1, T}; each row counts for its expert only.
        const int64_t n_expert = p.weight_ne[2], slots = p.ids_ne[0], tokens = p.ids_ne[1];
        if (p.x_ne[2] != tokens || (p.x_ne[1] != 1 && p.x_ne[1] != slots) || p.x_ne[3] != 1)
            throw Error("imatrix: the activations of " + p.weight +
                        " do not match its expert ids' shape");
        Accum& a = entry(p.weight, size_t(n_in * n_expert), size_t(n_expert));
        for (int64_t t = 0; t < tokens; ++t)
            for (int64_t u = 0; u < slots; ++u) {
                int32_t e;
                std::memcpy(&e, p.ids + t * p.ids_nb[1] + u * p.ids_nb[0], sizeof e);
                if (e < 0) continue;  // SY_ID_NONE: no expert in this slot
                if (e >= n_expert)
                    throw Error("imatrix: expert id " + std::to_string(e) + " for " + p.weight +
                                " of " + std::to_string(n_expert) + " experts");
                accumulate(a.sums.data() + e * n_in, row(u % p.x_ne[1], t, 0));
                a.counts[size_t(e)] += 1;
            }
    } else {
        // Dense: matrix (i3 % ne3) * ne2 + (i2 % ne2) of the stored weight; one count.
        const int64_t ne2 = p.weight_ne[2], ne3 = p.weight_ne[3], n_mat = ne2 * ne3;
        Accum& a = entry(p.weight, size_t(n_in * n_mat), 1);
        for (int64_t i3 = 0; i3 < p.x_ne[3]; ++i3)
            for (int64_t i2 = 0; i2 < p.x_ne[2]; ++i2) {
                double* sums = a.sums.data() + ((i3 % ne3) * ne2 + (i2 % ne2)) * n_in;
                for (int64_t i1 = 0; i1 < p.x_ne[1]; ++i1) accumulate(sums, row(i1, i2, i3));
            }
        a.counts[0] += p.x_ne[1] * p.x_ne[2] * p.x_ne[3] / n_mat;
    }
    for (double v : accum_.at(p.weight).sums)
        if (!std::isfinite(v))
            throw Error("imatrix: a non-finite activation reached " + p.weight +
                        " (the model's output is broken there)");
}

Imatrix ImatrixCollector::result(std::vector<std::string> datasets, uint32_t chunk_count,
                                 uint32_t chunk_size) const {
    Imatrix m;
    m.datasets = std::move(datasets);
    m.chunk_count = chunk_count;
    m.chunk_size = chunk_size;
    for (const auto& [name, a] : accum_) {
        ImatrixEntry& e = m.entries[name];
        e.sums.assign(a.sums.begin(), a.sums.end());
        e.counts.assign(a.counts.begin(), a.counts.end());
    }
    return m;
}

}  // namespace sy::llm
