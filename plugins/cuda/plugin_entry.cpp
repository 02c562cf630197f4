// The exported entry point: the function table over CudaBackend (sdk::publish_plugin). On a
// machine without a GPU or driver the plugin still loads and reports zero devices.
#include "cuda_backend.hpp"
#include "switchyard/plugin.hpp"

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    return sy::sdk::publish_plugin<sy::cuda::CudaBackend>(host, api, {"cuda", "0.1.0"});
}
