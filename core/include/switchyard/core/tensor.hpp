// A tensor of a compute graph: a descriptor (type, shape, byte strides, name) plus where its bytes
// come from. Tensors are created and owned by a Graph (graph.hpp); the Tensor* it hands out stay
// valid for the graph's lifetime. Shapes follow ggml order: ne0 is the innermost dimension.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "switchyard/plugin.h"

namespace sy {

class Buffer;
class Graph;

// {ne0, ne1, ne2, ne3}; dimensions not given are 1, so {n_embd, n_tokens} is a 2-D shape.
struct Shape {
    std::array<int64_t, SY_MAX_DIMS> ne{1, 1, 1, 1};

    Shape() = default;
    Shape(std::initializer_list<int64_t> dims);  // throws Error with more than 4 dimensions
    int64_t operator[](int d) const { return ne[static_cast<size_t>(d)]; }
    int64_t& operator[](int d) { return ne[static_cast<size_t>(d)]; }
    int64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    bool operator==(const Shape&) const = default;
    std::string str() const;  // "{4, 3, 1, 1}"
};

// Byte strides {nb0, nb1, nb2, nb3}.
using Strides = std::array<int64_t, SY_MAX_DIMS>;

// Strides of a packed tensor (nb0 = element or block size, nb[d] = nb[d-1] * ne[d-1]).
Strides packed_strides(sy_dtype type, const Shape& shape);

enum class TensorKind {
    weight,        // external memory bound by the caller; uploaded when staged, unless the
                   // staging buffer holds its bytes already
    input,         // external memory bound by the caller; uploaded on every run when staged
    intermediate,  // written by a node of the graph; lives in the compute buffer
    view,          // the bytes of another tensor (its base) at an offset, with its own strides
};

const char* kind_name(TensorKind kind);

// A fresh constant id (1, 2, ...: never 0, never reused in this process) for one set of weights,
// such as a loaded model's; PluginHost::release_constants(id) when they are gone.
uint64_t new_constant_id();

// A graph object as far as it has grown (Graph::stamp): a graph only grows (views move, nodes'
// integer parameters shift, shapes stay), so what was derived from a graph with an equal stamp
// (its placement, plan, bindings) still holds for it.
struct GraphStamp {
    uint64_t serial = 0;
    size_t tensors = 0, nodes = 0;
    bool operator==(const GraphStamp&) const = default;
};

class Tensor {
  public:
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;

    int32_t id() const { return id_; }                       // index in its graph's tensors()
    uint64_t graph_serial() const { return graph_serial_; }  // Graph::serial() of its graph
    const std::string& name() const { return name_; }
    Tensor* set_name(std::string name);  // returns this, for g.mul_mat(w, x)->set_name("Qcur")

    sy_dtype type() const { return type_; }
    const Shape& shape() const { return shape_; }
    int64_t ne(int d) const { return shape_[d]; }
    const Strides& strides() const { return strides_; }
    int64_t nb(int d) const { return strides_[static_cast<size_t>(d)]; }
    TensorKind kind() const { return kind_; }
    bool is_external() const { return kind_ == TensorKind::weight || kind_ == TensorKind::input; }
    bool is_view() const { return kind_ == TensorKind::view; }

    // The tensor whose memory this one aliases (never a view itself); this for a non-view.
    const Tensor* base() const { return base_ ? base_ : this; }
    Tensor* base() { return base_ ? base_ : this; }
    // Bytes from the base's first byte to this tensor's element (0,0,0,0); 0 for a non-view.
    uint64_t offset() const { return offset_; }
    // Index of the node that creates this tensor, or -1 (leaves and views).
    int32_t producer() const { return producer_; }
    bool is_output() const { return output_; }

    int64_t elements() const { return shape_.elements(); }
    // Bytes spanned through the strides (first to last byte + 1).
    int64_t bytes() const;
    bool is_contiguous() const;

    // The ABI descriptor with data and buffer unset (the executor binds them) and name set.
    sy_tensor descriptor() const;
    // "'attn_norm-0' f32 {2048, 7, 1, 1}": how error messages name a tensor.
    std::string describe() const;

    // External memory of a weight or input: host memory, or bytes already resident in a buffer
    // of a plugin. Throws Error for other kinds (their memory is planned).
    void set_data(void* host);
    void set_data(const Buffer& buffer, uint64_t offset);
    void* host_data() const { return host_data_; }
    const Buffer* device_buffer() const { return device_buffer_; }
    uint64_t device_offset() const { return device_offset_; }
    bool has_data() const { return host_data_ != nullptr || device_buffer_ != nullptr; }
    // A weight whose bytes never change while `id` is in use (plugin.h's sy_tensor.constant_id,
    // from new_constant_id()); views carry their base's. 0: not constant.
    void set_constant_id(uint64_t id);
    uint64_t constant_id() const { return base()->constant_id_; }

  private:
    friend class Graph;
    Tensor(uint64_t graph_serial, int32_t id, std::string name, sy_dtype type, const Shape& shape,
           const Strides& strides, TensorKind kind)
        : graph_serial_(graph_serial),
          id_(id),
          name_(std::move(name)),
          type_(type),
          shape_(shape),
          strides_(strides),
          kind_(kind) {}

    uint64_t graph_serial_;
    int32_t id_;
    std::string name_;
    sy_dtype type_;
    Shape shape_;
    Strides strides_;
    TensorKind kind_;
    Tensor* base_ = nullptr;
    uint64_t offset_ = 0;
    int32_t producer_ = -1;
    bool output_ = false;
    uint64_t constant_id_ = 0;
    void* host_data_ = nullptr;
    const Buffer* device_buffer_ = nullptr;
    uint64_t device_offset_ = 0;
};

}  // namespace sy
