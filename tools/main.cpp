// `switchyard`: argument parsing and printing only; the work lives in core/ and llm/.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "commands/commands.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/plugin.h"
#include "switchyard/version.hpp"

int main(int argc, char** argv) {
    // Backends keep their own threads hot (the cpu plugin's pool); an OpenMP runtime that a
    // plugin loads (blas's oneDNN) would otherwise spin ~300k iterations after every parallel
    // region, on cores the next backend needs. Set before any plugin loads; a user's setting wins.
    setenv("OMP_WAIT_POLICY", "passive", 0);
    CLI::App app{"switchyard: run Mixture-of-Experts language models across pluggable backends"};
    app.set_version_flag("--version", std::string("switchyard ") + SWITCHYARD_VERSION + " (" +
                                          SWITCHYARD_GIT_COMMIT + "), plugin ABI " +
                                          std::to_string(SY_ABI_VERSION_MAJOR) + "." +
                                          std::to_string(SY_ABI_VERSION_MINOR));
    app.require_subcommand(1);
    app.footer("Run 'switchyard <command> --help' for a command's options.");

    sy::tools::Command plugins = sy::tools::add_plugins_command(app);
    sy::tools::Command inspect = sy::tools::add_inspect_command(app);
    sy::tools::Command make_model = sy::tools::add_make_model_command(app);
    sy::tools::Command quantize = sy::tools::add_quantize_command(app);
    sy::tools::Command imatrix = sy::tools::add_imatrix_command(app);
    sy::tools::Command run = sy::tools::add_run_command(app);
    sy::tools::Command perplexity = sy::tools::add_perplexity_command(app);
    sy::tools::Command plan = sy::tools::add_plan_command(app);
    sy::tools::Command bench = sy::tools::add_bench_command(app);
    sy::tools::Command sweep = sy::tools::add_sweep_command(app);
    sy::tools::Command batched_bench = sy::tools::add_batched_bench_command(app);
    sy::tools::Command calibrate = sy::tools::add_calibrate_command(app);
    sy::tools::Command tokenize = sy::tools::add_tokenize_command(app);
    sy::tools::Command serve = sy::tools::add_serve_command(app);
    sy::tools::Command worker = sy::tools::add_worker_command(app);

    sy::tools::show_llama_spellings(app);
    try {
        std::vector<std::string> args = sy::tools::expand_llama_flags(app, argc, argv);
        std::reverse(args.begin(), args.end());  // CLI11 takes them last to first
        app.parse(args);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    try {
        if (app.got_subcommand("plugins")) return plugins();
        if (app.got_subcommand("inspect")) return inspect();
        if (app.got_subcommand("make-model")) return make_model();
        if (app.got_subcommand("quantize")) return quantize();
        if (app.got_subcommand("imatrix")) return imatrix();
        if (app.got_subcommand("run")) return run();
        if (app.got_subcommand("perplexity")) return perplexity();
        if (app.got_subcommand("plan")) return plan();
        if (app.got_subcommand("bench")) return bench();
        if (app.got_subcommand("sweep")) return sweep();
        if (app.got_subcommand("batched-bench")) return batched_bench();
        if (app.got_subcommand("calibrate")) return calibrate();
        if (app.got_subcommand("tokenize")) return tokenize();
        if (app.got_subcommand("serve")) return serve();
        if (app.got_subcommand("worker")) return worker();
    } catch (const sy::Error& e) {
        std::fprintf(stderr, "switchyard: error: %s\n", e.what());
        return 1;
    } catch (const std::bad_alloc&) {
        // Sizes from files and options are checked before they are allocated; what is left is
        // the machine's memory running out.
        std::fprintf(stderr,
                     "switchyard: error: out of memory: an allocation failed (the model, context "
                     "or batch needs more memory than this machine has free)\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "switchyard: internal error: %s\n", e.what());
        return 1;
    }
    return 0;
}
