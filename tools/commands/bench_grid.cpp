#include "commands/bench_grid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "switchyard/core/config.hpp"
#include "switchyard/core/cost_table.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/policy.hpp"

namespace sy::tools {
namespace {

// "1,2" "3" -> {"1", "2", "3"}; `given` empty: {fallback}. An empty item is an error naming
// `flag` unless `empty_ok` ("" is a real choice: no config file, no -ot rules).
std::vector<std::string> split_list(const std::string& flag, const std::vector<std::string>& given,
                                    char sep, const std::string& fallback, bool empty_ok = false) {
    std::vector<std::string> out;
    for (const std::string& g : given) {
        size_t start = 0;
        while (true) {
            const size_t end = g.find(sep, start);
            out.push_back(g.substr(start, end == std::string::npos ? end : end - start));
            if (out.back().empty() && !empty_ok)
                throw Error(fmt::format("{} '{}': an empty item in the list", flag, g));
            if (end == std::string::npos) break;
            start = end + 1;
        }
    }
    if (out.empty()) out.push_back(fallback);
    return out;
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size())
        throw Error(fmt::format("{} '{}': not an integer", flag, text));
    if (v < lo || v > hi) throw Error(fmt::format("{} {}: must be in [{}, {}]", flag, v, lo, hi));
    return v;
}

// The most values one range item may expand to (a typo like 1-100000000 is an error, not a
// gigantic list).
constexpr int64_t kMaxRangeValues = 10000;

// One item of an integer list: a value, or a range as llama-bench writes them: `first-last`
// (step 1), `first-last+step`, `first-last*mult` (first > 0, mult > 1).
void append_item(std::vector<int64_t>& out, const std::string& flag, const std::string& item,
                 int64_t lo, int64_t hi) {
    const size_t dash = item.find('-', 1);
    if (dash == std::string::npos) {
        out.push_back(parse_int(flag, item, lo, hi));
        return;
    }
    const int64_t first = parse_int(flag, item.substr(0, dash), lo, hi);
    const std::string rest = item.substr(dash + 1);
    const size_t op = rest.find_first_of("+*");
    const int64_t last = parse_int(flag, rest.substr(0, op), lo, hi);
    const char kind = op == std::string::npos ? '+' : rest[op];
    const int64_t by =
        op == std::string::npos ? 1 : parse_int(flag, rest.substr(op + 1), 0, int64_t(1) << 40);
    if (by < 1) throw Error(fmt::format("{} '{}': the step must be at least 1", flag, item));
    if (last < first)
        throw Error(fmt::format("{} '{}': the range ends before it starts", flag, item));
    if (kind == '*' && (first <= 0 || by < 2))
        throw Error(fmt::format("{} '{}': a multiplied range needs first > 0 and a factor > 1",
                                flag, item));
    for (int64_t v = first, count = 0;; ++count) {
        if (count >= kMaxRangeValues)
            throw Error(fmt::format("{} '{}': more than {} values", flag, item, kMaxRangeValues));
        out.push_back(v);
        // The next value, unless it passes `last` (tested without overflowing).
        if (kind == '+' ? v > last - by : v > last / by) break;
        v = kind == '+' ? v + by : v * by;
    }
}

std::vector<int64_t> int_list(const std::string& flag, const std::vector<std::string>& given,
                              const std::string& fallback, int64_t lo, int64_t hi) {
    std::vector<int64_t> out;
    for (const std::string& s : split_list(flag, given, ',', fallback))
        append_item(out, flag, s, lo, hi);
    return out;
}

// -pg / -gp "P,N" pairs (one per occurrence).
std::vector<std::pair<int64_t, int64_t>> pairs(const std::string& flag,
                                               const std::vector<std::string>& given) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const std::string& g : given) {
        const size_t comma = g.find(',');
        if (comma == std::string::npos)
            throw Error(
                fmt::format("{} '{}': expected P,N (prompt and generated tokens)", flag, g));
        out.emplace_back(parse_int(flag, g.substr(0, comma), 1, 1 << 24),
                         parse_int(flag, g.substr(comma + 1), 1, 1 << 24));
    }
    return out;
}

}  // namespace

void BenchGrid::add_to(CLI::App& app, bool tests) {
    with_tests = tests;
    app.add_option("-m,--model", models, "GGUF model file(s), comma-separated")->required(tests);
    app.add_option("-t,--threads", threads, "Thread counts (default: the plugin's)");
    app.add_option("--ubatch-size", ubatches, "Tokens per graph (default 512)");
    app.add_option("--mla", mla, "Attention modes 0-3 (default 3)");
    app.add_option("--fused-moe", fused_moe,
                   "0/1 (default: the fused MoE op when the backend has it)");
    app.add_option("--run-time-repack", repack,
                   "0/1: the cpu plugin reads Q4_0, IQ4_NL, Q8_0, Q4_1, Q5_0, Q5_1 and Q6_0 "
                   "weights in place, or from "
                   "row-interleaved copies (default: its repack = auto, copies up to half of "
                   "the available memory)");
    app.add_option("--attention-max-batch", amb, "MiB per attention step (default 256)");
    app.add_option("--cache-type-k", cache_k, "K cache types (default f16)");
    app.add_option("--cache-type-v", cache_v, "V cache types (default f16)");
    app.add_option("--flash-attn", flash_attn, "on, off, auto (default auto)");
    app.add_option("--n-gpu-layers", ngl,
                   "Layers on the GPU: the last N, all from n_layer + 1 (default: not given)");
    app.add_option("--tensor-split", tensor_splits,
                   "Proportions of the device layers per device, '/'-separated as llama-bench "
                   "(3/1; \"\" none)");
    app.add_option("--n-cpu-moe", n_cpu_moe, "Routed experts of the first N layers on the cpu");
    app.add_option("--config", configs, "TOML configuration files (\"\" none)");
    app.add_option("--cost-table", cost_tables,
                   "Cost tables from switchyard calibrate (\"\" none: the plugins' hints)");
    app.add_option("--override-tensor", overrides,
                   "REGEX=BACKEND[,REGEX=BACKEND...]: placement rules for every combination, "
                   "as ik_llama.cpp's llama-bench (';' separates rules too; repeatable, the "
                   "rules add up; to compare placements, --config a.toml,b.toml)");
    app.add_option("--mmap", mmap, "0/1: map the file, or read it into memory (default 1)");
    app.add_option("--grouped-expert-routing", grouped_er,
                   "0/1: ignore or honour expert_group_count (default 1)");
    app.add_flag("--no-flash-attn", no_flash_attn, "-fa 0");
    app.add_flag("--no-fused-moe", no_fused_moe, "-fmoe 0");
    app.add_option("--plugin", base.plugins.plugins, "Load this plugin too (repeatable)");
    app.add_option("--backend", base.backend, "Backend plugin that runs the model (default cpu)");
    app.add_flag("--cpu-moe", base.cpu_moe, "All routed experts' weights on the cpu backend");
    app.add_option("--expert-parallel", base.expert_parallel,
                   "N: every MoE layer's routed experts in N parts, part r on MPI rank r "
                   "(docs/mpi.md)")
        ->check(CLI::Range(1, 1 << 16));
    app.add_flag("--expert-parallel-exact", base.expert_parallel_exact,
                 "Each rank returns its experts' weighted outputs, not their sum");
    app.add_flag("--fit", base.fit, "Fill the devices with the weights no rule places");
    app.add_option("--offload-policy", base.offload_policy,
                   "op=0|1,...: whether nodes reading host-resident weights may run on a device");
    app.add_option("--smart-expert-reduction", base.ser, "K,t: smart expert reduction");
    app.add_flag("--no-mmap", base.no_mmap, "Read the weights into memory (-mmp 0)");
    app.add_option("-b,--batch-size", batches,
                   tests ? "Prompt tokens per eval call (default 2048)"
                         : "Logical batch (default 2048): -ub is cut to it, as llama.cpp; each "
                           "row adds one ubatch");
    if (!tests) return;
    app.add_option("-p,--n-prompt", prompts,
                   "Prompt tokens of the ppN tests (0: none); every number list also takes ranges: "
                   "first-last, first-last+step, first-last*mult");
    app.add_option("-n,--n-gen", gens, "Generated tokens of the tgN tests (0: none)");
    app.add_option("-d,--n-depth", depths, "Tokens in the cache before each test (default 0)");
    app.add_option("--pg", pg, "P,N: a prompt of P then N generated tokens, timed together");
    app.add_option("--gp", gp, "P,N: N generated tokens after a P-token prompt (untimed)");
    app.add_option("-r,--repetitions", repetitions, "Timed repetitions of every test")
        ->check(CLI::Range(1, 1000));
}

std::vector<llm::BenchTest> BenchGrid::tests() const {
    const auto ps = int_list("-p", prompts, "512", 0, 1 << 24);
    const auto ns = int_list("-n", gens, "128", 0, 1 << 24);
    const auto ds = int_list("-d", depths, "0", 0, 1 << 24);
    const auto pgs = pairs("-pg", pg);
    const auto gps = pairs("-gp", gp);
    std::vector<llm::BenchTest> out;
    for (int64_t d : ds) {
        for (int64_t p : ps)
            if (p > 0) out.push_back({p, 0, d, false});
        for (int64_t n : ns)
            if (n > 0) out.push_back({0, n, d, false});
        for (const auto& [p, n] : pgs) out.push_back({p, n, d, false});
        for (const auto& [p, n] : gps) out.push_back({p, n, d, true});
    }
    return out;
}

std::vector<BenchInstance> BenchGrid::instances() const {
    const auto ts = int_list("-t", threads, "0", 0, 1024);
    const auto bs = int_list("-b", batches, "2048", 1, 1 << 20);
    const auto ubs = int_list("-ub", ubatches, "512", 1, 1 << 16);
    const auto mlas = int_list("-mla", mla, "3", 0, 3);
    if (no_fused_moe && !fused_moe.empty()) throw Error("-no-fmoe and -fmoe: give one of them");
    if (no_flash_attn && !flash_attn.empty()) throw Error("-no-fa and -fa: give one of them");
    const auto fmoes =
        int_list("-fmoe", no_fused_moe ? std::vector<std::string>{"0"} : fused_moe, "-1", -1, 1);
    if (base.no_mmap && !mmap.empty()) throw Error("--no-mmap and -mmp: give one of them");
    const auto mmaps = int_list("-mmp", mmap, base.no_mmap ? "0" : "1", 0, 1);
    const auto gers = int_list("-ger", grouped_er, "1", 0, 1);
    const auto rtrs = int_list("-rtr", repack, "-1", -1, 1);
    const auto ambs = int_list("-amb", amb, "256", 0, int64_t{1} << 30);
    const auto ngls = int_list("-ngl", ngl, "-1", -1, 1 << 20);
    const auto ncmoes = int_list("-ncmoe", n_cpu_moe, "0", 0, 1 << 20);
    const auto cks = split_list("-ctk", cache_k, ',', "f16");
    const auto cvs = split_list("-ctv", cache_v, ',', "f16");
    const auto fas = split_list("-fa", no_flash_attn ? std::vector<std::string>{"off"} : flash_attn,
                                ',', "auto");
    for (const std::string& fa : fas)
        if (fa != "on" && fa != "off" && fa != "auto" && fa != "1" && fa != "0")
            throw Error("-fa '" + fa + "': expected on, off or auto");
    const auto cfgs = split_list("--config", configs, ',', "", true);
    const auto costs = split_list("--cost-table", cost_tables, ',', "", true);
    // -ot: every value's rules, for every combination (';' read as ',').
    std::string ot_text;
    for (std::string v : overrides) {
        std::replace(v.begin(), v.end(), ';', ',');
        ot_text += (ot_text.empty() ? "" : ",") + v;
    }
    const auto tss = split_list("-ts", tensor_splits, ',', "", true);
    // llama-bench's "3/1" is --tensor-split's "3,1".
    const auto as_split = [](std::string v) {
        std::replace(v.begin(), v.end(), '/', ',');
        return v;
    };
    const auto files = split_list("-m", models, ',', "");
    size_t count = 1;
    for (size_t n :
         {files.size(), cfgs.size(), costs.size(), tss.size(), ngls.size(), ncmoes.size(),
          ts.size(), bs.size(), ubs.size(), cks.size(), cvs.size(), fas.size(), mlas.size(),
          ambs.size(), fmoes.size(), rtrs.size(), mmaps.size(), gers.size()}) {
        count *= n;
        if (count > kMaxInstances)
            throw Error(
                fmt::format("bench: the lists make more than {} combinations; run fewer at a time",
                            kMaxInstances));
    }

    // What can be checked without loading, each value once: a bad value in the tenth
    // combination fails now, not after nine have run.
    ModelOptions check = base;  // -ctk, -ctv, -ser
    for (const std::string& ck : cks) {
        check.cache_type_k = ck;
        check.context_options();
    }
    for (const std::string& cv : cvs) {
        check.cache_type_v = cv;
        check.context_options();
    }
    std::vector<std::string> ot_warnings;  // reported by each combination's loading
    if (!ot_text.empty()) parse_override_tensors(ot_text, 1, ot_warnings);
    for (const std::string& split : tss)
        if (!split.empty()) parse_tensor_split(as_split(split), "-ts '" + split + "'");
    for (const std::string& cfg : cfgs)
        if (!cfg.empty()) load_config(cfg);
    for (const std::string& table : costs)
        if (!table.empty()) CostTable::load(table);

    BenchInstance first;
    first.model = base;
    first.model.quiet = true;
    first.tests = tests();
    first.override_text = ot_text;
    if (!ot_text.empty()) first.model.override_tensor = {ot_text};
    std::vector<BenchInstance> grid{first};
    // Every value of a list for every instance so far: the first list expanded is the outermost.
    const auto expand = [&grid](const auto& values, const auto& set) {
        std::vector<BenchInstance> next;
        for (const BenchInstance& in : grid)
            for (const auto& v : values) {
                BenchInstance c = in;
                set(c, v);
                next.push_back(std::move(c));
            }
        grid = std::move(next);
    };
    using S = const std::string&;
    using I = int64_t;
    expand(files, [](BenchInstance& c, S v) { c.model.model = v; });
    expand(cfgs, [](BenchInstance& c, S v) { c.model.plugins.config_file = v; });
    expand(costs, [](BenchInstance& c, S v) { c.model.cost_table = v; });
    expand(tss, [&as_split](BenchInstance& c, S v) { c.model.tensor_split = as_split(v); });
    expand(ngls, [](BenchInstance& c, I v) { c.model.ngl = int(v); });
    expand(ncmoes, [](BenchInstance& c, I v) { c.model.n_cpu_moe = int(v); });
    expand(ts, [](BenchInstance& c, I v) { c.model.plugins.threads = int(v); });
    expand(bs, [](BenchInstance& c, I v) { c.n_batch = v; });
    expand(ubs, [this](BenchInstance& c, I v) {
        // As llama.cpp: a ubatch is part of a batch. A sweep evaluates one ubatch at a time.
        c.model.ubatch = std::min(v, c.n_batch);
        if (!with_tests) c.n_batch = c.model.ubatch;
    });
    expand(cks, [](BenchInstance& c, S v) { c.model.cache_type_k = v; });
    expand(cvs, [](BenchInstance& c, S v) { c.model.cache_type_v = v; });
    expand(fas, [](BenchInstance& c, S v) { c.model.flash_attn = v; });
    expand(mlas, [](BenchInstance& c, I v) { c.model.mla = int(v); });
    expand(ambs, [](BenchInstance& c, I v) { c.model.attn_max_mib = v; });
    expand(fmoes, [](BenchInstance& c, I v) { c.model.fused_moe = int(v); });
    expand(rtrs, [](BenchInstance& c, I v) { c.model.repack = int(v); });
    expand(mmaps, [](BenchInstance& c, I v) { c.model.no_mmap = v == 0; });
    expand(gers, [](BenchInstance& c, I v) { c.model.no_group_routing = v == 0; });
    return grid;
}

}  // namespace sy::tools
