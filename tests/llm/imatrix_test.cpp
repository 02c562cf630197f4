// Importance matrices (llm/imatrix.hpp): collection from a tiny deepseek2 model on the CPU plugin
// checked against sums computed here from the file, per-expert counts, the 3-D weight rules; both
// file formats written, read back and pinned byte by byte; malformed files refused with the file
// and entry named; and quantizing with an importance matrix.
#include "switchyard/llm/imatrix.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>

#include "llm_test_util.hpp"
#include "switchyard/core/error.hpp"
#include "switchyard/core/plugin_host.hpp"
#include "switchyard/dtype.h"
#include "switchyard/llm/models/deepseek2.hpp"
#include "switchyard/llm/session.hpp"
#include "switchyard/llm/gguf.hpp"
#include "switchyard/llm/requantize.hpp"
#include "switchyard/llm/synthetic_model.hpp"
#include "switchyard/quants.hpp"

namespace sy::llm::test {
namespace {

Plugin& cpu_plugin() {
    static std::unique_ptr<Plugin> plugin = Plugin::load(SWITCHYARD_CPU_PLUGIN);
    return *plugin;
}
Plugin& plain_plugin() {  // no named ops: the decomposed MoE (mul_mat_id)
    static std::unique_ptr<Plugin> plugin = Plugin::load(SWITCHYARD_PLAIN_PLUGIN);
    return *plugin;
}

std::filesystem::path tiny_model(const ScratchDir& dir, KvLayout layout = KvLayout::kv_b) {
    const auto path = dir / "tiny.gguf";
    write_synthetic_model(path, plan_deepseek2(deepseek2_preset("tiny"), SY_TYPE_F32, layout), 5,
                          1);
    return path;
}

std::vector<int32_t> text_tokens(size_t n, int64_t vocab) {
    std::vector<int32_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = int32_t((i * 53 + 7) % size_t(vocab));
    return t;
}

// Runs `chunks` chunks of `ctx` tokens through the model with a collector attached.
Imatrix collect(const std::filesystem::path& path, Plugin& plugin, int mla, int chunks,
                int64_t ctx, std::vector<int32_t>* seen = nullptr) {
    ContextOptions o;
    o.mla = mla;
    o.n_ctx = ctx;
    o.n_ubatch = ctx;
    Deepseek2Model model(gguf::Reader::open(path), o);
    Session session(model, plugin);
    ImatrixCollector collector;
    session.set_node_observer(&collector.observer());
    const std::vector<int32_t> tokens = text_tokens(size_t(chunks * ctx), model.hparams().n_vocab);
    for (int c = 0; c < chunks; ++c) {
        session.reset();
        session.eval(std::span<const int32_t>(tokens.data() + c * ctx, size_t(ctx)));
    }
    if (seen) *seen = tokens;
    return collector.result({"text.txt"}, uint32_t(chunks), uint32_t(ctx));
}

std::vector<double> dequantized_row(const gguf::Reader& f, const std::string& name, int64_t r) {
    const gguf::TensorInfo* t = f.tensor(name);
    const int64_t n = t->ne[0];
    std::vector<float> row(static_cast<size_t>(n));
    const uint64_t row_bytes = t->nbytes / uint64_t(t->ne[1] * t->ne[2] * t->ne[3]);
    quants::dequantize_row(t->type, t->data + uint64_t(r) * row_bytes, row.data(), n);
    return {row.begin(), row.end()};
}

TEST(ImatrixCollect, AttentionInputMatchesTheNormedEmbeddings) {
    ScratchDir dir;
    const auto path = tiny_model(dir);
    std::vector<int32_t> tokens;
    const Imatrix m = collect(path, cpu_plugin(), 0, 2, 32, &tokens);

    // Layer 0's attn_q_a and attn_kv_a_mqa read rmsnorm(token_embd[t]) * attn_norm.
    const gguf::Reader f = gguf::Reader::open(path);
    const double eps = f.get_f64("deepseek2.attention.layer_norm_rms_epsilon");
    const std::vector<double> gain = dequantized_row(f, "blk.0.attn_norm.weight", 0);
    std::vector<double> want(gain.size(), 0.0);
    for (int32_t tok : tokens) {
        const std::vector<double> x = dequantized_row(f, "token_embd.weight", tok);
        double ss = 0;
        for (double v : x) ss += v * v;
        const double scale = 1.0 / std::sqrt(ss / double(x.size()) + eps);
        for (size_t j = 0; j < x.size(); ++j) want[j] += std::pow(x[j] * scale * gain[j], 2);
    }
    for (const char* w : {"blk.0.attn_q_a.weight", "blk.0.attn_kv_a_mqa.weight"}) {
        SCOPED_TRACE(w);
        const ImatrixEntry& e = m.entries.at(w);
        ASSERT_EQ(e.counts, std::vector<float>{float(tokens.size())});
        ASSERT_EQ(e.sums.size(), want.size());
        for (size_t j = 0; j < want.size(); ++j)
            EXPECT_NEAR(e.sums[j], want[j], 1e-3 * want[j] + 1e-6) << "column " << j;
    }
    EXPECT_EQ(m.chunk_count, 2u);
    EXPECT_EQ(m.chunk_size, 32u);
    // Standard attention multiplies attn_kv_b; output.weight and token_embd are not collected.
    EXPECT_TRUE(m.entries.count("blk.0.attn_kv_b.weight"));
    EXPECT_FALSE(m.entries.count("output.weight"));
    EXPECT_FALSE(m.entries.count("token_embd.weight"));
}

TEST(ImatrixCollect, ExpertsCountOnlyTheirTokens) {
    ScratchDir dir;
    const auto path = tiny_model(dir);
    const gguf::Reader f = gguf::Reader::open(path);
    const auto n_expert = int64_t(f.get_u64("deepseek2.expert_count"));
    const auto n_used = int64_t(f.get_u64("deepseek2.expert_used_count"));
    // The fused MoE op (cpu) and mul_mat_id (plain) give the same matrix.
    const Imatrix fused = collect(path, cpu_plugin(), 0, 2, 32);
    const Imatrix plain = collect(path, plain_plugin(), 0, 2, 32);
    for (const char* w : {"blk.1.ffn_up_exps.weight", "blk.1.ffn_gate_exps.weight",
                          "blk.1.ffn_down_exps.weight", "blk.2.ffn_up_exps.weight"}) {
        SCOPED_TRACE(w);
        const ImatrixEntry& e = fused.entries.at(w);
        ASSERT_EQ(int64_t(e.counts.size()), n_expert);
        EXPECT_EQ(std::accumulate(e.counts.begin(), e.counts.end(), 0.0), 64.0 * double(n_used));
        const size_t n_in = e.sums.size() / e.counts.size();
        for (size_t x = 0; x < e.counts.size(); ++x) {
            const double block = std::accumulate(e.sums.begin() + long(x * n_in),
                                                 e.sums.begin() + long((x + 1) * n_in), 0.0);
            EXPECT_EQ(block > 0, e.counts[x] > 0) << "expert " << x;
        }
        const ImatrixEntry& p = plain.entries.at(w);
        EXPECT_EQ(p.counts, e.counts);
        for (size_t j = 0; j < e.sums.size(); ++j)
            EXPECT_NEAR(p.sums[j], e.sums[j], 1e-3 * e.sums[j] + 1e-5);
    }
    EXPECT_EQ(fused.entries.size(), plain.entries.size());
}

TEST(ImatrixCollect, LatentAttentionFoldsTheHeadsOfTwoDimensionalKb) {
    ScratchDir dir;
    const auto path = tiny_model(dir, KvLayout::split);  // ik_llama.cpp's 2-D attn_k_b / v_b
    const gguf::Reader f = gguf::Reader::open(path);
    const int64_t heads = int64_t(f.get_u64("deepseek2.attention.head_count"));
    const Imatrix m = collect(path, cpu_plugin(), 2, 1, 32);
    const ImatrixEntry& k_b = m.entries.at("blk.0.attn_k_b.weight");
    EXPECT_EQ(int64_t(k_b.sums.size()), f.tensor("blk.0.attn_k_b.weight")->ne[0]);
    EXPECT_EQ(k_b.counts, std::vector<float>{float(32 * heads)});
    EXPECT_EQ(int64_t(m.entries.at("blk.0.attn_v_b.weight").sums.size()),
              f.tensor("blk.0.attn_v_b.weight")->ne[0]);
    EXPECT_FALSE(m.entries.count("blk.0.attn_kv_b.weight"));  // not multiplied in this mode
}

TEST(ImatrixCollect, ThreeDimensionalWeightsKeepOneBlockPerMatrix) {
    // llama.cpp's attn_k_b {4, 3, 2}: activations {4, T = 5, 2 heads}; head h feeds matrix h.
    std::vector<float> x(4 * 5 * 2);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3.0f;
    ImatrixCollector c;
    ImatrixCollector::Product p;
    p.weight = "blk.0.attn_k_b.weight";
    const int64_t wne[] = {4, 3, 2, 1}, xne[] = {4, 5, 2, 1}, xnb[] = {4, 16, 80, 160};
    std::copy(wne, wne + 4, p.weight_ne);
    std::copy(xne, xne + 4, p.x_ne);
    std::copy(xnb, xnb + 4, p.x_nb);
    p.x = reinterpret_cast<const std::byte*>(x.data());
    c.add(p);
    const ImatrixEntry e = c.result({}, 1, 5).entries.at(p.weight);
    ASSERT_EQ(e.counts, std::vector<float>{5});
    ASSERT_EQ(e.sums.size(), 8u);
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j) {
            double want = 0;
            for (int t = 0; t < 5; ++t) want += std::pow(x[size_t(h * 20 + t * 4 + j)], 2);
            EXPECT_EQ(e.sums[size_t(h * 4 + j)], float(want));
        }
    // Another width for the same weight is an error naming it.
    p.x_ne[0] = 3;
    p.weight_ne[0] = 3;
    try {
        c.add(p);
        FAIL() << "no error";
    } catch (const Error& err) {
        EXPECT_NE(std::string(err.what()).find("attn_k_b"), std::string::npos) << err.what();
    }
}

Imatrix small_imatrix() {
    Imatrix m;
    m.datasets = {"calib.txt"};
    m.chunk_count = 3;
    m.chunk_size = 2;
    m.entries["blk.0.ffn_up_exps.weight"] = {{1, 2, 3, 4, 5, 6}, {3, 0}};  // 2 experts of 3
    m.entries["blk.0.attn_q_a.weight"] = {{0.5f, 8, 2}, {4}};
    return m;
}

TEST(ImatrixFile, GgufRoundTripsExactly) {
    ScratchDir dir;
    const Imatrix m = collect(tiny_model(dir), cpu_plugin(), 0, 2, 32);
    write_imatrix(dir / "m.gguf", m, ImatrixFormat::gguf);
    const Imatrix back = read_imatrix(dir / "m.gguf");
    EXPECT_EQ(back.datasets, m.datasets);
    EXPECT_EQ(back.chunk_count, m.chunk_count);
    EXPECT_EQ(back.chunk_size, m.chunk_size);
    ASSERT_EQ(back.entries.size(), m.entries.size());
    for (const auto& [name, e] : m.entries) {
        EXPECT_EQ(back.entries.at(name).sums, e.sums) << name;
        EXPECT_EQ(back.entries.at(name).counts, e.counts) << name;
    }
    // llama.cpp's layout: general.type, {n, c} sums and {1, c} counts.
    const gguf::Reader f = gguf::Reader::open(dir / "m.gguf");
    EXPECT_EQ(f.get_string("general.type"), "imatrix");
    EXPECT_EQ(f.get_u64("imatrix.chunk_size"), 32u);
    const gguf::TensorInfo* sums = f.tensor("blk.1.ffn_down_exps.weight.in_sum2");
    const gguf::TensorInfo* counts = f.tensor("blk.1.ffn_down_exps.weight.counts");
    ASSERT_TRUE(sums && counts);
    EXPECT_EQ(sums->ne[1], 8);  // experts
    EXPECT_EQ(counts->ne[0], 1);
    EXPECT_EQ(counts->ne[1], 8);
}

TEST(ImatrixFile, LegacyLayoutAndRoundTrip) {
    ScratchDir dir;
    const Imatrix m = small_imatrix();
    write_imatrix(dir / "m.dat", m, ImatrixFormat::dat);
    // Entries in name order; values = mean * ncall, ncall = ceil(busiest count / chunk size).
    const std::vector<char> b = file_bytes(dir / "m.dat");
    size_t at = 0;
    const auto i32 = [&] {
        int32_t v;
        std::memcpy(&v, b.data() + at, 4);
        at += 4;
        return v;
    };
    const auto f32 = [&] {
        float v;
        std::memcpy(&v, b.data() + at, 4);
        at += 4;
        return v;
    };
    const auto str = [&](int32_t n) {
        std::string s(b.data() + at, size_t(n));
        at += size_t(n);
        return s;
    };
    EXPECT_EQ(i32(), 2);
    EXPECT_EQ(str(i32()), "blk.0.attn_q_a.weight");
    EXPECT_EQ(i32(), 2);  // ceil(4 / 2)
    EXPECT_EQ(i32(), 3);
    EXPECT_FLOAT_EQ(f32(), 0.5f / 4 * 2);
    EXPECT_FLOAT_EQ(f32(), 8.0f / 4 * 2);
    EXPECT_FLOAT_EQ(f32(), 2.0f / 4 * 2);
    EXPECT_EQ(str(i32()), "blk.0.ffn_up_exps.weight");
    EXPECT_EQ(i32(), 2);  // ceil(3 / 2)
    EXPECT_EQ(i32(), 6);
    for (float s : {1.0f, 2.0f, 3.0f}) EXPECT_FLOAT_EQ(f32(), s / 3 * 2);
    for (int k = 0; k < 3; ++k) EXPECT_FLOAT_EQ(f32(), 2.0f);  // the unused expert: mean 1
    EXPECT_EQ(i32(), 3);                                          // chunk count
    EXPECT_EQ(str(i32()), "calib.txt");
    EXPECT_EQ(at, b.size());

    // Read back, the importance (means) is the same.
    const Imatrix back = read_imatrix(dir / "m.dat", 2);
    EXPECT_EQ(back.datasets, m.datasets);
    EXPECT_EQ(back.chunk_count, 3u);
    for (const auto& [name, e] : m.entries) {
        const int64_t n_mat = int64_t(e.counts.size()), n = int64_t(e.sums.size()) / n_mat;
        const std::vector<float> want = *m.importance(name, n, n_mat);
        const std::vector<float> got = *back.importance(name, n, n_mat);
        ASSERT_EQ(got.size(), want.size());
        for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-6 * want[j]);
    }
    // And written again, the same bytes.
    write_imatrix(dir / "again.dat", back, ImatrixFormat::dat);
    EXPECT_EQ(file_bytes(dir / "again.dat"), b);
}

TEST(ImatrixFile, ImportanceIsTheMeanPerMatrixAndChecksTheSize) {
    Imatrix m = small_imatrix();
    m.source = "m.gguf";
    const std::vector<float> imp = *m.importance("blk.0.ffn_up_exps.weight", 3, 2);
    EXPECT_EQ(imp, (std::vector<float>{1.0f / 3, 2.0f / 3, 1, 1, 1, 1}));
    EXPECT_FALSE(m.importance("blk.9.ffn_up_exps.weight", 3, 2));
    try {
        m.importance("blk.0.attn_q_a.weight", 256, 1);
        FAIL() << "no error";
    } catch (const Error& e) {
        const std::string s = e.what();
        EXPECT_NE(s.find("m.gguf"), std::string::npos) << s;
        EXPECT_NE(s.find("blk.0.attn_q_a.weight"), std::string::npos) << s;
    }
}

void expect_refused(const std::filesystem::path& p, const std::string& part) {
    try {
        read_imatrix(p);
        ADD_FAILURE() << p << ": no error, expected one with '" << part << "'";
    } catch (const Error& e) {
        const std::string s = e.what();
        EXPECT_NE(s.find(p.filename().string()), std::string::npos) << s;
        EXPECT_NE(s.find(part), std::string::npos) << s;
    }
}

void write_bytes(const std::filesystem::path& p, const std::vector<char>& b) {
    std::ofstream(p, std::ios::binary).write(b.data(), std::streamsize(b.size()));
}

TEST(ImatrixFile, MalformedLegacyFilesAreRefused) {
    ScratchDir dir;
    write_imatrix(dir / "good.dat", small_imatrix(), ImatrixFormat::dat);
    const std::vector<char> good = file_bytes(dir / "good.dat");
    // Cut inside the entries: every length up to the first entry's end is refused.
    for (size_t n : {size_t(0), size_t(2), size_t(6), size_t(30), size_t(45), good.size() - 40}) {
        SCOPED_TRACE(n);
        write_bytes(dir / "cut.dat", std::vector<char>(good.begin(), good.begin() + long(n)));
        expect_refused(dir / "cut.dat", n < 4 ? "truncated" : "");
    }
    const auto patched = [&](size_t at, int32_t v) {
        std::vector<char> b = good;
        std::memcpy(b.data() + at, &v, 4);
        write_bytes(dir / "bad.dat", b);
        return dir / "bad.dat";
    };
    // Offsets: count 0, name length 4, name 8..28, ncall 29, nval 33.
    expect_refused(patched(0, 0), "no entries");
    expect_refused(patched(0, 1 << 30), "cannot fit");
    expect_refused(patched(4, -5), "name length");
    expect_refused(patched(29, 0), "ncall 0");
    expect_refused(patched(33, 1 << 29), "do not fit");
    expect_refused(patched(37, -1082130432), "negative");  // -1.0f as bits
}

TEST(ImatrixFile, MalformedGgufFilesAreRefused) {
    ScratchDir dir;
    const auto write = [&](const std::string& file, const std::vector<float>& sums,
                           const std::vector<float>& counts, bool with_counts = true,
                           int32_t type = SY_TYPE_F32) {
        gguf::Writer w(dir / file);
        w.add("general.type", gguf::Value::string("imatrix"));
        const int64_t c = int64_t(counts.size());
        const int64_t sne[] = {int64_t(sums.size()) / std::max<int64_t>(c, 1), c};
        const int64_t cne[] = {1, c};
        w.declare_tensor("blk.0.attn_q_a.weight.in_sum2", type, sne);
        if (with_counts) w.declare_tensor("blk.0.attn_q_a.weight.counts", SY_TYPE_F32, cne);
        w.write_header();
        std::vector<uint8_t> bytes(sums.size() * (type == SY_TYPE_F32 ? 4 : 2));
        std::memcpy(bytes.data(), sums.data(), bytes.size());
        w.write_tensor(bytes);
        if (with_counts)
            w.write_tensor(std::span<const uint8_t>(
                reinterpret_cast<const uint8_t*>(counts.data()), counts.size() * 4));
        w.finish();
        return dir / file;
    };
    EXPECT_NO_THROW(read_imatrix(write("ok.gguf", {1, 2, 3, 4}, {2})));
    expect_refused(write("zero.gguf", {1, 2, 3, 4}, {0}), "every count is zero");
    expect_refused(write("nocounts.gguf", {1, 2, 3, 4}, {2}, false), "counts tensor missing");
    expect_refused(write("nan.gguf", {1, NAN, 3, 4}, {2}), "not finite");
    expect_refused(write("f16.gguf", {1, 2, 3, 4}, {2}, true, SY_TYPE_F16), "not f32");
    // A model is not an importance matrix.
    const auto model = tiny_model(dir);
    expect_refused(model, "not an importance matrix");
    // Truncated GGUF: the container's own checks.
    const std::vector<char> ok = file_bytes(dir / "ok.gguf");
    write_bytes(dir / "cut.gguf", std::vector<char>(ok.begin(), ok.begin() + long(ok.size() - 40)));
    expect_refused(dir / "cut.gguf", "");
}

TEST(ImatrixQuantize, ImportanceChangesTheQuantizedBytes) {
    if (!quants::can_quantize(SY_TYPE_IQ3_XXS)) GTEST_SKIP() << "iq3_xxs not quantizable yet";
    ScratchDir dir;
    const auto path = tiny_model(dir);
    const Imatrix m = collect(path, cpu_plugin(), 0, 2, 32);
    RequantizeOptions o;
    o.target = SY_TYPE_IQ3_XXS;
    o.threads = 1;
    requantize(path, dir / "plain.gguf", o);
    o.imatrix = &m;
    const RequantizeResult r = requantize(path, dir / "weighted.gguf", o);
    EXPECT_GT(r.with_importance, 10u);
    const gguf::Reader a = gguf::Reader::open(dir / "plain.gguf");
    const gguf::Reader b = gguf::Reader::open(dir / "weighted.gguf");
    for (const char* name : {"blk.0.attn_q_a.weight", "blk.1.ffn_up_exps.weight"}) {
        const gguf::TensorInfo* ta = a.tensor(name);
        const gguf::TensorInfo* tb = b.tensor(name);
        ASSERT_EQ(ta->type, SY_TYPE_IQ3_XXS) << name;
        ASSERT_EQ(ta->nbytes, tb->nbytes);
        EXPECT_NE(std::memcmp(ta->data, tb->data, ta->nbytes), 0) << name;
    }
    EXPECT_EQ(b.get_string("quantize.imatrix.dataset"), "text.txt");
    EXPECT_EQ(b.get_u64("quantize.imatrix.entries_count"), m.entries.size());
}

TEST(ImatrixQuantize, VeryLowBitTypesNeedAnEntryForEveryTensor) {
    if (!quants::can_quantize(SY_TYPE_IQ2_XXS)) GTEST_SKIP() << "iq2_xxs not quantizable yet";
    ScratchDir dir;
    const auto path = tiny_model(dir);
    RequantizeOptions o;
    o.target = SY_TYPE_IQ2_XXS;
    const auto message = [&] {
        try {
            requantize(path, dir / "out.gguf", o);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    std::string s = message();
    EXPECT_NE(s.find("missing importance matrix for tensor"), std::string::npos) << s;
    EXPECT_NE(s.find("--imatrix"), std::string::npos) << s;
    EXPECT_FALSE(std::filesystem::exists(dir / "out.gguf"));
    // An imatrix without that tensor's entry: refused naming the tensor and the file.
    Imatrix m = collect(path, cpu_plugin(), 0, 2, 32);
    m.source = "calib.imatrix";
    m.entries.erase("blk.0.attn_q_a.weight");
    o.imatrix = &m;
    s = message();
    EXPECT_NE(s.find("blk.0.attn_q_a.weight"), std::string::npos) << s;
    EXPECT_NE(s.find("calib.imatrix"), std::string::npos) << s;
}

TEST(ImatrixQuantize, MissingEntryIsAWarningForOtherTypes) {
    ScratchDir dir;
    const auto path = tiny_model(dir);
    Imatrix m = collect(path, cpu_plugin(), 0, 2, 32);
    m.entries.erase("blk.0.attn_q_b.weight");
    RequantizeOptions o;
    o.target = SY_TYPE_Q4_K;
    o.imatrix = &m;
    const RequantizeResult r = requantize(path, dir / "out.gguf", o);
    // token_embd, output (never collected) and the one erased.
    EXPECT_NE(std::find(r.warnings.begin(), r.warnings.end(), "blk.0.attn_q_b.weight"),
              r.warnings.end());
    EXPECT_EQ(r.warnings.size(), 3u);
}

}  // namespace
}  // namespace sy::llm::test
