// Checkpoints: saved at every (world size, stage), loaded at every (world size, stage),
// bitwise; resume equality in deterministic mode; damaged files; keep_last; weights-only
// files; metadata; paths that are not regular files; names that are paths. World sizes
// smaller than the job run on sub-communicators.
#include <fcntl.h>
#include <hdf5.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "not_regular_files.hpp"
#include "support/mpi_fixture.hpp"
#include "support/values.hpp"

namespace {

using test::mentions;

// A folder shared by the ranks of this job (rank 0 picks it and removes it at exit).
struct RemoveAtExit {
  std::string dir;
  ~RemoveAtExit() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
};

std::string shared_dir() {
  static RemoveAtExit cleanup;
  static std::string dir = [] {
    char buf[256] = {0};
    if (test::rank() == 0) {
      std::string d = ::testing::TempDir() + fmt::format("zrt_ckpt_{}", getpid());
      std::filesystem::create_directories(d);
      std::snprintf(buf, sizeof buf, "%s", d.c_str());
      cleanup.dir = d;
    }
    MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
    return std::string(buf);
  }();
  return dir;
}

const std::vector<std::vector<int64_t>> kShapes = {{7, 5}, {5}, {3, 4, 2}, {1}, {33}};

struct Model {
  zrt_context_h ctx = nullptr;
  zrt_engine_h engine = nullptr;
  std::vector<zrt_param_h> params;
  int rank = 0, size = 1;
  zrt_dtype_t dtype = ZRT_DTYPE_FP32;

  // A context and engine on the first `ranks` ranks; others get nothing (active() false).
  Model(int ranks, int stage, zrt_optimizer_t optimizer = ZRT_OPTIMIZER_ADAMW,
        zrt_dtype_t dtype = ZRT_DTYPE_FP32, std::vector<std::vector<int64_t>> shapes = kShapes,
        int64_t bucket_bytes = 96) {
    {
      // Freed right after zrt_init: the context keeps a duplicate of its own.
      const test::SplitComm sub(test::rank() < ranks ? 0 : MPI_UNDEFINED, test::rank());
      if (sub == MPI_COMM_NULL) return;
      this->dtype = dtype;
      EXPECT_EQ(zrt_init(sub, nullptr, &ctx), ZRT_SUCCESS) << test::last_error();
    }
    zrt_engine_params_t p = {};
    p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE | ZRT_ENGINE_PARAM_FIELD_DETERMINISTIC |
                   ZRT_ENGINE_PARAM_FIELD_OPTIMIZER | ZRT_ENGINE_PARAM_FIELD_REDUCE_BUCKET_BYTES |
                   ZRT_ENGINE_PARAM_FIELD_COMPUTE_DTYPE | ZRT_ENGINE_PARAM_FIELD_MOMENTUM;
    p.stage = stage;
    p.deterministic = 1;
    p.optimizer = optimizer;
    p.momentum = 0.9;
    p.compute_dtype = dtype;
    p.reduce_bucket_bytes = bucket_bytes;  // 96: several buckets
    EXPECT_EQ(zrt_engine_create(ctx, &p, &engine), ZRT_SUCCESS) << test::last_error();
    zrt_comm_h comm;
    zrt_context_comm(ctx, &comm);
    zrt_comm_rank(comm, &rank);
    zrt_comm_size(comm, &size);
    for (size_t t = 0; t < shapes.size(); ++t) {
      zrt_param_h h;
      EXPECT_EQ(zrt_param_register(engine, fmt::format("layer{}.w", t).c_str(), dtype,
                                   static_cast<int>(shapes[t].size()), shapes[t].data(), &h),
                ZRT_SUCCESS);
      params.push_back(h);
    }
    EXPECT_EQ(zrt_engine_commit(engine), ZRT_SUCCESS) << test::last_error();
    for (size_t t = 0; t < params.size(); ++t) {
      zrt_param_info_t info{};
      info.field_mask = ZRT_PARAM_INFO_FIELD_ALL;
      zrt_param_info(engine, params[t], &info);
      std::vector<float> v(static_cast<size_t>(info.numel));
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 0.1f * static_cast<float>((t * 31 + i * 7) % 13) - 0.6f;
      EXPECT_EQ(zrt_param_set(engine, params[t], v.data(), ZRT_DTYPE_FP32), ZRT_SUCCESS);
    }
  }
  ~Model() {
    if (engine) zrt_engine_destroy(engine);
    if (ctx) zrt_finalize(ctx);
  }
  bool active() const { return engine != nullptr; }

  // Steps on a gradient that depends on the parameters, the rank and the step.
  void train(int steps, int first_step) {
    for (int s = first_step; s < first_step + steps; ++s)
      ASSERT_EQ(step(s), ZRT_SUCCESS) << test::last_error();
  }
  // One step s; its status.
  zrt_status_t step(int s) {
    {
      for (size_t t = 0; t < params.size(); ++t) {
        zrt_param_info_t info{};
        info.field_mask = ZRT_PARAM_INFO_FIELD_ALL;
        zrt_param_info(engine, params[t], &info);
        EXPECT_EQ(zrt_param_gather(engine, params[t]), ZRT_SUCCESS) << test::last_error();
        void *w = nullptr, *g = nullptr;
        EXPECT_EQ(zrt_param_data(engine, params[t], &w), ZRT_SUCCESS);
        EXPECT_EQ(zrt_param_grad_data(engine, params[t], &g), ZRT_SUCCESS);
        for (size_t i = 0; i < static_cast<size_t>(info.numel); ++i)
          test::add(g, i, dtype,
                    test::load(w, i, dtype) * 0.5f +
                        0.01f * static_cast<float>((rank + 1) * (s + 1) * static_cast<int>(i % 5)));
        EXPECT_EQ(zrt_param_grad_ready(engine, params[t]), ZRT_SUCCESS);
        EXPECT_EQ(zrt_param_release(engine, params[t]), ZRT_SUCCESS);
      }
      return zrt_engine_step(engine, nullptr);
    }
  }

  std::vector<std::vector<float>> values() {
    std::vector<std::vector<float>> out;
    for (zrt_param_h h : params) {
      zrt_param_info_t info{};
      info.field_mask = ZRT_PARAM_INFO_FIELD_ALL;
      zrt_param_info(engine, h, &info);
      out.emplace_back(static_cast<size_t>(info.numel));
      EXPECT_EQ(zrt_param_get(engine, h, out.back().data(), ZRT_DTYPE_FP32), ZRT_SUCCESS);
    }
    return out;
  }
};

// An environment variable set while alive (zrt_init reads ZRT_* keys from the environment).
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char *n, const char *value) : name(n) { setenv(n, value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

// Every dataset of a file, by name (serial reader).
std::map<std::string, std::vector<float>> read_all(const std::string &path) {
  std::map<std::string, std::vector<float>> out;
  zrt_checkpoint_h c = nullptr;
  EXPECT_EQ(zrt_checkpoint_open(path.c_str(), &c), ZRT_SUCCESS) << test::last_error();
  if (!c) return out;
  int n = 0;
  zrt_checkpoint_tensor_count(c, &n);
  for (int i = 0; i < n; ++i) {
    zrt_checkpoint_tensor_t t{};
    t.field_mask = ZRT_CHECKPOINT_TENSOR_FIELD_ALL;
    zrt_checkpoint_tensor(c, i, &t);
    std::vector<float> v(static_cast<size_t>(t.numel));
    EXPECT_EQ(zrt_checkpoint_read(c, i, v.data()), ZRT_SUCCESS);
    out[t.name] = v;
  }
  zrt_checkpoint_close(c);
  return out;
}

std::vector<int> world_sizes() {
  std::vector<int> out;
  for (int n : {1, 2, 4})
    if (n <= test::size()) out.push_back(n);
  return out;
}

}  // namespace

void any_world_size_and_stage_loads_any_other() {
  const std::string dir = shared_dir();
  // Save once per (world size, stage), after a few steps.
  std::map<std::pair<int, int>, std::string> files;
  std::map<std::pair<int, int>, std::vector<std::vector<float>>> saved_values;
  for (int np : world_sizes())
    for (int stage = 0; stage <= 3; ++stage) {
      std::string path = fmt::format("{}/np{}_stage{}.h5", dir, np, stage);
      Model m(np, stage);
      if (m.active()) {
        m.train(3, 0);
        ASSERT_EQ(zrt_checkpoint_save(m.engine, path.c_str(), nullptr), ZRT_SUCCESS)
            << test::last_error();
        saved_values[{np, stage}] = m.values();
      }
      files[{np, stage}] = path;
      MPI_Barrier(MPI_COMM_WORLD);
    }
  // Load each file at every (world size, stage); parameters, moments and step come back exactly.
  for (auto &[from, path] : files) {
    std::map<std::string, std::vector<float>> original = read_all(path);
    ASSERT_EQ(original.size(), kShapes.size() * 3) << "params, exp_avg and exp_avg_sq";
    for (int np : world_sizes())
      for (int stage = 0; stage <= 3; ++stage) {
        SCOPED_TRACE(fmt::format("saved np {} stage {}, loaded np {} stage {}", from.first,
                                 from.second, np, stage));
        Model m(np, stage);
        std::string again =
            fmt::format("{}/again_np{}_stage{}_{}_{}.h5", dir, np, stage, from.first, from.second);
        if (m.active()) {
          ASSERT_EQ(zrt_checkpoint_load(m.engine, path.c_str()), ZRT_SUCCESS) << test::last_error();
          auto v = m.values();
          if (test::rank() == 0 && saved_values.count(from)) {
            EXPECT_EQ(v, saved_values[from]);
          }
          ASSERT_EQ(zrt_checkpoint_save(m.engine, again.c_str(), nullptr), ZRT_SUCCESS)
              << test::last_error();
        }
        MPI_Barrier(MPI_COMM_WORLD);
        EXPECT_EQ(read_all(again), original) << "re-saved state differs";
        MPI_Barrier(MPI_COMM_WORLD);
        if (test::rank() == 0) std::remove(again.c_str());
      }
  }
}

TEST(Checkpoint, AnyWorldSizeAndStageLoadsAnyOtherBitwise) {
  any_world_size_and_stage_loads_any_other();
}

// Blocks of 3 values: every dataset has several, and ranks' shares begin and end inside
// blocks, so blocks are assembled from other ranks' parts at save and read past a rank's
// share at load.
TEST(Checkpoint, BlocksAcrossRankBoundariesLoadBitwise) {
  ScopedEnv small("ZRT_CHECKPOINT_BLOCK_BYTES", "12");
  ScopedEnv packed("ZRT_CHECKPOINT_ALIGNMENT", "0");
  any_world_size_and_stage_loads_any_other();
}

// Files of format 1 (one checksum per dataset, no checksum_block) load as before.
TEST(Checkpoint, FormatOneFilesStillLoad) {
  const std::string dir = shared_dir(), path = dir + "/format1.h5";
  Model m(test::size(), 2);
  m.train(2, 0);
  CHECK_OK(zrt_checkpoint_save(m.engine, path.c_str(), nullptr));
  auto saved = m.values();
  if (test::rank() == 0) {
    const std::map<std::string, std::vector<float>> datasets = read_all(path);
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    for (const auto &[name, values] : datasets) {
      hid_t d = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
      H5Adelete(d, "xxh3_blocks");
      H5Adelete(d, "xxh3");
      uint64_t h = XXH3_64bits(values.data(), values.size() * sizeof(float));
      hid_t space = H5Screate(H5S_SCALAR);
      hid_t a = H5Acreate2(d, "xxh3", H5T_NATIVE_UINT64, space, H5P_DEFAULT, H5P_DEFAULT);
      H5Awrite(a, H5T_NATIVE_UINT64, &h);
      H5Aclose(a);
      H5Sclose(space);
      H5Dclose(d);
    }
    H5Adelete(f, "checksum_block");
    int64_t one = 1;
    hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT64, &one);
    H5Aclose(a);
    H5Fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<char> text(1 << 20);
  size_t length = 0;
  CHECK_OK(zrt_checkpoint_describe(path.c_str(), text.data(), text.size(), &length));
  EXPECT_EQ(nlohmann::json::parse(text.data())["format_version"], 1);
  Model other(test::size(), 3);
  CHECK_OK(zrt_checkpoint_load(other.engine, path.c_str()));
  EXPECT_EQ(other.values(), saved);
}

// An asynchronous save copies the state before it returns: the update that follows at
// once is not in the file, which equals a synchronous save of the same state bitwise.
TEST(Checkpoint, AsyncSaveHoldsThePreUpdateValuesBitwise) {
  ScopedEnv small("ZRT_CHECKPOINT_BLOCK_BYTES", "20");
  const std::string dir = shared_dir();
  for (int stage : {0, 2, 3}) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    const std::string sync = fmt::format("{}/sync{}.h5", dir, stage),
                      async = fmt::format("{}/async{}.h5", dir, stage);
    Model m(test::size(), stage);
    m.train(3, 0);
    auto saved = m.values();
    CHECK_OK(zrt_checkpoint_save(m.engine, sync.c_str(), nullptr));
    zrt_request_h request = nullptr;
    CHECK_OK(zrt_checkpoint_save_post(m.engine, async.c_str(), nullptr, &request));
    // A request in flight is not freed, and the refusal names the save.
    EXPECT_EQ(zrt_request_free(request), ZRT_ERR_INVALID_STATE);
    mentions("the checkpoint save of " + async + " is still in progress");
    m.train(2, 3);  // the first step publishes the save once every rank has written
    CHECK_OK(zrt_request_wait(request));
    CHECK_OK(zrt_request_free(request));
    MPI_Barrier(MPI_COMM_WORLD);
    EXPECT_EQ(read_all(async), read_all(sync));
    EXPECT_NE(m.values(), saved) << "the steps after the save changed the weights";
    Model loaded(test::size(), 1);
    CHECK_OK(zrt_checkpoint_load(loaded.engine, async.c_str()));
    EXPECT_EQ(loaded.values(), saved);
    // Two in a row: the second waits for the first; a test reports each as done.
    zrt_request_h first = nullptr, second = nullptr;
    CHECK_OK(zrt_checkpoint_save_post(m.engine, (async + ".1").c_str(), nullptr, &first));
    CHECK_OK(zrt_checkpoint_save_post(m.engine, (async + ".2").c_str(), nullptr, &second));
    EXPECT_EQ(zrt_request_test(first), ZRT_SUCCESS) << "the second save waited for the first";
    CHECK_OK(zrt_request_free(first));
    CHECK_OK(zrt_request_wait(second));
    CHECK_OK(zrt_request_free(second));
    EXPECT_EQ(read_all(async + ".1"), read_all(async + ".2"));
    // The API 2 calls, kept for API 3: zrt_checkpoint_test and _wait free the request.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    zrt_checkpoint_request_h third = nullptr, fourth = nullptr;
    CHECK_OK(zrt_checkpoint_save_async(m.engine, (async + ".3").c_str(), nullptr, &third));
    CHECK_OK(zrt_checkpoint_save_async(m.engine, (async + ".4").c_str(), nullptr, &fourth));
    int done = 0;
    CHECK_OK(zrt_checkpoint_test(third, &done));
    EXPECT_EQ(done, 1) << "the fourth save waited for the third";
    CHECK_OK(zrt_checkpoint_wait(fourth));
#pragma GCC diagnostic pop
    EXPECT_EQ(zrt_request_free(third), ZRT_ERR_INVALID_HANDLE) << "the test freed it";
    EXPECT_EQ(zrt_request_free(fourth), ZRT_ERR_INVALID_HANDLE) << "the wait freed it";
    EXPECT_EQ(read_all(async + ".3"), read_all(async + ".1"));
  }
}

// An asynchronous save of host state copies it on its own thread, while the program goes
// on: zrt_param_set and the step right after the call wait for that copy, so the file holds
// the values of the call's moment. The state is large enough (3 x 8 MiB a rank at np 1)
// that the copy is still running when zrt_param_set comes.
TEST(Checkpoint, AsyncSaveHoldsItsValuesAgainstParamSetAndTheStep) {
  const std::string dir = shared_dir(), sync = dir + "/held_sync.h5", async = dir + "/held.h5";
  const std::vector<std::vector<int64_t>> big = {{2048, 1024}, {33}};
  Model m(test::size(), 2, ZRT_OPTIMIZER_ADAMW, ZRT_DTYPE_FP32, big, 1 << 20);
  m.train(2, 0);
  CHECK_OK(zrt_checkpoint_save(m.engine, sync.c_str(), nullptr));
  zrt_request_h request = nullptr;
  CHECK_OK(zrt_checkpoint_save_post(m.engine, async.c_str(), nullptr, &request));
  const std::vector<float> other(2048 * 1024, 0.25f);
  CHECK_OK(zrt_param_set(m.engine, m.params[0], other.data(), ZRT_DTYPE_FP32));
  m.train(1, 2);
  CHECK_OK(zrt_request_wait(request));
  CHECK_OK(zrt_request_free(request));
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(read_all(async), read_all(sync));
}

// Whether path is gone within ten seconds (a removal on a thread of its own).
bool disappears(const std::string &path) {
  for (int i = 0; i < 1000 && std::filesystem::exists(path); ++i)
    usleep(10 * 1000);
  return !std::filesystem::exists(path);
}

// An asynchronous save publishes inside the next step, so the files it replaces (the same
// path, keep_last's older ones) lose their names at once and are removed on a thread of
// their own: the step does not wait for the file system to free them. What a killed job
// left as PATH.removing goes with the next save.
TEST(Checkpoint, AsyncSavesRemoveTheFilesTheyReplaceInTheBackground) {
  const std::string dir = shared_dir() + "/replace", path = dir + "/ckpt.h5";
  if (test::rank() == 0) {
    std::filesystem::create_directories(dir);
    std::ofstream(path + ".removing") << "left by a killed job";
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Model m(test::size(), 2);
  m.train(1, 0);
  CHECK_OK(zrt_checkpoint_save(m.engine, path.c_str(), nullptr));
  EXPECT_FALSE(std::filesystem::exists(path + ".removing")) << "the next save removes it";
  m.train(1, 1);
  auto saved = m.values();
  zrt_request_h request = nullptr;
  CHECK_OK(zrt_checkpoint_save_post(m.engine, path.c_str(), nullptr, &request));
  m.train(1, 2);
  CHECK_OK(zrt_request_wait(request));
  CHECK_OK(zrt_request_free(request));
  // keep_last with "{step}": the older files go the same way.
  zrt_checkpoint_params_t p = {};
  p.field_mask = ZRT_CHECKPOINT_PARAM_FIELD_KEEP_LAST;
  p.keep_last = 1;
  const std::string pattern = dir + "/step_{step}.h5";
  for (int i = 0; i < 3; ++i) {
    CHECK_OK(zrt_checkpoint_save_post(m.engine, pattern.c_str(), &p, &request));
    m.train(1, 3 + i);
    CHECK_OK(zrt_request_wait(request));
    CHECK_OK(zrt_request_free(request));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(disappears(path + ".removing"));
  std::vector<std::string> left;
  for (int i = 0; i < 1000; ++i, usleep(10 * 1000)) {
    left.clear();
    for (auto &e : std::filesystem::directory_iterator(dir))
      left.push_back(e.path().filename());
    std::sort(left.begin(), left.end());
    if (left.size() == 2) break;
  }
  EXPECT_EQ(left, (std::vector<std::string>{"ckpt.h5", "step_00000005.h5"}));
  Model loaded(test::size(), 1);
  CHECK_OK(zrt_checkpoint_load(loaded.engine, path.c_str()));
  EXPECT_EQ(loaded.values(), saved);
}

// Whether O_DIRECT writes go around a page cache in dir: they open (tmpfs before Linux
// 6.6 and some network mounts refuse it), and the file system is not memory itself (tmpfs
// takes O_DIRECT since 6.6, but its pages are the file).
bool direct_io_opens(const std::string &dir) {
  struct statfs fs {};
  constexpr long kTmpfsMagic = 0x01021994;
  if (::statfs(dir.c_str(), &fs) == 0 && static_cast<long>(fs.f_type) == kTmpfsMagic) return false;
  const std::string probe = dir + "/direct_probe";
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_DIRECT, 0644);
  if (fd >= 0) ::close(fd);
  std::remove(probe.c_str());
  return fd >= 0;
}

// The share of [offset, offset + bytes) of path that is in the page cache (mincore).
double resident_share(const std::string &path, uint64_t offset, uint64_t bytes) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return -1;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page, length = offset + bytes - start;
  void *map = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  ::close(fd);
  if (map == MAP_FAILED) return -1;
  std::vector<unsigned char> in((length + page - 1) / page);
  ::mincore(map, length, in.data());
  ::munmap(map, length);
  size_t resident = 0;
  for (unsigned char c : in)
    resident += c & 1;
  return static_cast<double>(resident) / static_cast<double>(in.size());
}

// checkpoint.direct_io=auto writes the aligned blocks with O_DIRECT: right after the save,
// none of a 2 MiB dataset's pages is in the page cache, where with direct_io=off all are;
// the two files hold the same values, and the direct one loads bitwise, around the page
// cache again with auto and through it with off.
TEST(Checkpoint, DirectWritesGoAroundThePageCacheAndWriteTheSameFile) {
  const std::string dir = shared_dir();
  int direct = test::rank() == 0 ? direct_io_opens(dir) : 0;
  MPI_Bcast(&direct, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!direct) GTEST_SKIP() << dir << " does not take O_DIRECT";
  const std::vector<std::vector<int64_t>> big = {{512, 1024}, {1000}, {3, 5}};
  std::map<std::string, std::string> paths;
  std::vector<std::vector<float>> saved;
  for (const char *mode : {"auto", "off"}) {
    SCOPED_TRACE(mode);
    ScopedEnv env("ZRT_CHECKPOINT_DIRECT_IO", mode);
    const std::string path = paths[mode] = fmt::format("{}/direct_{}.h5", dir, mode);
    Model m(test::size(), 2, ZRT_OPTIMIZER_ADAMW, ZRT_DTYPE_FP32, big, 1 << 20);
    m.train(2, 0);
    CHECK_OK(zrt_checkpoint_save(m.engine, path.c_str(), nullptr));
    saved = m.values();
    MPI_Barrier(MPI_COMM_WORLD);
    if (test::rank() == 0) {
      hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
      hid_t d = H5Dopen2(file, "params/layer0.w", H5P_DEFAULT);
      const uint64_t offset = H5Dget_offset(d);
      H5Dclose(d);
      H5Fclose(file);
      const double share = resident_share(path, offset, 512 * 1024 * sizeof(float));
      if (std::string(mode) == "auto")
        EXPECT_EQ(share, 0.0) << "pages of a dataset written with O_DIRECT are cached";
      else
        EXPECT_EQ(share, 1.0) << "pages written through the page cache are not cached";
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  EXPECT_EQ(read_all(paths["auto"]), read_all(paths["off"]));
  // Loads: with direct_io=auto the blocks not in the page cache are read with O_DIRECT and
  // leave it as it was; with off they are read through it. (read_all above read the whole
  // file through the page cache: it is dropped first.)
  auto dataset_share = [&](const std::string &path) {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(file, "params/layer0.w", H5P_DEFAULT);
    const uint64_t offset = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(file);
    return resident_share(path, offset, 512 * 1024 * sizeof(float));
  };
  for (const char *mode : {"auto", "off"}) {
    SCOPED_TRACE(std::string("load, direct_io ") + mode);
    ScopedEnv env("ZRT_CHECKPOINT_DIRECT_IO", mode);
    if (test::rank() == 0) {
      // No ASSERT on one rank: the others would wait at the barrier.
      int fd = ::open(paths["auto"].c_str(), O_RDONLY);
      EXPECT_GE(fd, 0);
      if (fd >= 0) {
        ::fdatasync(fd);
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
      }
      EXPECT_EQ(dataset_share(paths["auto"]), 0.0) << "the page cache kept the file";
    }
    MPI_Barrier(MPI_COMM_WORLD);
    Model loaded(test::size(), 3, ZRT_OPTIMIZER_ADAMW, ZRT_DTYPE_FP32, big);
    CHECK_OK(zrt_checkpoint_load(loaded.engine, paths["auto"].c_str()));
    EXPECT_EQ(loaded.values(), saved);
    MPI_Barrier(MPI_COMM_WORLD);
    if (test::rank() == 0) {
      if (std::string(mode) == "auto")
        EXPECT_EQ(dataset_share(paths["auto"]), 0.0) << "a direct load went through the cache";
      else
        EXPECT_EQ(dataset_share(paths["auto"]), 1.0) << "a buffered load left pages out";
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

// A background write that fails is reported by the next step on every rank, before the
// step changes anything; the previous checkpoint stays, and the step then goes on. The
// failure: the last rank's file size limit (ulimit -f) lies between what the save needs,
// which is checked before it starts, and the offsets of its blocks, which 64 MiB alignment
// puts further out (in a sparse file).
TEST(Checkpoint, AsyncSaveThatCannotWriteFailsOnEveryRankAndKeepsThePrevious) {
  if (test::size() < 2) GTEST_SKIP() << "the failing rank is not rank 0, which lays the file out";
  ScopedEnv aligned("ZRT_CHECKPOINT_ALIGNMENT", "64M");
  ScopedEnv blocks("ZRT_CHECKPOINT_BLOCK_BYTES", "64K");  // every rank writes blocks
  const std::string dir = shared_dir(), path = dir + "/full.h5";
  const std::vector<std::vector<int64_t>> big = {{512, 1024}, {33}};
  // Large buckets: each rank holds long runs of the weights, and so writes blocks.
  Model m(test::size(), 2, ZRT_OPTIMIZER_ADAMW, ZRT_DTYPE_FP32, big, 1 << 20);
  m.train(2, 0);
  CHECK_OK(zrt_checkpoint_save(m.engine, path.c_str(), nullptr));
  auto saved = m.values();
  m.train(1, 2);
  const bool limited = test::rank() == test::size() - 1;
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  if (limited) {
    struct rlimit small = old;
    small.rlim_cur = 32 << 20;  // the save needs about 8 MiB; its datasets start at 64 MiB
    setrlimit(RLIMIT_FSIZE, &small);
  }
  zrt_request_h request = nullptr;
  CHECK_OK(zrt_checkpoint_save_post(m.engine, path.c_str(), nullptr, &request));
  // The limit is the whole process's: lifted once the writer has tried (its first write
  // fails at once), before the steps, whose shared-memory windows may grow their files.
  usleep(300 * 1000);
  if (limited) setrlimit(RLIMIT_FSIZE, &old);
  // Steps until one reports the failure.
  zrt_status_t status = ZRT_SUCCESS;
  std::vector<std::vector<float>> before_failure;
  for (int s = 3; s < 200 && status == ZRT_SUCCESS; ++s) {
    before_failure = m.values();
    status = m.step(s);
  }
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(status, ZRT_ERR_IO);
  mentions(fmt::format("rank {}: cannot write", test::size() - 1));
  mentions("File too large");
  mentions("the checkpoints saved before it are kept");
  EXPECT_EQ(m.values(), before_failure) << "the failed step changed nothing";
  EXPECT_EQ(zrt_engine_step(m.engine, nullptr), ZRT_SUCCESS) << "called again, it steps";
  EXPECT_EQ(zrt_request_wait(request), ZRT_ERR_IO);
  EXPECT_EQ(zrt_request_free(request), ZRT_SUCCESS);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  Model other(test::size(), 3, ZRT_OPTIMIZER_ADAMW, ZRT_DTYPE_FP32, big);
  CHECK_OK(zrt_checkpoint_load(other.engine, path.c_str()));
  EXPECT_EQ(other.values(), saved);
}

TEST(Checkpoint, ResumeIsBitwiseTheUninterruptedRun) {
  const std::string dir = shared_dir();
  const int np = test::size();
  for (zrt_dtype_t dt : {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16})
    for (int save_stage : {0, 3})
      for (int load_stage : {1, 2}) {
        SCOPED_TRACE(fmt::format("dtype {} stage {} -> {}", dt, save_stage, load_stage));
        std::vector<std::vector<float>> straight;
        {
          Model m(np, save_stage, ZRT_OPTIMIZER_ADAMW, dt);
          m.train(6, 0);
          straight = m.values();
        }
        std::string path = fmt::format("{}/resume_{}_{}_{}.h5", dir, dt, save_stage, load_stage);
        {
          Model m(np, save_stage, ZRT_OPTIMIZER_ADAMW, dt);
          m.train(3, 0);
          CHECK_OK(zrt_checkpoint_save(m.engine, path.c_str(), nullptr));
        }
        Model m(np, load_stage, ZRT_OPTIMIZER_ADAMW, dt);
        CHECK_OK(zrt_checkpoint_load(m.engine, path.c_str()));
        m.train(3, 3);
        EXPECT_EQ(m.values(), straight);
      }
}

TEST(Checkpoint, SgdMomentumAndLambStateTravels) {
  const std::string dir = shared_dir();
  for (zrt_optimizer_t opt : {ZRT_OPTIMIZER_SGD, ZRT_OPTIMIZER_LAMB}) {
    std::string path = fmt::format("{}/opt{}.h5", dir, static_cast<int>(opt));
    std::vector<std::vector<float>> straight;
    {
      Model m(test::size(), 2, opt);
      m.train(4, 0);
      straight = m.values();
    }
    {
      Model m(test::size(), 2, opt);
      m.train(2, 0);
      CHECK_OK(zrt_checkpoint_save(m.engine, path.c_str(), nullptr));
    }
    Model m(test::size(), 1, opt);
    CHECK_OK(zrt_checkpoint_load(m.engine, path.c_str()));
    m.train(2, 2);
    EXPECT_EQ(m.values(), straight) << "optimizer " << opt;
    // An Adam engine refuses momentum state, by name.
    if (opt == ZRT_OPTIMIZER_SGD) {
      Model adam(test::size(), 1, ZRT_OPTIMIZER_ADAMW);
      EXPECT_EQ(zrt_checkpoint_load(adam.engine, path.c_str()), ZRT_ERR_IO);
      mentions("holds 'momentum' optimizer state");
    }
  }
}

// Files that fail before any of their state is read (truncated, a dataset missing, a newer
// format, no file, another model) change nothing, and the engine trains on.
TEST(Checkpoint, DamagedFilesAreClearErrorsAndChangeNothing) {
  const std::string dir = shared_dir();
  const std::string good = dir + "/good.h5";
  Model m(test::size(), 2);
  m.train(2, 0);
  CHECK_OK(zrt_checkpoint_save(m.engine, good.c_str(), nullptr));
  auto before = m.values();

  auto damaged = [&](const std::string &name, auto &&damage) {
    std::string path = dir + "/" + name;
    if (test::rank() == 0) {
      std::filesystem::copy_file(good, path, std::filesystem::copy_options::overwrite_existing);
      damage(path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return path;
  };
  auto with_file = [](const std::string &path, auto &&edit) {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    edit(f);
    H5Fclose(f);
  };

  std::string truncated = damaged("truncated.h5", [](const std::string &path) {
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  });
  EXPECT_EQ(zrt_checkpoint_load(m.engine, truncated.c_str()), ZRT_ERR_IO);
  EXPECT_FALSE(test::last_error().empty());

  std::string missing = damaged("missing.h5", [&](const std::string &path) {
    with_file(path, [](hid_t f) { H5Ldelete(f, "optimizer/exp_avg/layer3.w", H5P_DEFAULT); });
  });
  EXPECT_EQ(zrt_checkpoint_load(m.engine, missing.c_str()), ZRT_ERR_IO);
  mentions("optimizer/exp_avg/layer3.w is missing");

  std::string newer = damaged("newer.h5", [&](const std::string &path) {
    with_file(path, [](hid_t f) {
      int64_t v = 99;
      hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
      H5Awrite(a, H5T_NATIVE_INT64, &v);
      H5Aclose(a);
    });
  });
  EXPECT_EQ(zrt_checkpoint_load(m.engine, newer.c_str()), ZRT_ERR_IO);
  mentions("format version 99, newer than this zerort");

  std::string nowhere = dir + "/no-such-file.h5";
  EXPECT_EQ(zrt_checkpoint_load(m.engine, nowhere.c_str()), ZRT_ERR_IO);
  mentions("cannot open checkpoint");

  // A model of another shape.
  auto shapes = kShapes;
  shapes[0] = {7, 6};
  Model other(test::size(), 2, ZRT_OPTIMIZER_ADAMW, ZRT_DTYPE_FP32, shapes);
  EXPECT_EQ(zrt_checkpoint_load(other.engine, good.c_str()), ZRT_ERR_IO);
  mentions(
      "dataset /params/layer0.w has shape [7, 5] but the engine registered 'layer0.w' with shape "
      "[7, 6]");

  // Nothing was overwritten by the failed loads, and the engine steps.
  EXPECT_EQ(m.values(), before);
  CHECK_OK(zrt_checkpoint_load(m.engine, good.c_str()));
  EXPECT_EQ(m.values(), before);
  m.train(1, 2);
}

// A block that does not match its checksum fails the load on every rank, naming the
// dataset and the block. Blocks that matched may have landed (the load copies each block
// as it is checked); the bad block never does, and the engine refuses to step or save
// until a load succeeds or every parameter is set again.
TEST(Checkpoint, ABadBlockNeverLandsAndTheEngineRefusesToStepUntilMended) {
  ScopedEnv small("ZRT_CHECKPOINT_BLOCK_BYTES", "20");  // layer0.w (35 values): 7 blocks
  const std::string dir = shared_dir();
  const std::string good = dir + "/good_blocks.h5", bad = dir + "/bad_block.h5";
  Model m(test::size(), 2);
  m.train(2, 0);
  CHECK_OK(zrt_checkpoint_save(m.engine, good.c_str(), nullptr));
  const auto saved = m.values();
  if (test::rank() == 0) {
    std::filesystem::copy_file(good, bad, std::filesystem::copy_options::overwrite_existing);
    hid_t f = H5Fopen(bad.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "params/layer0.w", H5P_DEFAULT);
    const haddr_t offset = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
    std::fstream io(bad, std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>(offset + 12 * sizeof(float) + 1);  // block 2
    io.seekg(at);
    char c = 0;
    io.read(&c, 1);
    c = static_cast<char>(c ^ 0x40);
    io.seekp(at);
    io.write(&c, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "mended by a load" : "mended by zrt_param_set");
    m.train(1, 2 + round);
    const auto trained = m.values();  // the engine's own state, not the file's
    ASSERT_NE(saved[0], trained[0]);
    EXPECT_EQ(zrt_checkpoint_load(m.engine, bad.c_str()), ZRT_ERR_IO);
    mentions("dataset /params/layer0.w does not match its checksum (block 2 of 7: elements 10..14");
    mentions("refuses to step or save until a checkpoint loads or every parameter is set");
    const auto mixed = m.values();
    for (size_t i = 10; i < 15; ++i)
      EXPECT_EQ(mixed[0][i], trained[0][i]) << "element " << i << " of the bad block landed";
    for (size_t i = 0; i < 5; ++i)  // block 0 comes before the bad one: it landed
      EXPECT_EQ(mixed[0][i], saved[0][i]) << "element " << i;
    // Refused, and left between steps so that it can be mended.
    EXPECT_EQ(m.step(5), ZRT_ERR_INVALID_STATE);
    mentions("zrt_engine_step refused: a load of");
    mentions("the first 'layer0.w'");
    EXPECT_EQ(zrt_checkpoint_save(m.engine, (dir + "/laundered.h5").c_str(), nullptr),
              ZRT_ERR_INVALID_STATE);
    mentions("zrt_checkpoint_save refused");
    if (round == 0) {
      CHECK_OK(zrt_checkpoint_load(m.engine, good.c_str()));
      EXPECT_EQ(m.values(), saved);
    } else {
      for (size_t t = 0; t + 1 < m.params.size(); ++t)
        CHECK_OK(zrt_param_set(m.engine, m.params[t], trained[t].data(), ZRT_DTYPE_FP32));
      EXPECT_EQ(m.step(5), ZRT_ERR_INVALID_STATE);
      mentions(fmt::format("1 of {} not set since, the first 'layer{}.w'", m.params.size(),
                           m.params.size() - 1));
      CHECK_OK(zrt_param_set(m.engine, m.params.back(), trained.back().data(), ZRT_DTYPE_FP32));
      EXPECT_EQ(m.values(), trained);
    }
    m.train(1, 5);
  }
}

TEST(Checkpoint, KeepLastMetadataAndBetweenSteps) {
  const std::string dir = shared_dir() + "/keep";
  if (test::rank() == 0) std::filesystem::create_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  Model m(test::size(), 3);
  zrt_checkpoint_params_t p = {};
  p.field_mask = ZRT_CHECKPOINT_PARAM_FIELD_KEEP_LAST | ZRT_CHECKPOINT_PARAM_FIELD_METADATA;
  p.keep_last = 2;
  std::string pattern = dir + "/ckpt_{step}.h5";
  for (int i = 0; i < 4; ++i) {
    m.train(1, i);
    std::string meta = fmt::format(R"({{"loader_position": {}, "seed": 1234}})", 1000 * (i + 1));
    p.metadata = meta.c_str();
    CHECK_OK(zrt_checkpoint_save(m.engine, pattern.c_str(), &p));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<std::string> left;
  for (auto &e : std::filesystem::directory_iterator(dir))
    left.push_back(e.path().filename());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"ckpt_00000003.h5", "ckpt_00000004.h5"}));
  size_t n = 0;
  std::string last = dir + "/ckpt_00000004.h5";
  CHECK_OK(zrt_checkpoint_describe(last.c_str(), nullptr, 0, &n));
  std::string text(n + 1, '\0');
  CHECK_OK(zrt_checkpoint_describe(last.c_str(), text.data(), text.size(), &n));
  text.resize(n);
  nlohmann::json d = nlohmann::json::parse(text);
  EXPECT_EQ(d["step"], 4);
  EXPECT_EQ(d["stage"], 3);
  EXPECT_EQ(d["world_size"], test::size());
  EXPECT_EQ(d["metadata"]["loader_position"], 4000);
  EXPECT_EQ(d["optimizer"]["type"], "adamw");

  // Not in the middle of a step, and not with bad metadata.
  void *g = nullptr;
  CHECK_OK(zrt_param_grad_data(m.engine, m.params[0], &g));
  CHECK_OK(zrt_param_grad_ready(m.engine, m.params[0]));
  EXPECT_EQ(zrt_checkpoint_save(m.engine, (dir + "/x.h5").c_str(), nullptr), ZRT_ERR_INVALID_STATE);
  mentions("between optimizer steps");
  for (size_t t = 1; t < m.params.size(); ++t) {
    CHECK_OK(zrt_param_grad_data(m.engine, m.params[t], &g));
    CHECK_OK(zrt_param_grad_ready(m.engine, m.params[t]));
  }
  CHECK_OK(zrt_engine_step(m.engine, nullptr));
  p.metadata = "{not json";
  EXPECT_EQ(zrt_checkpoint_save(m.engine, (dir + "/x.h5").c_str(), &p), ZRT_ERR_INVALID_ARGUMENT);
  mentions("metadata is not valid JSON");
}

TEST(Checkpoint, WeightsOnlyFilesLoadWithFreshOptimizerState) {
  const std::string path = shared_dir() + "/weights_only.h5";
  std::vector<std::vector<float>> weights;
  if (test::rank() == 0) {
    zrt_checkpoint_h c = nullptr;
    CHECK_OK(zrt_checkpoint_create(path.c_str(), R"({"source": "test"})", &c));
    for (size_t t = 0; t < kShapes.size(); ++t) {
      size_t n = 1;
      for (auto d : kShapes[t])
        n *= static_cast<size_t>(d);
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<float>(t) + 0.001f * static_cast<float>(i);
      CHECK_OK(zrt_checkpoint_write(c, fmt::format("layer{}.w", t).c_str(),
                                    static_cast<int>(kShapes[t].size()), kShapes[t].data(),
                                    v.data()));
      weights.push_back(v);
    }
    EXPECT_EQ(zrt_checkpoint_write(c, "layer0.w", 1, kShapes[1].data(), weights[1].data()),
              ZRT_ERR_INVALID_ARGUMENT);
    CHECK_OK(zrt_checkpoint_close(c));
    // Verify with the reader.
    CHECK_OK(zrt_checkpoint_open(path.c_str(), &c));
    int count = 0, ok = 0;
    zrt_checkpoint_tensor_count(c, &count);
    EXPECT_EQ(count, static_cast<int>(kShapes.size()));
    for (int i = 0; i < count; ++i) {
      CHECK_OK(zrt_checkpoint_verify(c, i, &ok));
      EXPECT_EQ(ok, 1);
    }
    zrt_checkpoint_close(c);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Model m(test::size(), 2);
  CHECK_OK(zrt_checkpoint_load(m.engine, path.c_str()));
  if (test::rank() == 0) {
    EXPECT_EQ(m.values(), weights);
  } else {
    m.values();
  }
  m.train(1, 0);  // moments start from zero: a normal first step
  zrt_step_report_t r{};
  r.field_mask = ZRT_STEP_REPORT_FIELD_ALL;
  for (zrt_param_h h : m.params) {
    void *g = nullptr;
    CHECK_OK(zrt_param_grad_data(m.engine, h, &g));
    CHECK_OK(zrt_param_grad_ready(m.engine, h));
  }
  CHECK_OK(zrt_engine_step(m.engine, &r));
  EXPECT_EQ(r.step, 2);
}

TEST(Checkpoint, PathsThatAreNotRegularFilesAreRefusedWithoutWaiting) {
  // Each rank its own FIFO and folder (the pid in their names): open and describe are local.
  const test::NotRegularFiles paths("ckpt");
  for (const test::NotRegular &p : paths.all()) {
    SCOPED_TRACE(p.path);
    const std::string want = "cannot open checkpoint " + p.path + ": it is " + p.kind;
    zrt_status_t open_status = ZRT_SUCCESS, describe_status = ZRT_SUCCESS;
    std::string open_error, describe_error;  // the last error is the calling thread's
    ASSERT_TRUE(test::returns_within(
        [&] {
          zrt_checkpoint_h c = nullptr;
          open_status = zrt_checkpoint_open(p.path.c_str(), &c);
          open_error = zrt_last_error_message();
          if (open_status == ZRT_SUCCESS) zrt_checkpoint_close(c);
          size_t n = 0;
          describe_status = zrt_checkpoint_describe(p.path.c_str(), nullptr, 0, &n);
          describe_error = zrt_last_error_message();
        },
        paths.fifo()))
        << "zrt_checkpoint_open or zrt_checkpoint_describe blocked on " << p.path;
    EXPECT_EQ(open_status, ZRT_ERR_IO);
    EXPECT_NE(open_error.find("zrt_checkpoint_open: " + want), std::string::npos) << open_error;
    EXPECT_EQ(describe_status, ZRT_ERR_IO);
    EXPECT_NE(describe_error.find("zrt_checkpoint_describe: " + want), std::string::npos)
        << describe_error;
  }
  // A load agrees on the path: rank 0's FIFO, named on every rank.
  const std::string fifo = shared_dir() + "/load.fifo";
  if (test::rank() == 0) {
    EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  {
    Model m(test::size(), 2);
    EXPECT_EQ(zrt_checkpoint_load(m.engine, fifo.c_str()), ZRT_ERR_IO);
    mentions("cannot open checkpoint " + fifo + ": it is a FIFO (named pipe), not a regular file");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (test::rank() == 0) std::remove(fifo.c_str());
}

TEST(Checkpoint, DottedAndNestedNamesSaveAndLoad) {
  const std::string path = shared_dir() + "/names.h5";
  const std::vector<std::string> names = {"h.0.attn.c_attn.weight", "a/b", "a/c", "a/d/e", "..x"};
  const auto engine = [&](zrt_context_h ctx, std::vector<zrt_param_h> &params) {
    zrt_engine_params_t p = {};
    p.field_mask = ZRT_ENGINE_PARAM_FIELD_STAGE;
    p.stage = 2;
    zrt_engine_h e = nullptr;
    EXPECT_EQ(zrt_engine_create(ctx, &p, &e), ZRT_SUCCESS) << test::last_error();
    for (const std::string &n : names) {
      const int64_t shape = 10;
      zrt_param_h h = nullptr;
      EXPECT_EQ(zrt_param_register(e, n.c_str(), ZRT_DTYPE_FP32, 1, &shape, &h), ZRT_SUCCESS)
          << n << ": " << test::last_error();
      params.push_back(h);
    }
    EXPECT_EQ(zrt_engine_commit(e), ZRT_SUCCESS) << test::last_error();
    return e;
  };
  std::vector<zrt_param_h> saved, loaded;
  zrt_engine_h a = engine(test::context(), saved);
  for (size_t i = 0; i < saved.size(); ++i) {
    std::vector<float> v(10, static_cast<float>(i) + 0.5f);
    CHECK_OK(zrt_param_set(a, saved[i], v.data(), ZRT_DTYPE_FP32));
  }
  EXPECT_EQ(zrt_checkpoint_save(a, path.c_str(), nullptr), ZRT_SUCCESS) << test::last_error();
  zrt_engine_h b = engine(test::context(), loaded);
  EXPECT_EQ(zrt_checkpoint_load(b, path.c_str()), ZRT_SUCCESS) << test::last_error();
  for (size_t i = 0; i < loaded.size(); ++i) {
    std::vector<float> v(10);
    CHECK_OK(zrt_param_get(b, loaded[i], v.data(), ZRT_DTYPE_FP32));
    EXPECT_EQ(v, std::vector<float>(10, static_cast<float>(i) + 0.5f)) << names[i];
  }
  // The file holds them under the names registered.
  std::map<std::string, std::vector<float>> all = read_all(path);
  for (const std::string &n : names)
    EXPECT_EQ(all.count("params/" + n), 1u) << n;
  zrt_engine_destroy(b);
  zrt_engine_destroy(a);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(Checkpoint, WeightsOnlyFilesRefuseNamesThatCollide) {
  if (test::rank() != 0) return;
  const std::string path = fmt::format("{}/collide_{}.h5", ::testing::TempDir(), getpid());
  zrt_checkpoint_h c = nullptr;
  CHECK_OK(zrt_checkpoint_create(path.c_str(), nullptr, &c));
  const int64_t shape = 2;
  const float v[2] = {1, 2};
  CHECK_OK(zrt_checkpoint_write(c, "a/b", 1, &shape, v));
  EXPECT_EQ(zrt_checkpoint_write(c, "a", 1, &shape, v), ZRT_ERR_INVALID_ARGUMENT);
  mentions("tensor 'a' would be a tensor where 'a/b' (the tensor written before) needs a group");
  EXPECT_EQ(zrt_checkpoint_write(c, "a/b/c", 1, &shape, v), ZRT_ERR_INVALID_ARGUMENT);
  mentions("tensor 'a/b/c' would be stored inside 'a/b', which is a tensor");
  EXPECT_EQ(zrt_checkpoint_write(c, "/a/b", 1, &shape, v), ZRT_ERR_INVALID_ARGUMENT);
  mentions("tensor '/a/b' would be stored in a checkpoint as 'a/b'");
  EXPECT_EQ(zrt_checkpoint_write(c, "a/b", 1, &shape, v), ZRT_ERR_INVALID_ARGUMENT);
  mentions("'a/b' was already written");
  CHECK_OK(zrt_checkpoint_write(c, "a/c", 1, &shape, v));
  CHECK_OK(zrt_checkpoint_close(c));
  std::map<std::string, std::vector<float>> all = read_all(path);
  EXPECT_EQ(all.size(), 2u);
  std::remove(path.c_str());
}
