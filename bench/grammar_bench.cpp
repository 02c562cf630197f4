// What constrained output costs per generated token: the vocabulary walk of a grammar matcher
// (GrammarMatcher::allowed_tokens) and the check of one drawn token (accepts), over a real
// vocabulary, at grammar positions from narrow (one literal may come) to wide (a JSON string's
// content, where nearly every token fits).
//
//   switchyard-grammar-bench VOCAB.gguf [--reps N]
//
// VOCAB.gguf: any GGUF with a tokenizer (tests/data/vocab/ggml-vocab-deepseek-llm.gguf has
// DeepSeek's 102400 tokens). Printed per position: the allowed tokens and the median time of a
// walk and of a single-token check; and the time to build the vocabulary's trie.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "switchyard/llm/grammar.hpp"
#include "switchyard/llm/grammar_sampler.hpp"
#include "switchyard/llm/json_schema.hpp"
#include "switchyard/llm/tokenizer.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median_ms(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s VOCAB.gguf [--reps N]\n", argv[0]);
        return 2;
    }
    int reps = 20;
    for (int i = 2; i + 1 < argc; ++i)
        if (std::string(argv[i]) == "--reps") reps = std::max(1, std::atoi(argv[i + 1]));
    try {
        const auto file = sy::gguf::Reader::open(argv[1]);
        const sy::llm::Tokenizer tok = sy::llm::Tokenizer::from_gguf(file);
        const auto t0 = Clock::now();
        const sy::llm::TokenTrie trie = sy::llm::vocabulary_trie(tok);
        const double build_ms =
            std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        std::printf("vocabulary: %d tokens; trie built in %.1f ms\n\n", tok.n_vocab(), build_ms);

        const auto schema = nlohmann::ordered_json::parse(R"({
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                           "unit": {"enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "days"]})");
        const auto json = sy::llm::Grammar::parse(sy::llm::json_schema_to_gbnf(schema));
        const auto any = sy::llm::Grammar::parse(sy::llm::json_schema_to_gbnf(true));
        struct Position {
            const char* what;
            std::shared_ptr<const sy::llm::Grammar> grammar;
            std::string text;  // read before the position
        };
        const std::vector<Position> positions = {
            {"schema object, at the start (only '{')", json, ""},
            {"schema object, a key's first character", json, "{\""},
            {"schema object, inside a string value", json, "{\"city\": \"Par"},
            {"schema object, an integer's digits", json, "{\"city\": \"Paris\", \"days\": 1"},
            {"any JSON value, at the start", any, ""},
            {"any JSON value, inside a string", any, "[\"abc"},
        };
        std::printf("| position | allowed tokens | walk, median ms | one-token check, median us |\n");
        std::printf("|---|--:|--:|--:|\n");
        std::vector<uint8_t> allowed;
        for (const Position& p : positions) {
            sy::llm::GrammarMatcher m(p.grammar);
            if (!m.feed(p.text)) throw std::runtime_error(std::string("cannot read ") + p.text);
            std::vector<double> walk, check;
            for (int r = 0; r < reps; ++r) {
                const auto a = Clock::now();
                m.allowed_tokens(trie, allowed);
                walk.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
            }
            const int32_t probe = tok.find("ing") >= 0 ? tok.find("ing") : 100;
            const std::string probe_text = tok.token_bytes(probe, true);
            for (int r = 0; r < reps * 50; ++r) {
                const auto a = Clock::now();
                volatile bool ok = m.accepts(probe_text);
                (void)ok;
                check.push_back(
                    std::chrono::duration<double, std::micro>(Clock::now() - a).count());
            }
            const size_t n = size_t(std::count(allowed.begin(), allowed.end(), uint8_t(1)));
            std::printf("| %s | %zu | %.3f | %.2f |\n", p.what, n, median_ms(walk),
                        median_ms(check));
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "switchyard-grammar-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
