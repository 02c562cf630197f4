// The SDK's host-memory helpers (switchyard/host_buffers.hpp): buffers refuse what is not theirs
// and out-of-range access; copies are validated and copy exactly the bytes of the tensor, block
// types row by row.
#include "switchyard/host_buffers.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "switchyard/dtype.h"
#include "switchyard/sdk.hpp"

namespace {

TEST(HostBuffers, RoundTripAndBounds) {
    sy::sdk::HostBuffers buffers;
    sy_buffer b{};
    b.struct_size = sizeof b;
    ASSERT_EQ(buffers.alloc(100, &b).code, SY_OK);
    EXPECT_EQ(b.host_visible, 1);
    const std::vector<char> in(100, 7);
    EXPECT_EQ(buffers.set(&b, 0, in.data(), 100).code, SY_OK);
    std::vector<char> out(100, 0);
    EXPECT_EQ(buffers.get(&b, 0, out.data(), 100).code, SY_OK);
    EXPECT_EQ(in, out);
    const sy_status st = buffers.set(&b, 60, in.data(), 41);
    EXPECT_EQ(st.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(st.message).find("exceeds the buffer"), std::string::npos) << st.message;
    sy_buffer foreign = b;
    int other = 0;
    foreign.handle = &other;
    EXPECT_EQ(buffers.get(&foreign, 0, out.data(), 1).code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(buffers.free(&b).code, SY_OK);
    EXPECT_EQ(buffers.free(&b).code, SY_ERR_INVALID_ARGUMENT);  // twice
}

// Q8_0 rows (34-byte blocks) between two padded layouts: exactly the rows' bytes move, the
// padding around them stays as it was.
TEST(HostCopies, BlockRowsCopyWholeRowsAndNothingElse) {
    const sy_dtype_traits tr = sy_dtype_info(SY_TYPE_Q8_0);
    const int64_t K = 64, rows = 3, row_bytes = K / tr.block_size * tr.type_size;  // 68
    std::vector<unsigned char> src(size_t(rows * (row_bytes + 8)), 0), dst(src.size(), 0xee);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
    sy_tensor s = sy::sdk::make_tensor(SY_TYPE_Q8_0, K, rows);
    s.nb[1] = row_bytes + 8;
    s.nb[2] = s.nb[3] = s.nb[1] * rows;
    s.data = src.data();
    sy_tensor d = s;
    d.data = dst.data();
    const sy_copy c{sizeof(sy_copy), &s, &d};
    ASSERT_EQ(sy::sdk::validate_host_copies(&c, 1).code, SY_OK);
    sy::sdk::copy_tensor_bytes(s, d);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < row_bytes + 8; ++i) {
            const size_t at = size_t(r * (row_bytes + 8) + i);
            EXPECT_EQ(dst[at], i < row_bytes ? src[at] : 0xee) << "row " << r << " byte " << i;
        }
}

TEST(HostCopies, StridedFloatsAndMismatchesAreRefused) {
    std::vector<float> src = {1, 2, 3, 4, 5, 6}, dst(6, 0);
    sy_tensor s = sy::sdk::make_tensor(SY_TYPE_F32, 3, 2);
    s.data = src.data();
    sy_tensor d = sy::sdk::make_tensor(SY_TYPE_F32, 3, 2);  // dst transposed: element stride 8
    d.nb[0] = 8;
    d.nb[1] = 4;
    d.data = dst.data();
    const sy_copy c{sizeof(sy_copy), &s, &d};
    ASSERT_EQ(sy::sdk::validate_host_copies(&c, 1).code, SY_OK);
    sy::sdk::copy_tensor_bytes(s, d);
    EXPECT_EQ(dst, (std::vector<float>{1, 4, 2, 5, 3, 6}));
    sy_tensor wrong = sy::sdk::make_tensor(SY_TYPE_F16, 3, 2);
    wrong.data = dst.data();
    const sy_copy bad{sizeof(sy_copy), &s, &wrong};
    const sy_status st = sy::sdk::validate_host_copies(&bad, 1);
    EXPECT_EQ(st.code, SY_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(st.message).find("differ in type or shape"), std::string::npos)
        << st.message;
}

}  // namespace
