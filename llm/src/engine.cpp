#include "switchyard/llm/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "switchyard/core/error.hpp"

namespace sy::llm {
namespace {

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    const size_t n = std::min(a.size(), b.size());
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

// Bytes at the end of `s` that begin a UTF-8 character not finished yet.
size_t unfinished_utf8(const std::string& s) {
    for (size_t back = 1; back <= std::min<size_t>(4, s.size()); ++back) {
        const auto c = static_cast<unsigned char>(s[s.size() - back]);
        if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
        const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        return length > back ? back : 0;
    }
    return 0;
}

// log softmax of the chosen token and the n most likely ones.
void fill_logprobs(std::span<const float> logits, int32_t n, Piece& piece) {
    float max = -INFINITY;
    for (float v : logits) max = std::max(max, v);
    double sum = 0;
    for (float v : logits) sum += std::exp(double(v - max));
    const auto logprob = [&](int32_t id) {
        return float(double(logits[size_t(id)] - max) - std::log(sum));
    };
    piece.chosen = {piece.token, logprob(piece.token)};
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t k = std::min<size_t>(size_t(n), ids.size());
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(k), ids.end(),
                      [&](int32_t a, int32_t b) {
                          return logits[size_t(a)] > logits[size_t(b)] ||
                                 (logits[size_t(a)] == logits[size_t(b)] && a < b);
                      });
    for (size_t i = 0; i < k; ++i) piece.top.push_back({ids[i], logprob(ids[i])});
}

}  // namespace

const char* finish_reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::stop: return "stop";
        case FinishReason::length: return "length";
        case FinishReason::cancelled: return "cancelled";
        case FinishReason::error: return "error";
    }
    return "error";
}

// ---- Completion ---------------------------------------------------------------------------

std::optional<Piece> Completion::next() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !pieces_.empty() || result_.has_value(); });
    if (pieces_.empty()) return std::nullopt;
    Piece p = std::move(pieces_.front());
    pieces_.pop_front();
    return p;
}

CompletionResult Completion::result() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return result_.has_value(); });
    return *result_;
}

void Completion::push(Piece piece) {
    {
        std::lock_guard lock(mutex_);
        pieces_.push_back(std::move(piece));
    }
    ready_.notify_all();
}

void Completion::finish(CompletionResult result) {
    {
        std::lock_guard lock(mutex_);
        result_ = std::move(result);
    }
    ready_.notify_all();
}

// ---- Engine -------------------------------------------------------------------------------

Engine::Engine(Session& session, const Tokenizer& tokenizer, const EngineOptions& options)
    : session_(session),
      tokenizer_(tokenizer),
      max_queue_(options.max_queue),
      cache_ram_bytes_(options.cache_ram_bytes) {
    if (options.slots < 1) throw Error("-np " + std::to_string(options.slots) + ": expected >= 1");
    if (options.max_queue < 0) throw Error("the queue limit must be >= 0");
    session_.set_sequences(options.slots);
    capacity_ = session_.sequence_capacity();
    slots_.resize(size_t(options.slots));
    for (size_t i = 0; i < slots_.size(); ++i) slots_[i].seq = int64_t(i);
    metrics_.slots = options.slots;
    thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
    shutdown();
}

std::shared_ptr<Completion> Engine::submit(CompletionRequest request) {
    const int64_t n_prompt = int64_t(request.prompt.size());
    if (n_prompt == 0) throw Error("the prompt has no tokens");
    if (n_prompt >= capacity_)
        throw Error("the prompt has " + std::to_string(n_prompt) +
                    " tokens; a slot holds at most " + std::to_string(capacity_) +
                    " (prompt and completion; raise -c or lower -np)");
    const CompletionParams& p = request.params;
    if (p.max_tokens < -1)
        throw Error("max_tokens " + std::to_string(p.max_tokens) + ": expected >= 0");
    if (p.max_tokens > capacity_ - n_prompt)
        throw Error("max_tokens " + std::to_string(p.max_tokens) + " with a prompt of " +
                    std::to_string(n_prompt) + " tokens exceeds the slot's " +
                    std::to_string(capacity_) + " tokens");
    if (p.n_probs < 0 || p.n_probs > 20)
        throw Error("n_probs " + std::to_string(p.n_probs) + ": expected 0 .. 20");
    for (int32_t t : request.prompt)
        if (t < 0 || t >= tokenizer_.n_vocab())
            throw Error("token id " + std::to_string(t) + " is outside the vocabulary of " +
                        std::to_string(tokenizer_.n_vocab()));
    validate(p.sampling);
    if (p.grammar) GrammarMatcher check(p.grammar);  // a grammar that cannot start throws

    auto completion = std::make_shared<Completion>();
    {
        std::lock_guard lock(mutex_);
        if (stopping_) throw EngineBusy("the server is shutting down");
        // Requests beyond the slots wait; max_queue of them at most.
        if (int64_t(queue_.size()) + metrics_.slots_busy >= metrics_.slots + max_queue_) {
            ++metrics_.requests_rejected;
            throw EngineBusy("the queue is full (" + std::to_string(queue_.size()) +
                             " requests wait for a slot)");
        }
        queue_.push_back({std::move(request), completion, now_seconds()});
        ++metrics_.requests;
        metrics_.queue_length = int64_t(queue_.size());
    }
    wake_.notify_all();
    return completion;
}

void Engine::shutdown() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

EngineMetrics Engine::metrics() const {
    std::lock_guard lock(mutex_);
    return metrics_;
}

void Engine::save_to_ram(const Slot& slot) {
    const uint64_t bytes = session_.cache().sequence_bytes(int64_t(slot.cached.size()));
    if (bytes > cache_ram_bytes_) return;
    Saved saved{slot.cached, session_.save_prefix(slot.seq, int64_t(slot.cached.size()))};
    // An entry this one extends holds nothing more.
    for (auto it = ram_.begin(); it != ram_.end();) {
        if (common_prefix(it->tokens, saved.tokens) == it->tokens.size()) {
            ram_bytes_ -= it->bytes.size();
            it = ram_.erase(it);
        } else {
            ++it;
        }
    }
    ram_bytes_ += saved.bytes.size();
    ram_.push_front(std::move(saved));
    while (ram_bytes_ > cache_ram_bytes_) {
        ram_bytes_ -= ram_.back().bytes.size();
        ram_.pop_back();
    }
    std::lock_guard lock(mutex_);
    ++metrics_.ram_saved_prefixes;
    metrics_.ram_bytes = ram_bytes_;
}

// A prefix is worth saving when a request would otherwise drop at least this many tokens of it.
constexpr size_t kMinSavedTokens = 16;

void Engine::admit(Slot& slot, Job job) {
    const std::vector<int32_t>& prompt = job.request.prompt;
    // At least the prompt's last token is evaluated: its logits give the first new token.
    size_t reuse = std::min(common_prefix(slot.cached, prompt), prompt.size() - 1);
    int64_t restored = 0;
    if (cache_ram_bytes_ > 0) {
        if (slot.cached.size() >= reuse + kMinSavedTokens) save_to_ram(slot);
        // The saved prefix that gives the most of the prompt, if more than the slot has.
        auto best = ram_.end();
        size_t best_len = reuse;
        for (auto it = ram_.begin(); it != ram_.end(); ++it) {
            const size_t len = std::min(common_prefix(it->tokens, prompt), prompt.size() - 1);
            if (len > best_len) best = it, best_len = len;
        }
        if (best != ram_.end()) {
            session_.load_prefix(slot.seq, int64_t(best->tokens.size()), best->bytes);
            slot.cached = best->tokens;
            restored = int64_t(best_len) - int64_t(reuse);
            reuse = best_len;
            Saved used = std::move(*best);  // most recently used first
            ram_.erase(best);
            ram_.push_front(std::move(used));
        }
    }
    session_.truncate(slot.seq, int64_t(reuse));
    slot.cached.resize(reuse);
    slot.prompt_done = reuse;
    slot.sampler.emplace(job.request.params.sampling);
    slot.grammar.reset();
    if (job.request.params.grammar)
        slot.grammar.emplace(job.request.params.grammar, tokenizer_, job.request.params.ignore_eos);
    for (int32_t t : prompt) slot.sampler->accept(t);
    slot.text.clear();
    slot.released = 0;
    slot.last = -1;
    slot.result = {};
    slot.result.prompt_tokens = int64_t(prompt.size());
    slot.result.cached_tokens = int64_t(reuse);
    slot.started_at = now_seconds();
    slot.first_token_at = 0;
    slot.result.queue_seconds = slot.started_at - job.queued_at;
    slot.job = std::move(job);
    std::lock_guard lock(mutex_);
    metrics_.cached_tokens += int64_t(reuse);
    metrics_.ram_restored_tokens += restored;
    ++metrics_.slots_busy;
}

size_t Engine::releasable(const Slot& slot) const {
    const std::string& text = slot.text;
    size_t hold = unfinished_utf8(text);
    for (const std::string& stop : slot.job->request.params.stop) {
        // The longest end of the text that a stop string begins with.
        for (size_t k = std::min(stop.size() - 1, text.size() - slot.released); k > hold; --k) {
            if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
                hold = k;
                break;
            }
        }
    }
    return std::max(slot.released, text.size() - hold);
}

void Engine::advance(Slot& slot, std::span<const float> logits) {
    const CompletionParams& params = slot.job->request.params;
    if (slot.result.completion_tokens == 0) slot.first_token_at = now_seconds();
    Piece piece;
    try {
        if (slot.grammar) {
            piece.token = slot.grammar->sample(*slot.sampler, logits, [this]() -> const TokenTrie& {
                if (!trie_) trie_ = std::make_unique<TokenTrie>(vocabulary_trie(tokenizer_));
                return *trie_;
            });
            slot.grammar->accept(piece.token);
        } else {
            piece.token = slot.sampler->sample(logits);
        }
    } catch (const std::exception& e) {
        end(slot, FinishReason::error, e.what());
        return;
    }
    if (params.n_probs > 0) fill_logprobs(logits, params.n_probs, piece);
    slot.sampler->accept(piece.token);
    ++slot.result.completion_tokens;

    std::optional<FinishReason> finish;
    size_t keep = std::string::npos;  // where a stop string cuts the text
    if (!params.ignore_eos && tokenizer_.is_end_of_generation(piece.token)) {
        finish = FinishReason::stop;
    } else {
        const size_t before = slot.text.size();
        slot.text += tokenizer_.token_bytes(piece.token, params.special);
        const bool whole = slot.grammar && slot.grammar->done();
        for (const std::string& stop : params.stop) {
            // A stop string can end only in the new bytes.
            const size_t from = before >= stop.size() ? before - stop.size() + 1 : 0;
            const size_t at = slot.text.find(stop, std::min(from, slot.released));
            if (at != std::string::npos && at < keep) keep = at;
        }
        if (keep != std::string::npos) {
            slot.text.resize(keep);
            finish = FinishReason::stop;
        } else if (whole) {
            finish = FinishReason::stop;
        } else if (params.max_tokens >= 0 && slot.result.completion_tokens >= params.max_tokens) {
            finish = FinishReason::length;
        } else if (int64_t(slot.cached.size()) + 1 > capacity_) {
            finish = FinishReason::length;  // the slot cannot hold the token to evaluate next
        }
    }
    const size_t until = finish ? slot.text.size() : releasable(slot);
    piece.text = slot.text.substr(slot.released, until - slot.released);
    slot.released = until;
    slot.last = piece.token;
    slot.job->completion->push(std::move(piece));
    if (finish) end(slot, *finish);
}

void Engine::end(Slot& slot, FinishReason reason, std::string error) {
    if (!slot.job) return;
    CompletionResult r = std::move(slot.result);
    r.text = slot.text.substr(0, slot.released);
    r.finish = reason;
    r.error = std::move(error);
    const double now = now_seconds();
    if (slot.first_token_at > 0) {
        r.prompt_seconds = slot.first_token_at - slot.started_at;
        r.generation_seconds = now - slot.first_token_at;
    } else {
        r.prompt_seconds = now - slot.started_at;
    }
    slot.job->completion->finish(std::move(r));
    slot.job.reset();
    slot.sampler.reset();
    slot.grammar.reset();
    std::lock_guard lock(mutex_);
    ++metrics_.requests_finished;
    --metrics_.slots_busy;
}

void Engine::loop() {
    const int64_t n_ubatch = std::max<int64_t>(1, session_.model().options().n_ubatch);
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock,
                       [&] { return stopping_ || !queue_.empty() || metrics_.slots_busy > 0; });
            if (stopping_) {
                for (Job& job : queue_) {
                    CompletionResult r;
                    r.finish = FinishReason::cancelled;
                    r.prompt_tokens = int64_t(job.request.prompt.size());
                    job.completion->finish(std::move(r));
                }
                queue_.clear();
                lock.unlock();
                for (Slot& s : slots_) end(s, FinishReason::cancelled);
                return;
            }
            // Free slots take the queue in order, each request the free slot whose cache
            // shares the longest prefix with its prompt.
            while (!queue_.empty()) {
                Slot* best = nullptr;
                size_t best_len = 0;
                for (Slot& s : slots_) {
                    if (s.job) continue;
                    const size_t len = common_prefix(s.cached, queue_.front().request.prompt);
                    if (!best || len > best_len) best = &s, best_len = len;
                }
                if (!best) break;
                Job job = std::move(queue_.front());
                queue_.pop_front();
                lock.unlock();
                admit(*best, std::move(job));
                lock.lock();
            }
            metrics_.queue_length = int64_t(queue_.size());
        }

        // One batch: a token of every generating slot, then pieces of the prompts.
        std::vector<Session::SequenceTokens> batch;
        std::vector<Slot*> in_batch;
        int64_t generating = 0, prompt_tokens = 0;
        for (Slot& s : slots_) {
            if (s.job && s.job->completion->cancelled()) end(s, FinishReason::cancelled);
            if (!s.job || s.prompt_done < s.job->request.prompt.size()) continue;
            batch.push_back({s.seq, std::span<const int32_t>(&s.last, 1)});
            in_batch.push_back(&s);
            ++generating;
        }
        int64_t budget = std::max<int64_t>(1, n_ubatch - generating);
        for (Slot& s : slots_) {
            if (!s.job || s.prompt_done >= s.job->request.prompt.size() || budget <= 0) continue;
            const std::vector<int32_t>& prompt = s.job->request.prompt;
            const int64_t n = std::min<int64_t>(int64_t(prompt.size() - s.prompt_done), budget);
            batch.push_back(
                {s.seq, std::span<const int32_t>(prompt.data() + s.prompt_done, size_t(n))});
            in_batch.push_back(&s);
            budget -= n;
            prompt_tokens += n;
        }
        if (batch.empty()) continue;

        const double t0 = now_seconds();
        std::vector<float> logits;
        try {
            logits = session_.decode(batch);
        } catch (const std::exception& e) {
            for (Slot* s : in_batch) {
                end(*s, FinishReason::error, e.what());
                s->cached.clear();
                try {
                    session_.truncate(s->seq, 0);
                } catch (const std::exception&) {
                }
            }
            continue;
        }
        const double dt = now_seconds() - t0;
        const auto n_vocab = size_t(session_.model().n_vocab());
        int64_t generated = 0;
        for (size_t i = 0; i < batch.size(); ++i) {
            Slot& s = *in_batch[i];
            s.cached.insert(s.cached.end(), batch[i].tokens.begin(), batch[i].tokens.end());
            if (s.prompt_done < s.job->request.prompt.size()) {
                s.prompt_done += batch[i].tokens.size();
                if (s.prompt_done < s.job->request.prompt.size()) continue;
            }
            ++generated;
            advance(s, std::span<const float>(logits.data() + i * n_vocab, n_vocab));
        }
        std::lock_guard lock(mutex_);
        ++metrics_.steps;
        metrics_.prompt_tokens += prompt_tokens;
        metrics_.generated_tokens += generated;
        (prompt_tokens > 0 ? metrics_.prompt_seconds : metrics_.decode_seconds) += dt;
    }
}

}  // namespace sy::llm
