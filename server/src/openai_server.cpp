#include "switchyard/server/openai_server.hpp"

#include <httplib.h>

#include <chrono>
#include <optional>
#include <random>
#include <string_view>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/grammar.hpp"
#include "switchyard/llm/json_schema.hpp"
#include "think_splitter.hpp"
#include "tool_calls.hpp"
#include "tool_grammar.hpp"

namespace sy::server {
namespace {

// Objects keep their keys in order (as Python's dicts): a template's tojson of the tools shows
// them as the client wrote them.
using json = nlohmann::ordered_json;

// An error the client caused (or a refusal), answered as an OpenAI error object.
struct RequestError {
    int status = 400;
    std::string message;
    std::string param;  // the request field at fault ("" none)
    std::string type = "invalid_request_error";
};

[[noreturn]] void refuse(int status, std::string message, std::string param = {}) {
    throw RequestError{status, std::move(message), std::move(param)};
}

std::string dump(const json& j) {
    // Generated text may end inside a UTF-8 character: replaced, never an exception.
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_body(const RequestError& e) {
    json err = {{"message", e.message}, {"type", e.type}, {"code", nullptr}};
    err["param"] = e.param.empty() ? json(nullptr) : json(e.param);
    return {{"error", err}};
}

void send_error(httplib::Response& res, const RequestError& e) {
    res.status = e.status;
    res.set_content(dump(error_body(e)), "application/json");
}

int64_t unix_time() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// ---- reading a request ----------------------------------------------------------------------

json parse_body(const httplib::Request& req) {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded()) refuse(400, "the request body is not valid JSON");
    if (!body.is_object()) refuse(400, "the request body must be a JSON object");
    return body;
}

// The field's value if present and not null, checked to be of the expected kind.
const json* field(const json& body, const char* name) {
    const auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> number(const json& body, const char* name, double lo, double hi) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_number()) refuse(400, std::string(name) + " must be a number", name);
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
        refuse(400,
               std::string(name) + " = " + v->dump() + " is out of range [" + json(lo).dump() +
                   ", " + json(hi).dump() + "]",
               name);
    return x;
}

std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_number_integer()) refuse(400, std::string(name) + " must be an integer", name);
    const int64_t x = v->get<int64_t>();
    if (x < lo || x > hi)
        refuse(400,
               std::string(name) + " = " + std::to_string(x) + " is out of range [" +
                   std::to_string(lo) + ", " + std::to_string(hi) + "]",
               name);
    return x;
}

std::optional<bool> boolean(const json& body, const char* name) {
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) refuse(400, std::string(name) + " must be true or false", name);
    return v->get<bool>();
}

// Sampling and length fields shared by both endpoints (llama-server's defaults otherwise).
llm::CompletionParams completion_params(const json& body, int64_t max_tokens_limit) {
    llm::CompletionParams p;
    llm::SamplerParams& s = p.sampling;
    if (auto v = number(body, "temperature", 0, 100)) s.temperature = float(*v);
    if (auto v = number(body, "top_p", 0, 1)) s.top_p = float(*v);
    if (auto v = integer(body, "top_k", 0, 1 << 30)) s.top_k = int32_t(*v);
    if (auto v = number(body, "min_p", 0, 1)) s.min_p = float(*v);
    if (auto v = number(body, "repeat_penalty", 0.01, 100)) s.repeat_penalty = float(*v);
    if (auto v = integer(body, "repeat_last_n", -1, 1 << 30)) s.repeat_last_n = int32_t(*v);
    if (auto v = integer(body, "seed", INT64_MIN, INT64_MAX))
        s.seed = uint64_t(*v);
    else
        s.seed = std::random_device{}() | (uint64_t(std::random_device{}()) << 32);
    // max_completion_tokens is the newer spelling of the chat endpoint.
    const char* max_name =
        field(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (auto v = integer(body, max_name, 0, INT32_MAX)) {
        if (*v > max_tokens_limit)
            refuse(400,
                   std::string(max_name) + " = " + std::to_string(*v) +
                       " does not fit: the prompt leaves room for " +
                       std::to_string(max_tokens_limit) + " tokens in a slot",
                   max_name);
        p.max_tokens = *v;
    }
    if (const json* stop = field(body, "stop")) {
        if (stop->is_string()) {
            p.stop.push_back(stop->get<std::string>());
        } else if (stop->is_array() && stop->size() <= 16) {
            for (const json& item : *stop) {
                if (!item.is_string()) refuse(400, "stop must be a string or strings", "stop");
                p.stop.push_back(item.get<std::string>());
            }
        } else {
            refuse(400, "stop must be a string or an array of at most 16 strings", "stop");
        }
        for (const std::string& text : p.stop)
            if (text.empty()) refuse(400, "stop strings must not be empty", "stop");
    }
    if (auto n = integer(body, "n", 1, INT32_MAX); n && *n != 1)
        refuse(400, "n = " + std::to_string(*n) + ": one choice per request is supported", "n");
    if (auto v = boolean(body, "ignore_eos")) p.ignore_eos = *v;
    return p;
}

// ---- answering ------------------------------------------------------------------------------

json usage(const llm::CompletionResult& r) {
    return {{"prompt_tokens", r.prompt_tokens},
            {"completion_tokens", r.completion_tokens},
            {"total_tokens", r.prompt_tokens + r.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}}}};
}

// llama-server's extra timing object.
json timings(const llm::CompletionResult& r) {
    const int64_t evaluated = r.prompt_tokens - r.cached_tokens;
    return {{"prompt_n", evaluated},
            {"prompt_ms", r.prompt_seconds * 1e3},
            {"prompt_per_second", r.prompt_seconds > 0 ? double(evaluated) / r.prompt_seconds : 0},
            {"predicted_n", r.completion_tokens},
            {"predicted_ms", r.generation_seconds * 1e3},
            {"predicted_per_second",
             r.generation_seconds > 0 ? double(r.completion_tokens) / r.generation_seconds : 0},
            {"cache_n", r.cached_tokens}};
}

// A whole (not streamed) answer: the object's header, one choice, usage and timings.
json answer_object(const std::string& id, const char* object, int64_t created,
                   const std::string& model, json choice, const llm::CompletionResult& r) {
    return {{"id", id},
            {"object", object},
            {"created", created},
            {"model", model},
            {"choices", json::array({std::move(choice)})},
            {"usage", usage(r)},
            {"timings", timings(r)}};
}

// One server-sent event; false when the client is gone.
bool send_event(httplib::DataSink& sink, const json& j) {
    const std::string line = "data: " + dump(j) + "\n\n";
    return sink.write(line.data(), line.size());
}

// The end of a stream.
void send_done(httplib::DataSink& sink) {
    const std::string done = "data: [DONE]\n\n";
    sink.write(done.data(), done.size());
    sink.done();
}

std::string finish_name(const llm::CompletionResult& r) {
    return r.finish == llm::FinishReason::length ? "length" : "stop";
}

// An OpenAI tool call: {"index", "id", "type": "function", "function": {name, arguments}}.
json tool_call_json(const ToolCall& call, size_t index) {
    return {{"index", index},
            {"id", "call_" + std::to_string(index)},
            {"type", "function"},
            {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

json bytes_of(const std::string& s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back(int(c));
    return b;
}

class Handlers {
  public:
    Handlers(llm::Engine& engine, const llm::Tokenizer& tok, const llm::ChatFormatter& chat,
             const ServerOptions& options, std::atomic<int64_t>& ids)
        : engine_(engine), tok_(tok), chat_(chat), options_(options), ids_(ids) {}

    void check_model(const json& body) const {
        if (const json* m = field(body, "model")) {
            if (!m->is_string()) refuse(400, "model must be a string", "model");
            const std::string name = m->get<std::string>();
            if (!options_.model_name.empty() && name != options_.model_name)
                throw RequestError{404,
                                   "the model '" + name + "' does not exist (this server has '" +
                                       options_.model_name + "')",
                                   "model", "not_found_error"};
        }
    }

    std::vector<int32_t> tokens_of_prompt(const json& body) const {
        const json* p = field(body, "prompt");
        if (!p) refuse(400, "prompt is required", "prompt");
        if (p->is_string()) return tok_.encode(p->get<std::string>(), tok_.add_bos(), true);
        if (p->is_array() && p->size() == 1 && (*p)[0].is_string())
            return tok_.encode((*p)[0].get<std::string>(), tok_.add_bos(), true);
        if (p->is_array() && !p->empty() && (*p)[0].is_number_integer()) {
            std::vector<int32_t> ids;
            for (const json& t : *p) {
                if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
                    t.get<int64_t>() >= tok_.n_vocab())
                    refuse(400,
                           "prompt token " + t.dump() +
                               " is not a token id of the vocabulary (0 .. " +
                               std::to_string(tok_.n_vocab() - 1) + ")",
                           "prompt");
                ids.push_back(t.get<int32_t>());
            }
            return ids;
        }
        refuse(400, "prompt must be a string, one string in an array, or an array of token ids",
               "prompt");
    }

    // Checks the prompt's length and submits it; the errors a client can fix are 4xx.
    std::shared_ptr<llm::Completion> submit(std::vector<int32_t> prompt, const json& body,
                                            const char* prompt_field, int n_probs,
                                            bool special = false,
                                            std::shared_ptr<const llm::Grammar> grammar = {}) {
        const int64_t capacity = engine_.slot_capacity();
        if (prompt.empty()) refuse(400, "the prompt is empty", prompt_field);
        if (int64_t(prompt.size()) >= capacity)
            refuse(413,
                   "the prompt has " + std::to_string(prompt.size()) + " tokens; a slot holds " +
                       std::to_string(capacity) + " (prompt and completion; raise -c or lower -np)",
                   prompt_field);
        llm::CompletionParams params = completion_params(body, capacity - int64_t(prompt.size()));
        params.n_probs = n_probs;
        params.special = special;
        params.grammar = std::move(grammar);
        try {
            return engine_.submit({std::move(prompt), params});
        } catch (const llm::EngineBusy& e) {
            throw RequestError{503, e.what(), "", "server_error"};
        } catch (const Error& e) {
            refuse(400, e.what());
        }
    }

    // The grammar a request holds the output to: `forced` (a tool-call grammar, from the field
    // `forced_field`), `grammar` (GBNF), `json_schema`, or response_format's json_object /
    // json_schema; one of them at most. `inside_reasoning`: the prompt leaves the model in an
    // R1 reasoning block, which the grammar closes first.
    std::shared_ptr<const llm::Grammar> output_grammar(const json& body, bool inside_reasoning,
                                                       std::string forced = {},
                                                       const char* forced_field = nullptr) const {
        std::vector<const char*> given;
        if (forced_field) given.push_back(forced_field);
        std::string text;
        const char* from = forced_field;
        const auto schema_grammar = [&](const json& schema, const char* name) {
            try {
                text = llm::json_schema_to_gbnf(schema, close_reasoning(inside_reasoning));
            } catch (const Error& e) {
                refuse(400, e.what(), name);
            }
            from = name;
        };
        if (const json* g = field(body, "grammar")) {
            if (!g->is_string()) refuse(400, "grammar must be a string (GBNF)", "grammar");
            given.push_back("grammar");
            text = g->get<std::string>();
            from = "grammar";
        }
        if (const json* j = field(body, "json_schema")) {
            given.push_back("json_schema");
            schema_grammar(*j, "json_schema");
        }
        if (const json* r = field(body, "response_format")) {
            const std::string type =
                r->is_object() && r->contains("type") && (*r)["type"].is_string()
                    ? (*r)["type"].get<std::string>()
                    : "";
            if (type == "json_object") {
                given.push_back("response_format");
                const auto s = r->find("schema");  // llama-server's: a schema beside the type
                schema_grammar(s != r->end() ? *s : json{{"type", "object"}}, "response_format");
            } else if (type == "json_schema") {
                const auto js = r->find("json_schema");
                if (js == r->end() || !js->is_object() || !js->contains("schema"))
                    refuse(400, "response_format.json_schema.schema is required",
                           "response_format");
                given.push_back("response_format");
                schema_grammar((*js)["schema"], "response_format");
            } else if (type != "text") {
                refuse(400,
                       "response_format must be {\"type\": \"text\"}, {\"type\": "
                       "\"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": "
                       "{\"schema\": ...}}",
                       "response_format");
            }
        }
        if (given.size() > 1)
            refuse(400,
                   std::string(given[0]) + " and " + given[1] +
                       " both constrain the output: give one of them",
                   given[1]);
        if (forced_field) text = std::move(forced);
        if (!from) return nullptr;
        try {
            return llm::Grammar::parse(text);
        } catch (const Error& e) {
            refuse(400, e.what(), from);
        }
    }

    std::string next_id(const char* prefix) {
        return std::string(prefix) + std::to_string(unix_time()) + "-" + std::to_string(++ids_);
    }

    // ---- /v1/completions
    void completions(const httplib::Request& req, httplib::Response& res) {
        const json body = parse_body(req);
        check_model(body);
        int n_probs = 0;
        if (auto v = integer(body, "logprobs", 0, 20)) n_probs = int(*v);
        if (auto v = integer(body, "n_probs", 0, 20)) n_probs = int(*v);
        const bool stream = boolean(body, "stream").value_or(false);
        const bool echo = boolean(body, "echo").value_or(false);
        if (echo) refuse(400, "echo is not supported", "echo");
        auto grammar = output_grammar(body, false);
        auto completion =
            submit(tokens_of_prompt(body), body, "prompt", n_probs, false, std::move(grammar));
        const std::string id = next_id("cmpl-");
        const int64_t created = unix_time();
        const std::string model = options_.model_name;
        const bool include_usage = stream_usage(body);
        const auto choice_logprobs = [this](const std::vector<llm::Piece>& pieces,
                                            size_t offset) -> json {
            json lp = {{"tokens", json::array()},
                       {"token_logprobs", json::array()},
                       {"top_logprobs", json::array()},
                       {"text_offset", json::array()}};
            for (const llm::Piece& p : pieces) {
                const std::string t = tok_.token_bytes(p.token);
                lp["tokens"].push_back(t);
                lp["token_logprobs"].push_back(p.chosen.logprob);
                json top = json::object();
                for (const llm::TokenLogprob& a : p.top) top[tok_.token_bytes(a.id)] = a.logprob;
                lp["top_logprobs"].push_back(top);
                lp["text_offset"].push_back(offset);
                offset += t.size();
            }
            return lp;
        };
        if (!stream) {
            std::vector<llm::Piece> pieces;
            while (std::optional<llm::Piece> p = completion->next())
                if (n_probs > 0) pieces.push_back(std::move(*p));
            const llm::CompletionResult r = finished(*completion);
            json choice = {{"index", 0},
                           {"text", r.text},
                           {"finish_reason", finish_name(r)},
                           {"logprobs", n_probs > 0 ? choice_logprobs(pieces, 0) : json(nullptr)}};
            res.set_content(
                dump(answer_object(id, "text_completion", created, model, std::move(choice), r)),
                "application/json");
            return;
        }
        res.set_chunked_content_provider(
            "text/event-stream",
            [=, this](size_t, httplib::DataSink& sink) {
                size_t offset = 0;
                const auto send = [&](const json& j) { return send_event(sink, j); };
                const auto chunk = [&](json choice) {
                    return json{{"id", id},
                                {"object", "text_completion"},
                                {"created", created},
                                {"model", model},
                                {"choices", json::array({std::move(choice)})}};
                };
                while (std::optional<llm::Piece> p = completion->next()) {
                    if (p->text.empty() && n_probs == 0) continue;
                    json choice = {{"index", 0}, {"text", p->text}, {"finish_reason", nullptr}};
                    choice["logprobs"] =
                        n_probs > 0 ? choice_logprobs({*p}, offset) : json(nullptr);
                    offset += p->text.size();
                    if (!send(chunk(std::move(choice)))) {
                        completion->cancel();
                        return false;
                    }
                }
                const llm::CompletionResult r = completion->result();
                if (r.finish == llm::FinishReason::error) {
                    send(error_body({500, r.error, "", "server_error"}));
                } else {
                    json last = chunk({{"index", 0},
                                       {"text", ""},
                                       {"logprobs", nullptr},
                                       {"finish_reason", finish_name(r)}});
                    last["timings"] = timings(r);
                    if (include_usage) last["usage"] = usage(r);
                    send(last);
                }
                send_done(sink);
                return true;
            },
            [completion](bool) { completion->cancel(); });
    }

    // ---- /v1/chat/completions
    void chat(const httplib::Request& req, httplib::Response& res) {
        const json body = parse_body(req);
        check_model(body);
        const json* messages = field(body, "messages");
        if (!messages || !messages->is_array() || messages->empty())
            refuse(400, "messages must be a non-empty array", "messages");
        for (size_t i = 0; i < messages->size(); ++i) {
            const json& m = (*messages)[i];
            const std::string where = "messages[" + std::to_string(i) + "]";
            if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
                refuse(400, where + " must be an object with a string role", "messages");
            const std::string role = m["role"].get<std::string>();
            if (role != "system" && role != "user" && role != "assistant" && role != "tool" &&
                role != "developer")
                refuse(400, where + ": unknown role '" + role + "'", "messages");
            if (m.contains("content") && !m["content"].is_null() && !m["content"].is_string() &&
                !m["content"].is_array())
                refuse(400, where + ".content must be a string or an array of parts", "messages");
        }
        const json empty_tools = json::array();
        const json* tools = field(body, "tools");
        if (tools && !tools->is_array()) refuse(400, "tools must be an array", "tools");
        if (tools) {
            try {
                check_tools(*tools);
            } catch (const Error& e) {
                refuse(400, e.what(), "tools");
            }
        }
        // tool_choice: "auto" (the model decides), "none" (no tools shown, none parsed),
        // "required" or {"type": "function", "function": {"name": N}} (a call is forced).
        bool no_tools = false, force_call = false;
        std::string forced_name;
        if (const json* c = field(body, "tool_choice")) {
            const std::string mode = c->is_string() ? c->get<std::string>() : "";
            const json* f = c->is_object() && c->value("type", "") == "function"
                                ? field(*c, "function")
                                : nullptr;
            if (mode == "none") {
                no_tools = true;
            } else if (mode == "required") {
                force_call = true;
            } else if (f && f->is_object() && f->contains("name") && (*f)["name"].is_string()) {
                force_call = true;
                forced_name = (*f)["name"].get<std::string>();
            } else if (mode != "auto") {
                refuse(400,
                       "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": "
                       "\"function\", \"function\": {\"name\": ...}}",
                       "tool_choice");
            }
        }
        const bool parallel = boolean(body, "parallel_tool_calls").value_or(true);
        if (no_tools) tools = nullptr;
        if (force_call && (!tools || tools->empty()))
            refuse(400, "tool_choice asks for a tool call, but the request has no tools",
                   "tool_choice");
        int n_probs = 0;
        const bool logprobs = boolean(body, "logprobs").value_or(false);
        if (auto v = integer(body, "top_logprobs", 0, 20)) n_probs = int(*v);
        if (logprobs && n_probs == 0) n_probs = 1;
        const bool stream = boolean(body, "stream").value_or(false);
        const bool include_usage = stream_usage(body);

        std::string text;
        try {
            text = chat_.render(normalized(*messages), tools ? *tools : empty_tools, true);
        } catch (const Error& e) {
            refuse(400, std::string("the chat template cannot lay out these messages: ") + e.what(),
                   "messages");
        }
        // The prompt's text is the template's, markers and all: special tokens are parsed.
        std::vector<int32_t> prompt = chat_.tokens(text);
        // With tools the model may answer with tool-call markup: special tokens' text is kept
        // for the parser, which takes the markup out.
        const bool with_tools = tools && !tools->empty();
        std::string forced;
        if (force_call) {
            try {
                forced = tool_call_grammar(*tools, forced_name, parallel, chat_.tool_call_markup(),
                                           ThinkSplitter::starts_inside(text));
            } catch (const Error& e) {
                refuse(400, e.what(), "tool_choice");
            }
        }
        auto grammar = output_grammar(body, ThinkSplitter::starts_inside(text), std::move(forced),
                                      force_call ? "tool_choice" : nullptr);
        auto completion =
            submit(std::move(prompt), body, "messages", n_probs, with_tools, std::move(grammar));
        const bool split = options_.reasoning == ReasoningFormat::deepseek;
        ThinkSplitter splitter(ThinkSplitter::starts_inside(text));
        const std::string id = next_id("chatcmpl-");
        const int64_t created = unix_time();
        const std::string model = options_.model_name;
        const auto logprob_entry = [this](const llm::Piece& p) {
            json top = json::array();
            for (const llm::TokenLogprob& a : p.top) {
                const std::string t = tok_.token_bytes(a.id);
                top.push_back({{"token", t}, {"logprob", a.logprob}, {"bytes", bytes_of(t)}});
            }
            const std::string t = tok_.token_bytes(p.token);
            return json{{"token", t},
                        {"logprob", p.chosen.logprob},
                        {"bytes", bytes_of(t)},
                        {"top_logprobs", top}};
        };
        if (!stream) {
            json content_logprobs = json::array();
            std::string reasoning, content;
            while (std::optional<llm::Piece> p = completion->next()) {
                if (n_probs > 0) content_logprobs.push_back(logprob_entry(*p));
                if (split)
                    splitter.feed(p->text, reasoning, content);
                else
                    content += p->text;
            }
            if (split) splitter.finish(reasoning, content);
            const llm::CompletionResult r = finished(*completion);
            std::vector<ToolCall> calls;
            if (with_tools) {
                ToolCallParser parser;
                std::string answer;
                parser.feed(content, answer, calls);
                parser.finish(answer);
                content = std::move(answer);
                if (!parallel && calls.size() > 1) calls.resize(1);
            }
            json message = {{"role", "assistant"}, {"content", content}};
            if (split && !reasoning.empty()) message["reasoning_content"] = reasoning;
            if (!calls.empty()) {
                json list = json::array();
                for (size_t i = 0; i < calls.size(); ++i)
                    list.push_back(tool_call_json(calls[i], i));
                message["tool_calls"] = list;
                if (content.empty()) message["content"] = nullptr;
            }
            json choice = {{"index", 0},
                           {"message", message},
                           {"finish_reason", calls.empty() ? finish_name(r) : "tool_calls"}};
            choice["logprobs"] = n_probs > 0 ? json{{"content", content_logprobs}} : json(nullptr);
            res.set_content(
                dump(answer_object(id, "chat.completion", created, model, std::move(choice), r)),
                "application/json");
            return;
        }
        auto state = std::make_shared<ThinkSplitter>(splitter);
        auto tool_parser = std::make_shared<ToolCallParser>();
        auto n_calls = std::make_shared<size_t>(0);
        res.set_chunked_content_provider(
            "text/event-stream",
            [=, this](size_t, httplib::DataSink& sink) {
                const auto send = [&](const json& j) { return send_event(sink, j); };
                const auto chunk = [&](json delta, json finish, json lp = nullptr) {
                    json choice = {{"index", 0},
                                   {"delta", std::move(delta)},
                                   {"logprobs", std::move(lp)},
                                   {"finish_reason", std::move(finish)}};
                    return json{{"id", id},
                                {"object", "chat.completion.chunk"},
                                {"created", created},
                                {"model", model},
                                {"choices", json::array({std::move(choice)})}};
                };
                if (!send(chunk({{"role", "assistant"}, {"content", ""}}, nullptr))) {
                    completion->cancel();
                    return false;
                }
                const auto deltas = [&](const std::string& reasoning, std::string content, json lp,
                                        bool last = false) {
                    json delta = json::object();
                    if (with_tools) {
                        std::string answer;
                        std::vector<ToolCall> calls;
                        tool_parser->feed(content, answer, calls);
                        if (last) tool_parser->finish(answer);
                        content = std::move(answer);
                        json list = json::array();
                        for (const ToolCall& c : calls)
                            if (parallel || *n_calls == 0)
                                list.push_back(tool_call_json(c, (*n_calls)++));
                        if (!list.empty()) delta["tool_calls"] = list;
                    }
                    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
                    if (!content.empty()) delta["content"] = content;
                    if (delta.empty() && lp.is_null()) return true;
                    return send(chunk(std::move(delta), nullptr, std::move(lp)));
                };
                while (std::optional<llm::Piece> p = completion->next()) {
                    std::string reasoning, content;
                    if (split)
                        state->feed(p->text, reasoning, content);
                    else
                        content = p->text;
                    json lp = n_probs > 0 ? json{{"content", json::array({logprob_entry(*p)})}}
                                          : json(nullptr);
                    if (!deltas(reasoning, content, std::move(lp))) {
                        completion->cancel();
                        return false;
                    }
                }
                std::string reasoning, content;
                if (split) state->finish(reasoning, content);
                deltas(reasoning, content, nullptr, true);
                const llm::CompletionResult r = completion->result();
                if (r.finish == llm::FinishReason::error) {
                    send(error_body({500, r.error, "", "server_error"}));
                } else {
                    json last = chunk(json::object(), *n_calls > 0 ? "tool_calls" : finish_name(r));
                    last["timings"] = timings(r);
                    send(last);
                    if (include_usage) {
                        json u = chunk(json::object(), nullptr);
                        u["choices"] = json::array();
                        u["usage"] = usage(r);
                        send(u);
                    }
                }
                send_done(sink);
                return true;
            },
            [completion](bool) { completion->cancel(); });
    }

    // ---- /tokenize, /detokenize
    void tokenize(const httplib::Request& req, httplib::Response& res) const {
        const json body = parse_body(req);
        const json* content = field(body, "content");
        if (!content || !content->is_string()) refuse(400, "content must be a string", "content");
        const bool add_special = boolean(body, "add_special").value_or(false);
        const bool with_pieces = boolean(body, "with_pieces").value_or(false);
        const std::vector<int32_t> ids =
            tok_.encode(content->get<std::string>(), add_special && tok_.add_bos(), true);
        json tokens = json::array();
        for (int32_t id : ids) {
            if (with_pieces)
                tokens.push_back({{"id", id}, {"piece", tok_.token_bytes(id, true)}});
            else
                tokens.push_back(id);
        }
        res.set_content(dump({{"tokens", tokens}}), "application/json");
    }

    void detokenize(const httplib::Request& req, httplib::Response& res) const {
        const json body = parse_body(req);
        const json* tokens = field(body, "tokens");
        if (!tokens || !tokens->is_array()) refuse(400, "tokens must be an array", "tokens");
        std::vector<int32_t> ids;
        for (const json& t : *tokens) {
            if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
                t.get<int64_t>() >= tok_.n_vocab())
                refuse(400, "token " + t.dump() + " is not in the vocabulary", "tokens");
            ids.push_back(t.get<int32_t>());
        }
        res.set_content(dump({{"content", tok_.decode(ids)}}), "application/json");
    }

  private:
    static bool stream_usage(const json& body) {
        const json* o = field(body, "stream_options");
        if (!o) return false;
        if (!o->is_object()) refuse(400, "stream_options must be an object", "stream_options");
        return boolean(*o, "include_usage").value_or(false);
    }

    // Waits for the end; an engine failure is a 500.
    static llm::CompletionResult finished(llm::Completion& c) {
        llm::CompletionResult r = c.result();
        if (r.finish == llm::FinishReason::error)
            throw RequestError{500, "generation failed: " + r.error, "", "server_error"};
        return r;
    }

    // Content given as parts ([{"type": "text", "text": ...}]) becomes one string, as the
    // templates expect; "developer" is the newer name of "system".
    static json normalized(const json& messages) {
        json out = messages;
        for (json& m : out) {
            if (m["role"] == "developer") m["role"] = "system";
            if (!m.contains("content") || !m["content"].is_array()) continue;
            std::string text;
            for (const json& part : m["content"]) {
                if (!part.is_object() || part.value("type", "") != "text" ||
                    !part.contains("text") || !part["text"].is_string())
                    refuse(400, "only text parts are supported in message content", "messages");
                text += part["text"].get<std::string>();
            }
            m["content"] = text;
        }
        return out;
    }

    llm::Engine& engine_;
    const llm::Tokenizer& tok_;
    const llm::ChatFormatter& chat_;
    const ServerOptions& options_;
    std::atomic<int64_t>& ids_;
};

std::string prometheus(const llm::EngineMetrics& m, int64_t http_requests, int64_t http_errors) {
    std::string out;
    const auto metric = [&](const char* name, const char* type, const char* help, double v) {
        out += std::string("# HELP switchyard_") + name + " " + help + "\n# TYPE switchyard_" +
               name + " " + type + "\nswitchyard_" + name + " " + json(v).dump() + "\n";
    };
    metric("requests_total", "counter", "Completion requests accepted.", double(m.requests));
    metric("requests_rejected_total", "counter", "Completion requests refused: queue full.",
           double(m.requests_rejected));
    metric("requests_finished_total", "counter", "Completion requests ended.",
           double(m.requests_finished));
    metric("prompt_tokens_total", "counter", "Prompt tokens evaluated.", double(m.prompt_tokens));
    metric("prompt_tokens_cached_total", "counter",
           "Prompt tokens found in a slot's cache (not evaluated).", double(m.cached_tokens));
    metric("tokens_predicted_total", "counter", "Tokens generated.", double(m.generated_tokens));
    metric("prompt_tokens_ram_restored_total", "counter",
           "Prompt tokens put back from the RAM cache (--cache-ram).",
           double(m.ram_restored_tokens));
    metric("ram_cache_saved_total", "counter", "Prefixes saved to the RAM cache.",
           double(m.ram_saved_prefixes));
    metric("ram_cache_bytes", "gauge", "Bytes the RAM cache holds.", double(m.ram_bytes));
    metric("prompt_seconds_total", "counter", "Time of steps that evaluated prompt tokens.",
           m.prompt_seconds);
    metric("tokens_predicted_seconds_total", "counter", "Time of steps that only decoded.",
           m.decode_seconds);
    metric("prompt_tokens_seconds", "gauge", "Prompt tokens per second, on average.",
           m.prompt_seconds > 0 ? double(m.prompt_tokens) / m.prompt_seconds : 0);
    metric("predicted_tokens_seconds", "gauge",
           "Generated tokens per second of decode-only steps, on average.",
           m.decode_seconds > 0 ? double(m.generated_tokens) / m.decode_seconds : 0);
    metric("steps_total", "counter", "Batches decoded.", double(m.steps));
    metric("requests_processing", "gauge", "Slots serving a request.", double(m.slots_busy));
    metric("requests_deferred", "gauge", "Requests waiting for a slot.", double(m.queue_length));
    metric("slots", "gauge", "Slots (parallel sequences).", double(m.slots));
    metric("cache_hit_ratio", "gauge", "Of prompt tokens, the share found in a slot's cache.",
           m.prompt_tokens + m.cached_tokens > 0
               ? double(m.cached_tokens) / double(m.prompt_tokens + m.cached_tokens)
               : 0);
    metric("http_requests_total", "counter", "HTTP requests received.", double(http_requests));
    metric("http_errors_total", "counter", "HTTP requests answered with an error.",
           double(http_errors));
    return out;
}

}  // namespace

OpenAIServer::OpenAIServer(llm::Engine& engine, const llm::Tokenizer& tokenizer,
                           const llm::ChatFormatter& chat, ServerOptions options)
    : engine_(engine),
      tokenizer_(tokenizer),
      chat_(chat),
      options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()) {
    routes();
}

OpenAIServer::~OpenAIServer() = default;

void OpenAIServer::routes() {
    httplib::Server& s = *http_;
    s.set_payload_max_length(options_.max_body_bytes);
    s.set_read_timeout(options_.read_timeout_seconds, 0);
    s.set_write_timeout(options_.write_timeout_seconds, 0);
    s.set_keep_alive_max_count(100);
    auto handlers = std::make_shared<Handlers>(engine_, tokenizer_, chat_, options_, ids_);

    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        ++http_requests_;
        if (options_.api_key.empty() || req.path == "/health")
            return httplib::Server::HandlerResponse::Unhandled;
        if (req.get_header_value("Authorization") == "Bearer " + options_.api_key)
            return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, {401, "a valid API key is required (Authorization: Bearer <key>)", "",
                         "authentication_error"});
        return httplib::Server::HandlerResponse::Handled;
    });
    // Every route answers errors it raises as OpenAI error objects.
    const auto guarded = [](auto fn) {
        return [fn](const httplib::Request& req, httplib::Response& res) {
            try {
                fn(req, res);
            } catch (const RequestError& e) {
                send_error(res, e);
            } catch (const std::exception& e) {
                send_error(res,
                           {500, std::string("internal error: ") + e.what(), "", "server_error"});
            }
        };
    };
    s.Get("/health", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        json model = {{"id", options_.model_name},
                      {"object", "model"},
                      {"created", unix_time()},
                      {"owned_by", "switchyard"}};
        res.set_content(dump({{"object", "list"}, {"data", json::array({model})}}),
                        "application/json");
    });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(prometheus(engine_.metrics(), http_requests_, http_errors_),
                        "text/plain; version=0.0.4");
    });
    s.Post("/v1/completions",
           guarded([handlers](const auto& req, auto& res) { handlers->completions(req, res); }));
    s.Post("/completions",
           guarded([handlers](const auto& req, auto& res) { handlers->completions(req, res); }));
    s.Post("/v1/chat/completions",
           guarded([handlers](const auto& req, auto& res) { handlers->chat(req, res); }));
    s.Post("/chat/completions",
           guarded([handlers](const auto& req, auto& res) { handlers->chat(req, res); }));
    s.Post("/tokenize",
           guarded([handlers](const auto& req, auto& res) { handlers->tokenize(req, res); }));
    s.Post("/detokenize",
           guarded([handlers](const auto& req, auto& res) { handlers->detokenize(req, res); }));

    // Errors httplib raises itself (unknown route, body too large) get an OpenAI body too.
    s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        ++http_errors_;
        if (!res.body.empty()) return;
        if (res.status == 404)
            send_error(res,
                       {404, "no route " + req.method + " " + req.path, "", "not_found_error"});
        else if (res.status == 413)
            send_error(res, {413,
                             "the request body is larger than " +
                                 std::to_string(options_.max_body_bytes) + " bytes",
                             "", "invalid_request_error"});
        else
            send_error(res, {res.status, "HTTP " + std::to_string(res.status), "",
                             "invalid_request_error"});
    });
    s.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "unknown";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            send_error(res, {500, "internal error: " + what, "", "server_error"});
        });
}

int OpenAIServer::bind() {
    if (options_.port == 0) {
        const int port = http_->bind_to_any_port(options_.host);
        if (port < 0) throw Error("serve: cannot listen on " + options_.host);
        options_.port = port;
        return port;
    }
    if (!http_->bind_to_port(options_.host, options_.port))
        throw Error("serve: cannot listen on " + options_.host + ":" +
                    std::to_string(options_.port) + " (in use, or not an address of this host)");
    return options_.port;
}

void OpenAIServer::run() {
    http_->listen_after_bind();
}

void OpenAIServer::stop() {
    http_->stop();
}

}  // namespace sy::server
