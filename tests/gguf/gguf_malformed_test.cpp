// One test per malformed-file check: a valid file from the Writer with a few bytes corrupted,
// and the exact message the reader must give.
#include <utility>

#include "gguf_test_util.hpp"
#include "switchyard/dtype.h"

namespace sy::gguf::test {
namespace {

// base.gguf: 4 metadata pairs and 2 tensors:
//   general.name = "tiny", test.arr = u32[1,2,3], test.b1 = true, test.b2 = [[1,2],[3]] (u8)
//   w.a f32 {8,2} (64 bytes at 0), w.b q8_0 {32} (34 bytes at 64)
class GgufMalformed : public ::testing::Test {
  protected:
    void SetUp() override { bytes = read_bytes(write_base(32)); }

    std::filesystem::path write_base(uint64_t alignment) {
        const std::filesystem::path p = dir / "base.gguf";
        Writer w(p, alignment);
        w.add("general.name", Value::string("tiny"));
        w.add("test.arr",
              Value::array(ValueType::U32, {Value::u32(1), Value::u32(2), Value::u32(3)}));
        w.add("test.b1", Value::boolean(true));
        w.add("test.b2", Value::array(ValueType::ARRAY,
                                      {Value::array(ValueType::U8, {Value::u8(1), Value::u8(2)}),
                                       Value::array(ValueType::U8, {Value::u8(3)})}));
        const int64_t a[] = {8, 2}, b[] = {32};
        w.declare_tensor("w.a", SY_TYPE_F32, a);
        w.declare_tensor("w.b", SY_TYPE_Q8_0, b);
        w.write_header();
        w.write_tensor(std::vector<uint8_t>(64, 1));
        w.write_tensor(std::vector<uint8_t>(34, 2));
        w.finish();
        return p;
    }

    // Writes the (corrupted) bytes and returns the message without the "<file>: " prefix.
    std::string error() {
        const std::filesystem::path p = dir / "bad.gguf";
        write_bytes(p, bytes);
        const std::string message = open_error(p);
        const std::string prefix = p.string() + ": ";
        if (message.rfind(prefix, 0) != 0) return "(no file prefix) " + message;
        return message.substr(prefix.size());
    }

    size_t after(const std::string& s) { return after_string(bytes, s); }
    std::string left_after(size_t offset) { return std::to_string(bytes.size() - offset); }

    ScratchDir dir;
    std::vector<uint8_t> bytes;
};

TEST_F(GgufMalformed, BaseFileIsValid) {
    EXPECT_EQ(error(), "(no file prefix) ");
    EXPECT_EQ(bytes.size(), 416u);
}

TEST_F(GgufMalformed, TruncatedHeader) {
    bytes.resize(20);
    EXPECT_EQ(error(), "truncated at offset 16: kv_count needs 8 bytes, 4 left");
}

TEST_F(GgufMalformed, TruncatedEmptyFile) {
    bytes.clear();
    EXPECT_EQ(error(), "truncated at offset 0: magic needs 4 bytes, 0 left");
}

TEST_F(GgufMalformed, TruncatedInTensorInfo) {
    const size_t at = after("w.b");
    bytes.resize(at + 2);
    EXPECT_EQ(error(), "truncated at offset " + std::to_string(at) +
                           ": n_dims of tensor \"w.b\" needs 4 bytes, 2 left");
}

TEST_F(GgufMalformed, TruncatedBeforeTensorInfosFailsTheCountCheck) {
    bytes.resize(after("test.arr") + 22);
    EXPECT_EQ(error(),
              "tensor_count 2 cannot fit in the 74 bytes after the header with 4 "
              "metadata pairs (a tensor info needs at least 32)");
}

TEST_F(GgufMalformed, TruncatedInString) {
    const size_t at = after("general.name") + 12;  // the value's bytes
    patch<uint64_t>(bytes, 8, 0);                  // no tensors and one pair: the count checks pass
    patch<uint64_t>(bytes, 16, 1);
    bytes.resize(at + 2);
    EXPECT_EQ(error(), "string length 4 at offset " + std::to_string(at - 8) +
                           " (string value of metadata \"general.name\") exceeds the 2 bytes "
                           "left in the file");
}

TEST_F(GgufMalformed, TruncatedTensorData) {
    bytes.resize(bytes.size() - 100);
    EXPECT_EQ(error(),
              "tensor \"w.a\": data at offset 0 (64 bytes) runs past the end of the file "
              "(the data section at 288 holds 28 bytes)");
}

TEST_F(GgufMalformed, WrongMagic) {
    bytes[3] = 'G';
    EXPECT_EQ(error(),
              "not a GGUF file: magic is 47 47 55 47 (\"GGUG\"), expected 47 47 55 46 (\"GGUF\")");
}

TEST_F(GgufMalformed, Version1Refused) {
    patch<uint32_t>(bytes, 4, 1);
    EXPECT_EQ(error(),
              "GGUF version 1 is not supported (only versions 2 and 3 are); convert the "
              "file with a current llama.cpp");
}

TEST_F(GgufMalformed, UnknownVersion) {
    patch<uint32_t>(bytes, 4, 7);
    EXPECT_EQ(error(), "unknown GGUF version 7 (supported: 2, 3)");
}

TEST_F(GgufMalformed, BigEndianRefused) {
    patch<uint32_t>(bytes, 4, 0x03000000);
    EXPECT_EQ(error(), "big-endian GGUF (version bytes 00 00 00 03 (\"....\")) is not supported");
}

TEST_F(GgufMalformed, KvCountBeyondFile) {
    patch<uint64_t>(bytes, 16, 1000000);
    EXPECT_EQ(error(),
              "kv_count 1000000 cannot fit in the 392 bytes after the header (a pair "
              "needs at least 13)");
}

TEST_F(GgufMalformed, TensorCountBeyondFile) {
    patch<uint64_t>(bytes, 8, uint64_t{1} << 62);
    EXPECT_EQ(error(),
              "tensor_count 4611686018427387904 cannot fit in the 392 bytes after the "
              "header with 4 metadata pairs (a tensor info needs at least 32)");
}

TEST_F(GgufMalformed, KeyLengthBeyondFile) {
    patch<uint64_t>(bytes, 24, 1000000);
    EXPECT_EQ(error(),
              "string length 1000000 at offset 24 (key of metadata pair 0) exceeds the "
              "384 bytes left in the file");
}

TEST_F(GgufMalformed, StringLengthBeyondFile) {
    const size_t at = after("general.name") + 4;
    patch<uint64_t>(bytes, at, UINT64_MAX);
    EXPECT_EQ(error(), "string length 18446744073709551615 at offset " + std::to_string(at) +
                           " (string value of metadata \"general.name\") exceeds the " +
                           left_after(at + 8) + " bytes left in the file");
}

TEST_F(GgufMalformed, ArrayLengthBeyondFile) {
    const size_t at = after("test.arr") + 8;
    patch<uint64_t>(bytes, at, 1000);
    EXPECT_EQ(error(), "array length 1000 at offset " + std::to_string(at) +
                           " (metadata \"test.arr\") exceeds the file: each u32 item needs at "
                           "least 4 bytes, " +
                           left_after(at + 8) + " bytes left");
}

TEST_F(GgufMalformed, NestedArrayLengthBeyondFile) {
    const size_t at = after("test.b2") + 4 + 4 + 8 + 4;  // first inner array's length
    patch<uint64_t>(bytes, at, 500);
    EXPECT_EQ(error(), "array length 500 at offset " + std::to_string(at) +
                           " (metadata \"test.b2\") exceeds the file: each u8 item needs at "
                           "least 1 bytes, " +
                           left_after(at + 8) + " bytes left");
}

TEST_F(GgufMalformed, ArrayLengthOverLimit) {
    const size_t at = after("test.arr") + 8;
    patch<uint64_t>(bytes, at, uint64_t{1} << 40);
    EXPECT_EQ(error(), "array length 1099511627776 at offset " + std::to_string(at) +
                           " (metadata \"test.arr\") exceeds the limit of 67108864 items");
}

TEST_F(GgufMalformed, ArraysNestedTooDeep) {
    Value deep = Value::u8(1);
    for (int d = 0; d <= kMaxArrayDepth; ++d) deep = Value::array(deep.type(), {deep});
    {
        Writer w(dir / "base.gguf");
        w.add("test.deep", deep);
        w.finish();
    }
    bytes = read_bytes(dir / "base.gguf");
    // The ninth array's element type follows eight (type, length) headers.
    const size_t at = after("test.deep") + 4 + 8 * 12;
    EXPECT_EQ(error(), "arrays nested more than 8 deep in metadata \"test.deep\" at offset " +
                           std::to_string(at));
}

TEST_F(GgufMalformed, UnknownValueType) {
    const size_t at = after("general.name");
    patch<uint32_t>(bytes, at, 13);
    EXPECT_EQ(error(),
              "unknown value type 13 in metadata \"general.name\" at offset " + std::to_string(at));
}

TEST_F(GgufMalformed, UnknownArrayElementType) {
    const size_t at = after("test.arr") + 4;
    patch<uint32_t>(bytes, at, 99);
    EXPECT_EQ(error(), "unknown array element type 99 in metadata \"test.arr\" at offset " +
                           std::to_string(at));
}

TEST_F(GgufMalformed, InvalidBool) {
    const size_t at = after("test.b1") + 4;
    bytes[at] = 2;
    EXPECT_EQ(error(), "invalid bool 2 in metadata \"test.b1\" at offset " + std::to_string(at));
}

TEST_F(GgufMalformed, NDimsZero) {
    patch<uint32_t>(bytes, after("w.a"), 0);
    EXPECT_EQ(error(), "tensor \"w.a\": n_dims 0 is out of range (1..4)");
}

TEST_F(GgufMalformed, NDimsAboveFour) {
    patch<uint32_t>(bytes, after("w.a"), 5);
    EXPECT_EQ(error(), "tensor \"w.a\": n_dims 5 is out of range (1..4)");
}

TEST_F(GgufMalformed, DimensionZero) {
    patch<uint64_t>(bytes, after("w.a") + 12, 0);
    EXPECT_EQ(error(), "tensor \"w.a\": dimension 1 is 0 (must be positive)");
}

TEST_F(GgufMalformed, DimensionNegative) {
    patch<uint64_t>(bytes, after("w.a") + 12, UINT64_MAX);
    EXPECT_EQ(error(),
              "tensor \"w.a\": dimension 1 is 18446744073709551615 (does not fit in int64)");
}

TEST_F(GgufMalformed, ElementCountOverflow) {
    patch<uint64_t>(bytes, after("w.a") + 4, uint64_t{1} << 40);
    patch<uint64_t>(bytes, after("w.a") + 12, uint64_t{1} << 40);
    EXPECT_EQ(error(), "tensor \"w.a\": element count overflows int64");
}

// A type this build does not know: the tensor, the id and the types it does read.
TEST_F(GgufMalformed, UnknownTensorType) {
    for (uint32_t id : {98u, 0x80000000u}) {
        patch<uint32_t>(bytes, after("w.a") + 20, id);
        const std::string e = error();
        EXPECT_EQ(e.rfind("tensor \"w.a\": unknown type id " + std::to_string(id) +
                              "; this build reads f32 (0), f16 (1), ",
                          0),
                  0u)
            << e;
        EXPECT_NE(e.find("q8_0 (8)"), std::string::npos) << e;
        EXPECT_NE(e.find("bf16 (30)"), std::string::npos) << e;
    }
}

// A type of ik_llama.cpp's that this build does not read is refused by its name.
TEST_F(GgufMalformed, IkLlamaTypeNotReadYetIsNamed) {
    for (const auto& [id, name] : {std::pair{398u, "q8_kv_r8"}, std::pair{399u, "q8_k_r8"}}) {
        patch<uint32_t>(bytes, after("w.a") + 20, id);
        const std::string e = error();
        EXPECT_EQ(e.rfind("tensor \"w.a\": type id " + std::to_string(id) + " is ik_llama.cpp's " +
                              name + ", which this build does not read yet; this build reads ",
                          0),
                  0u)
            << e;
        EXPECT_NE(e.find("iq4_k (139)"), std::string::npos) << e;
        EXPECT_NE(e.find("iq4_ks (144)"), std::string::npos) << e;
        EXPECT_NE(e.find("iq4_k_r4 (339)"), std::string::npos) << e;
    }
}

// A row-interleaved type stores rows in groups: a tensor whose rows do not fill them is refused.
TEST_F(GgufMalformed, InterleavedRowsNotAWholeGroup) {
    patch<uint32_t>(bytes, after("w.a") + 20, 230);  // bf16_r16: groups of 16 rows; w.a has 2
    EXPECT_EQ(error(), "tensor \"w.a\": bf16_r16 stores rows in groups of 16, but ne[1] = 2");
}

TEST_F(GgufMalformed, RetiredTensorTypeId) {
    patch<uint32_t>(bytes, after("w.a") + 20, 4);  // Q4_2, removed from ggml
    const std::string e = error();
    EXPECT_EQ(e.rfind("tensor \"w.a\": unknown type id 4; this build reads ", 0), 0u) << e;
    EXPECT_EQ(e.find("(4)"), std::string::npos) << e;
}

TEST_F(GgufMalformed, Ne0NotBlockMultiple) {
    patch<uint64_t>(bytes, after("w.b") + 4, 48);
    EXPECT_EQ(error(), "tensor \"w.b\": ne[0] = 48 is not a multiple of the q8_0 block size 32");
}

TEST_F(GgufMalformed, TensorDataOutOfBounds) {
    patch<uint64_t>(bytes, after("w.b") + 16, 1024);
    EXPECT_EQ(error(),
              "tensor \"w.b\": data at offset 1024 (34 bytes) runs past the end of the "
              "file (the data section at 288 holds 128 bytes)");
}

TEST_F(GgufMalformed, TensorOffsetHugeDoesNotWrap) {
    patch<uint64_t>(bytes, after("w.b") + 16, UINT64_MAX - 31);
    EXPECT_EQ(error(),
              "tensor \"w.b\": data at offset 18446744073709551584 (34 bytes) runs past "
              "the end of the file (the data section at 288 holds 128 bytes)");
}

TEST_F(GgufMalformed, TensorOffsetMisaligned) {
    patch<uint64_t>(bytes, after("w.b") + 16, 65);
    EXPECT_EQ(error(), "tensor \"w.b\": offset 65 is not a multiple of the alignment 32");
}

TEST_F(GgufMalformed, OverlappingTensors) {
    patch<uint64_t>(bytes, after("w.b") + 16, 32);
    EXPECT_EQ(error(), "tensors \"w.a\" and \"w.b\" overlap: [0, 64) and [32, 66)");
}

TEST_F(GgufMalformed, DuplicateTensorName) {
    const size_t at = find_string(bytes, "w.b");
    bytes[at + 8 + 2] = 'a';
    EXPECT_EQ(error(), "duplicate tensor name \"w.a\" at offset " + std::to_string(at));
}

TEST_F(GgufMalformed, DuplicateMetadataKey) {
    const size_t at = find_string(bytes, "test.b2");
    bytes[at + 8 + 6] = '1';
    EXPECT_EQ(error(), "duplicate metadata key \"test.b1\" at offset " + std::to_string(at));
}

TEST_F(GgufMalformed, InvalidUtf8InKey) {
    const size_t at = find_string(bytes, "test.arr") + 8;
    bytes[at + 4] = 0xC0;  // a lead byte followed by ASCII
    EXPECT_EQ(error(), "invalid UTF-8 in key of metadata pair 1 at offset " + std::to_string(at));
}

TEST_F(GgufMalformed, InvalidUtf8InStringValue) {
    const size_t at = after("general.name") + 12;
    bytes[at] = 0xFF;
    EXPECT_EQ(error(), "invalid UTF-8 in string value of metadata \"general.name\" at offset " +
                           std::to_string(at));
}

TEST_F(GgufMalformed, InvalidUtf8InTensorName) {
    const size_t at = find_string(bytes, "w.a") + 8;
    bytes[at + 1] = 0xED;  // U+D800.. surrogate lead: never valid UTF-8 with what follows
    EXPECT_EQ(error(), "invalid UTF-8 in name of tensor info 0 at offset " + std::to_string(at));
}

TEST_F(GgufMalformed, AlignmentNotPowerOfTwo) {
    bytes = read_bytes(write_base(64));
    patch<uint32_t>(bytes, after("general.alignment") + 4, 48);
    EXPECT_EQ(error(),
              "general.alignment must be a non-zero power of two (at most 2^30), found 48");
}

TEST_F(GgufMalformed, AlignmentZero) {
    bytes = read_bytes(write_base(64));
    patch<uint32_t>(bytes, after("general.alignment") + 4, 0);
    EXPECT_EQ(error(), "general.alignment must be a non-zero power of two (at most 2^30), found 0");
}

TEST_F(GgufMalformed, AlignmentNotAnInteger) {
    bytes = read_bytes(write_base(64));
    patch<uint32_t>(bytes, after("general.alignment"), 6);  // f32
    EXPECT_EQ(error(), "general.alignment must be an unsigned integer, found f32");
}

}  // namespace
}  // namespace sy::gguf::test
