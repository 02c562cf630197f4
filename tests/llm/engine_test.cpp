// The serving engine (llm/engine.hpp) on the CPU plugin and a tiny synthetic model: requests
// decoded together give the tokens each gives alone, a prompt that extends a slot's cache is
// evaluated only past it, stop strings, max_tokens, cancellation, the queue limit, bad requests
// and shutdown.
#include "switchyard/llm/engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "llm_test_util.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/llm/json_schema.hpp"
#include "switchyard/llm/models/deepseek2.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace sy::llm::test {
namespace {

Plugin& cpu_plugin() {
    static std::unique_ptr<Plugin> plugin = Plugin::load(SWITCHYARD_CPU_PLUGIN);
    return *plugin;
}

// The tiny preset (a byte-level BPE vocabulary) with a context of `n_ctx`.
struct TinyModel {
    explicit TinyModel(int64_t n_ctx) {
        path = dir / "tiny.gguf";
        write_synthetic_model(
            path, plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, KvLayout::kv_b), 7, 1);
        ContextOptions o;
        o.n_ctx = n_ctx;
        o.n_ubatch = 64;
        model = std::make_unique<Deepseek2Model>(gguf::Reader::open(path), o);
        tokenizer = std::make_unique<Tokenizer>(
            Tokenizer::for_model(model->file(), uint32_t(model->n_vocab())));
    }
    ScratchDir dir;
    std::filesystem::path path;
    std::unique_ptr<Model> model;
    std::unique_ptr<Tokenizer> tokenizer;
};

std::vector<int32_t> prompt(size_t n, int32_t salt) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = int32_t((i * 37 + 11 + size_t(salt) * 101) % 500 + 3);
    return t;
}

CompletionParams greedy(int64_t max_tokens) {
    CompletionParams p;
    p.sampling.temperature = 0;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
}

// The greedy continuation of `tokens` by a session of its own, one sequence.
std::vector<int32_t> alone(const Model& model, std::vector<int32_t> tokens, int64_t n) {
    Session s(model, cpu_plugin());
    std::vector<float> logits = s.eval(tokens);
    std::vector<int32_t> out;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t next =
            int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        out.push_back(next);
        if (i + 1 < n) logits = s.eval(std::span<const int32_t>(&next, 1));
    }
    return out;
}

std::vector<int32_t> tokens_of(Completion& c) {
    std::vector<int32_t> out;
    while (std::optional<Piece> p = c.next()) out.push_back(p->token);
    return out;
}

TEST(Engine, RequestsDecodedTogetherGiveTheTokensOfEachAlone) {
    TinyModel m(3 * 128);
    Session session(*m.model, cpu_plugin());
    Engine engine(session, *m.tokenizer, {.slots = 3});
    EXPECT_EQ(engine.slot_capacity(), 128);
    const size_t lengths[] = {5, 70, 12};  // the long prompt takes two ubatches beside the others
    std::vector<std::shared_ptr<Completion>> running;
    for (size_t i = 0; i < 3; ++i)
        running.push_back(engine.submit({prompt(lengths[i], int32_t(i)), greedy(16)}));
    for (size_t i = 0; i < 3; ++i) {
        const std::vector<int32_t> got = tokens_of(*running[i]);
        EXPECT_EQ(got, alone(*m.model, prompt(lengths[i], int32_t(i)), 16)) << "request " << i;
        const CompletionResult r = running[i]->result();
        EXPECT_EQ(r.finish, FinishReason::length);
        EXPECT_EQ(r.completion_tokens, 16);
        EXPECT_EQ(r.prompt_tokens, int64_t(lengths[i]));
        EXPECT_EQ(r.cached_tokens, 0);
    }
    const EngineMetrics mx = engine.metrics();
    EXPECT_EQ(mx.requests_finished, 3);
    EXPECT_EQ(mx.generated_tokens, 48);
    EXPECT_EQ(mx.prompt_tokens, 87);
    EXPECT_LT(mx.steps, 48) << "the three requests shared steps";
}

TEST(Engine, APromptThatExtendsTheCacheIsEvaluatedOnlyPastIt) {
    TinyModel m(256);
    Session session(*m.model, cpu_plugin());
    Engine engine(session, *m.tokenizer, {.slots = 1});
    const std::vector<int32_t> first = prompt(40, 1);
    const std::vector<int32_t> reply = tokens_of(*engine.submit({first, greedy(6)}));
    ASSERT_EQ(reply.size(), 6u);
    // The next turn: the conversation so far and a new message.
    std::vector<int32_t> next = first;
    next.insert(next.end(), reply.begin(), reply.end());
    const std::vector<int32_t> message = prompt(9, 2);
    next.insert(next.end(), message.begin(), message.end());
    const std::shared_ptr<Completion> c = engine.submit({next, greedy(8)});
    EXPECT_EQ(tokens_of(*c), alone(*m.model, next, 8));
    const CompletionResult r = c->result();
    EXPECT_EQ(r.cached_tokens, 45) << "the prompt and the reply's evaluated tokens";
    // The same prompt again: all but its last token are found.
    const std::shared_ptr<Completion> again = engine.submit({next, greedy(8)});
    EXPECT_EQ(tokens_of(*again), alone(*m.model, next, 8));
    EXPECT_EQ(again->result().cached_tokens, int64_t(next.size()) - 1);
    EXPECT_EQ(engine.metrics().cached_tokens, 45 + int64_t(next.size()) - 1);
}

// A prefix a slot gave up to another request comes back from the RAM cache: the slot holds the
// other request's tokens, yet the first conversation's next turn is evaluated only past it, and
// gives the tokens a fresh evaluation gives.
TEST(Engine, APrefixTheSlotGaveUpComesBackFromTheRamCache) {
    TinyModel m(256);
    Session session(*m.model, cpu_plugin());
    Engine engine(session, *m.tokenizer, {.slots = 1, .cache_ram_bytes = uint64_t(64) << 20});
    const std::vector<int32_t> first = prompt(60, 1);
    const std::vector<int32_t> reply = tokens_of(*engine.submit({first, greedy(4)}));
    const std::vector<int32_t> other = prompt(30, 9);
    EXPECT_EQ(tokens_of(*engine.submit({other, greedy(4)})), alone(*m.model, other, 4));
    std::vector<int32_t> next = first;
    next.insert(next.end(), reply.begin(), reply.end());
    const std::vector<int32_t> message = prompt(7, 3);
    next.insert(next.end(), message.begin(), message.end());
    const std::shared_ptr<Completion> c = engine.submit({next, greedy(6)});
    EXPECT_EQ(tokens_of(*c), alone(*m.model, next, 6));
    EXPECT_EQ(c->result().cached_tokens, 63) << "the first prompt and three reply tokens";
    const EngineMetrics mx = engine.metrics();
    EXPECT_EQ(mx.ram_restored_tokens, 63);
    EXPECT_EQ(mx.ram_saved_prefixes, 2) << "the first conversation, then the other request";
    EXPECT_GT(mx.ram_bytes, 0u);
    // Without the RAM cache the same sequence of requests evaluates the turn whole.
    Session plain_session(*m.model, cpu_plugin());
    Engine plain(plain_session, *m.tokenizer, {.slots = 1});
    tokens_of(*plain.submit({first, greedy(4)}));
    tokens_of(*plain.submit({other, greedy(4)}));
    const std::shared_ptr<Completion> d = plain.submit({next, greedy(6)});
    tokens_of(*d);
    EXPECT_EQ(d->result().cached_tokens, 0) << "the other request's tokens share no prefix";
}

TEST(Engine, StopStringsEndTheTextBeforeThem) {
    TinyModel m(256);
    Session session(*m.model, cpu_plugin());
    Engine engine(session, *m.tokenizer, {.slots = 1});
    const std::vector<int32_t> p = prompt(8, 3);
    const CompletionResult full = [&] {
        auto c = engine.submit({p, greedy(24)});
        tokens_of(*c);
        return c->result();
    }();
    ASSERT_GE(full.text.size(), 8u);
    // A stop string from the middle of the text: the text ends just before its first place.
    const std::string stop = full.text.substr(full.text.size() / 2, 3);
    CompletionParams params = greedy(24);
    params.stop = {"never appears \x01", stop};
    auto c = engine.submit({p, params});
    std::string streamed;
    while (std::optional<Piece> piece = c->next()) streamed += piece->text;
    const CompletionResult r = c->result();
    EXPECT_EQ(r.finish, FinishReason::stop);
    EXPECT_EQ(r.text, full.text.substr(0, full.text.find(stop)));
    EXPECT_EQ(streamed, r.text) << "the pieces give exactly the text";
}

TEST(Engine, LogprobsAndMaxTokens) {
    TinyModel m(256);
    Session session(*m.model, cpu_plugin());
    Engine engine(session, *m.tokenizer, {.slots = 1});
    CompletionParams params = greedy(3);
    params.n_probs = 4;
    auto c = engine.submit({prompt(6, 4), params});
    int n = 0;
    while (std::optional<Piece> piece = c->next()) {
        ++n;
        ASSERT_EQ(piece->top.size(), 4u);
        EXPECT_EQ(piece->top[0].id, piece->token) << "greedy takes the most likely";
        EXPECT_FLOAT_EQ(piece->chosen.logprob, piece->top[0].logprob);
        EXPECT_LE(piece->chosen.logprob, 0.0f);
        EXPECT_GE(piece->top[0].logprob, piece->top[3].logprob);
    }
    EXPECT_EQ(n, 3);
    EXPECT_EQ(c->result().finish, FinishReason::length);
}

// A random model never writes JSON by itself: what comes out under a schema's grammar is the
// grammar's doing. Each seed draws another text; every one parses and follows the schema.
TEST(Engine, AGrammarShapesTheTextAndEndsItWhenWhole) {
    TinyModel m(512);
    Session session(*m.model, cpu_plugin());
    Engine engine(session, *m.tokenizer, {.slots = 2});
    const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"({
        "type": "object",
        "properties": {
            "city": {"enum": ["Paris", "Tokyo", "Lima"]},
            "rain": {"type": "boolean"},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3}
        },
        "required": ["city", "rain"]
    })");
    const auto grammar = Grammar::parse(json_schema_to_gbnf(schema));
    std::vector<std::shared_ptr<Completion>> runs;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        CompletionParams params;
        params.sampling.temperature = 1.5f;
        params.sampling.top_k = 0;
        params.sampling.top_p = 1;
        params.sampling.min_p = 0;
        params.sampling.seed = seed;
        params.max_tokens = 200;
        params.grammar = grammar;
        runs.push_back(engine.submit({prompt(5, int32_t(seed)), params}));
    }
    std::set<std::string> texts;
    for (auto& c : runs) {
        std::string streamed;
        while (std::optional<Piece> p = c->next()) streamed += p->text;
        const CompletionResult r = c->result();
        ASSERT_EQ(r.finish, FinishReason::stop) << r.text << r.error;
        EXPECT_EQ(streamed, r.text);
        const auto value = nlohmann::ordered_json::parse(r.text);
        EXPECT_TRUE(value.at("rain").is_boolean()) << r.text;
        const std::string city = value.at("city").get<std::string>();
        EXPECT_TRUE(city == "Paris" || city == "Tokyo" || city == "Lima") << r.text;
        EXPECT_LE(value.value("tags", nlohmann::ordered_json::array()).size(), 3u) << r.text;
        texts.insert(r.text);
    }
    EXPECT_GE(texts.size(), 2u) << "the seeds drew the same text every time";

    // Greedy with a grammar takes the likeliest token the grammar allows, token by token:
    // against a plain walk over the vocabulary.
    const auto words = Grammar::parse(R"g(root ::= [a-z]{1,3} (" " [a-z]{1,3}){2} ".")g");
    std::vector<int32_t> expected;
    {
        Session alone_session(*m.model, cpu_plugin());
        std::vector<float> logits = alone_session.eval(prompt(7, 2));
        GrammarMatcher matcher(words);
        while (expected.size() < 40 && matcher.can_continue()) {
            int32_t best = -1;
            for (int32_t id = 0; id < int32_t(logits.size()); ++id) {
                const std::string text = m.tokenizer->token_bytes(id, true);
                const bool ok = m.tokenizer->is_end_of_generation(id)
                                    ? matcher.complete()
                                    : !text.empty() && matcher.accepts(text);
                if (ok && (best < 0 || logits[size_t(id)] > logits[size_t(best)])) best = id;
            }
            ASSERT_GE(best, 0);
            expected.push_back(best);
            if (m.tokenizer->is_end_of_generation(best)) break;
            matcher.feed(m.tokenizer->token_bytes(best, true));
            logits = alone_session.eval(std::span<const int32_t>(&best, 1));
        }
    }
    CompletionParams constrained = greedy(40);
    constrained.ignore_eos = false;
    constrained.grammar = words;
    auto c = engine.submit({prompt(7, 2), constrained});
    EXPECT_EQ(tokens_of(*c), expected);
    const CompletionResult r = c->result();
    EXPECT_EQ(r.finish, FinishReason::stop);
    EXPECT_EQ(std::count(r.text.begin(), r.text.end(), ' '), 2) << r.text;
    EXPECT_EQ(r.text.back(), '.') << r.text;
}

// The running requests of these tests generate until their slot is full (thousands of tokens),
// so that they are still running, however slow the machine, when the test acts on them.
TEST(Engine, CancelledRequestsFreeTheirSlotAndTheQueueIsBounded) {
    TinyModel m(8192);
    Session session(*m.model, cpu_plugin());
    Engine engine(session, *m.tokenizer, {.slots = 1, .max_queue = 1});
    auto running = engine.submit({prompt(6, 5), greedy(-1)});
    ASSERT_TRUE(running->next().has_value()) << "running: it holds the slot";
    auto waiting = engine.submit({prompt(6, 6), greedy(4)});
    EXPECT_THROW(engine.submit({prompt(6, 7), greedy(4)}), EngineBusy);
    EXPECT_EQ(engine.metrics().requests_rejected, 1);
    running->cancel();
    while (running->next()) {
    }
    EXPECT_EQ(running->result().finish, FinishReason::cancelled);
    EXPECT_LT(running->result().completion_tokens, engine.slot_capacity() - 6);
    EXPECT_EQ(tokens_of(*waiting), alone(*m.model, prompt(6, 6), 4));
}

TEST(Engine, BadRequestsAreRefusedWithTheCounts) {
    TinyModel m(128);
    Session session(*m.model, cpu_plugin());
    Engine engine(session, *m.tokenizer, {.slots = 2});
    const auto error_of = [&](CompletionRequest r) {
        try {
            engine.submit(std::move(r));
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(error_of({{}, greedy(4)}), "the prompt has no tokens");
    EXPECT_NE(error_of({prompt(64, 1), greedy(4)})
                  .find("the prompt has 64 tokens; a slot holds at most 64"),
              std::string::npos);
    EXPECT_NE(error_of({prompt(10, 1), greedy(60)}).find("max_tokens 60 with a prompt of 10"),
              std::string::npos);
    EXPECT_NE(error_of({{1, 2, 999999}, greedy(4)}).find("token id 999999"), std::string::npos);
    CompletionParams hot = greedy(4);
    hot.sampling.temperature = -1;
    EXPECT_NE(error_of({prompt(4, 1), hot}).find("--temp"), std::string::npos);
    // Nothing refused took a slot.
    EXPECT_EQ(tokens_of(*engine.submit({prompt(4, 1), greedy(2)})).size(), 2u);
}

TEST(Engine, ShutdownEndsRunningAndQueuedRequests) {
    TinyModel m(8192);
    Session session(*m.model, cpu_plugin());
    auto engine = std::make_unique<Engine>(session, *m.tokenizer, EngineOptions{.slots = 1});
    auto running = engine->submit({prompt(6, 1), greedy(-1)});
    auto queued = engine->submit({prompt(6, 2), greedy(4)});
    ASSERT_TRUE(running->next().has_value());
    engine->shutdown();
    EXPECT_EQ(running->result().finish, FinishReason::cancelled);
    EXPECT_EQ(queued->result().finish, FinishReason::cancelled);
    EXPECT_THROW(engine->submit({prompt(6, 3), greedy(4)}), EngineBusy);
}

}  // namespace
}  // namespace sy::llm::test
