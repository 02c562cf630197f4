// Serving several users from one session (llama-server's slots, continuous batching): each slot
// is a sequence of the session's cache; requests wait in a queue until a slot is free, and every
// step decodes one token of each generating slot and a piece of each new prompt in one batch, so
// the weights are read once per step for all of them.
//
//   Engine engine(session, tokenizer, {.slots = 4});
//   std::shared_ptr<Completion> c = engine.submit({.prompt = ids, .params = {...}});
//   while (std::optional<Piece> p = c->next()) print(p->text);   // as the tokens come
//   CompletionResult r = c->result();
//
// Prompt reuse: a slot keeps what its cache holds after a request; a new request goes to the
// free slot whose cached tokens share the longest prefix with its prompt, and only the rest of
// the prompt is evaluated (CompletionResult::cached_tokens). With cache_ram_bytes, what a slot
// held before a request with another prefix took it is saved to host memory (least recently
// used first out), and a later request that begins with it gets it back instead of evaluating
// it again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "switchyard/llm/grammar_sampler.hpp"
#include "switchyard/llm/sampler.hpp"
#include "switchyard/llm/session.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::llm {

struct CompletionParams {
    SamplerParams sampling;
    int64_t max_tokens = -1;        // -1: until the end of generation or the slot is full
    std::vector<std::string> stop;  // texts that end the completion (left out of it)
    bool ignore_eos = false;
    int32_t n_probs = 0;   // alternatives reported per token (logprobs), 0 .. 20
    bool special = false;  // the text of control tokens too (markup such as tool calls)
    // Constrained generation: only tokens that keep the text a prefix of a sentence of the
    // grammar are drawn (their text with control tokens spelled out), the end of generation
    // only where the sentence is whole, and the completion stops when nothing more can follow.
    std::shared_ptr<const Grammar> grammar;
};

struct CompletionRequest {
    std::vector<int32_t> prompt;  // at least one token
    CompletionParams params;
};

struct TokenLogprob {
    int32_t id = 0;
    float logprob = 0;  // natural log of the token's probability under the model (temperature 1)
};

// What one generated token adds: its text as it becomes final (empty while it may be the start
// of a stop string or of an unfinished UTF-8 character; released with a later piece).
struct Piece {
    int32_t token = 0;
    std::string text;
    TokenLogprob chosen;
    std::vector<TokenLogprob> top;  // n_probs alternatives, most likely first
};

enum class FinishReason { stop, length, cancelled, error };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "error"

struct CompletionResult {
    std::string text;  // everything the pieces released
    FinishReason finish = FinishReason::stop;
    std::string error;  // with FinishReason::error
    int64_t prompt_tokens = 0;
    int64_t cached_tokens = 0;  // of prompt_tokens: found in the slot's cache, not evaluated
    int64_t completion_tokens = 0;
    double queue_seconds = 0;   // waiting for a slot
    double prompt_seconds = 0;  // from the slot to the first token
    double generation_seconds = 0;
};

// One request's stream of pieces and its end, shared by the engine and the caller.
class Completion {
  public:
    // The next piece, waiting for it; nullopt once the completion has ended.
    std::optional<Piece> next();
    // The result, waiting for the end.
    CompletionResult result();
    // Ends the completion at the next step (a client that left): its slot is freed.
    void cancel() { cancelled_ = true; }
    bool cancelled() const { return cancelled_; }

  private:
    friend class Engine;
    void push(Piece piece);
    void finish(CompletionResult result);

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Piece> pieces_;
    std::optional<CompletionResult> result_;
    std::atomic<bool> cancelled_{false};
};

struct EngineOptions {
    int64_t slots = 1;             // sequences of the session (-np)
    int64_t max_queue = 256;       // requests waiting beyond the slots; more are refused
    uint64_t cache_ram_bytes = 0;  // host memory for prefixes slots gave up (--cache-ram)
};

// Counters since the engine started (GET /metrics).
struct EngineMetrics {
    int64_t requests = 0;           // accepted
    int64_t requests_rejected = 0;  // refused: the queue was full
    int64_t requests_finished = 0;
    int64_t prompt_tokens = 0;        // evaluated (cached ones not counted)
    int64_t cached_tokens = 0;        // prompt tokens found in a slot's cache or the RAM cache
    int64_t ram_restored_tokens = 0;  // of cached_tokens: put back from the RAM cache
    int64_t ram_saved_prefixes = 0;   // prefixes saved to the RAM cache
    uint64_t ram_bytes = 0;           // the RAM cache's size now
    int64_t generated_tokens = 0;
    double prompt_seconds = 0;  // of the steps that evaluated prompt tokens
    double decode_seconds = 0;  // of the steps that only decoded
    int64_t steps = 0;
    int64_t queue_length = 0;  // now
    int64_t slots_busy = 0;    // now
    int64_t slots = 0;
};

// Thrown by submit() when the queue is full (HTTP 503).
struct EngineBusy : Error {
    using Error::Error;
};

class Engine {
  public:
    // Splits the session's cache into options.slots sequences (the session must be empty) and
    // starts the thread that runs the steps. Throws sy::Error for a slot count the context
    // cannot hold.
    Engine(Session& session, const Tokenizer& tokenizer, const EngineOptions& options);
    ~Engine();  // shutdown()
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Queues a request. Throws sy::Error for an empty prompt, a prompt or max_tokens the slot
    // cannot hold (naming the counts), or bad sampling parameters; EngineBusy when the queue is
    // full.
    std::shared_ptr<Completion> submit(CompletionRequest request);
    // Refuses new requests, cancels the queued ones, ends the running ones at their next step,
    // and joins the thread.
    void shutdown();

    // Tokens one slot can hold (prompt and completion together).
    int64_t slot_capacity() const { return capacity_; }
    int64_t slots() const { return int64_t(slots_.size()); }
    EngineMetrics metrics() const;

  private:
    struct Job {
        CompletionRequest request;
        std::shared_ptr<Completion> completion;
        double queued_at = 0;
    };
    struct Slot {
        int64_t seq = 0;
        std::vector<int32_t> cached;  // the tokens the sequence's cache holds, in order
        std::optional<Job> job;
        size_t prompt_done = 0;  // prompt tokens in the cache
        std::optional<Sampler> sampler;
        std::optional<GrammarSampler> grammar;  // with a grammar
        int32_t last = -1;                      // the sampled token to evaluate next
        std::string text;                       // generated so far
        size_t released = 0;                    // of text: given out in pieces
        CompletionResult result;
        double started_at = 0, first_token_at = 0;
    };

    // A prefix saved from a slot (cache_ram_bytes): its tokens and the cache's bytes for them.
    struct Saved {
        std::vector<int32_t> tokens;
        std::vector<std::byte> bytes;
    };

    void loop();
    void admit(Slot& slot, Job job);
    // Saves what the slot holds to the RAM cache, dropping older entries it extends and the
    // least recently used ones beyond the limit.
    void save_to_ram(const Slot& slot);
    // Samples the slot's next token from `logits` and gives out its piece; ends the
    // completion when the token finishes it.
    void advance(Slot& slot, std::span<const float> logits);
    void end(Slot& slot, FinishReason reason, std::string error = {});
    // What of the slot's text can be given out now: all but a possible stop-string start and
    // an unfinished UTF-8 character.
    size_t releasable(const Slot& slot) const;

    Session& session_;
    const Tokenizer& tokenizer_;
    int64_t capacity_ = 0;
    int64_t max_queue_ = 0;
    uint64_t cache_ram_bytes_ = 0;
    std::vector<Slot> slots_;
    std::deque<Saved> ram_;  // most recently used first; only the engine's thread touches it
    uint64_t ram_bytes_ = 0;
    std::unique_ptr<TokenTrie> trie_;  // the vocabulary, made when a grammar first needs it

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Job> queue_;
    bool stopping_ = false;
    EngineMetrics metrics_;
    std::thread thread_;
};

}  // namespace sy::llm
