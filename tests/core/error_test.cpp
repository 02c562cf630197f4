// sy::allocating: a failed allocation becomes an Error that says what was being allocated and
// how much, in the units a user would shrink it by.
#include "switchyard/core/error.hpp"

#include <gtest/gtest.h>

#include <new>
#include <string>

namespace sy {
namespace {

std::string message_of_failed(std::string_view what, uint64_t bytes) {
    try {
        allocating(what, bytes, []() -> int { throw std::bad_alloc(); });
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(Allocating, BadAllocNamesWhatAndHowMuch) {
    EXPECT_EQ(
        message_of_failed("the KV cache (3 layers of 96 bytes)", uint64_t(3) << 30),
        "out of memory: the KV cache (3 layers of 96 bytes) needs 3.0 GiB (3221225472 bytes)");
    EXPECT_EQ(message_of_failed("tensor blk.0.ffn_up_exps.weight in q4_K", 1536),
              "out of memory: tensor blk.0.ffn_up_exps.weight in q4_K needs 1.5 KiB (1536 bytes)");
    EXPECT_EQ(message_of_failed("x", 100), "out of memory: x needs 100 bytes");
    EXPECT_EQ(message_of_failed("x", UINT64_MAX),
              "out of memory: x needs 16.0 EiB (18446744073709551615 bytes)");
}

TEST(Allocating, ResultsAndOtherErrorsPassThrough) {
    EXPECT_EQ(allocating("x", 4, [] { return 42; }), 42);
    EXPECT_THROW(allocating("x", 4, []() -> int { throw std::length_error("too long"); }),
                 std::length_error);
}

}  // namespace
}  // namespace sy
