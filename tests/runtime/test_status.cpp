#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>

#include "runtime/error.hpp"
#include "zerort/zerort.h"

using namespace zrt;

TEST(Status, EveryCodeHasADistinctString) {
  std::set<std::string> seen;
  for (int s = ZRT_SUCCESS; s <= ZRT_ERR_INTERNAL; ++s) {
    std::string text = zrt_status_string(static_cast<zrt_status_t>(s));
    EXPECT_NE(text, "unknown status") << s;
    EXPECT_TRUE(seen.insert(text).second) << text;
  }
  EXPECT_STREQ(zrt_status_string(static_cast<zrt_status_t>(999)), "unknown status");
}

TEST(Status, AbiCallMapsEveryExceptionAndRecordsTheMessage) {
  EXPECT_EQ(abi_call("f", []() -> zrt_status_t { fail(ZRT_ERR_IO, "disk {} full", 3); }),
            ZRT_ERR_IO);
  EXPECT_STREQ(zrt_last_error_message(), "f: disk 3 full");
  EXPECT_EQ(abi_call("g", []() -> zrt_status_t { throw std::bad_alloc(); }), ZRT_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(abi_call("h", []() -> zrt_status_t { throw std::runtime_error("x"); }),
            ZRT_ERR_INTERNAL);
  EXPECT_EQ(abi_call("i", []() -> zrt_status_t { throw 42; }), ZRT_ERR_INTERNAL);
  // Success leaves the last message in place.
  EXPECT_EQ(abi_call("j", [] { return ZRT_SUCCESS; }), ZRT_SUCCESS);
  EXPECT_NE(std::string(zrt_last_error_message()).find("i:"), std::string::npos);
}

TEST(Status, LastErrorIsPerThread) {
  abi_call("main", []() -> zrt_status_t { fail(ZRT_ERR_IO, "main thread"); });
  std::string other;
  std::thread t([&] {
    other = zrt_last_error_message();
    abi_call("worker", []() -> zrt_status_t { fail(ZRT_ERR_IO, "worker thread"); });
  });
  t.join();
  EXPECT_EQ(other, "");
  EXPECT_STREQ(zrt_last_error_message(), "main: main thread");
}

TEST(Status, VersionMatchesTheHeader) {
  unsigned major = 0, minor = 0, patch = 0;
  uint32_t api = 0;
  EXPECT_EQ(zrt_get_version(&major, &minor, &patch, &api), ZRT_SUCCESS);
  EXPECT_EQ(major, unsigned{ZRT_VERSION_MAJOR});
  EXPECT_EQ(minor, unsigned{ZRT_VERSION_MINOR});
  EXPECT_EQ(api, uint32_t{ZRT_API_VERSION});
  EXPECT_EQ(zrt_get_version(nullptr, nullptr, nullptr, nullptr), ZRT_SUCCESS);
}

TEST(Status, ShardRangeRejectsBadArguments) {
  EXPECT_EQ(zrt_shard_range(10, 0, 0, nullptr, nullptr, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zrt_shard_range(10, 4, 4, nullptr, nullptr, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(zrt_last_error_message()).find("0 .. 3"), std::string::npos);
  size_t o = 99, l = 99, s = 99;
  EXPECT_EQ(zrt_shard_range(10, 4, 3, &o, &l, &s), ZRT_SUCCESS);
  EXPECT_EQ(o, 9u);
  EXPECT_EQ(l, 1u);
  EXPECT_EQ(s, 3u);
}

TEST(Status, ConfigSchemaIsSnprintfLike) {
  size_t length = 0;
  ASSERT_EQ(zrt_config_schema(nullptr, 0, &length), ZRT_SUCCESS);
  ASSERT_GT(length, 10u);
  std::string small(8, 'x');
  size_t again = 0;
  ASSERT_EQ(zrt_config_schema(small.data(), small.size(), &again), ZRT_SUCCESS);
  EXPECT_EQ(again, length);
  EXPECT_EQ(small[7], '\0');
  EXPECT_EQ(zrt_config_schema(nullptr, 0, nullptr), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zrt_config_schema(nullptr, 5, &again), ZRT_ERR_INVALID_ARGUMENT);
}
