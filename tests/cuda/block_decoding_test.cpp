// The CUDA plugin's block decoders (plugins/cuda/quant/blocks.cuh) on the host, with the
// intrinsics they use emulated (host_cuda/cuda_fp16.h), so they are checked on machines without a
// GPU: every value of every decodable type equals switchyard_quants' dequantization bit for bit,
// and each sub-block's int8 dot product (dot_sub) matches the dequantized values. The same
// decoders feed the row dots, the dequantization to F16 for cuBLAS and get_rows on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "capabilities.hpp"
#include "quant/blocks.cuh"
#include "switchyard/dtype.h"
#include "switchyard/ops.h"
#include "switchyard/quants.hpp"
#include "switchyard/sdk.hpp"

namespace {

using namespace sy::cuda;

std::string type_name(int32_t type) {
    const char* n = sy_dtype_info(type).name;
    return n ? n : "type " + std::to_string(type);
}

bool same_value(float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

// Compares `blocks` blocks at `data` value by value with dequantize_row; with `dots`, also each
// sub-block's dot_sub against random int8 activations with the dequantized values in double.
// The blocks are first copied to an address 2 mod 4, where a row may start (load_words' shifted
// case). Returns the number of mismatches (reporting the first few).
template <int Type>
int compare(const uint8_t* data, int64_t blocks, bool dots, std::mt19937& rng) {
    using T = BlockTraits<Type>;
    if (blocks <= 0) return 0;
    // One row: a row-scaled type's scale, then the blocks.
    const int64_t bytes = RowScale<Type>::kBytes + blocks * T::kBytes, values = blocks * T::kValues;
    std::vector<uint8_t> storage(size_t(bytes) + 8);
    uint8_t* at = storage.data() + (4 - reinterpret_cast<uintptr_t>(storage.data()) % 4) % 4 + 2;
    std::memcpy(at, data, size_t(bytes));
    std::vector<float> ref(static_cast<size_t>(values));
    sy::quants::dequantize_row(Type, at, ref.data(), values);
    int bad = 0;
    for (int64_t s = 0; s < values / 32; ++s) {
        const float* r = ref.data() + s * 32;
        Sub32 sub;
        decode_row_sub<Type>(at, s, sub);
        for (int e = 0; e < 32; ++e) {
            const float v = sub_value<Type>(sub, e);
            if (!same_value(v, r[e])) {
                ADD_FAILURE() << "value " << s * 32 + e << ": decoded " << v << ", reference "
                              << r[e];
                if (++bad > 4) return bad;
            }
        }
        if (!dots) continue;
        ActSub x{};
        int sums[2] = {0, 0};
        double want = 0, magnitude = 0;
        for (int e = 0; e < 32; ++e) {
            const int q = int(rng() % 255) - 127;
            x.q[e / 4] = int(uint32_t(x.q[e / 4]) | uint32_t(uint8_t(q)) << (8 * (e % 4)));
            sums[e / 16] += q;
            want += double(r[e]) * q;
            magnitude += std::fabs(double(r[e]) * q);
        }
        x.meta = ActMeta{1.0f, {sums[0], sums[1]}, 0};
        const double got = dot_sub<Type>(sub, x);
        if (std::fabs(got - want) > 1e-6 * magnitude) {
            ADD_FAILURE() << "dot of sub-block " << s << ": " << got << ", reference " << want;
            if (++bad > 4) return bad;
        }
    }
    return bad;
}

template <int Type>
void check_type() {
    using T = BlockTraits<Type>;
    ASSERT_EQ(T::kValues, sy_dtype_info(Type).block_size);
    ASSERT_EQ(T::kBytes, sy_dtype_info(Type).type_size);
    std::mt19937 rng{uint32_t(Type)};
    // Random bytes: every field value, scales included (subnormal, huge, inf and nan among them).
    // A row-scaled type's rows each carry their own scale: many short rows.
    constexpr bool kRowScaled = RowScale<Type>::kBytes > 0;
    constexpr int64_t kRandomBlocks = 2048, kQuantizedBlocks = 256;
    constexpr int64_t kRowBlocks = kRowScaled ? 4 : kRandomBlocks;
    const int64_t row_bytes = RowScale<Type>::kBytes + kRowBlocks * T::kBytes;
    std::vector<uint8_t> random(static_cast<size_t>(row_bytes));
    for (int64_t r = 0; r < kRandomBlocks / kRowBlocks; ++r) {
        for (uint8_t& b : random) b = uint8_t(rng());
        EXPECT_EQ(compare<Type>(random.data(), kRowBlocks, false, rng), 0) << "random row " << r;
    }

    // Gaussian rows quantized as a model's weights are.
    if (!sy::quants::can_quantize(Type)) return;
    std::vector<float> x(size_t(kQuantizedBlocks * T::kValues));
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    for (float& v : x) v = gauss(rng);
    const int64_t rows = kRowScaled ? 16 : 1, n = int64_t(x.size()) / rows;
    std::vector<uint8_t> quantized(size_t(sy::quants::row_size(Type, n)));
    for (int64_t r = 0; r < rows; ++r) {
        sy::quants::quantize_row(Type, x.data() + r * n, quantized.data(), n);
        EXPECT_EQ(compare<Type>(quantized.data(), n / T::kValues, true, rng), 0)
            << "quantized row " << r;
    }
}

TEST(CudaBlockDecoding, EveryTypeDecodesAsSwitchyardQuantsDequantizes) {
    int decodable = 0;
    std::vector<int32_t> types;
    for (int32_t type = 0; type < 256; ++type) types.push_back(type);  // every GGUF id, and more
    types.push_back(SY_TYPE_IQ1_M_R4_ROWS);  // internal: what IQ1_M_R4 is read into
    for (int32_t type : types) {
        SCOPED_TRACE(type_name(type));
        decodable += with_block_type(type, [](auto tag) { check_type<decltype(tag)::value>(); });
    }
    EXPECT_GE(decodable, 36);
}

// The plugin claims these types in its capability table; compute() fails on one without a
// decoder.
TEST(CudaBlockDecoding, EveryBlockTypeTheCapabilityTableClaimsHasADecoder) {
    const sy::validation::CapabilityTable table = capability_table();
    int block_rows = 0;
    for (size_t i = 0; i < table.count; ++i) {
        const sy_capability& row = table.rows[i];
        const int32_t w = row.src_type[0];
        const bool converts = row.op == SY_OP_GET_ROWS && row.dst_type != w;
        if (sy_dtype_info(w).block_size <= 1) continue;
        if (row.op != SY_OP_MUL_MAT && row.op != SY_OP_MUL_MAT_ID && !converts) continue;
        ++block_rows;
        EXPECT_TRUE(with_block_type(w, [](auto) {}))
            << sy::sdk::op_name(row.op) << " claims " << type_name(w) << " without a decoder";
    }
    EXPECT_GT(block_rows, 0);
}

}  // namespace
