// The registry of architectures: general.architecture -> the class under llm/models/ that
// builds its graph. Adding an architecture is one file there and one line here.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/core/error.hpp"
#include "switchyard/llm/model.hpp"
#include "switchyard/llm/models/deepseek2.hpp"

namespace sy::llm {

namespace {

struct Architecture {
    const char* name;
    std::unique_ptr<Model> (*load)(gguf::Reader file, const ContextOptions& options);
};

template <class M>
std::unique_ptr<Model> load_as(gguf::Reader file, const ContextOptions& options) {
    return std::make_unique<M>(std::move(file), options);
}

constexpr Architecture kArchitectures[] = {
    {"deepseek2", &load_as<Deepseek2Model>},
};

std::string file_name(const gguf::Reader& file) {
    return file.files().empty() ? std::string("model") : file.files().front().string();
}

std::string architecture_of(const gguf::Reader& file) {
    const gguf::Value* v = file.find("general.architecture");
    if (v == nullptr)
        throw gguf::FormatError(file_name(file) +
                                ": metadata key 'general.architecture' is missing");
    if (v->type() != gguf::ValueType::STRING)
        throw gguf::FormatError(file_name(file) +
                                ": metadata key 'general.architecture' must be a string");
    return std::string(v->as_string());
}

}  // namespace

std::vector<std::string> architectures() {
    std::vector<std::string> out;
    for (const Architecture& a : kArchitectures) out.emplace_back(a.name);
    return out;
}

std::unique_ptr<Model> load_model(gguf::Reader file, const ContextOptions& options) {
    const std::string arch = architecture_of(file);
    for (const Architecture& a : kArchitectures)
        if (arch == a.name) return a.load(std::move(file), options);
    std::string known;
    for (const Architecture& a : kArchitectures)
        known += (known.empty() ? "" : ", ") + std::string(a.name);
    throw Error(file_name(file) + ": architecture '" + arch +
                "' is not supported (supported: " + known + ")");
}

int64_t trained_context(const gguf::Reader& file) {
    const std::string key = architecture_of(file) + ".context_length";
    const gguf::Value* v = file.find(key);
    if (v == nullptr)
        throw gguf::FormatError(file_name(file) + ": metadata key '" + key + "' is missing");
    if (!v->is_integer() || v->as_i64() <= 0)
        throw gguf::FormatError(file_name(file) + ": metadata key '" + key +
                                "' must be a positive integer");
    return v->as_i64();
}

void move_to(UbatchGraph& ug, std::span<const UbatchPart> parts, int64_t cells) {
    if (parts.size() != ug.parts.size())
        throw Error("move_to: " + std::to_string(parts.size()) + " parts for a graph built for " +
                    std::to_string(ug.parts.size()));
    std::vector<std::pair<int64_t, int64_t>> delta;  // seq -> n_past change
    for (size_t i = 0; i < parts.size(); ++i) {
        const UbatchPart &to = parts[i], &from = ug.parts[i];
        if (to.n_past < 0 || to.n_past + to.n_tokens > cells)
            throw Error("move_to: part " + std::to_string(i) + " (" + std::to_string(to.n_tokens) +
                        " tokens after " + std::to_string(to.n_past) + ") does not fit the " +
                        std::to_string(cells) + " cells of a sequence");
        for (size_t j = 0; j < i; ++j)
            if (parts[j].seq == to.seq)  // the moves are by sequence
                throw Error("move_to: sequence " + std::to_string(to.seq) + " is in two parts");
        if (to.seq != from.seq || to.n_tokens != from.n_tokens ||
            reusable_keys(to.n_past, to.n_tokens, cells) !=
                reusable_keys(from.n_past, from.n_tokens, cells))
            throw Error(
                "move_to: part " + std::to_string(i) + " (sequence " + std::to_string(to.seq) +
                ", " + std::to_string(to.n_tokens) + " tokens after " + std::to_string(to.n_past) +
                ") does not fit the graph built for sequence " + std::to_string(from.seq) + ", " +
                std::to_string(from.n_tokens) + " tokens after " + std::to_string(from.n_past));
        delta.emplace_back(to.seq, to.n_past - from.n_past);
    }
    const auto delta_of = [&](int64_t seq) {
        for (const auto& [s, d] : delta)
            if (s == seq) return d;
        throw Error("move_to: the graph moves sequence " + std::to_string(seq) +
                    ", which none of its parts is");
    };
    for (const StepMoves::View& v : ug.moves.views)
        if (const int64_t d = delta_of(v.seq); d != 0)
            ug.graph.move_view(v.view, d * v.bytes_per_token);
    for (const StepMoves::Param& p : ug.moves.params)
        if (const int64_t d = delta_of(p.seq); d != 0)
            ug.graph.shift_iparam(p.node, size_t(p.index), int32_t(d));
    ug.parts.assign(parts.begin(), parts.end());
}

}  // namespace sy::llm
