#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/log.hpp"

namespace {

// Runs f with stderr sent to a file and returns what it wrote.
template <class F>
std::string capture_stderr(F &&f) {
  std::string path = ::testing::TempDir() + "zrt_log_capture_" + std::to_string(getpid()) + ".txt";
  std::fflush(stderr);
  int saved = dup(STDERR_FILENO);
  FILE *file = std::fopen(path.c_str(), "w");
  dup2(fileno(file), STDERR_FILENO);
  f();
  std::fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::fclose(file);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(Log, LinesCarryRankSizeAndLevel) {
  zrt::log::set_rank(1, 4);
  zrt::log::set_level(ZRT_LOG_INFO);
  std::string out = capture_stderr([] {
    zrt::log::warn("bucket {} is {} bytes", 3, 4096);
    zrt::log::info("hello");
    zrt::log::debug("not shown at info");
  });
  EXPECT_EQ(out, "[zerort 1/4 warn] bucket 3 is 4096 bytes\n[zerort 1/4 info] hello\n");
  zrt::log::set_level(ZRT_LOG_WARN);
  zrt::log::set_rank(-1, -1);
}

TEST(Log, BeforeInitThereIsNoRank) {
  zrt::log::set_rank(-1, -1);
  std::string out = capture_stderr([] { zrt::log::error("early"); });
  EXPECT_EQ(out, "[zerort error] early\n");
}

TEST(Log, LevelsFilter) {
  zrt::log::set_level(ZRT_LOG_ERROR);
  std::string out = capture_stderr([] { zrt::log::warn("quiet"); });
  EXPECT_EQ(out, "");
  EXPECT_TRUE(zrt::log::enabled(ZRT_LOG_ERROR));
  EXPECT_FALSE(zrt::log::enabled(ZRT_LOG_WARN));
  zrt::log::set_level(ZRT_LOG_WARN);
}
