// `switchyard worker [-m MODEL] [--backend NAME] [-t N] [--wait S]`: a rank of an MPI job other
// than rank 0. It loads its own backend plugin (cpu by default) and hands that plugin's function
// table to the mpi plugin's worker loop (sy_mpi_worker in plugins/mpi), which serves rank 0's
// requests with it: rank 0 sees this rank as a device of its mpi backend. Only the mpi plugin
// links MPI; this command finds it in the plugin folders and calls it.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "commands/commands.hpp"
#include "switchyard/core/config.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/core/plugin_setup.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/version.hpp"

namespace sy::tools {
namespace {

using WorkerFn = int32_t (*)(const sy_plugin_api*, int32_t, const char*, const char* const*, size_t,
                             double, char*, size_t);

struct WorkerOptions {
    PluginOptions plugins;
    std::string model;
    std::string backend = "cpu";
    double wait = 60;
};

// The mpi plugin's file: the configured search folders, then the default one.
std::filesystem::path mpi_plugin_file(const Config& config) {
    std::vector<std::filesystem::path> dirs = config.plugins.search;
    dirs.push_back(PluginHost::default_plugin_dir());
    for (const auto& dir : dirs) {
        const auto file = dir / "libswitchyard-mpi.so";
        if (std::filesystem::exists(file)) return file;
    }
    throw Error("worker: no mpi plugin (libswitchyard-mpi.so) in " +
                PluginHost::default_plugin_dir().string() +
                " (built when libopenmpi-dev is installed)");
}

int run_worker(const WorkerOptions& o) {
    const Config config =
        o.plugins.config_file.empty() ? Config{} : load_config(o.plugins.config_file);
    // The same file as rank 0 (its shards): it must open, and the weights placed here are read
    // from it.
    std::vector<std::string> files;
    if (!o.model.empty()) {
        const gguf::Reader model = gguf::Reader::open(o.model);
        for (const auto& f : model.files()) files.push_back(f.string());
    }
    std::vector<const char*> file_names;
    for (const std::string& f : files) file_names.push_back(f.c_str());
    PluginHost host;
    Config local = config;
    local.plugins.load = {o.backend};
    setup_plugins(host, local, o.plugins.plugins, o.plugins.threads);
    Plugin* backend = host.find(o.backend);
    if (backend == nullptr)
        throw Error("worker: backend '" + o.backend + "' did not load" +
                    (host.failures().empty() ? std::string()
                                             : " (" + host.failures().front().reason + ")"));
    const auto file = mpi_plugin_file(config);
    void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) throw Error("worker: " + std::string(dlerror()));
    auto serve = reinterpret_cast<WorkerFn>(dlsym(library, "sy_mpi_worker"));
    if (serve == nullptr) throw Error("worker: " + file.string() + " has no sy_mpi_worker");
    // Tests of the version check set what this worker claims to be.
    const char* claimed = std::getenv("SWITCHYARD_WORKER_VERSION_FOR_TESTS");
    const std::string version = claimed && *claimed ? claimed : SWITCHYARD_VERSION;
    char error[1024] = {};
    const int32_t code = serve(&backend->api(), 0, version.c_str(), file_names.data(),
                               file_names.size(), o.wait, error, sizeof error);
    // The library stays loaded: MPI's runtime is finalized, and its threads may still unwind.
    if (code != 0) throw Error(std::string("worker: ") + error);
    return 0;
}

}  // namespace

int mpi_rank_from_environment() {
    for (const char* key : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
        const char* v = std::getenv(key);
        if (v == nullptr || *v == '\0') continue;
        char* end = nullptr;
        const long rank = std::strtol(v, &end, 10);
        if (*end == '\0' && rank >= 0) return int(rank);
    }
    return -1;
}

void serve_as_worker(const std::string& model, const PluginOptions& plugins) {
    WorkerOptions o;
    o.plugins = plugins;
    o.model = model;
    run_worker(o);
}

Command add_worker_command(CLI::App& app) {
    auto o = std::make_shared<WorkerOptions>();
    CLI::App* cmd = app.add_subcommand(
        "worker",
        "Serve rank 0 of an MPI job as one of its devices (mpirun -np 1 switchyard run ... : "
        "-np N switchyard worker -m MODEL)");
    o->plugins.add_to(*cmd);
    cmd->add_option("-m,--model", o->model,
                    "This rank's copy of the model file rank 0 runs: the weights placed here are "
                    "read from it (checked to be the same file); without it rank 0 sends them");
    cmd->add_option("--backend", o->backend, "The backend this rank computes with (default cpu)");
    cmd->add_option("--wait", o->wait, "Seconds to wait for rank 0's first message (default 60)")
        ->check(CLI::PositiveNumber);
    return [o] { return run_worker(*o); };
}

}  // namespace sy::tools
