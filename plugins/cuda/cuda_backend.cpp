#include "cuda_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <vector>

#include "capabilities.hpp"
#include "ops/ops.hpp"
#include "ops/tensor_desc.hpp"
#include "switchyard/named_ops.h"
#include "switchyard/op_work.hpp"
#include "switchyard/sdk.hpp"
#include "switchyard/validation.hpp"

namespace sy::cuda {
namespace {

sy_status cuda_error(const char* fn, const char* what, cudaError_t e) {
    return sdk::error(SY_ERR_BACKEND, "%s: %s: %s", fn, what, cudaGetErrorString(e));
}

// FP32 lanes per SM by compute capability (the CUDA programming guide's throughput table):
// 64 on sm_80 (A100), 128 on sm_86 / 89 / 90.
int fp32_lanes_per_sm(int major, int minor) {
    if (major == 8 && minor == 0) return 64;
    return 128;
}

// Dense F16/BF16 tensor-core FLOPs per clock per SM: A100 (sm_80) 2048, Ada (sm_89) 1024 (with
// FP32 accumulation on GeForce parts it is half of that; 1024 is the workstation figure), Hopper
// (sm_90) 4096. Int8 is twice each.
int tensor_flops_per_sm_clock(int major, int minor) {
    if (major >= 9) return 4096;
    if (major == 8 && minor == 0) return 2048;
    return 1024;
}

double clock_hz(int device, cudaDeviceAttr attr) {
    int khz = 0;
    cudaDeviceGetAttribute(&khz, attr, device);
    return double(khz) * 1e3;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

CudaBackend::CudaBackend(const sy_host_api& host) : host_(host) {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        count = 0;
        log(SY_LOG_INFO, std::string("no CUDA device: ") + cudaGetErrorString(e));
    }
    int driver = 0;
    cudaDriverGetVersion(&driver);
    char info[256];
    std::snprintf(info, sizeof info, "CUDA runtime %d.%d, driver %d.%d, cuBLAS, %d device(s)",
                  runtime / 1000, runtime % 1000 / 10, driver / 1000, driver % 1000 / 10, count);
    build_info_ = info;
    devices_.resize(size_t(count));
    cost_params_.resize(size_t(count));
    for (int i = 0; i < count; ++i) {
        devices_[size_t(i)].ordinal = i;
        if (sy_status s = init_device(devices_[size_t(i)]); s.code)
            throw std::runtime_error(s.message ? s.message : "device initialisation failed");
    }
}

CudaBackend::~CudaBackend() {
    for (Device& d : devices_)
        if (d.stream) {
            cudaSetDevice(d.ordinal);
            cudaStreamSynchronize(d.stream);
        }
    for (const auto& [ptr, size] : pinned_) cudaHostUnregister(ptr);  // the host forgot them
    for (Device& d : devices_) {
        cudaSetDevice(d.ordinal);
        if (d.stream) cudaStreamSynchronize(d.stream);
        d.scratch.reset();
        d.profile.reset();
        for (auto& [key, replay] : d.graphs)
            if (replay.exec) cudaGraphExecDestroy(replay.exec);
        if (d.cublas) cublasDestroy(d.cublas);
        if (d.cublas_workspace) cudaFree(d.cublas_workspace);
        if (d.host_error_word) {
            cudaFreeHost(d.host_error_word);
        } else if (d.error_word) {
            cudaFree(d.error_word);
        }
        if (d.stream) cudaStreamDestroy(d.stream);
    }
}

sy_status CudaBackend::init_device(Device& d) {
    const char* fn = "init";
    if (cudaError_t e = cudaSetDevice(d.ordinal); e != cudaSuccess)
        return cuda_error(fn, "cudaSetDevice", e);
    if (cudaError_t e = cudaGetDeviceProperties(&d.props, d.ordinal); e != cudaSuccess)
        return cuda_error(fn, "cudaGetDeviceProperties", e);
    const double mem_clock = clock_hz(d.ordinal, cudaDevAttrMemoryClockRate);
    // Double data rate: two transfers per clock over the bus.
    d.memory_bandwidth = 2.0 * mem_clock * double(d.props.memoryBusWidth) / 8.0;
    const double sm_clock = clock_hz(d.ordinal, cudaDevAttrClockRate);
    const double sms = d.props.multiProcessorCount;
    d.peak_flops_f32 = sms * fp32_lanes_per_sm(d.props.major, d.props.minor) * 2.0 * sm_clock;
    d.peak_flops_f16 = sms * tensor_flops_per_sm_clock(d.props.major, d.props.minor) * sm_clock;
    d.peak_flops_int8 = 2.0 * d.peak_flops_f16;
    if (cudaError_t e = cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking);
        e != cudaSuccess)
        return cuda_error(fn, "cudaStreamCreate", e);
    if (cublasCreate(&d.cublas) != CUBLAS_STATUS_SUCCESS)
        return sdk::error(SY_ERR_BACKEND, "init: cublasCreate failed on device %d", d.ordinal);
    cublasSetStream(d.cublas, d.stream);
    // A workspace of cuBLAS's own choosing may be allocated during a graph capture; this one is
    // there before any (32 MiB: what cuBLAS asks for on Hopper).
    constexpr size_t kCublasWorkspace = size_t(32) << 20;
    if (cudaMalloc(&d.cublas_workspace, kCublasWorkspace) == cudaSuccess) {
        cublasSetWorkspace(d.cublas, d.cublas_workspace, kCublasWorkspace);
    } else {
        cudaGetLastError();
        d.cublas_workspace = nullptr;
    }
    // The error word in mapped host memory: after the stream's synchronization the host reads
    // it where it is, without another round trip over the link (a copy costs microseconds:
    // docs/design-measurements.md#cuda-error-word).
    void* host_word = nullptr;
    if (cudaHostAlloc(&host_word, sizeof(int), cudaHostAllocMapped) == cudaSuccess &&
        cudaHostGetDevicePointer(reinterpret_cast<void**>(&d.error_word), host_word, 0) ==
            cudaSuccess) {
        d.host_error_word = static_cast<int*>(host_word);
        *d.host_error_word = 0;
    } else {
        cudaGetLastError();
        if (host_word) cudaFreeHost(host_word);
        d.error_word = nullptr;
        if (cudaError_t e = cudaMalloc(&d.error_word, sizeof(int)); e != cudaSuccess)
            return cuda_error(fn, "cudaMalloc (error word)", e);
        cudaMemset(d.error_word, 0, sizeof(int));
    }
    d.scratch = std::make_unique<Scratch>(d.stream);
    d.profile = std::make_unique<NodeProfile>();
    return sdk::ok();
}

void CudaBackend::log(int32_t level, const std::string& message) const {
    if (SY_HAS_FIELD(&host_, log) && host_.log)
        host_.log(host_.host_ctx, level, "cuda", message.c_str());
}

// Pinned 64 MiB copies each way (best of 3) and 4-byte round trips (median of 20): the cost of
// moving host-resident data onto the device, which the scheduler weighs against computing on
// the host.
const LinkRates& CudaBackend::link_rates(Device& d) {
    if (d.link) return *d.link;
    LinkRates r{};
    cudaSetDevice(d.ordinal);
    constexpr size_t kBytes = size_t(64) << 20;
    void* host = nullptr;
    void* dev = nullptr;
    if (cudaMallocHost(&host, kBytes) == cudaSuccess && cudaMalloc(&dev, kBytes) == cudaSuccess) {
        std::memset(host, 1, kBytes);
        double best_h2d = 1e30, best_d2h = 1e30;
        for (int i = 0; i < 3; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            cudaMemcpyAsync(dev, host, kBytes, cudaMemcpyHostToDevice, d.stream);
            cudaStreamSynchronize(d.stream);
            best_h2d = std::min(best_h2d, seconds_since(t0));
            t0 = std::chrono::steady_clock::now();
            cudaMemcpyAsync(host, dev, kBytes, cudaMemcpyDeviceToHost, d.stream);
            cudaStreamSynchronize(d.stream);
            best_d2h = std::min(best_d2h, seconds_since(t0));
        }
        r.host_to_device = double(kBytes) / best_h2d;
        r.device_to_host = double(kBytes) / best_d2h;
        std::vector<double> small;
        for (int i = 0; i < 20; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            cudaMemcpyAsync(dev, host, 4, cudaMemcpyHostToDevice, d.stream);
            cudaStreamSynchronize(d.stream);
            small.push_back(seconds_since(t0));
        }
        std::sort(small.begin(), small.end());
        r.latency_ns = small[small.size() / 2] * 1e9;
        constexpr int kLaunches = 200;
        launch_empty_kernel(d.stream);
        cudaStreamSynchronize(d.stream);
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kLaunches; ++i) launch_empty_kernel(d.stream);
        cudaStreamSynchronize(d.stream);
        r.launch_ns = seconds_since(t0) / kLaunches * 1e9;
    }
    cudaGetLastError();
    if (dev) cudaFree(dev);
    if (host) cudaFreeHost(host);
    d.link = r;
    return *d.link;
}

sy_status CudaBackend::capabilities(const sy_capability** rows, size_t* count) {
    const validation::CapabilityTable table = capability_table();
    *rows = table.rows;
    *count = table.count;
    return sdk::ok();
}

namespace {
const sy_named_op_info kNamedOps[] = {
    {sizeof(sy_named_op_info), SY_NAMED_MOE_FUSED_UP_GATE, SY_NAMED_MOE_FUSED_UP_GATE_VERSION,
     "routed experts' up and gate products (row dots sharing the quantized activations; one expert "
     "per token as two MUL_MATs), then act(gate) * up"},
};
}  // namespace

sy_status CudaBackend::named_ops(const sy_named_op_info** ops, size_t* count) {
    *ops = kNamedOps;
    *count = std::size(kNamedOps);
    return sdk::ok();
}

sy_status CudaBackend::device_props(int32_t device, sy_device_props* props) {
    if (props == nullptr || props->struct_size < sizeof(sy_device_props))
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "device_props: props is NULL or its struct_size is too small");
    std::lock_guard<std::mutex> lock(mutex_);
    Device& d = devices_[size_t(device)];
    const LinkRates& link = link_rates(d);
    const uint32_t size = props->struct_size;
    std::memset(props, 0, sizeof(sy_device_props));
    props->struct_size = size;
    std::snprintf(props->name, sizeof props->name, "%.127s", d.props.name);
    std::snprintf(props->description, sizeof props->description,
                  "compute capability %d.%d, %d SMs, %.0f MHz, %d-bit memory bus, "
                  "%.0f GB/s memory, %.1f GB/s host link",
                  d.props.major, d.props.minor, d.props.multiProcessorCount,
                  clock_hz(d.ordinal, cudaDevAttrClockRate) / 1e6, d.props.memoryBusWidth,
                  d.memory_bandwidth / 1e9, link.host_to_device / 1e9);
    props->kind = SY_DEVICE_GPU;
    props->compute_units = d.props.multiProcessorCount;
    size_t free_bytes = 0, total = 0;
    cudaSetDevice(d.ordinal);
    cudaMemGetInfo(&free_bytes, &total);
    props->memory_total = total;
    props->memory_free = free_bytes;
    props->host_memory = 0;
    props->peak_flops_f32 = d.peak_flops_f32;
    props->peak_flops_f16 = d.peak_flops_f16;
    props->peak_flops_int8 = d.peak_flops_int8;
    props->memory_bandwidth = d.memory_bandwidth;
    props->link_bandwidth = link.host_to_device;
    props->link_latency_ns = link.latency_ns;
    props->launch_overhead_ns = link.launch_ns;
    return sdk::ok();
}

sy_status CudaBackend::supports(int32_t /*device*/, const sy_node* node, int32_t* supported) {
    if (supported == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "supports: result pointer is NULL");
    *supported = validation::validate_node(node, validation::DataChecks::kDescriptorsOnly,
                                           validation_rules())
                             .code == SY_OK
                     ? 1
                     : 0;
    return sdk::ok();
}

// A roofline over sdk::op_work: the larger of bytes over memory bandwidth and flops over the
// rate of the unit that runs them (tensor cores for cuBLAS products, int8 dp4a for small-batch
// block products, FP32 lanes otherwise), plus one launch.
sy_status CudaBackend::estimate(int32_t device, const sy_node* node, double* nanoseconds) {
    if (nanoseconds == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "estimate: result pointer is NULL");
    if (sy_status s = validation::validate_node(node, validation::DataChecks::kDescriptorsOnly,
                                                validation_rules());
        s.code)
        return s;
    std::lock_guard<std::mutex> lock(mutex_);
    Device& d = devices_[size_t(device)];
    const LinkRates& link = link_rates(d);
    const sdk::OpWork work = sdk::op_work(*node);
    double rate = d.peak_flops_f32;
    if (node->op == SY_OP_MUL_MAT || sdk::expert_operands(*node).any()) {
        const sy_tensor& w = *node->src[0];
        const bool blocks = sy_dtype_info(w.type).block_size > 1;
        rate = w.type == SY_TYPE_F32 ? d.peak_flops_f32
               : blocks              ? d.peak_flops_int8 / 4
                                     : d.peak_flops_f16;
    }
    const double seconds = std::max(work.bytes / d.memory_bandwidth, work.flops / rate);
    *nanoseconds = seconds * 1e9 + link.launch_ns;
    return sdk::ok();
}

sy_status CudaBackend::cost_params(int32_t device, const sy_cost_param** params, size_t* count) {
    if (params == nullptr || count == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "cost_params: result pointers are NULL");
    std::lock_guard<std::mutex> lock(mutex_);
    Device& d = devices_[size_t(device)];
    const LinkRates& link = link_rates(d);
    auto row = [](const char* key, double value, const char* unit) {
        return sy_cost_param{sizeof(sy_cost_param), key, value, unit};
    };
    auto& table = cost_params_[size_t(device)];
    table = {
        row("memory_bandwidth", d.memory_bandwidth, "B/s"),
        row("peak_flops_f32", d.peak_flops_f32, "FLOP/s"),
        row("peak_flops_f16", d.peak_flops_f16, "FLOP/s"),
        row("link_host_to_device", link.host_to_device, "B/s"),
        row("link_device_to_host", link.device_to_host, "B/s"),
        row("link_latency", link.latency_ns, "ns"),
        row("launch_overhead", link.launch_ns, "ns"),
    };
    *params = table.data();
    *count = table.size();
    return sdk::ok();
}

sy_status CudaBackend::buffer_alloc(int32_t device, uint64_t size, sy_buffer* buffer) {
    return buffers_.alloc(device, size, buffer);
}

// Every tensor of a node must lie in a live buffer of this plugin on the node's device (the
// op-contract checks have already bounded it within its buffer).
sy_status CudaBackend::check_node_memory(const Device& d, const sy_node& node) const {
    auto check = [&](const sy_tensor* t, const char* role) -> sy_status {
        if (t == nullptr || sdk::nelements(*t) == 0) return sdk::ok();
        const int32_t owner = buffers_.device_of(t->buffer);
        if (owner == d.ordinal) return sdk::ok();
        const char* op = sdk::op_name(node.op);
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "%s: %s%s%s%s is %s; the cuda plugin computes only on its own buffers of "
                          "device %d",
                          op ? op : "node", role, t->name ? " '" : "", t->name ? t->name : "",
                          t->name ? "'" : "",
                          t->buffer == nullptr ? "in host memory"
                          : owner < 0          ? "in a buffer the cuda plugin did not allocate"
                                               : "on another cuda device",
                          d.ordinal);
    };
    if (sy_status s = check(node.dst, "dst"); s.code) return s;
    static const char* const kRoles[SY_MAX_SRC] = {"src0", "src1", "src2", "src3",
                                                   "src4", "src5", "src6", "src7"};
    for (int i = 0; i < SY_MAX_SRC; ++i)
        if (sy_status s = check(node.src[i], kRoles[i]); s.code) return s;
    return sdk::ok();
}

sy_status CudaBackend::compute(int32_t device, const sy_node* const* nodes, size_t count) {
    if (count > 0 && nodes == nullptr)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "compute: nodes is NULL for %zu nodes", count);
    std::lock_guard<std::mutex> lock(mutex_);
    Device& d = devices_[size_t(device)];
    // Everything is checked before anything runs, so a bad node leaves every dst untouched.
    for (size_t i = 0; i < count; ++i) {
        if (sy_status s = validation::validate_node(nodes[i], validation::DataChecks::kFull,
                                                    validation_rules());
            s.code)
            return s;
        if (sy_status s = check_node_memory(d, *nodes[i]); s.code) return s;
    }
    cudaSetDevice(d.ordinal);
    const bool profiling = d.profile->enabled();
    if (!profiling && graphs_enabled_ && count >= 2) {
        // A captured graph reports its nodes' errors by their index in this call.
        if (!d.pending.empty())
            if (sy_status s = synchronize_pending(d); s.code) return s;
        if (launch_graph(d, nodes, count)) return synchronize_and_check(d, nodes, count);
    }
    const size_t first = d.pending.size();  // this call's nodes report 1 + first + i
    std::chrono::steady_clock::time_point start;
    if (profiling) {
        start = std::chrono::steady_clock::now();
        d.profile->begin(d.stream, count);
    }
    try {
        for (size_t i = 0; i < count; ++i) {
            const sy_node& node = *nodes[i];
            if (sdk::nelements(*node.dst) == 0) continue;
            if (profiling) d.profile->mark(node, i);
            if (!launch_node(d, node, first + i)) {
                // Nothing of this call past node i was queued: the ones before it finish first.
                d.pending.insert(d.pending.end(), nodes, nodes + i);
                if (sy_status s = synchronize_pending(d); s.code) return s;
                return sdk::error(SY_ERR_UNSUPPORTED, "op id %d has no cuda kernel", node.op);
            }
        }
    } catch (const LaunchError& e) {
        cudaStreamSynchronize(d.stream);
        clear_error_word(d);  // what the nodes before it reported is not the next call's
        d.pending.clear();
        return sdk::error(SY_ERR_BACKEND, "compute on cuda device %d: %s", d.ordinal, e.what());
    } catch (...) {  // the scratch arena out of memory: the same, reported by the caller
        cudaStreamSynchronize(d.stream);
        clear_error_word(d);
        d.pending.clear();
        throw;
    }
    d.pending.insert(d.pending.end(), nodes, nodes + count);
    if (!profiling) return sdk::ok();  // synchronize() waits
    d.profile->end(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return synchronize_pending(d);
}

sy_status CudaBackend::synchronize_pending(Device& d) {
    const sy_status s = synchronize_and_check(d, d.pending.data(), d.pending.size());
    d.pending.clear();
    return s;
}

void CudaBackend::settle(int32_t device) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < devices_.size(); ++i) {
        Device& d = devices_[i];
        if (d.pending.empty() || (device >= 0 && size_t(device) != i)) continue;
        cudaSetDevice(d.ordinal);
        cudaStreamSynchronize(d.stream);
    }
}

namespace {

// What decides a captured graph's topology, as far as the host can tell: the ops, named ops and
// types of the list, in order. Lists with the same key usually differ only in pointers and
// sizes, which an update of the executable graph takes.
std::string graph_key(const sy_node* const* nodes, size_t count) {
    std::string key;
    key.reserve(count * 12);
    for (size_t i = 0; i < count; ++i) {
        const sy_node& n = *nodes[i];
        key += char(n.op & 0x7f);
        key += char(n.op >> 7);
        if (n.named_op) key += n.named_op;
        key += char(n.dst->type);
        for (const sy_tensor* s : n.src) key += char(s ? s->type + 1 : 0);
        key += sdk::nelements(*n.dst) == 0 ? '0' : ';';
    }
    return key;
}

template <typename T>
void append_bytes(std::string& s, const T& value) {
    s.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Everything a launch reads from the list: the ops, their parameters, every tensor's type,
// shape, strides and address, and the scratch arena's block. Two equal contents launch the
// same kernels with the same arguments.
std::string list_content(const sy_node* const* nodes, size_t count, uint64_t scratch) {
    std::string s;
    s.reserve(count * 400);
    append_bytes(s, scratch);
    const auto tensor = [&](const sy_tensor* t) {
        if (t == nullptr) {
            s += '-';
            return;
        }
        append_bytes(s, t->type);
        append_bytes(s, t->ne);
        append_bytes(s, t->nb);
        append_bytes(s, t->data);
    };
    for (size_t i = 0; i < count; ++i) {
        const sy_node& n = *nodes[i];
        append_bytes(s, n.op);
        if (n.named_op) s += n.named_op;
        s += '\0';
        append_bytes(s, n.named_op_version);
        append_bytes(s, n.iparams);
        append_bytes(s, n.fparams);
        for (const sy_tensor* src : n.src) tensor(src);
        tensor(n.dst);
    }
    return s;
}

}  // namespace

bool CudaBackend::launch_node(Device& d, const sy_node& node, size_t index) {
    const OpLauncher launch =
        is_moe_fused_up_gate(node) ? launch_moe_fused_up_gate : op_launcher(node.op);
    if (launch == nullptr) return false;
    d.scratch->reset();
    const OpContext ctx{d.stream, d.cublas, d.scratch.get(), d.error_word, int32_t(index + 1)};
    launch(ctx, node);
    return true;
}

bool CudaBackend::launch_graph(Device& d, const sy_node* const* nodes, size_t count) {
    constexpr size_t kMaxGraphs = 256;  // list shapes kept; more (many prompt sizes) start again
    const std::string key = graph_key(nodes, count);
    d.scratch->reset();  // blocks outgrown earlier are freed outside any capture
    std::string content = list_content(nodes, count, d.scratch->generation());
    auto found = d.graphs.find(key);
    if (found == d.graphs.end()) {
        if (d.graphs.size() >= kMaxGraphs) {
            for (auto& [k, replay] : d.graphs)
                if (replay.exec) cudaGraphExecDestroy(replay.exec);
            d.graphs.clear();
        }
        d.graphs.emplace(key, Device::Replay{std::move(content), nullptr, false});
        return false;
    }
    Device::Replay& replay = found->second;
    if (replay.content != content) {  // changed since last time: launch it one by one
        replay.content = std::move(content);
        if (replay.exec) cudaGraphExecDestroy(replay.exec);
        replay.exec = nullptr;
        replay.refused = false;
        return false;
    }
    if (replay.refused) return false;
    if (replay.exec) {
        if (cudaGraphLaunch(replay.exec, d.stream) == cudaSuccess) return true;
        cudaGetLastError();
        cudaGraphExecDestroy(replay.exec);
        replay.exec = nullptr;
        return false;
    }
    // The second time unchanged: capture it.
    if (cudaStreamBeginCapture(d.stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
        cudaGetLastError();
        replay.refused = true;
        return false;
    }
    bool captured = true;
    d.scratch->set_capturing(true);
    try {
        for (size_t i = 0; i < count && captured; ++i)
            if (sdk::nelements(*nodes[i]->dst) != 0) captured = launch_node(d, *nodes[i], i);
    } catch (...) {  // launching them one by one reports what is wrong, if anything is
        captured = false;
    }
    d.scratch->set_capturing(false);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(d.stream, &graph);
    if (!captured || ended != cudaSuccess || graph == nullptr) {
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        replay.refused = true;  // not again for this content
        return false;
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (instantiated != cudaSuccess) {
        cudaGetLastError();
        replay.refused = true;
        return false;
    }
    if (cudaGraphLaunch(exec, d.stream) != cudaSuccess) {
        cudaGetLastError();
        cudaGraphExecDestroy(exec);
        return false;
    }
    replay.exec = exec;
    return true;
}

void CudaBackend::clear_error_word(Device& d) {
    if (d.host_error_word) {
        *static_cast<volatile int*>(d.host_error_word) = 0;
    } else {
        cudaMemsetAsync(d.error_word, 0, sizeof(int), d.stream);  // before the next kernels
    }
}

sy_status CudaBackend::synchronize_and_check(Device& d, const sy_node* const* nodes, size_t count) {
    if (cudaError_t e = cudaStreamSynchronize(d.stream); e != cudaSuccess)
        return cuda_error("compute", "the device reported", e);
    int word = 0;
    if (d.host_error_word) {
        word = *static_cast<volatile int*>(d.host_error_word);
    } else if (cudaError_t e = cudaMemcpy(&word, d.error_word, sizeof word, cudaMemcpyDeviceToHost);
               e != cudaSuccess) {
        return cuda_error("compute", "reading the error word", e);
    }
    if (word == 0) return sdk::ok();
    clear_error_word(d);
    if (word < 1 || size_t(word) > count)
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "compute: a node reported an index out of range (node %d of %zu "
                          "since the last synchronize)",
                          word - 1, count);
    const sy_node& bad = *nodes[word - 1];
    const char* op = bad.op == SY_OP_NAMED && bad.named_op ? bad.named_op : sdk::op_name(bad.op);
    return sdk::error(SY_ERR_INVALID_ARGUMENT,
                      "%s%s%s%s (node %d since the last synchronize): an index tensor holds a "
                      "value out of range (%s)",
                      op ? op : "node", bad.dst->name ? " '" : "",
                      bad.dst->name ? bad.dst->name : "", bad.dst->name ? "'" : "", word - 1,
                      bad.op == SY_OP_GET_ROWS ? "row ids must lie in [0, src0 ne1) or be -1"
                                               : "expert ids must lie in [0, src0 ne2) or be -1");
}

sy_status CudaBackend::synchronize(int32_t device) {
    std::lock_guard<std::mutex> lock(mutex_);
    Device& d = devices_[size_t(device)];
    cudaSetDevice(d.ordinal);
    if (!d.pending.empty()) return synchronize_pending(d);
    if (cudaError_t e = cudaStreamSynchronize(d.stream); e != cudaSuccess)
        return cuda_error("synchronize", "cudaStreamSynchronize", e);
    return sdk::ok();
}

sy_status CudaBackend::host_register(void* ptr, uint64_t size) {
    std::lock_guard<std::mutex> lock(pinned_mutex_);
    std::lock_guard<std::mutex> streams(mutex_);  // never while a graph is being captured
    if (pinned_.count(ptr))
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "host_register: %p is registered already", ptr);
    // Portable: every device of the plugin may copy from and to it.
    if (cudaError_t e = cudaHostRegister(ptr, size, cudaHostRegisterPortable); e != cudaSuccess) {
        cudaGetLastError();  // not sticky: clear it
        return sdk::error(SY_ERR_BACKEND, "host_register: cudaHostRegister(%p, %llu): %s", ptr,
                          static_cast<unsigned long long>(size), cudaGetErrorString(e));
    }
    pinned_.emplace(ptr, size);
    return sdk::ok();
}

sy_status CudaBackend::host_unregister(void* ptr) {
    std::lock_guard<std::mutex> lock(pinned_mutex_);
    std::lock_guard<std::mutex> streams(mutex_);
    if (pinned_.erase(ptr) == 0)
        return sdk::error(SY_ERR_INVALID_ARGUMENT, "host_unregister: %p is not registered", ptr);
    // The devices may still copy from it: wait for them before the host frees the memory.
    for (Device& d : devices_)
        if (d.stream) {
            cudaSetDevice(d.ordinal);
            cudaStreamSynchronize(d.stream);
        }
    if (cudaError_t e = cudaHostUnregister(ptr); e != cudaSuccess) {
        cudaGetLastError();
        return sdk::error(SY_ERR_BACKEND, "host_unregister: cudaHostUnregister(%p): %s", ptr,
                          cudaGetErrorString(e));
    }
    return sdk::ok();
}

sy_status CudaBackend::set_option(const char* key, const char* value) {
    if (key != nullptr && std::string(key) == "graphs" && value != nullptr) {
        const std::string v = value;
        if (v == "on" || v == "off") {
            std::lock_guard<std::mutex> lock(mutex_);
            graphs_enabled_ = v == "on";
            return sdk::ok();
        }
        return sdk::error(SY_ERR_INVALID_ARGUMENT,
                          "set_option: the cuda plugin's option 'graphs' takes on or off, not '%s'",
                          value);
    }
    return sdk::error(SY_ERR_UNSUPPORTED, "set_option: the cuda plugin has no option '%s' (= '%s')",
                      key ? key : "(null)", value ? value : "(null)");
}

}  // namespace sy::cuda
