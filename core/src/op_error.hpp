// How the graph builder reports a broken op contract: the op, every tensor it was given (name,
// type, shape) and what is wrong, e.g.
//   mul_mat('blk.0.attn_q.weight' f32 {64, 32, 1, 1}, 'attn_norm' f32 {48, 7, 1, 1}):
//   ne0 (K) must agree: 64 vs 48
#pragma once

#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "switchyard/core/error.hpp"
#include "switchyard/core/tensor.hpp"

namespace sy {

[[noreturn]] inline void fail_op(std::string_view op, std::span<const Tensor* const> tensors,
                                 const std::string& what) {
    std::string message(op);
    message += "(";
    bool first = true;
    for (const Tensor* t : tensors) {
        if (!first) message += ", ";
        message += t ? t->describe() : "null";
        first = false;
    }
    message += "): " + what;
    throw Error(message);
}

[[noreturn]] inline void fail_op(std::string_view op, std::initializer_list<const Tensor*> tensors,
                                 const std::string& what) {
    fail_op(op, std::span<const Tensor* const>(tensors.begin(), tensors.size()), what);
}

}  // namespace sy
