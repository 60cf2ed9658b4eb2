// Every backend x collective x dtype x op over a spread of sizes (one element, sizes the
// rank count does not divide, a megabyte, 64 MiB) against the serial reference that each
// rank computes from every rank's seeded input; deterministic mode against the rank-order
// reference and bitwise across backends.
//
// The backends come from ZERORT_TEST_BACKENDS (comma-separated) or default to every host
// backend of the build; ctest runs this binary once per setting worth testing (UCX over
// tcp and over shared memory, hierarchical on faked nodes).
#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/mpi_fixture.hpp"
#include "support/reference.hpp"

using namespace test;

namespace {

std::vector<std::string> test_backends() {
  const char *env = std::getenv("ZERORT_TEST_BACKENDS");
  std::string list = env != nullptr ? env : "mpi,shm,ucx,hier";
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    if (name.empty()) continue;
    out.push_back(name);
  }
  return out;
}

bool built(const std::string &backend) {
  size_t n = 0;
  zrt_context_describe(test::context(), nullptr, 0, &n);
  std::string s(n + 1, '\0');
  zrt_context_describe(test::context(), s.data(), s.size(), &n);
  s.resize(n);
  const auto j = nlohmann::json::parse(s);
  for (const auto &b : j["comm"]["backends"])
    if (b == backend) return true;
  return false;
}

// One communicator per backend and mode, made on first use (collectively: every rank runs
// the tests in the same order) and destroyed by zrt_finalize.
zrt_comm_h comm_for(const std::string &backend, bool deterministic, std::string *error) {
  static std::map<std::pair<std::string, bool>, zrt_comm_h> comms;
  auto key = std::make_pair(backend, deterministic);
  if (auto it = comms.find(key); it != comms.end()) return it->second;
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND | ZRT_COMM_PARAM_FIELD_DETERMINISTIC;
  p.backend = backend.c_str();
  p.deterministic = deterministic ? 1 : 0;
  zrt_comm_h c = nullptr;
  if (zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, &c) != ZRT_SUCCESS) {
    *error = test::last_error();
    c = nullptr;
  } else {
    const char *runs = nullptr;
    zrt_comm_backend(c, &runs);
    // ucx must really be ucx here: a silent fallback to mpi would test mpi twice.
    if (backend != runs) *error = fmt::format("backend {} asked for, {} serves", backend, runs);
  }
  comms[key] = c;
  return c;
}

std::string param_name(const ::testing::TestParamInfo<std::string> &info) {
  return info.param;
}

}  // namespace

// Outside the anonymous namespace: the tests derive from it, and in the unity build they
// would otherwise be classes with internal-linkage bases (-Wsubobject-linkage).
class Backends : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!built(GetParam())) GTEST_SKIP() << "backend " << GetParam() << " is not in this build";
    std::string error;
    comm_ = comm_for(GetParam(), false, &error);
    ASSERT_NE(comm_, nullptr) << error;
    ASSERT_EQ(error, "");
  }
  zrt_comm_h deterministic_comm() {
    std::string error;
    zrt_comm_h c = comm_for(GetParam(), true, &error);
    EXPECT_EQ(error, "");
    return c;
  }
  zrt_comm_h comm_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Each, Backends, ::testing::ValuesIn(test_backends()), param_name);

TEST_P(Backends, AllReduceMatchesSerialReference) {
  int n = size(), me = rank(), salt = 100;
  for (zrt_dtype_t dt : kDtypes)
    for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG})
      for (size_t count : counts(n)) {
        ++salt;
        SCOPED_TRACE(
            fmt::format("{} {} count {}", name(dt), op == ZRT_OP_SUM ? "sum" : "avg", count));
        std::vector<char> send(count * esize(dt)), recv(count * esize(dt));
        for (size_t i = 0; i < count; ++i)
          put(send.data(), i, dt, input(me, i, salt, dt));
        ASSERT_EQ(zrt_comm_all_reduce(comm_, send.data(), recv.data(), count, dt, op), ZRT_SUCCESS)
            << last_error();
        EXPECT_EQ(compare(recv.data(), count, dt,
                          [&](size_t i) { return reference(i, salt, dt, op, n); }),
                  "");
      }
}

TEST_P(Backends, ReduceScatterMatchesSerialReferenceAndZeroesPadding) {
  int n = size(), me = rank(), salt = 2000;
  for (zrt_dtype_t dt : kDtypes)
    for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG})
      for (size_t count : counts(n)) {
        ++salt;
        SCOPED_TRACE(
            fmt::format("{} {} count {}", name(dt), op == ZRT_OP_SUM ? "sum" : "avg", count));
        size_t offset = 0, length = 0, shard = 0;
        ASSERT_EQ(zrt_shard_range(count, n, me, &offset, &length, &shard), ZRT_SUCCESS);
        std::vector<char> send(count * esize(dt)), recv(shard * esize(dt), static_cast<char>(0x7b));
        for (size_t i = 0; i < count; ++i)
          put(send.data(), i, dt, input(me, i, salt, dt));
        ASSERT_EQ(zrt_comm_reduce_scatter(comm_, send.data(), recv.data(), count, dt, op),
                  ZRT_SUCCESS)
            << last_error();
        EXPECT_EQ(compare(recv.data(), length, dt,
                          [&](size_t i) { return reference(offset + i, salt, dt, op, n); }),
                  "");
        for (size_t i = length * esize(dt); i < recv.size(); ++i)
          ASSERT_EQ(recv[i], 0) << "padding byte " << i << " of a shard with " << length
                                << " valid elements";
      }
}

TEST_P(Backends, AllGatherMatchesSerialReference) {
  int n = size(), me = rank(), salt = 4000;
  for (zrt_dtype_t dt : kDtypes)
    for (size_t count : counts(n)) {
      ++salt;
      SCOPED_TRACE(fmt::format("{} count {}", name(dt), count));
      size_t offset = 0, length = 0;
      zrt_shard_range(count, n, me, &offset, &length, nullptr);
      std::vector<char> send(length * esize(dt) + 8), recv(count * esize(dt));
      for (size_t i = 0; i < length; ++i)
        put(send.data(), i, dt, input(me, offset + i, salt, dt));
      ASSERT_EQ(zrt_comm_all_gather(comm_, send.data(), recv.data(), count, dt), ZRT_SUCCESS)
          << last_error();
      // Gathering copies: exact.
      EXPECT_EQ(compare(recv.data(), count, dt,
                        [&](size_t i) {
                          int owner = static_cast<int>(i / ((count + n - 1) / n));
                          return Expect{input(owner, i, salt, dt), 0.0};
                        }),
                "");
    }
}

TEST_P(Backends, BroadcastFromEveryRoot) {
  int n = size(), me = rank();
  for (zrt_dtype_t dt : kDtypes)
    for (size_t count : {size_t{1}, size_t{1037}, (size_t{1} << 19) + 3}) {
      for (int root = 0; root < n; ++root) {
        int salt = 6000 + root;
        std::vector<char> buf(count * esize(dt));
        for (size_t i = 0; i < count; ++i)
          put(buf.data(), i, dt, input(me, i, salt, dt));
        ASSERT_EQ(zrt_comm_broadcast(comm_, buf.data(), count, dt, root), ZRT_SUCCESS)
            << last_error();
        EXPECT_EQ(compare(buf.data(), count, dt,
                          [&](size_t i) {
                            return Expect{input(root, i, salt, dt), 0.0};
                          }),
                  "")
            << "root " << root << " count " << count;
      }
    }
}

TEST_P(Backends, InPlaceForms) {
  int n = size(), me = rank();
  for (size_t count : {size_t{3001}, (size_t{1} << 20) + 3}) {
    std::vector<float> buf(count);
    for (size_t i = 0; i < count; ++i)
      buf[i] = static_cast<float>(me + 1) * static_cast<float>(i % 7);
    ASSERT_EQ(zrt_comm_all_reduce(comm_, buf.data(), buf.data(), count, ZRT_DTYPE_FP32, ZRT_OP_SUM),
              ZRT_SUCCESS)
        << last_error();
    float ranks_sum = static_cast<float>(n * (n + 1) / 2);
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(buf[i], ranks_sum * static_cast<float>(i % 7)) << "element " << i;

    size_t offset = 0, length = 0;
    zrt_shard_range(count, n, me, &offset, &length, nullptr);
    std::vector<double> all(count, -1.0);
    for (size_t i = 0; i < length; ++i)
      all[offset + i] = static_cast<double>(offset + i);
    ASSERT_EQ(zrt_comm_all_gather(comm_, all.data() + offset, all.data(), count, ZRT_DTYPE_FP64),
              ZRT_SUCCESS)
        << last_error();
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(all[i], static_cast<double>(i)) << "element " << i;
  }
}

// 64 MiB buffers: many pipeline steps and slot reuses in every backend. fp32 and bf16 by
// default (the arithmetic of every dtype is covered at the sizes above); all four with
// ZERORT_TEST_LONG=1 (the `long` ctest label).
TEST_P(Backends, SixtyFourMebibytes) {
  int n = size(), me = rank(), salt = 7000;
#if ZRT_SANITIZE
  // Sanitizers look for memory errors, which 4 MiB (16 shm slots, 4 ucx chunks) finds as
  // well; 64 MiB through an unoptimized, instrumented build takes a quarter of an hour.
  const size_t bytes = size_t{4} << 20;
#else
  const size_t bytes = size_t{64} << 20;
#endif
  const bool all = std::getenv("ZERORT_TEST_LONG") != nullptr;
  for (zrt_dtype_t dt : kDtypes) {
    ++salt;
    if (!all && dt != ZRT_DTYPE_FP32 && dt != ZRT_DTYPE_BF16) continue;
    const size_t count = bytes / esize(dt);
    SCOPED_TRACE(fmt::format("{} count {}", name(dt), count));
    size_t offset = 0, length = 0, shard = 0;
    zrt_shard_range(count, n, me, &offset, &length, &shard);
    std::vector<char> send(bytes), part(bytes), gathered(bytes), all_reduced(bytes);
    for (size_t i = 0; i < count; ++i)
      put(send.data(), i, dt, input(me, i, salt, dt));
    ASSERT_EQ(zrt_comm_reduce_scatter(comm_, send.data(), part.data(), count, dt, ZRT_OP_SUM),
              ZRT_SUCCESS)
        << last_error();
    // The reduced shards gathered back, and the all-reduce, against the reference.
    ASSERT_EQ(zrt_comm_all_gather(comm_, part.data(), gathered.data(), count, dt), ZRT_SUCCESS)
        << last_error();
    ASSERT_EQ(zrt_comm_all_reduce(comm_, send.data(), all_reduced.data(), count, dt, ZRT_OP_SUM),
              ZRT_SUCCESS)
        << last_error();
    // Every 13th element and the last: a slot reused too early or a pipeline step put in
    // the wrong place spoils a whole chunk (KiBs), which this stride cannot miss. The serial
    // reference costs n inputs per element, four fifths of this test's time when it read
    // every element (every element is checked at the sizes of the tests above).
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < count; i = i == count - 1 ? count : std::min(i + 13, count - 1)) {
      Expect e = reference(i, salt, dt, ZRT_OP_SUM, n);
      bool ok = std::fabs(get(gathered.data(), i, dt) - e.value) <= e.tolerance &&
                std::fabs(get(all_reduced.data(), i, dt) - e.value) <= e.tolerance;
      if (!ok && bad++ == 0) first = i;
    }
    EXPECT_EQ(bad, 0u) << "first bad element " << first << ": reduce-scatter + all-gather "
                       << get(gathered.data(), first, dt) << ", all-reduce "
                       << get(all_reduced.data(), first, dt) << ", reference "
                       << reference(first, salt, dt, ZRT_OP_SUM, n).value;
  }
}

TEST_P(Backends, RequestsInFlightTogetherTestedInAnyOrder) {
  int n = size(), me = rank();
  const int k = 8;
  const size_t count = 300007;
  std::vector<std::vector<float>> send(k, std::vector<float>(count)),
      recv(k, std::vector<float>(count));
  std::vector<zrt_request_h> req(k);
  for (int j = 0; j < k; ++j) {
    for (size_t i = 0; i < count; ++i)
      send[j][i] = static_cast<float>((me + j + i) % 5);
    zrt_status_t st = ZRT_SUCCESS;
    size_t offset = 0, length = 0;
    zrt_shard_range(count, n, me, &offset, &length, nullptr);
    switch (j % 3) {
      case 0:
        st = zrt_comm_all_reduce_post(comm_, send[j].data(), recv[j].data(), count, ZRT_DTYPE_FP32,
                                      ZRT_OP_SUM, &req[j]);
        break;
      case 1:
        st = zrt_comm_reduce_scatter_post(comm_, send[j].data(), recv[j].data(), count,
                                          ZRT_DTYPE_FP32, ZRT_OP_SUM, &req[j]);
        break;
      default:
        st = zrt_comm_all_gather_post(comm_, send[j].data() + offset, recv[j].data(), count,
                                      ZRT_DTYPE_FP32, &req[j]);
        break;
    }
    ASSERT_EQ(st, ZRT_SUCCESS) << last_error();
  }
  // Even ranks drive the last request first: zerort must still run them in order.
  for (int step = 0; step < k; ++step) {
    int j = me % 2 == 0 ? k - 1 - step : step;
    ASSERT_EQ(zrt_request_wait(req[j]), ZRT_SUCCESS) << last_error();
  }
  size_t offset = 0, length = 0;
  zrt_shard_range(count, n, me, &offset, &length, nullptr);
  for (int j = 0; j < k; ++j) {
    auto summed = [&](size_t i) {
      float want = 0;
      for (int r = 0; r < n; ++r)
        want += static_cast<float>((r + j + i) % 5);
      return want;
    };
    if (j % 3 == 0) {
      EXPECT_EQ(recv[j][count - 1], summed(count - 1)) << "request " << j;
    } else if (j % 3 == 1) {
      if (length > 0) {
        EXPECT_EQ(recv[j][length - 1], summed(offset + length - 1)) << "request " << j;
      }
    } else {
      EXPECT_EQ(recv[j][count - 1], static_cast<float>((n - 1 + j + count - 1) % 5))
          << "request " << j;
    }
    EXPECT_EQ(zrt_request_free(req[j]), ZRT_SUCCESS);
  }
}

// A multi-phase collective (all-reduce as reduce-scatter then all-gather; the levels of
// hier) must start its later phases in sequence order on every rank, whichever first phase
// happens to finish first there. Here the ranks post a mix whose first and second phases
// interleave (a reduce-scatter's network phase comes second, an all-gather's first), large
// and tiny, arrive at the posts at different times, drive different requests meanwhile and
// wait in different orders, so the first phases finish in a different order on each rank.
// A backend that started second phases on completion would deadlock (the watchdog turns
// that into an error here) or mix up the data.
TEST_P(Backends, LaterPhasesStartInSequenceOrderWhateverFinishesFirst) {
  const int n = size(), me = rank();
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND | ZRT_COMM_PARAM_FIELD_TIMEOUT;
  p.backend = GetParam().c_str();
  p.timeout = 60;
  zrt_comm_h c = nullptr;
  ASSERT_EQ(zrt_comm_create(context(), MPI_COMM_WORLD, &p, &c), ZRT_SUCCESS) << last_error();
  enum Kind { RS, AG, AR, BC };
  const Kind kinds[] = {AR, RS, AG, AR, AG, RS, BC, AR, RS, AG};
  const int k = static_cast<int>(sizeof(kinds) / sizeof(kinds[0]));
  for (int round = 0; round < 4; ++round) {
    std::vector<size_t> count(k);
    std::vector<std::vector<float>> send(k), recv(k);
    std::vector<zrt_request_h> req(k, nullptr);
    for (int j = 0; j < k; ++j) {
      count[j] = (j + round) % 2 == 0 ? (size_t{1} << 18) + 5 + static_cast<size_t>(j) : 37;
      send[j].resize(count[j]);
      recv[j].assign(count[j], -1.0f);
      for (size_t i = 0; i < count[j]; ++i)
        send[j][i] = static_cast<float>((static_cast<size_t>(me + j + round) + i) % 5);
      if ((me + j + round) % 2 == 1) {
        std::this_thread::sleep_for(std::chrono::microseconds(300 * (me + 1)));
      } else if (j > 0) {
        for (int t = 0; t < 64; ++t)
          if (zrt_request_test(req[static_cast<size_t>(j - 1)]) != ZRT_IN_PROGRESS) break;
      }
      size_t offset = 0, length = 0;
      zrt_shard_range(count[j], n, me, &offset, &length, nullptr);
      zrt_status_t st = ZRT_SUCCESS;
      switch (kinds[j]) {
        case RS:
          st = zrt_comm_reduce_scatter_post(c, send[j].data(), recv[j].data(), count[j],
                                            ZRT_DTYPE_FP32, ZRT_OP_SUM, &req[j]);
          break;
        case AG:
          st = zrt_comm_all_gather_post(c, send[j].data() + offset, recv[j].data(), count[j],
                                        ZRT_DTYPE_FP32, &req[j]);
          break;
        case AR:
          st = zrt_comm_all_reduce_post(c, send[j].data(), recv[j].data(), count[j], ZRT_DTYPE_FP32,
                                        ZRT_OP_SUM, &req[j]);
          break;
        case BC:
          recv[j] = send[j];
          st = zrt_comm_broadcast_post(c, recv[j].data(), count[j], ZRT_DTYPE_FP32, (j + round) % n,
                                       &req[j]);
          break;
      }
      ASSERT_EQ(st, ZRT_SUCCESS) << last_error();
    }
    for (int step = 0; step < k; ++step) {
      const int j = me % 2 == 0 ? k - 1 - step : (step + me + round) % k;
      ASSERT_EQ(zrt_request_wait(req[static_cast<size_t>(j)]), ZRT_SUCCESS)
          << "round " << round << " request " << j << ": " << last_error();
    }
    for (int j = 0; j < k; ++j) {
      SCOPED_TRACE(fmt::format("round {} request {} count {}", round, j, count[j]));
      auto value = [&](int r, size_t i) {
        return static_cast<float>((static_cast<size_t>(r + j + round) + i) % 5);
      };
      auto summed = [&](size_t i) {
        float want = 0;
        for (int r = 0; r < n; ++r)
          want += value(r, i);
        return want;
      };
      size_t offset = 0, length = 0;
      zrt_shard_range(count[j], n, me, &offset, &length, nullptr);
      const size_t shard = (count[j] + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
      size_t bad = 0, first = 0;
      auto check = [&](size_t i, float got, float want) {
        if (got != want && bad++ == 0) first = i;
      };
      switch (kinds[j]) {
        case RS:
          for (size_t i = 0; i < length; ++i)
            check(i, recv[j][i], summed(offset + i));
          break;
        case AG:
          for (size_t i = 0; i < count[j]; ++i)
            check(i, recv[j][i], value(static_cast<int>(i / shard), i));
          break;
        case AR:
          for (size_t i = 0; i < count[j]; ++i)
            check(i, recv[j][i], summed(i));
          break;
        case BC:
          for (size_t i = 0; i < count[j]; ++i)
            check(i, recv[j][i], value((j + round) % n, i));
          break;
      }
      EXPECT_EQ(bad, 0u) << "first wrong element " << first;
      EXPECT_EQ(zrt_request_free(req[static_cast<size_t>(j)]), ZRT_SUCCESS);
    }
  }
  EXPECT_EQ(zrt_comm_destroy(c), ZRT_SUCCESS) << last_error();
}

TEST_P(Backends, DeterministicReductionsAddInRankOrderAndRoundOnce) {
  int n = size(), me = rank(), salt = 9000;
  zrt_comm_h comm = deterministic_comm();
  ASSERT_NE(comm, nullptr);
  for (zrt_dtype_t dt : kDtypes)
    for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG})
      for (size_t count : counts(n)) {
        ++salt;
        SCOPED_TRACE(
            fmt::format("{} {} count {}", name(dt), op == ZRT_OP_SUM ? "sum" : "avg", count));
        size_t es = esize(dt), offset = 0, length = 0, shard = 0;
        zrt_shard_range(count, n, me, &offset, &length, &shard);
        std::vector<char> send(count * es), all(count * es), part(shard * es), gathered(count * es);
        for (size_t i = 0; i < count; ++i)
          put(send.data(), i, dt, input(me, i, salt, dt));
        ASSERT_EQ(zrt_comm_all_reduce(comm, send.data(), all.data(), count, dt, op), ZRT_SUCCESS)
            << last_error();
        ASSERT_EQ(zrt_comm_reduce_scatter(comm, send.data(), part.data(), count, dt, op),
                  ZRT_SUCCESS);
        ASSERT_EQ(zrt_comm_all_gather(comm, part.data(), gathered.data(), count, dt), ZRT_SUCCESS);
        // Bitwise: all-reduce equals reduce-scatter + all-gather, and both the reference.
        EXPECT_EQ(std::memcmp(all.data(), gathered.data(), all.size()), 0);
        EXPECT_EQ(compare(all.data(), count, dt,
                          [&](size_t i) {
                            return Expect{ordered_reference(i, salt, dt, op, n), 0.0};
                          }),
                  "");
      }
}

// Deterministic mode gives the same bits on every backend (the per-backend test above
// compares each with the reference; this one compares them with each other directly,
// on inputs that make rounding differences likely: many magnitudes, cancellations).
TEST(DeterministicAcrossBackends, BitwiseEqual) {
  int n = size(), me = rank();
  std::vector<std::string> backends;
  for (const std::string &b : test_backends())
    if (built(b)) backends.push_back(b);
  if (backends.size() < 2) GTEST_SKIP() << "needs two backends";
  for (zrt_dtype_t dt : kDtypes)
    for (size_t count : {size_t{1}, size_t{4099}, (size_t{1} << 20) + 5}) {
      SCOPED_TRACE(fmt::format("{} count {}", name(dt), count));
      size_t es = esize(dt), shard = 0;
      zrt_shard_range(count, n, me, nullptr, nullptr, &shard);
      std::vector<char> send(count * es);
      for (size_t i = 0; i < count; ++i)
        put(send.data(), i, dt,
            input(me, i, 31, dt) * std::ldexp(1.0, static_cast<int>((i * 7 + me) % 13) - 6));
      std::vector<char> first_all, first_part;
      for (const std::string &b : backends) {
        std::string error;
        zrt_comm_h comm = comm_for(b, true, &error);
        ASSERT_NE(comm, nullptr) << error;
        std::vector<char> all(count * es), part(shard * es);
        ASSERT_EQ(zrt_comm_all_reduce(comm, send.data(), all.data(), count, dt, ZRT_OP_AVG),
                  ZRT_SUCCESS)
            << last_error();
        ASSERT_EQ(zrt_comm_reduce_scatter(comm, send.data(), part.data(), count, dt, ZRT_OP_SUM),
                  ZRT_SUCCESS)
            << last_error();
        if (first_all.empty()) {
          first_all = all;
          first_part = part;
          continue;
        }
        EXPECT_EQ(std::memcmp(all.data(), first_all.data(), all.size()), 0)
            << "all_reduce on " << b << " differs from " << backends.front();
        EXPECT_EQ(std::memcmp(part.data(), first_part.data(), part.size()), 0)
            << "reduce_scatter on " << b << " differs from " << backends.front();
      }
    }
}
