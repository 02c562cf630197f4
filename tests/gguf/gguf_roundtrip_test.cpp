// Writer → Reader round trips: every value type (nested arrays too), every tensor type's size,
// alignment, and a v2 file written by hand.
#include <unistd.h>

#include <cmath>

#include "gguf_test_util.hpp"
#include "switchyard/dtype.h"

namespace sy::gguf::test {
namespace {

std::vector<Value> every_scalar() {
    return {Value::u8(250),         Value::i8(-100),         Value::u16(65000),
            Value::i16(-32000),     Value::u32(4000000000u), Value::i32(-2000000000),
            Value::u64(UINT64_MAX), Value::i64(INT64_MIN),   Value::f32(1.5f),
            Value::f64(-2.25e300),  Value::boolean(true),    Value::string("héllo wörld")};
}

void expect_same(const Value& a, const Value& b) {
    ASSERT_EQ(a.type(), b.type());
    switch (a.type()) {
        case ValueType::U8:
        case ValueType::U16:
        case ValueType::U32:
        case ValueType::U64: EXPECT_EQ(a.as_u64(), b.as_u64()); break;
        case ValueType::I8:
        case ValueType::I16:
        case ValueType::I32:
        case ValueType::I64: EXPECT_EQ(a.as_i64(), b.as_i64()); break;
        case ValueType::F32:
        case ValueType::F64: EXPECT_EQ(a.as_f64(), b.as_f64()); break;
        case ValueType::BOOL: EXPECT_EQ(a.as_bool(), b.as_bool()); break;
        case ValueType::STRING: EXPECT_EQ(a.as_string(), b.as_string()); break;
        case ValueType::ARRAY: {
            const Array& x = a.as_array();
            const Array& y = b.as_array();
            ASSERT_EQ(x.element_type, y.element_type);
            ASSERT_EQ(x.size(), y.size());
            for (size_t i = 0; i < x.size(); ++i) expect_same(x[i], y[i]);
            break;
        }
    }
}

TEST(GgufRoundTrip, EveryValueTypeIncludingNestedArrays) {
    ScratchDir dir;
    std::vector<KeyValue> kvs;
    int n = 0;
    for (const Value& v : every_scalar()) kvs.push_back({"test.scalar" + std::to_string(n++), v});
    for (const Value& v : every_scalar()) {
        kvs.push_back({"test.array" + std::to_string(n++), Value::array(v.type(), {v, v, v})});
    }
    kvs.push_back({"test.empty", Value::array(ValueType::F32, {})});
    kvs.push_back(
        {"test.nested",
         Value::array(ValueType::ARRAY, {Value::array(ValueType::STRING, {Value::string("a")}),
                                         Value::array(ValueType::STRING, {})})});
    Value deep = Value::i16(-7);
    for (int d = 0; d < kMaxArrayDepth; ++d) deep = Value::array(deep.type(), {deep});
    kvs.push_back({"test.deepest_allowed", deep});

    {
        Writer w(dir / "v.gguf");
        for (const KeyValue& kv : kvs) w.add(kv.key, kv.value);
        w.finish();
    }
    const Reader r = Reader::open(dir / "v.gguf");
    EXPECT_EQ(r.version(), 3u);
    ASSERT_EQ(r.metadata().size(), kvs.size());
    for (size_t i = 0; i < kvs.size(); ++i) {
        SCOPED_TRACE(kvs[i].key);
        EXPECT_EQ(r.metadata()[i].key, kvs[i].key);
        expect_same(r.metadata()[i].value, kvs[i].value);
        ASSERT_NE(r.find(kvs[i].key), nullptr);
    }
    EXPECT_EQ(r.get_string("test.scalar11"), "héllo wörld");
    EXPECT_EQ(r.get_u64("test.scalar4"), 4000000000u);
    EXPECT_EQ(r.get_f64("test.scalar8"), 1.5);
    EXPECT_TRUE(r.tensors().empty());
}

// Metadata arrays cost about their size in the file: a u8 array of 4 Mi items holds 4 MiB (it
// took 48 bytes an item when every item was a Value), strings their characters.
TEST(GgufRoundTrip, ArraysAreStoredCompactly) {
    ScratchDir dir;
    const size_t n = size_t(1) << 22;
    {
        std::vector<Value> bytes, floats, strings;
        bytes.reserve(n);
        for (size_t i = 0; i < n; ++i) bytes.push_back(Value::u8(uint8_t(i * 7)));
        for (int i = 0; i < 1000; ++i) floats.push_back(Value::f32(0.5f * float(i)));
        for (int i = 0; i < 1000; ++i) strings.push_back(Value::string("token" + std::to_string(i)));
        Writer w(dir / "a.gguf");
        w.add("test.bytes", Value::array(ValueType::U8, std::move(bytes)));
        w.add("test.floats", Value::array(ValueType::F32, std::move(floats)));
        w.add("test.strings", Value::array(ValueType::STRING, std::move(strings)));
        w.finish();
    }
    const Reader r = Reader::open(dir / "a.gguf");
    const Array& bytes = r.find("test.bytes")->as_array();
    ASSERT_EQ(bytes.size(), n);
    EXPECT_LE(bytes.memory_bytes(), n + 64);
    EXPECT_EQ(bytes[12345].as_u64(), uint8_t(12345 * 7));
    const Array& floats = r.find("test.floats")->as_array();
    EXPECT_LE(floats.memory_bytes(), 4000u + 64);
    EXPECT_EQ(floats[999].as_f64(), 499.5);
    const Array& strings = r.find("test.strings")->as_array();
    EXPECT_EQ(strings.string_at(42), "token42");
    EXPECT_EQ(strings[7].as_string(), "token7");
    size_t seen = 0;
    for (const Value v : strings) seen += v.as_string().starts_with("token");
    EXPECT_EQ(seen, 1000u);
    EXPECT_THROW(strings[1000], FormatError);
    EXPECT_THROW(bytes.string_at(0), FormatError);
}

TEST(GgufRoundTrip, TypedGettersNameFileAndKey) {
    ScratchDir dir;
    Writer w(dir / "g.gguf");
    w.add("general.name", Value::string("x"));
    w.finish();
    const Reader r = Reader::open(dir / "g.gguf");
    const std::string file = (dir / "g.gguf").string();
    try {
        r.get_u64("general.name");
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_EQ(std::string(e.what()),
                  file + ": metadata key \"general.name\": expected an integer, found string");
    }
    try {
        r.get_string("nope");
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_EQ(std::string(e.what()), file + ": missing metadata key \"nope\"");
    }
}

// Every type the ABI knows, with its size from block and type size.
TEST(GgufRoundTrip, EveryTensorTypeSizeAndData) {
    for (uint64_t alignment : {uint64_t{32}, uint64_t{64}, uint64_t{1}, uint64_t{4096}}) {
        SCOPED_TRACE(alignment);
        ScratchDir dir;
        struct Expect {
            std::string name;
            int32_t type;
            std::vector<int64_t> ne;
            uint64_t nbytes;
        };
        std::vector<Expect> expect;
        for (int32_t type = 0; type < 256; ++type) {
            const sy_dtype_traits info = sy_dtype_info(type);
            if (!info.name) continue;
            std::vector<int64_t> ne = {info.block_size * 3, 2, 1, 5};
            expect.push_back({std::string("t.") + info.name, type, ne,
                              uint64_t(3 * 2 * 5) * uint64_t(info.type_size) +
                                  uint64_t(2 * 5) * uint64_t(info.row_meta_size)});
        }
        ASSERT_GE(expect.size(), 20u);
        const auto fill = [](const Expect& e) {
            std::vector<uint8_t> bytes(e.nbytes);
            for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 31 + e.type);
            return bytes;
        };
        {
            Writer w(dir / "t.gguf", alignment);
            w.add("general.architecture", Value::string("test"));
            for (const Expect& e : expect) w.declare_tensor(e.name, e.type, e.ne);
            w.write_header();
            for (const Expect& e : expect) w.write_tensor(fill(e));
            w.finish();
        }
        const Reader r = Reader::open(dir / "t.gguf");
        EXPECT_EQ(r.alignment(), alignment);
        EXPECT_EQ(r.file_size(), std::filesystem::file_size(dir / "t.gguf"));
        ASSERT_EQ(r.tensors().size(), expect.size());
        const uint8_t* data_start = r.tensors()[0].data - r.tensors()[0].offset;
        for (size_t i = 0; i < expect.size(); ++i) {
            const TensorInfo& t = r.tensors()[i];
            SCOPED_TRACE(t.name);
            EXPECT_EQ(t.name, expect[i].name);
            EXPECT_EQ(t.type, expect[i].type);
            EXPECT_EQ(t.n_dims, 4u);
            for (int d = 0; d < 4; ++d) EXPECT_EQ(t.ne[d], expect[i].ne[d]);
            EXPECT_EQ(t.nbytes, expect[i].nbytes);
            EXPECT_EQ(t.offset % alignment, 0u);
            EXPECT_EQ(uint64_t(t.data - data_start), t.offset);
            const std::vector<uint8_t> want = fill(expect[i]);
            EXPECT_EQ(std::memcmp(t.data, want.data(), want.size()), 0);
            EXPECT_EQ(r.tensor(t.name), &t);
        }
        EXPECT_EQ(r.tensor("absent"), nullptr);
        // Tensor data starts aligned in the file itself.
        const std::vector<uint8_t> file = read_bytes(dir / "t.gguf");
        const Reader in_memory = Reader::open_memory(file, "t.gguf");
        for (const TensorInfo& t : in_memory.tensors()) {
            EXPECT_EQ(uint64_t(t.data - file.data()) % alignment, 0u) << t.name;
        }
        if (alignment != 32) {
            EXPECT_EQ(r.get_u64("general.alignment"), alignment);
        }
    }
}

TEST(GgufRoundTrip, HandWrittenVersion2FileReads) {
    ScratchDir dir;
    ByteBuilder b;
    b.put<uint32_t>(0x46554747).put<uint32_t>(2).put<uint64_t>(1).put<uint64_t>(1);
    b.str("general.architecture").put<uint32_t>(8).str("llama");
    b.str("w").put<uint32_t>(1).put<uint64_t>(4).put<uint32_t>(0).put<uint64_t>(0);
    b.pad(32);
    for (float f : {1.0f, 2.0f, 3.0f, 4.0f}) b.put<float>(f);
    write_bytes(dir / "v2.gguf", b.bytes);

    const Reader r = Reader::open(dir / "v2.gguf");
    EXPECT_EQ(r.version(), 2u);
    EXPECT_EQ(r.get_string("general.architecture"), "llama");
    ASSERT_EQ(r.tensors().size(), 1u);
    const TensorInfo& t = r.tensors()[0];
    EXPECT_EQ(t.nbytes, 16u);
    float values[4];
    std::memcpy(values, t.data, sizeof values);
    EXPECT_EQ(values[3], 4.0f);
}

TEST(GgufRoundTrip, OpenMemorySharesTheParser) {
    ScratchDir dir;
    {
        Writer w(dir / "m.gguf");
        w.add("k", Value::u8(1));
        const int64_t ne[] = {32};
        w.declare_tensor("q", SY_TYPE_Q8_0, ne);
        w.write_header();
        w.write_tensor(std::vector<uint8_t>(34, 7));
        w.finish();
    }
    const std::vector<uint8_t> bytes = read_bytes(dir / "m.gguf");
    const Reader r = Reader::open_memory(bytes, "memory");
    ASSERT_EQ(r.tensors().size(), 1u);
    EXPECT_EQ(r.tensors()[0].data, bytes.data() + 96);  // 71 bytes of header, aligned
    EXPECT_EQ(r.files().at(0), "memory");
    std::vector<uint8_t> bad = bytes;
    bad[0] = 'X';
    try {
        Reader::open_memory(bad, "memory");
        FAIL();
    } catch (const FormatError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "memory: not a GGUF file: magic is 58 47 55 46 (\"XGUF\"), expected 47 47 55 "
                  "46 (\"GGUF\")");
    }
}

}  // namespace
}  // namespace sy::gguf::test
