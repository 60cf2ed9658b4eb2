// Configuration through zrt_init: file, params and environment, their precedence, and
// errors that reach every rank (never a hang when one rank's configuration is bad).
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cstdlib>
#include <fstream>

#include "support/mpi_fixture.hpp"

namespace {

nlohmann::json describe(zrt_context_h ctx) {
  size_t n = 0;
  zrt_context_describe(ctx, nullptr, 0, &n);
  std::string s(n + 1, '\0');
  zrt_context_describe(ctx, s.data(), s.size(), &n);
  s.resize(n);
  return nlohmann::json::parse(s);
}

std::string temp_file(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + "zrt_" + std::to_string(getpid()) + "_rank" +
                     std::to_string(test::rank()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(ConfigInit, PrecedenceFileParamsEnvironment) {
  std::string file =
      temp_file("prec.json", R"({"log_level": "info", "bind": "none", "comm": {"check_args": false},
                       "train_batch_size": 32})");
  zrt_init_params_t p = {};
  p.field_mask = ZRT_INIT_PARAM_FIELD_CONFIG_FILE | ZRT_INIT_PARAM_FIELD_LOG_LEVEL;
  p.config_file = file.c_str();
  p.log_level = ZRT_LOG_DEBUG;
  setenv("ZRT_LOG_LEVEL", "error", 1);
  zrt_context_h ctx = nullptr;
  zrt_status_t st = zrt_init(MPI_COMM_WORLD, &p, &ctx);
  unsetenv("ZRT_LOG_LEVEL");
  ASSERT_EQ(st, ZRT_SUCCESS) << test::last_error();
  nlohmann::json d = describe(ctx);
  EXPECT_EQ(d["config"]["log_level"]["value"], "error");
  EXPECT_EQ(d["config"]["log_level"]["source"], "environment");
  EXPECT_EQ(d["config"]["bind"]["value"], "none");
  EXPECT_EQ(d["config"]["bind"]["source"], "file");
  EXPECT_EQ(d["config"]["comm.check_args"]["value"], false);
  EXPECT_EQ(d["config"]["ranks_per_node"]["source"], "default");
  EXPECT_EQ(d["config_file"], file);
  // DeepSpeed's batch size is a setting like the others (the engine takes its micro-steps
  // from it); nothing is listed as ignored.
  EXPECT_EQ(d["config"]["train_batch_size"]["value"], 32);
  EXPECT_EQ(d["config"]["train_batch_size"]["source"], "file");
  EXPECT_FALSE(d.contains("config_ignored"));
  zrt_context_attr_t attr = {};
  attr.field_mask = ZRT_CONTEXT_ATTR_FIELD_LOG_LEVEL;
  ASSERT_EQ(zrt_context_query(ctx, &attr), ZRT_SUCCESS);
  EXPECT_EQ(attr.log_level, ZRT_LOG_ERROR);
  EXPECT_EQ(zrt_finalize(ctx), ZRT_SUCCESS);
}

TEST(ConfigInit, BadEnvironmentValueFailsInitOnEveryRank) {
  setenv("ZRT_BIND", "sideways", 1);
  zrt_context_h ctx = nullptr;
  zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx);
  unsetenv("ZRT_BIND");
  EXPECT_EQ(st, ZRT_ERR_CONFIG);
  std::string msg = test::last_error();
  EXPECT_NE(msg.find("'sideways'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ZRT_BIND"), std::string::npos) << msg;
  EXPECT_NE(msg.find("auto, none, core"), std::string::npos) << msg;
  EXPECT_EQ(ctx, nullptr);
}

TEST(ConfigInit, UnknownEnvironmentVariableIsNamed) {
  setenv("ZRT_COMM_BAKCEND", "mpi", 1);
  zrt_context_h ctx = nullptr;
  zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx);
  unsetenv("ZRT_COMM_BAKCEND");
  EXPECT_EQ(st, ZRT_ERR_CONFIG);
  EXPECT_NE(test::last_error().find("did you mean ZRT_COMM_BACKEND"), std::string::npos)
      << test::last_error();
}

TEST(ConfigInit, ARankWithABadFileFailsEveryRank) {
  if (test::size() < 2) GTEST_SKIP() << "needs two ranks";
  // Only the last rank's file is broken, as when a file is missing on one node.
  bool broken = test::rank() == test::size() - 1;
  std::string file =
      broken ? "/nonexistent/zerort.json" : temp_file("good.json", R"({"log_level": "warn"})");
  zrt_init_params_t p = {};
  p.field_mask = ZRT_INIT_PARAM_FIELD_CONFIG_FILE;
  p.config_file = file.c_str();
  zrt_context_h ctx = nullptr;
  EXPECT_EQ(zrt_init(MPI_COMM_WORLD, &p, &ctx), ZRT_ERR_CONFIG);
  std::string want =
      "rank " + std::to_string(test::size() - 1) + ": cannot open configuration file";
  EXPECT_NE(test::last_error().find(want), std::string::npos) << test::last_error();
  // The world is still usable: nobody is stuck in init.
  EXPECT_TRUE(test::all_ranks(true));
}

TEST(ConfigInit, UnknownFileKeyIsNamedWithASuggestion) {
  std::string file = temp_file("typo.json", R"({"comm": {"check_arg": true}})");
  zrt_init_params_t p = {};
  p.field_mask = ZRT_INIT_PARAM_FIELD_CONFIG_FILE;
  p.config_file = file.c_str();
  zrt_context_h ctx = nullptr;
  EXPECT_EQ(zrt_init(MPI_COMM_WORLD, &p, &ctx), ZRT_ERR_CONFIG);
  EXPECT_NE(test::last_error().find("unknown key 'comm.check_arg'"), std::string::npos)
      << test::last_error();
  EXPECT_NE(test::last_error().find("comm.check_args"), std::string::npos) << test::last_error();
}

TEST(ConfigInit, CheckArgsOffStillRunsCollectives) {
  setenv("ZRT_COMM_CHECK_ARGS", "0", 1);
  zrt_context_h ctx = nullptr;
  zrt_status_t st = zrt_init(MPI_COMM_WORLD, nullptr, &ctx);
  unsetenv("ZRT_COMM_CHECK_ARGS");
  ASSERT_EQ(st, ZRT_SUCCESS) << test::last_error();
  zrt_comm_h comm = nullptr;
  zrt_context_comm(ctx, &comm);
  std::vector<float> a(777, 1.0f);
  std::vector<std::vector<float>> b(3, std::vector<float>(777, 0.0f));
  std::vector<zrt_request_h> reqs(3);
  for (size_t i = 0; i < 3; ++i)
    ASSERT_EQ(zrt_comm_all_reduce_post(comm, a.data(), b[i].data(), a.size(), ZRT_DTYPE_FP32,
                                       ZRT_OP_AVG, &reqs[i]),
              ZRT_SUCCESS);
  for (int i = 2; i >= 0; --i)
    ASSERT_EQ(zrt_request_wait(reqs[static_cast<size_t>(i)]), ZRT_SUCCESS);
  for (auto r : reqs)
    zrt_request_free(r);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(b[i][776], 1.0f);
  EXPECT_EQ(describe(ctx)["comm"]["check_args"], false);
  EXPECT_EQ(zrt_finalize(ctx), ZRT_SUCCESS);
}
