// An OpenAI-compatible HTTP server over the serving engine (llm/engine.hpp), as llama-server
// offers one: POST /v1/completions and /v1/chat/completions (streamed as server-sent events
// with `stream: true`), GET /v1/models, /health and /metrics (Prometheus text), POST /tokenize
// and /detokenize. Errors are OpenAI error objects naming the field:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "max_tokens",
//              "code": null}}
// with 400 (bad request), 401 (missing or wrong API key), 404 (unknown route or model), 413
// (body or prompt too large), 503 (queue full, shutting down).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "switchyard/llm/chat_formatter.hpp"
#include "switchyard/llm/engine.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace httplib {
class Server;
}

namespace sy::server {

// How R1-style reasoning (<think> ... </think>) reaches the client.
enum class ReasoningFormat {
    deepseek,  // as `reasoning_content` beside `content` (streamed as such)
    none,      // left in `content`
};

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;         // 0: any free port (bind() tells which)
    std::string api_key;     // non-empty: requests need "Authorization: Bearer <key>"
    std::string model_name;  // GET /v1/models; requests naming another model get 404
    ReasoningFormat reasoning = ReasoningFormat::deepseek;
    size_t max_body_bytes = size_t(8) << 20;
    int read_timeout_seconds = 30;
    int write_timeout_seconds = 30;
};

class OpenAIServer {
  public:
    // `chat` lays out /v1/chat/completions' messages and tools (the model's template).
    OpenAIServer(llm::Engine& engine, const llm::Tokenizer& tokenizer,
                 const llm::ChatFormatter& chat, ServerOptions options);
    ~OpenAIServer();

    // Binds the listening socket; returns the port. Throws sy::Error when it cannot.
    int bind();
    // Serves until stop() (call bind() first).
    void run();
    // Stops accepting; run() returns once the open requests have ended.
    void stop();

  private:
    void routes();

    llm::Engine& engine_;
    const llm::Tokenizer& tokenizer_;
    const llm::ChatFormatter& chat_;
    ServerOptions options_;
    std::unique_ptr<httplib::Server> http_;
    std::atomic<int64_t> http_requests_{0};
    std::atomic<int64_t> http_errors_{0};
    std::atomic<int64_t> ids_{0};
};

}  // namespace sy::server
