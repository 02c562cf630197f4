// The subcommands of `switchyard`: each registers its options on the app and returns the
// function that runs it (exit code).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace sy::tools {

using Command = std::function<int()>;

// Options every command that loads plugins takes: --config FILE, --plugin PATH (repeatable),
// -t N.
struct PluginOptions {
    std::string config_file;
    std::vector<std::string> plugins;
    int threads = 0;
    void add_to(CLI::App& app);
};

// The command line as CLI11 should read it (llama_flags.cpp): llama.cpp's multi-letter
// single-dash flags (-ub, -mla, -fmoe, -ctk ...) become switchyard's long options, every other
// single-dash word of several letters is refused as "unknown option -cnv", and an option's value
// is never rewritten. Throws CLI::ParseError.
std::vector<std::string> expand_llama_flags(const CLI::App& app, int argc, char** argv);
// --help shows each option's llama.cpp spelling ("-ngl,--n-gpu-layers"); after every command
// is added.
void show_llama_spellings(CLI::App& app);

Command add_plugins_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_make_model_command(CLI::App& app);
Command add_quantize_command(CLI::App& app);
Command add_imatrix_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_perplexity_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);
Command add_batched_bench_command(CLI::App& app);
Command add_calibrate_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_worker_command(CLI::App& app);
// This process's rank in an MPI job, from the launcher's environment (mpirun, srun); -1 outside.
int mpi_rank_from_environment();
// Serves rank 0 as `switchyard worker -m model` with these plugin options would (worker.cpp);
// returns when rank 0 exits, throws Error on a failure.
void serve_as_worker(const std::string& model, const PluginOptions& plugins);

}  // namespace sy::tools
