// Helpers shared by the core tests that check refusals by their message.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "switchyard/core/error.hpp"

namespace sy::test {

inline bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

// Runs `f`, expects an Error, and returns its message.
template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected an Error";
    return "";
}

}  // namespace sy::test
