// The Writer never leaves a partial file at its destination, and checks what it is given.
#include "gguf_test_util.hpp"
#include "switchyard/dtype.h"

namespace sy::gguf::test {
namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const sy::Error& e) {
        return e.what();
    }
    return "";
}

TEST(GgufWriter, AbandonedWriteLeavesNoFile) {
    ScratchDir dir;
    {
        Writer w(dir / "m.gguf");
        const int64_t ne[] = {8};
        w.declare_tensor("a", SY_TYPE_F32, ne);
        w.write_header();
        EXPECT_TRUE(std::filesystem::exists(dir / "m.gguf.tmp"));
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "m.gguf"));
    EXPECT_FALSE(std::filesystem::exists(dir / "m.gguf.tmp"));
}

TEST(GgufWriter, FailedWriteKeepsTheOldFile) {
    ScratchDir dir;
    write_bytes(dir / "m.gguf", {1, 2, 3});
    {
        Writer w(dir / "m.gguf");
        const int64_t ne[] = {8};
        w.declare_tensor("a", SY_TYPE_F32, ne);
        w.write_header();
        EXPECT_EQ(
            error_of([&] { w.write_tensor(std::vector<uint8_t>(31)); }),
            (dir / "m.gguf").string() + ": tensor \"a\": got 31 bytes, its type and shape need 32");
    }
    EXPECT_EQ(read_bytes(dir / "m.gguf"), (std::vector<uint8_t>{1, 2, 3}));
    EXPECT_FALSE(std::filesystem::exists(dir / "m.gguf.tmp"));
}

TEST(GgufWriter, FinishRequiresEveryTensor) {
    ScratchDir dir;
    Writer w(dir / "m.gguf");
    const int64_t ne[] = {8};
    w.declare_tensor("a", SY_TYPE_F32, ne);
    w.declare_tensor("b", SY_TYPE_F32, ne);
    w.write_header();
    w.write_tensor(std::vector<uint8_t>(32));
    EXPECT_EQ(
        error_of([&] { w.finish(); }),
        (dir / "m.gguf").string() + ": finish() with 1 declared tensors not written (next: \"b\")");
    EXPECT_FALSE(std::filesystem::exists(dir / "m.gguf"));
}

TEST(GgufWriter, ChecksDeclarations) {
    ScratchDir dir;
    const std::string file = (dir / "m.gguf").string();
    Writer w(dir / "m.gguf");
    const int64_t bad_block[] = {33}, ok[] = {32};
    EXPECT_EQ(error_of([&] { w.declare_tensor("q", SY_TYPE_Q8_0, bad_block); }),
              file + ": tensor \"q\": ne[0] = 33 is not a multiple of the q8_0 block size 32");
    w.declare_tensor("q", SY_TYPE_Q8_0, ok);
    EXPECT_EQ(error_of([&] { w.declare_tensor("q", SY_TYPE_Q8_0, ok); }),
              file + ": duplicate tensor name \"q\"");
    w.add("k", Value::u8(1));
    EXPECT_EQ(error_of([&] { w.add("k", Value::u8(2)); }), file + ": duplicate metadata key \"k\"");
    EXPECT_EQ(error_of([] { Writer bad("x.gguf", 48); }),
              "x.gguf: alignment must be a non-zero power of two (at most 2^30), got 48");
    EXPECT_EQ(error_of([] { Value::array(ValueType::U8, {Value::u16(1)}); }),
              "array of u8 holds an item of type u16");
}

TEST(GgufWriter, OutputIsTheSameBytesEveryTime) {
    ScratchDir dir;
    for (const char* name : {"a.gguf", "b.gguf"}) {
        Writer w(dir / name, 64);
        w.add("general.name", Value::string("same"));
        const int64_t ne[] = {4, 3};
        w.declare_tensor("t", SY_TYPE_F16, ne);
        w.write_header();
        w.write_tensor(std::vector<uint8_t>(24, 9));
        w.finish();
    }
    EXPECT_EQ(read_bytes(dir / "a.gguf"), read_bytes(dir / "b.gguf"));
    EXPECT_EQ(std::filesystem::file_size(dir / "a.gguf") % 64, 0u);
}

}  // namespace
}  // namespace sy::gguf::test
