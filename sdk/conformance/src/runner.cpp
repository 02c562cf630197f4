// run_case(): one case on one device of a plugin, compared with the reference.
//
// Every source gets its own plugin buffer holding its layout (gaps filled with 0xff bytes); dst's
// buffer is filled with 0xff before compute, so an element the plugin never wrote shows up, and
// so does a write outside dst's elements.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string_view>

#include "switchyard/conformance.hpp"
#include "switchyard/quants.hpp"
#include "switchyard/reference.hpp"
#include "switchyard/sdk.hpp"

namespace sy::conformance {

namespace {

constexpr uint8_t kPoison = 0xff;
// An I32 dst gets another poison: 0xffffffff is SY_ID_NONE, a value drop_ids writes.
constexpr uint8_t kPoisonI32 = 0x7f;

uint8_t poison_of(int32_t type) {
    return type == SY_TYPE_I32 ? kPoisonI32 : kPoison;
}

// A tensor's bytes in host memory, laid out as its TensorSpec says.
struct HostTensor {
    std::vector<uint8_t> bytes;
    sy_tensor t{};  // over bytes (host memory)
    int64_t data_offset = 0;

    // Block types store dim 0 innermost in whole blocks: nb0 is the block's bytes and
    // row_padding counts blocks; a row-scaled type's rows start with their scale.
    explicit HostTensor(const TensorSpec& spec) {
        const int64_t esize = sy_dtype_info(spec.type).type_size;
        const int64_t block = std::max<int32_t>(1, sy_dtype_info(spec.type).block_size);
        int64_t stored_ne[4], stored_nb[4];
        for (int k = 0; k < 4; ++k) stored_ne[k] = spec.ne[spec.order[k]];
        stored_nb[0] = esize;
        stored_nb[1] = sy_dtype_info(spec.type).row_meta_size +
                       esize * (stored_ne[0] / block + spec.row_padding);
        for (int k = 2; k < 4; ++k) stored_nb[k] = stored_nb[k - 1] * stored_ne[k - 1];
        data_offset = spec.offset * esize;
        bytes.assign(size_t(data_offset + stored_nb[3] * stored_ne[3]), poison_of(spec.type));
        t = sdk::make_tensor(spec.type, spec.ne[0], spec.ne[1], spec.ne[2], spec.ne[3]);
        for (int k = 0; k < 4; ++k) t.nb[spec.order[k]] = stored_nb[k];
        t.data = bytes.data() + data_offset;
    }
};

// A buffer of the plugin, freed on scope exit.
struct PluginBuffer {
    const sy_plugin_api& api;
    sy_buffer buffer{};
    bool allocated = false;
    explicit PluginBuffer(const sy_plugin_api& a) : api(a) { buffer.struct_size = sizeof buffer; }
    ~PluginBuffer() {
        if (allocated) api.buffer_free(api.ctx, &buffer);
    }
};

std::string status_text(const sy_status& st) {
    return std::string(sdk::status_name(st.code)) +
           (st.message && *st.message ? std::string(": ") + st.message : std::string());
}

uint64_t seed_of(std::string_view name) {  // FNV-1a
    uint64_t h = 1469598103934665603ull;
    for (char ch : name) h = (h ^ uint8_t(ch)) * 1099511628211ull;
    return h;
}

double uniform01(std::mt19937_64& rng) {
    return double(rng() >> 11) * 0x1.0p-53;
}

bool is_block_type(int32_t type) {
    return sy_dtype_info(type).block_size > 1;
}

// The values of one row of n elements as the fill says (i1..i3: the row's index, for Dropped).
std::vector<double> row_values(const SourceSpec& s, int64_t n, int64_t i1, int64_t i2, int64_t i3,
                               std::mt19937_64& rng) {
    std::vector<double> row(static_cast<size_t>(n));
    for (int64_t i0 = 0; i0 < n; ++i0) {
        double v = 0;
        switch (s.fill) {
            case Fill::Uniform: v = s.lo + (s.hi - s.lo) * uniform01(rng); break;
            case Fill::Distinct: v = s.lo + (s.hi - s.lo) * (double(i0) + 0.5) / double(n); break;
            case Fill::Ties: v = std::floor(s.lo + (s.hi - s.lo + 1) * uniform01(rng)); break;
            case Fill::Indices:
            case Fill::Dropped:
                v = std::floor(s.lo + (s.hi - s.lo) * uniform01(rng));
                if (s.fill == Fill::Dropped && (i0 + i1 + i2 + i3) % 3 == 1) v = SY_ID_NONE;
                break;
            case Fill::Mask:
                v = uniform01(rng) < 0.25 ? -INFINITY : s.lo + (s.hi - s.lo) * uniform01(rng);
                break;
        }
        row[size_t(i0)] = v;
    }
    if (s.fill == Fill::Distinct) std::shuffle(row.begin(), row.end(), rng);
    return row;
}

// The rows a block-quantized source is filled from. Quantizing is most of the kit's time (the
// trellis and codebook types search hard for each value, the more so under the sanitizers),
// while a case checks that the backend computes with the bytes it is given what the reference
// computes with them. So each (type, row length, fill, range) has a pool of kRowPool rows,
// quantized once from values drawn with a seed of their own (the same bytes whichever case
// asks first, so that a case gives the same result alone or in a full run), and a case draws
// each of its rows from the pool with its own generator: rows differ from one another (a
// kernel that reads the wrong row is still caught) but are not quantized again.
constexpr int kRowPool = 32;

const std::vector<uint8_t>& row_pool(int32_t type, int64_t n, const SourceSpec& s) {
    static std::mutex mutex;
    static std::map<std::string, std::vector<uint8_t>> pools;
    std::ostringstream key;
    key << "pool " << type << ' ' << n << ' ' << int(s.fill) << ' ' << s.lo << ' ' << s.hi;
    const std::lock_guard lock(mutex);
    std::vector<uint8_t>& pool = pools[key.str()];
    if (pool.empty()) {
        const int64_t bytes = quants::row_size(type, n);
        pool.resize(size_t(kRowPool * bytes));
        std::mt19937_64 rng(seed_of(key.str()));
        for (int r = 0; r < kRowPool; ++r) {
            const std::vector<double> row = row_values(s, n, r, 0, 0, rng);
            const std::vector<float> values(row.begin(), row.end());
            quants::quantize_row(type, values.data(), pool.data() + r * bytes, n);
        }
    }
    return pool;
}

void fill(HostTensor& h, const SourceSpec& s, std::mt19937_64& rng) {
    const int64_t* ne = h.t.ne;
    const bool block = is_block_type(h.t.type);
    const std::vector<uint8_t>* pool = block ? &row_pool(h.t.type, ne[0], s) : nullptr;
    const size_t row_bytes = block ? pool->size() / kRowPool : 0;
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ne[1]; ++i1) {
                if (block) {  // one of the pool's quantized rows
                    const size_t r = size_t(rng() % kRowPool);
                    std::memcpy(static_cast<char*>(h.t.data) + i1 * h.t.nb[1] + i2 * h.t.nb[2] +
                                    i3 * h.t.nb[3],
                                pool->data() + r * row_bytes, row_bytes);
                    continue;
                }
                const std::vector<double> row = row_values(s, ne[0], i1, i2, i3, rng);
                for (int64_t i0 = 0; i0 < ne[0]; ++i0)
                    reference::write_element(h.t, i0, i1, i2, i3, row[size_t(i0)]);
            }
}

// Calls f(logical index, byte offset of the element from data) for each element; for a block
// type, the offset of the block that holds it (nb0 is a block's bytes).
template <typename F>
void for_each_element(const sy_tensor& t, F&& f) {
    const int64_t block = std::max<int32_t>(1, sy_dtype_info(t.type).block_size);
    int64_t i = 0;
    for (int64_t i3 = 0; i3 < t.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < t.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < t.ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < t.ne[0]; ++i0, ++i)
                    f(i, i0, i1, i2, i3,
                      i0 / block * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3]);
}

std::string index_text(int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    std::string s = "(";
    for (int64_t i : {i0, i1, i2, i3}) {
        if (s.size() > 1) s += ", ";
        s += std::to_string(i);
    }
    return s += ")";
}

std::string number(double v) {
    std::ostringstream s;
    s.precision(7);
    s << v;
    return s.str();
}

CaseResult fail(std::string message, double tolerance = 0) {
    CaseResult r;
    r.status = Status::Fail;
    r.tolerance = tolerance;
    r.message = std::move(message);
    return r;
}

// Same-type get_rows of a block type: every dst row must hold the selected src0 row's bytes (zero
// bytes for SY_ID_NONE), and no byte outside dst's rows may change.
CaseResult compare_block_rows(const HostTensor& out, const HostTensor& src, const HostTensor& ids) {
    const sy_tensor& d = out.t;
    const int64_t row_bytes = sdk::row_bytes(d.type, d.ne[0]);
    std::vector<bool> owned(out.bytes.size(), false);
    int64_t mismatches = 0;
    std::string first;
    for (int64_t i3 = 0; i3 < d.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < d.ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < d.ne[1]; ++i1) {
                const int64_t r = int64_t(reference::read_element(ids.t, i1, i2, i3, 0));
                const int64_t at = out.data_offset + i1 * d.nb[1] + i2 * d.nb[2] + i3 * d.nb[3];
                for (int64_t b = 0; b < row_bytes; ++b) owned[size_t(at + b)] = true;
                const std::vector<uint8_t> zeros(r == SY_ID_NONE ? size_t(row_bytes) : 0, 0);
                const auto* want = r == SY_ID_NONE
                                       ? zeros.data()
                                       : static_cast<const uint8_t*>(src.t.data) + r * src.t.nb[1] +
                                             i2 * src.t.nb[2] + i3 * src.t.nb[3];
                if (std::memcmp(out.bytes.data() + at, want, size_t(row_bytes)) != 0 &&
                    mismatches++ == 0)
                    first = index_text(0, i1, i2, i3);
            }
    if (mismatches > 0)
        return fail(std::to_string(mismatches) +
                    " dst row(s) differ from the selected src0 row's "
                    "bytes, first at " +
                    first);
    for (size_t b = 0; b < out.bytes.size(); ++b)
        if (!owned[b] && out.bytes[b] != poison_of(out.t.type))
            return fail("wrote outside dst's rows (byte " + std::to_string(b) +
                        " of the dst buffer)");
    CaseResult r;
    r.status = Status::Pass;
    return r;
}

// Compares dst's bytes (read back from the plugin) with the reference values.
CaseResult compare(const Case& c, HostTensor& out, const std::vector<double>& ref,
                   double tolerance) {
    const int64_t esize = sy_dtype_info(out.t.type).type_size;
    // A row-scaled type's rows start with their scale: blocks follow it.
    const int64_t meta = sy_dtype_info(out.t.type).row_meta_size;
    // Bytes that belong to dst's elements; everything else must still be poison. An I32
    // SY_ID_NONE (-1) is all poison bytes, so such an element is checked by value only.
    std::vector<bool> owned(out.bytes.size(), false);
    std::string unwritten;
    int64_t n_unwritten = 0;
    for_each_element(
        out.t, [&](int64_t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, int64_t offset) {
            if (i0 == 0)
                for (int64_t b = 0; b < meta; ++b)
                    owned[size_t(out.data_offset + offset + b)] = true;
            bool all_poison = true;
            for (int64_t b = meta; b < meta + esize; ++b) {
                owned[size_t(out.data_offset + offset + b)] = true;
                all_poison = all_poison && out.bytes[size_t(out.data_offset + offset + b)] ==
                                               poison_of(out.t.type);
            }
            if (all_poison && n_unwritten++ == 0) unwritten = index_text(i0, i1, i2, i3);
        });
    if (n_unwritten > 0)
        return fail(
            std::to_string(n_unwritten) + " dst element(s) not written, first at " + unwritten,
            tolerance);
    for (size_t b = 0; b < out.bytes.size(); ++b)
        if (!owned[b] && out.bytes[b] != poison_of(out.t.type))
            return fail("wrote outside dst's elements (byte " + std::to_string(b) +
                            " of the dst buffer, data at byte " + std::to_string(out.data_offset) +
                            ")",
                        tolerance);

    double diff2 = 0, ref2 = 0, worst = -1;
    int64_t mismatches = 0;
    std::string first_mismatch, worst_at;
    for_each_element(
        out.t, [&](int64_t i, int64_t i0, int64_t i1, int64_t i2, int64_t i3, int64_t) {
            const double got = reference::read_element(out.t, i0, i1, i2, i3);
            const double want = ref[size_t(i)];
            const std::string where =
                index_text(i0, i1, i2, i3) + ": got " + number(got) + ", want " + number(want);
            const bool exact_needed = tolerance == 0 || !std::isfinite(want);
            if (std::isnan(got) || (exact_needed && got != want)) {
                if (mismatches++ == 0) first_mismatch = where;
                return;
            }
            if (!std::isfinite(want)) return;
            const double d = got - want;
            diff2 += d * d;
            ref2 += want * want;
            if (std::fabs(d) > worst) {
                worst = std::fabs(d);
                worst_at = where;
            }
        });
    CaseResult r;
    r.tolerance = tolerance;
    if (mismatches > 0) {
        r.status = Status::Fail;
        r.error = double(mismatches);
        r.message = std::to_string(mismatches) + " of " + std::to_string(ref.size()) +
                    " element(s) differ or are NaN, first at " + first_mismatch;
        return r;
    }
    r.error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    r.status = r.error <= tolerance ? Status::Pass : Status::Fail;
    if (r.status == Status::Fail) r.message = "largest difference at " + worst_at;
    (void)c;
    return r;
}

}  // namespace

const char* status_name(Status s) {
    switch (s) {
        case Status::Pass: return "PASS";
        case Status::Fail: return "FAIL";
        default: return "SKIP";
    }
}

CaseResult run_case(Plugin& plugin, int32_t device, const Case& c) {
    CaseResult skip;
    skip.status = Status::Skip;
    if (!c.skip_reason.empty()) {
        skip.message = c.skip_reason;
        return skip;
    }
    const sy_plugin_api& api = plugin.api();
    const double tolerance = tolerance_for(c);
    std::mt19937_64 rng(seed_of(c.name));

    // Host copies of the sources, filled, and dst's layout.
    std::vector<HostTensor> host;
    host.reserve(c.src.size());
    for (const SourceSpec& s : c.src) {
        host.emplace_back(s.tensor);
        fill(host.back(), s, rng);
    }
    HostTensor out(c.dst);

    sy_node node = sdk::make_node(c.op, &out.t);
    node.named_op = c.named_op.empty() ? nullptr : c.named_op.c_str();
    node.named_op_version = c.named_op_version;
    node.n_src = int32_t(c.src.size());
    for (size_t i = 0; i < host.size(); ++i) node.src[i] = &host[i].t;
    std::memcpy(node.iparams, c.iparams, sizeof node.iparams);
    std::memcpy(node.fparams, c.fparams, sizeof node.fparams);

    std::vector<double> ref;
    try {
        ref = reference::evaluate(node);
    } catch (const std::exception& e) {
        return fail(std::string("the reference rejects this node (is the capability row within "
                                "ops.h?): ") +
                        e.what(),
                    tolerance);
    }

    // The same node over plugin buffers.
    std::vector<std::unique_ptr<PluginBuffer>> buffers;
    std::vector<sy_tensor> tensors;
    tensors.reserve(host.size() + 1);
    auto upload = [&](const HostTensor& h, const std::string& role) -> std::string {
        auto buf = std::make_unique<PluginBuffer>(api);
        sy_status st = api.buffer_alloc(api.ctx, device, h.bytes.size(), &buf->buffer);
        if (st.code != SY_OK) return "buffer_alloc(" + role + ") failed: " + status_text(st);
        buf->allocated = true;
        if (buf->buffer.size < h.bytes.size())
            return "buffer_alloc(" + role + ") returned a buffer smaller than asked for";
        st = api.buffer_set(api.ctx, &buf->buffer, 0, h.bytes.data(), h.bytes.size());
        if (st.code != SY_OK) return "buffer_set(" + role + ") failed: " + status_text(st);
        sy_tensor t = h.t;
        t.data = static_cast<char*>(buf->buffer.base) + h.data_offset;
        t.buffer = &buf->buffer;
        tensors.push_back(t);
        buffers.push_back(std::move(buf));
        return {};
    };
    for (size_t i = 0; i < host.size(); ++i)
        if (std::string e = upload(host[i], "src" + std::to_string(i)); !e.empty()) return fail(e);
    if (std::string e = upload(out, "dst"); !e.empty()) return fail(e);  // all poison
    sy_node device_node = node;
    for (size_t i = 0; i < host.size(); ++i) device_node.src[i] = &tensors[i];
    device_node.dst = &tensors.back();

    int32_t supported = 0;
    sy_status st = api.supports(api.ctx, device, &device_node, &supported);
    if (st.code != SY_OK) return fail("supports() failed: " + status_text(st), tolerance);
    if (!supported) {
        if (c.base)
            return fail(
                "supports() refuses the plain contiguous case of a declared capability "
                "row",
                tolerance);
        skip.message = "supports() = 0 for this shape/layout";
        return skip;
    }
    const sy_node* nodes[] = {&device_node};
    st = api.compute(api.ctx, device, nodes, 1);
    if (st.code != SY_OK) return fail("compute() failed: " + status_text(st), tolerance);
    st = api.synchronize(api.ctx, device);
    if (st.code != SY_OK) return fail("synchronize() failed: " + status_text(st), tolerance);
    st = api.buffer_get(api.ctx, &buffers.back()->buffer, 0, out.bytes.data(), out.bytes.size());
    if (st.code != SY_OK) return fail("buffer_get(dst) failed: " + status_text(st), tolerance);
    if (is_block_type(out.t.type) && c.op == SY_OP_GET_ROWS && host.size() == 2)
        return compare_block_rows(out, host[0], host[1]);
    return compare(c, out, ref, tolerance);
}

std::string format_result(const Case& c, const CaseResult& r) {
    std::string line = std::string(status_name(r.status)) + "  " + c.name;
    if (r.status == Status::Skip) return line + "  (" + r.message + ")";
    if (r.tolerance == 0 && r.status == Status::Pass)
        line += "  exact";
    else if (r.tolerance > 0 && (r.status == Status::Pass || r.message.rfind("largest", 0) == 0)) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "  err %.3g %s %.3g", r.error,
                      r.status == Status::Pass ? "<=" : ">", r.tolerance);
        line += buf;
    }
    if (!r.message.empty() && r.status == Status::Fail) line += "  " + r.message;
    return line;
}

}  // namespace sy::conformance
