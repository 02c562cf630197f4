// Cases of the matrix products: mul_mat (broadcast over dims 2-3, strided B), mul_mat_id
// (U1 == 1 and U1 == U) and the named op moe.fused_up_gate v1.
#include "case_table.hpp"
#include "switchyard/dtype.h"

namespace sy::conformance::detail {

namespace {

std::vector<Case> mul_mat_cases(const Types& t) {
    const int32_t a = t.src[0], b = t.src[1], d = t.dst;
    std::vector<Case> out;
    // A {K, N, A2, A3}, B {K, M, B2, B3} -> dst {N, M, B2, B3}
    auto add = [&](const std::string& variant, TensorSpec sa, TensorSpec sb, bool pad_dst = false) {
        TensorSpec sd = tensor(d, {sa.ne[1], sb.ne[1], sb.ne[2], sb.ne[3]});
        if (pad_dst) sd = padded(sd, 3, 1);
        out.push_back(make_case(SY_OP_MUL_MAT, variant, {data(sa), data(sb)}, sd));
    };
    auto plain = [&](int64_t K, int64_t N, int64_t M) {
        add("K " + std::to_string(K) + " N " + std::to_string(N) + " M " + std::to_string(M),
            tensor(a, {K, N}), tensor(b, {K, M}));
    };
    const int64_t bs = sy_dtype_info(a).block_size;
    if (bs > 1) {  // a block type: K a multiple of the block size, dim 0 of A innermost
        plain(bs, 16, 4);
        plain(2 * bs, 33, 5);
        plain(bs, 130, 1);
        plain(4 * bs, 32, 17);
        plain(4096, 16, 2);
        add("A {" + std::to_string(bs) + ", 16, 2, 1} B {" + std::to_string(bs) +
                ", 5, 6, 1} broadcast",
            tensor(a, {bs, 16, 2}), tensor(b, {bs, 5, 6}));
        add("A {" + std::to_string(2 * bs) + ", 20, 1, 1} padded A rows, transposed B",
            padded(tensor(a, {2 * bs, 20}), 1, 2), transposed(tensor(b, {2 * bs, 9})));
        add("A {" + std::to_string(bs) + ", 8, 4, 1} permuted A (dims 1, 2), padded dst",
            with_order(tensor(a, {bs, 8, 4}), 0, 2, 1, 3), tensor(b, {bs, 5, 4}), true);
        return out;
    }
    plain(32, 16, 4);
    plain(1, 7, 3);
    plain(7, 33, 5);
    plain(67, 130, 1);
    plain(130, 67, 9);
    plain(256, 32, 17);
    plain(4096, 16, 2);
    add("A {64, 16, 2, 1} B {64, 5, 6, 1} broadcast", tensor(a, {64, 16, 2}),
        tensor(b, {64, 5, 6}));
    add("A {33, 8, 2, 3} B {33, 3, 4, 3} broadcast", tensor(a, {33, 8, 2, 3}),
        tensor(b, {33, 3, 4, 3}));
    add("A {32, 8, 1, 1} B {32, 3, 4, 2} broadcast", tensor(a, {32, 8}), tensor(b, {32, 3, 4, 2}));
    add("A {67, 20, 1, 1} B {67, 9, 1, 1} transposed B", tensor(a, {67, 20}),
        transposed(tensor(b, {67, 9})));
    add("A {67, 20, 1, 1} B {67, 9, 1, 1} padded A rows", padded(tensor(a, {67, 20}), 5, 3),
        tensor(b, {67, 9}));
    add("A {64, 8, 4, 1} B {64, 5, 4, 1} permuted A (dims 1, 2)",
        with_order(tensor(a, {64, 8, 4}), 0, 2, 1, 3), tensor(b, {64, 5, 4}));
    add("A {48, 8, 2, 1} B {48, 5, 4, 1} permuted B, padded dst", tensor(a, {48, 8, 2}),
        with_order(tensor(b, {48, 5, 4}), 0, 2, 1, 3), true);
    return out;
}

struct ExpertShape {
    int64_t K, N, E, U, T, U1;
};

std::string describe(const ExpertShape& s) {
    return "K " + std::to_string(s.K) + " N " + std::to_string(s.N) + " E " + std::to_string(s.E) +
           " U " + std::to_string(s.U) + " T " + std::to_string(s.T) + " U1 " +
           std::to_string(s.U1);
}

// W {K, N, E} (one or two of them), X {K, U1, T}, ids {U, T} -> dst {N, U, T}.
std::vector<Case> expert_cases(int32_t op, const Types& t) {
    const bool fused = op == SY_OP_NAMED;
    const int32_t w = t.src[0];
    const int32_t x = fused ? t.src[2] : t.src[1];
    const int32_t id = fused ? t.src[3] : t.src[2];
    std::vector<Case> out;
    auto add = [&](const ExpertShape& s, const std::string& variant, int layout, int act) {
        TensorSpec sw = tensor(w, {s.K, s.N, s.E});
        TensorSpec sx = tensor(x, {s.K, s.U1, s.T});
        TensorSpec sid = tensor(id, {s.U, s.T});
        if (layout == 1) sw = padded(sw, 5, 3);
        if (layout == 2) sx = with_order(sx, 0, 2, 1, 3);
        if (layout == 3) {
            sx = transposed(sx);
            sid = padded(sid, 2, 1);
        }
        TensorSpec sg = sw;  // the gate weights of the fused op
        sg.type = t.src[1];
        if (layout == 1) sg = padded(sg, 1, 0);
        // layout 4: a third of the slots dropped (SY_ID_NONE), as after DROP_IDS
        const SourceSpec ids =
            source(sid, layout == 4 ? Fill::Dropped : Fill::Indices, 0, double(s.E));
        std::vector<SourceSpec> src;
        if (fused)
            src = {data(sw), data(sg), data(sx), ids};
        else
            src = {data(sw), data(sx), ids};
        TensorSpec sd = tensor(t.dst, {s.N, s.U, s.T});
        if (layout == 1) sd = padded(sd, 2, 1);
        Case c = make_case(op, describe(s) + variant, std::move(src), sd);
        c.iparams[0] = act;
        out.push_back(std::move(c));
    };
    const std::vector<int> acts = fused ? std::vector<int>{0, 1} : std::vector<int>{0};
    const int64_t bs = sy_dtype_info(w).block_size;
    for (int act : acts) {
        const std::string a = fused ? (act ? " gelu" : " silu") : "";
        if (bs > 1) {  // a block type: K a multiple of the block size
            add({bs, 16, 4, 2, 3, 2}, a, 0, act);
            add({2 * bs, 33, 8, 4, 5, 1}, a, 0, act);
            add({bs, 65, 16, 6, 1, 1}, a, 0, act);
            add({bs, 20, 6, 4, 3, 4}, a + " padded W, dst", 1, act);
            add({bs, 12, 5, 3, 4, 3}, a + " transposed X, padded ids", 3, act);
            add({bs, 16, 4, 3, 3, 3}, a + " dropped ids", 4, act);
            // About 24 slots per expert: backends that batch an expert's tokens (the cpu's
            // tile path from 4 to 16) take that path; N = 20 leaves a partial group of rows.
            add({bs, 20, 2, 6, 8, 1}, a + " many slots per expert", 0, act);
            // One expert, a slot per token: the shared experts and dense FFN as the model builds
            // them (a backend may take its dense products' paths: row dots for few tokens,
            // a GEMM for more).
            add({2 * bs, 20, 1, 1, 12, 1}, a + " one expert", 0, act);
            add({2 * bs, 64, 1, 1, 3, 1}, a + " one expert", 0, act);
            add({2 * bs, 20, 1, 1, 12, 1}, a + " one expert, dropped ids", 4, act);
            add({2 * bs, 20, 1, 1, 12, 1}, a + " one expert, padded W, dst", 1, act);
            add({2 * bs, 20, 1, 1, 12, 1}, a + " one expert, transposed X, padded ids", 3, act);
            continue;
        }
        add({32, 16, 4, 2, 3, 2}, a, 0, act);
        add({64, 33, 8, 4, 5, 1}, a, 0, act);
        add({67, 7, 3, 3, 7, 3}, a, 0, act);
        add({130, 65, 16, 6, 1, 1}, a, 0, act);
        add({7, 1, 2, 2, 4, 2}, a, 0, act);
        add({1, 9, 3, 2, 2, 1}, a, 0, act);
        add({48, 20, 6, 4, 3, 4}, a + " padded W, dst", 1, act);
        add({48, 20, 6, 4, 3, 4}, a + " permuted X", 2, act);
        add({33, 12, 5, 3, 4, 3}, a + " transposed X, padded ids", 3, act);
        add({40, 12, 5, 3, 4, 1}, a + " dropped ids", 4, act);
        add({40, 12, 5, 3, 4, 3}, a + " dropped ids, X per slot", 4, act);
        add({64, 20, 1, 1, 12, 1}, a + " one expert", 0, act);
        add({64, 20, 1, 1, 20, 1}, a + " one expert", 0, act);
        add({64, 64, 1, 1, 3, 1}, a + " one expert", 0, act);
        add({64, 20, 1, 1, 12, 1}, a + " one expert, dropped ids", 4, act);
        add({48, 20, 1, 1, 20, 1}, a + " one expert, padded W, dst", 1, act);
        add({48, 20, 1, 1, 12, 1}, a + " one expert, permuted X", 2, act);
        add({33, 12, 1, 1, 20, 1}, a + " one expert, transposed X, padded ids", 3, act);
    }
    return out;
}

}  // namespace

std::vector<Case> matmul_cases(int32_t op, const Types& t) {
    return op == SY_OP_MUL_MAT ? mul_mat_cases(t) : expert_cases(op, t);
}

}  // namespace sy::conformance::detail
