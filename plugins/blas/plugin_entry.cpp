// The exported entry point: the function table over BlasBackend (sdk::publish_plugin). A
// constructor that finds no GEMM engine refuses the load with every engine's reason.
#include "blas_backend.hpp"
#include "switchyard/plugin.hpp"

extern "C" SY_EXPORT sy_status sy_plugin_init(const sy_host_api* host, sy_plugin_api* api) {
    return sy::sdk::publish_plugin<sy::blas::BlasBackend>(host, api, {"blas", "0.1.0"});
}
