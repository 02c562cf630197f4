// `switchyard serve`: llama-server's OpenAI-compatible API over -np parallel sequences
// (server/, llm/engine.hpp do the work). Prints where it listens; SIGINT and SIGTERM stop it.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "commands/model_session.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/llm/chat_formatter.hpp"
#include "switchyard/llm/engine.hpp"
#include "switchyard/llm/tokenizer.hpp"
#include "switchyard/server/openai_server.hpp"

namespace sy::tools {
namespace {

struct ServeOptions {
    ModelOptions model;
    std::string host = "127.0.0.1";
    int port = 8080;
    int64_t parallel = 1;
    int64_t max_queue = 256;
    int64_t cache_ram_mib = 2048;
    std::string api_key;
    std::string alias;
    std::string chat_template;
    std::string chat_template_file;
    std::string reasoning_format = "deepseek";
    int timeout = 30;
};

int run_serve(const ServeOptions& o) {
    server::ServerOptions so;
    so.host = o.host;
    so.port = o.port;
    so.api_key = o.api_key;
    so.read_timeout_seconds = so.write_timeout_seconds = o.timeout;
    if (o.reasoning_format == "deepseek")
        so.reasoning = server::ReasoningFormat::deepseek;
    else if (o.reasoning_format == "none")
        so.reasoning = server::ReasoningFormat::none;
    else
        throw Error("--reasoning-format '" + o.reasoning_format + "': expected deepseek or none");

    // SIGINT and SIGTERM are taken by one thread (blocked in every other, which inherit the
    // mask); a closed client socket is an error on its write, not a signal.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);

    LoadedModel loaded = load_model(o.model);
    const llm::Model& model = *loaded.model;
    const llm::Tokenizer tok = llm::Tokenizer::for_model(model.file(), model.n_vocab());
    const std::unique_ptr<llm::Session> session = loaded.make_session();
    check_session_memory(loaded, *session);
    so.model_name =
        !o.alias.empty() ? o.alias : std::filesystem::path(o.model.model).filename().string();

    llm::Engine engine(*session, tok,
                       {.slots = o.parallel,
                        .max_queue = o.max_queue,
                        .cache_ram_bytes = uint64_t(o.cache_ram_mib) << 20});
    const llm::ChatFormatter chat =
        llm::ChatFormatter::for_model(model.file(), tok, o.chat_template_file, o.chat_template);
    server::OpenAIServer http(engine, tok, chat, so);
    const int port = http.bind();
    std::fprintf(stderr, "serve: chats laid out by %s\n", chat.source().c_str());
    std::fprintf(stderr, "serve: %lld slots of %lld tokens; listening on http://%s:%d\n",
                 static_cast<long long>(engine.slots()),
                 static_cast<long long>(engine.slot_capacity()), o.host.c_str(), port);
    std::fflush(stderr);

    std::thread watcher([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        std::fprintf(stderr, "serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        engine.shutdown();  // running requests end now, as cancelled
        http.stop();
    });
    http.run();
    // run() returned without a signal (the socket failed): wake the watcher.
    pthread_kill(watcher.native_handle(), SIGTERM);
    watcher.join();
    engine.shutdown();
    const llm::EngineMetrics m = engine.metrics();
    std::fprintf(stderr, "serve: stopped after %lld requests (%lld tokens generated)\n",
                 static_cast<long long>(m.requests), static_cast<long long>(m.generated_tokens));
    return 0;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
    auto o = std::make_shared<ServeOptions>();
    CLI::App* cmd = app.add_subcommand(
        "serve", "An OpenAI-compatible HTTP server (llama-server): -np parallel sequences");
    o->model.add_to(*cmd, "Context length, shared by the slots (default: min(4096, trained))");
    cmd->add_option("--host", o->host, "Address to listen on (default 127.0.0.1)");
    cmd->add_option("--port", o->port, "Port to listen on (default 8080; 0: any free port)")
        ->check(CLI::Range(0, 65535));
    cmd->add_option("--parallel", o->parallel,
                    "Slots: requests decoded together, each its own sequence of -c / -np tokens "
                    "(default 1)")
        ->check(CLI::Range(int64_t{1}, int64_t{256}));
    cmd->add_option("--max-queue", o->max_queue,
                    "Requests that may wait for a slot; more get HTTP 503 (default 256)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
    cmd->add_option("--cache-ram", o->cache_ram_mib,
                    "MiB of host memory for the prefixes slots give up, so that a later request "
                    "with the same start gets them back (default 2048; 0: off)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
    cmd->add_option("--api-key", o->api_key,
                    "Require 'Authorization: Bearer KEY' on every request but /health");
    cmd->add_option("-a,--alias", o->alias, "The model's name in the API (default: the file name)");
    cmd->add_option("--chat-template", o->chat_template,
                    "A built-in chat layout, deepseek2 or deepseek3, instead of the file's "
                    "template");
    cmd->add_option("--chat-template-file", o->chat_template_file,
                    "A Jinja chat template file instead of the file's tokenizer.chat_template");
    cmd->add_option("--reasoning-format", o->reasoning_format,
                    "deepseek: <think> text as reasoning_content; none: left in content");
    cmd->add_option("--timeout", o->timeout, "Read and write timeout in seconds (default 30)")
        ->check(CLI::Range(1, 3600));
    return [o] { return run_serve(*o); };
}

}  // namespace sy::tools
