#include "switchyard/validation.hpp"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "switchyard/named_ops.h"
#include "switchyard/op_contract.hpp"
#include "switchyard/op_work.hpp"
#include "switchyard/sdk.hpp"

namespace sy::validation {
namespace {

const char* row_at(const sy_tensor& t, int64_t i1, int64_t i2, int64_t i3) {
    return static_cast<const char*>(t.data) + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

std::string shape_string(const sy_tensor& t) {
    return "{" + std::to_string(t.ne[0]) + ", " + std::to_string(t.ne[1]) + ", " +
           std::to_string(t.ne[2]) + ", " + std::to_string(t.ne[3]) + "}";
}

const char* type_name(int32_t type) {
    const char* name = sy_dtype_info(type).name;
    return name ? name : "unknown type";
}

// Formats "<op> '<dst name>': <what>" as an SY_ERR_INVALID_ARGUMENT status.
class NodeErrors {
  public:
    explicit NodeErrors(const sy_node& node) : node_(node) {}

    sy_status fail(const char* format, ...) const __attribute__((format(printf, 2, 3))) {
        char what[768];
        va_list args;
        va_start(args, format);
        std::vsnprintf(what, sizeof what, format, args);
        va_end(args);
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: %s", label().c_str(), what);
    }

    std::string label() const {
        const char* op = sdk::op_name(node_.op);
        std::string s =
            node_.op == SY_OP_NAMED && node_.named_op
                ? std::string(node_.named_op) + " v" + std::to_string(node_.named_op_version)
            : op ? op
                 : "op " + std::to_string(node_.op);
        if (node_.dst && node_.dst->name && node_.dst->name[0])
            s += std::string(" '") + node_.dst->name + "'";
        return s;
    }

  private:
    const sy_node& node_;
};

std::string role_name(const char* role, const sy_tensor& t) {
    std::string s = role;
    if (t.name && t.name[0]) s += std::string(" '") + t.name + "'";
    return s;
}

bool checked_add(int64_t a, int64_t b, int64_t* out) {
    return !__builtin_add_overflow(a, b, out);
}
bool checked_mul(int64_t a, int64_t b, int64_t* out) {
    return !__builtin_mul_overflow(a, b, out);
}

// Index values (row ids, expert ids) read from an I32 tensor must lie in [0, limit) or be
// SY_ID_NONE (a dropped slot, ops.h).
sy_status check_index_range(const NodeErrors& errors, const sy_tensor& ids, int64_t limit,
                            const char* what) {
    for (int64_t i3 = 0; i3 < ids.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ids.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ids.ne[1]; ++i1) {
                const char* row = row_at(ids, i1, i2, i3);
                for (int64_t i0 = 0; i0 < ids.ne[0]; ++i0) {
                    int32_t v;
                    std::memcpy(&v, row + i0 * ids.nb[0], 4);
                    if ((v < 0 && v != SY_ID_NONE) || v >= limit)
                        return errors.fail("%s [%lld, %lld, %lld, %lld] is %d, outside [0, %lld)",
                                           role_name(what, ids).c_str(), (long long)i0,
                                           (long long)i1, (long long)i2, (long long)i3, v,
                                           (long long)limit);
                }
            }
    return sdk::ok();
}

// The op contract (op_contract.hpp), then what only the data can show: the index values a
// node reads (row ids, expert ids) in range. read_indices: index tensors are in host memory.
sy_status check_op_rules(const NodeErrors& e, const sy_node& n, bool read_indices,
                         const char* backend) {
    if (n.op != SY_OP_NAMED && (n.op <= SY_OP_NONE || n.op >= SY_OP_BUILTIN_COUNT))
        return sdk::error(SY_ERR_UNSUPPORTED, "%s: not implemented by the %s plugin",
                          e.label().c_str(), backend);
    if (const std::string why = sdk::check_op(n); !why.empty()) return e.fail("%s", why.c_str());
    if (!read_indices) return sdk::ok();
    if (n.op == SY_OP_GET_ROWS)
        return check_index_range(e, *n.src[1], n.src[0]->ne[1], "src1 (row ids)");
    const sdk::ExpertOperands experts = sdk::expert_operands(n);
    if (experts.any())
        return check_index_range(e, *n.src[experts.ids], n.src[experts.weights[0]]->ne[2],
                                 experts.ids == 2 ? "src2 (expert ids)" : "src3 (expert ids)");
    return sdk::ok();
}

std::string types_string(const sy_node& n) {
    std::string s = std::string("dst ") + type_name(n.dst->type);
    for (int i = 0; i < SY_MAX_SRC; ++i)
        if (n.src[i]) s += ", src" + std::to_string(i) + " " + type_name(n.src[i]->type);
    return s;
}

bool slot_matches(int32_t want, const sy_tensor* src) {
    if (want == SY_TYPE_NONE) return src == nullptr;
    if (src == nullptr) return false;
    return want == SY_TYPE_ANY || want == src->type;
}

}  // namespace

int64_t tensor_extent(const sy_tensor& t) {
    const sy_dtype_traits traits = sy_dtype_info(t.type);
    if (traits.block_size <= 0) return -1;
    for (int d = 0; d < SY_MAX_DIMS; ++d)
        if (t.ne[d] < 0 || t.nb[d] < 0) return -1;
    if (t.ne[0] % traits.block_size != 0) return -1;
    if (t.ne[0] == 0 || t.ne[1] == 0 || t.ne[2] == 0 || t.ne[3] == 0) return 0;
    // Last element (block) of the row, then the last row.
    int64_t extent = traits.row_meta_size + traits.type_size;
    int64_t step = 0;
    if (!checked_mul(t.ne[0] / traits.block_size - 1, t.nb[0], &step) ||
        !checked_add(extent, step, &extent))
        return -1;
    for (int d = 1; d < SY_MAX_DIMS; ++d)
        if (!checked_mul(t.ne[d] - 1, t.nb[d], &step) || !checked_add(extent, step, &extent))
            return -1;
    return extent;
}

// Whether any capability row names this node's named op and schema version (whatever types).
static bool provides_named(const sy_node& node, const Backend& backend) {
    if (node.named_op == nullptr) return false;
    for (size_t r = 0; r < backend.row_count; ++r) {
        const sy_capability& row = backend.rows[r];
        if (row.op == SY_OP_NAMED && row.named_op != nullptr &&
            std::strcmp(row.named_op, node.named_op) == 0 &&
            row.named_op_version == node.named_op_version)
            return true;
    }
    return false;
}

const sy_capability* find_capability(const sy_node& node, const sy_capability* rows,
                                     size_t row_count) {
    if (node.dst == nullptr) return nullptr;
    for (int i = 4; i < SY_MAX_SRC; ++i)
        if (node.src[i] != nullptr) return nullptr;  // no row describes more than four sources
    for (size_t r = 0; r < row_count; ++r) {
        const sy_capability& row = rows[r];
        if (row.op != node.op || row.dst_type != node.dst->type) continue;
        if (row.op == SY_OP_NAMED && (row.named_op == nullptr || node.named_op == nullptr ||
                                      std::strcmp(row.named_op, node.named_op) != 0 ||
                                      row.named_op_version != node.named_op_version))
            continue;
        bool match = true;
        for (int i = 0; i < 4 && match; ++i) match = slot_matches(row.src_type[i], node.src[i]);
        if (match) return &row;
    }
    return nullptr;
}

sy_status validate_tensor(const sy_tensor* t, const char* role, const char* context,
                          DataChecks checks, bool host_memory) {
    if (t->struct_size < SY_TENSOR_SIZE_1_0)
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: %s has struct_size %u, expected at least %zu", context,
                          role_name(role, *t).c_str(), t->struct_size, size_t(SY_TENSOR_SIZE_1_0));
    if (sy_dtype_info(t->type).name == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: %s has unknown type id %d", context,
                          role_name(role, *t).c_str(), t->type);
    const int64_t extent = tensor_extent(*t);
    if (extent < 0)
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: %s %s has negative sizes or strides, a partial block, or a byte "
                          "span that overflows",
                          context, role_name(role, *t).c_str(), shape_string(*t).c_str());
    if (checks == DataChecks::kDescriptorsOnly || extent == 0) return sdk::ok();
    if (t->data == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "%s: %s has no data", context,
                          role_name(role, *t).c_str());
    if (const sy_buffer* buf = t->buffer) {
        if (host_memory && !buf->host_visible)
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "%s: %s lives in a buffer the host cannot read", context,
                              role_name(role, *t).c_str());
        const auto base = reinterpret_cast<uintptr_t>(buf->base);
        const auto begin = reinterpret_cast<uintptr_t>(t->data);
        if (begin < base || begin - base > buf->size ||
            uint64_t(extent) > buf->size - (begin - base))
            return sdk::error(SY_ERR_INVALID_ARGUMENT,
                              "%s: %s spans bytes [%llu, %llu) of its buffer, which has %llu bytes",
                              context, role_name(role, *t).c_str(),
                              (unsigned long long)(begin - base),
                              (unsigned long long)(begin - base + uint64_t(extent)),
                              (unsigned long long)buf->size);
    }
    return sdk::ok();
}

sy_status validate_node(const sy_node* node, DataChecks checks, const Backend& backend) {
    if (node == nullptr) return sdk::error(SY_ERR_INVALID_ARGUMENT, "node is NULL");
    if (node->struct_size < sizeof(sy_node))
        return sdk::error(SY_ERR_ABI,
                          "node struct_size %u is smaller than sy_node of ABI 1.0 (%zu)",
                          node->struct_size, sizeof(sy_node));
    const NodeErrors errors(*node);
    if (node->op == SY_OP_NAMED && !provides_named(*node, backend))
        return sdk::error(
            SY_ERR_UNSUPPORTED, "named op '%s' (schema %u) is not provided by the %s plugin",
            node->named_op ? node->named_op : "(null)", node->named_op_version, backend.name);
    if (node->op != SY_OP_NAMED && (node->op <= SY_OP_NONE || node->op >= SY_OP_BUILTIN_COUNT))
        return sdk::error(SY_ERR_UNSUPPORTED, "op id %d is not an op the %s plugin knows", node->op,
                          backend.name);
    if (node->dst == nullptr) return errors.fail("dst is NULL");
    // This runs for every node of every compute call: the label and role strings are formatted
    // only for a tensor that fails, by checking it a second time with them.
    const auto check_tensor = [&](const sy_tensor* t, const char* role) {
        sy_status s = validate_tensor(t, role, "", checks, backend.host_memory);
        if (s.code)
            s = validate_tensor(t, role, errors.label().c_str(), checks, backend.host_memory);
        return s;
    };
    static constexpr const char* kSrcRoles[] = {"src0", "src1", "src2", "src3",
                                                "src4", "src5", "src6", "src7"};
    static_assert(std::size(kSrcRoles) >= SY_MAX_SRC);
    if (sy_status s = check_tensor(node->dst, "dst"); s.code) return s;
    for (int i = 0; i < SY_MAX_SRC; ++i) {
        if (!node->src[i]) continue;
        if (sy_status s = check_tensor(node->src[i], kSrcRoles[i]); s.code) return s;
    }
    if (find_capability(*node, backend.rows, backend.row_count) == nullptr)
        return errors.fail("no kernel for %s (the capability table lists what is accepted)",
                           types_string(*node).c_str());
    const bool read_indices = checks == DataChecks::kFull && backend.host_memory;
    return check_op_rules(errors, *node, read_indices, backend.name);
}

}  // namespace sy::validation
