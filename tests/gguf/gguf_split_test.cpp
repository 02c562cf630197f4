// Split models: "<prefix>-0000i-of-0000N.gguf", each shard a full GGUF with local offsets.
#include <cstring>

#include "gguf_test_util.hpp"
#include "switchyard/dtype.h"

namespace sy::gguf::test {
namespace {

std::filesystem::path shard(const ScratchDir& dir, int i, int n) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.gguf", i, n);
    return dir / name;
}

// Three shards: shard i holds tensors "blk.i.x" and "blk.i.y" (f32 {8}, filled with i).
void write_shards(const ScratchDir& dir, int count = 3, const std::string& dup = "") {
    for (int i = 1; i <= count; ++i) {
        Writer w(shard(dir, i, count));
        w.add("split.no", Value::u16(uint16_t(i - 1)));
        w.add("split.count", Value::u16(uint16_t(count)));
        if (i == 1) {
            w.add("general.architecture", Value::string("deepseek2"));
            w.add("split.tensors.count", Value::i32(2 * count));
        }
        const int64_t ne[] = {8};
        const std::string x = (i == 3 && !dup.empty()) ? dup : "blk." + std::to_string(i) + ".x";
        w.declare_tensor(x, SY_TYPE_F32, ne);
        w.declare_tensor("blk." + std::to_string(i) + ".y", SY_TYPE_F32, ne);
        w.write_header();
        w.write_tensor(std::vector<uint8_t>(32, uint8_t(i)));
        w.write_tensor(std::vector<uint8_t>(32, uint8_t(10 + i)));
        w.finish();
    }
}

TEST(GgufSplit, FirstShardOpensAllShards) {
    ScratchDir dir;
    write_shards(dir);
    const Reader r = Reader::open(shard(dir, 1, 3));
    ASSERT_EQ(r.files().size(), 3u);
    EXPECT_EQ(r.files()[2], shard(dir, 3, 3));
    EXPECT_EQ(r.get_string("general.architecture"), "deepseek2");
    ASSERT_EQ(r.tensors().size(), 6u);
    uint64_t total = 0;
    for (int i = 1; i <= 3; ++i) total += std::filesystem::file_size(shard(dir, i, 3));
    EXPECT_EQ(r.file_size(), total);
    for (int i = 1; i <= 3; ++i) {
        const TensorInfo* x = r.tensor("blk." + std::to_string(i) + ".x");
        const TensorInfo* y = r.tensor("blk." + std::to_string(i) + ".y");
        ASSERT_NE(x, nullptr);
        ASSERT_NE(y, nullptr);
        EXPECT_EQ(x->shard, uint32_t(i - 1));
        EXPECT_EQ(x->offset, 0u);  // offsets are local to each shard
        EXPECT_EQ(y->offset, 32u);
        EXPECT_EQ(x->data[0], i);
        EXPECT_EQ(y->data[31], 10 + i);
    }
}

// --no-mmap: every shard read into memory gives the same metadata and tensor bytes as the
// mapping, at other addresses.
TEST(GgufSplit, ReadIntoMemoryMatchesTheMapping) {
    ScratchDir dir;
    write_shards(dir);
    const Reader mapped = Reader::open(shard(dir, 1, 3));
    const Reader read = Reader::open(shard(dir, 1, 3), Residence::read);
    ASSERT_EQ(read.tensors().size(), mapped.tensors().size());
    EXPECT_EQ(read.file_size(), mapped.file_size());
    EXPECT_EQ(read.get_string("general.architecture"), "deepseek2");
    for (size_t i = 0; i < mapped.tensors().size(); ++i) {
        const TensorInfo& a = mapped.tensors()[i];
        const TensorInfo& b = read.tensors()[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_NE(a.data, b.data);
        ASSERT_EQ(a.nbytes, b.nbytes);
        EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes), 0) << a.name;
    }
}

TEST(GgufSplit, MissingShardIsNamed) {
    ScratchDir dir;
    write_shards(dir);
    std::filesystem::remove(shard(dir, 2, 3));
    EXPECT_EQ(
        open_error(shard(dir, 1, 3)),
        shard(dir, 1, 3).string() + ": shard 2 of 3 is missing: " + shard(dir, 2, 3).string());
}

TEST(GgufSplit, DuplicateTensorAcrossShards) {
    ScratchDir dir;
    write_shards(dir, 3, "blk.1.y");
    EXPECT_EQ(open_error(shard(dir, 1, 3)), shard(dir, 3, 3).string() +
                                                ": duplicate tensor name \"blk.1.y\" (also in " +
                                                shard(dir, 1, 3).string() + ")");
}

TEST(GgufSplit, SplitCountDisagreesWithName) {
    ScratchDir dir;
    write_shards(dir);
    // Rename the set to claim 2 shards: the first shard still says split.count = 3.
    std::filesystem::rename(shard(dir, 1, 3), shard(dir, 1, 2));
    std::filesystem::rename(shard(dir, 2, 3), shard(dir, 2, 2));
    EXPECT_EQ(open_error(shard(dir, 1, 2)),
              shard(dir, 1, 2).string() + ": split.count is 3, but the name says 2 shards");
}

TEST(GgufSplit, SplitTensorCountChecked) {
    ScratchDir dir;
    write_shards(dir);
    std::vector<uint8_t> bytes = read_bytes(shard(dir, 1, 3));
    patch<int32_t>(bytes, after_string(bytes, "split.tensors.count") + 4, 7);
    write_bytes(shard(dir, 1, 3), bytes);
    EXPECT_EQ(
        open_error(shard(dir, 1, 3)),
        shard(dir, 1, 3).string() + ": split.tensors.count is 7, but the shards hold 6 tensors");
}

TEST(GgufSplit, LaterShardMustBeOpenedThroughTheFirst) {
    ScratchDir dir;
    write_shards(dir);
    EXPECT_EQ(open_error(shard(dir, 2, 3)), shard(dir, 2, 3).string() +
                                                ": shard 2 of a split model; open the first "
                                                "shard " +
                                                shard(dir, 1, 3).string());
}

TEST(GgufSplit, BadShardNamesItsFile) {
    ScratchDir dir;
    write_shards(dir);
    std::vector<uint8_t> bytes = read_bytes(shard(dir, 3, 3));
    bytes[0] = 'X';
    write_bytes(shard(dir, 3, 3), bytes);
    EXPECT_EQ(open_error(shard(dir, 1, 3)),
              shard(dir, 3, 3).string() +
                  ": not a GGUF file: magic is 58 47 55 46 (\"XGUF\"), expected 47 47 55 46 "
                  "(\"GGUF\")");
}

}  // namespace
}  // namespace sy::gguf::test
