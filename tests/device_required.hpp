// Tests that need a device skip without one, saying why ("no device here: ...", which
// ctest's cuda-labelled tests take for a skip). Where a device is required
// (ZRT_TEST_REQUIRE_DEVICE=1: scripts/gpu-check on a GPU) they fail instead, so that a GPU
// run cannot pass by skipping.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace test {

inline bool device_required() {
  const char *v = std::getenv("ZRT_TEST_REQUIRE_DEVICE");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace test

// In a test body (or SetUp): skips, or fails where a device is required, naming why.
#define ZRT_NO_DEVICE(why)                                                          \
  do {                                                                              \
    if (test::device_required())                                                    \
      FAIL() << "a device is required (ZRT_TEST_REQUIRE_DEVICE=1), and: " << (why); \
    GTEST_SKIP() << "no device here: " << (why);                                    \
  } while (0)
