// Every collective, dtype, op and a spread of sizes (one element, sizes the rank count
// does not divide, a megabyte and more) against a serial reference that each rank
// computes from every rank's seeded random data.
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "mpi_fixture.hpp"

namespace {

size_t esize(zrt_dtype_t dt) {
  return dt == ZRT_DTYPE_FP64 ? 8 : dt == ZRT_DTYPE_FP32 ? 4 : 2;
}

// Unit roundoff of each dtype.
double unit_roundoff(zrt_dtype_t dt) {
  switch (dt) {
    case ZRT_DTYPE_FP32:
      return std::ldexp(1.0, -24);
    case ZRT_DTYPE_FP64:
      return std::ldexp(1.0, -53);
    case ZRT_DTYPE_BF16:
      return std::ldexp(1.0, -8);
    case ZRT_DTYPE_FP16:
      return std::ldexp(1.0, -11);
    default:
      break;
  }
  return 1;
}

// Encodes v, which the generator made exactly representable, and decodes stored values.
// Written independently of zerort's own conversions.
void put(void *buf, size_t i, zrt_dtype_t dt, double v) {
  switch (dt) {
    case ZRT_DTYPE_FP32:
      static_cast<float *>(buf)[i] = static_cast<float>(v);
      break;
    case ZRT_DTYPE_FP64:
      static_cast<double *>(buf)[i] = v;
      break;
    case ZRT_DTYPE_BF16:
      static_cast<uint16_t *>(buf)[i] =
          static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16);
      break;
    case ZRT_DTYPE_FP16:
      static_cast<uint16_t *>(buf)[i] = std::bit_cast<uint16_t>(static_cast<_Float16>(v));
      break;
    default:
      break;
  }
}
double get(const void *buf, size_t i, zrt_dtype_t dt) {
  switch (dt) {
    case ZRT_DTYPE_FP32:
      return static_cast<const float *>(buf)[i];
    case ZRT_DTYPE_FP64:
      return static_cast<const double *>(buf)[i];
    case ZRT_DTYPE_BF16:
      return std::bit_cast<float>(uint32_t{static_cast<const uint16_t *>(buf)[i]} << 16);
    case ZRT_DTYPE_FP16:
      return static_cast<double>(std::bit_cast<_Float16>(static_cast<const uint16_t *>(buf)[i]));
    default:
      break;
  }
  return 0;
}

// Rank r's element i of case `salt`, exactly representable in dt, in [-1, 1).
double input(int r, size_t i, int salt, zrt_dtype_t dt) {
  // splitmix64 of (salt, rank, index): cheap enough for millions of reference elements.
  uint64_t x = (static_cast<uint64_t>(salt) << 32) ^ (static_cast<uint64_t>(r) << 52) ^ i;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  double v = std::ldexp(static_cast<double>(x >> 11), -52) - 1.0;
  switch (dt) {
    case ZRT_DTYPE_FP32:
      return static_cast<float>(v);
    case ZRT_DTYPE_FP64:
      return v;
    case ZRT_DTYPE_BF16:
      return std::bit_cast<float>(std::bit_cast<uint32_t>(static_cast<float>(v)) & 0xffff0000u);
    case ZRT_DTYPE_FP16:
      return static_cast<double>(static_cast<_Float16>(v));
    default:
      break;
  }
  return 0;
}

struct Expect {
  double value;
  double tolerance;
};

Expect reference(size_t i, int salt, zrt_dtype_t dt, zrt_op_t op, int n) {
  double sum = 0, mag = 0;
  for (int r = 0; r < n; ++r) {
    double x = input(r, i, salt, dt);
    sum += x;
    mag += std::fabs(x);
  }
  // Each of the n-1 additions rounds once in the accumulation precision, and the result
  // rounds once more into dt.
  double u = unit_roundoff(dt), acc = dt == ZRT_DTYPE_FP64 ? u : std::ldexp(1.0, -24);
  double tol = n * acc * mag + u * std::fabs(sum) + 1e-300;
  if (dt == ZRT_DTYPE_BF16 || dt == ZRT_DTYPE_FP16) tol = n * u * mag + u * std::fabs(sum);
  if (op == ZRT_OP_AVG) return {sum / n, tol / n + u * std::fabs(sum / n)};
  return {sum, tol};
}

const char *name(zrt_dtype_t dt) {
  const char *names[] = {"fp32", "fp64", "bf16", "fp16"};
  return names[dt];
}

const zrt_dtype_t kDtypes[] = {ZRT_DTYPE_FP32, ZRT_DTYPE_FP64, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16};

std::vector<size_t> counts() {
  size_t n = static_cast<size_t>(test::size());
  return {1, 2, 3, n + 1, 2 * n - 1, 1000, 4099, 65537, (size_t{1} << 20) + 7};
}

// Compares count elements and reports the first mismatch.
std::string compare(const void *got, size_t count, zrt_dtype_t dt,
                    const std::function<Expect(size_t)> &want) {
  for (size_t i = 0; i < count; ++i) {
    Expect e = want(i);
    double g = get(got, i, dt);
    if (!(std::fabs(g - e.value) <= e.tolerance))
      return fmt::format("element {}: got {} want {} (tolerance {})", i, g, e.value, e.tolerance);
  }
  return "";
}

}  // namespace

TEST(Collectives, AllReduceMatchesSerialReference) {
  int n = test::size(), me = test::rank(), salt = 100;
  for (zrt_dtype_t dt : kDtypes)
    for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG})
      for (size_t count : counts()) {
        ++salt;
        SCOPED_TRACE(
            fmt::format("{} {} count {}", name(dt), op == ZRT_OP_SUM ? "sum" : "avg", count));
        std::vector<char> send(count * esize(dt)), recv(count * esize(dt));
        for (size_t i = 0; i < count; ++i)
          put(send.data(), i, dt, input(me, i, salt, dt));
        ASSERT_EQ(zrt_all_reduce(test::world(), send.data(), recv.data(), count, dt, op),
                  ZRT_SUCCESS)
            << test::last_error();
        EXPECT_EQ(compare(recv.data(), count, dt,
                          [&](size_t i) { return reference(i, salt, dt, op, n); }),
                  "");
      }
}

TEST(Collectives, ReduceScatterMatchesSerialReferenceAndZeroesPadding) {
  int n = test::size(), me = test::rank(), salt = 2000;
  for (zrt_dtype_t dt : kDtypes)
    for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG})
      for (size_t count : counts()) {
        ++salt;
        SCOPED_TRACE(
            fmt::format("{} {} count {}", name(dt), op == ZRT_OP_SUM ? "sum" : "avg", count));
        size_t offset = 0, length = 0, shard = 0;
        ASSERT_EQ(zrt_shard_range(count, n, me, &offset, &length, &shard), ZRT_SUCCESS);
        std::vector<char> send(count * esize(dt)), recv(shard * esize(dt), static_cast<char>(0x7b));
        for (size_t i = 0; i < count; ++i)
          put(send.data(), i, dt, input(me, i, salt, dt));
        ASSERT_EQ(zrt_reduce_scatter(test::world(), send.data(), recv.data(), count, dt, op),
                  ZRT_SUCCESS)
            << test::last_error();
        EXPECT_EQ(compare(recv.data(), length, dt,
                          [&](size_t i) { return reference(offset + i, salt, dt, op, n); }),
                  "");
        for (size_t i = length * esize(dt); i < recv.size(); ++i)
          ASSERT_EQ(recv[i], 0) << "padding byte " << i << " of a shard with " << length
                                << " valid elements";
      }
}

TEST(Collectives, AllGatherMatchesSerialReference) {
  int n = test::size(), me = test::rank(), salt = 4000;
  for (zrt_dtype_t dt : kDtypes)
    for (size_t count : counts()) {
      ++salt;
      SCOPED_TRACE(fmt::format("{} count {}", name(dt), count));
      size_t offset = 0, length = 0;
      zrt_shard_range(count, n, me, &offset, &length, nullptr);
      std::vector<char> send(length * esize(dt) + 8), recv(count * esize(dt));
      for (size_t i = 0; i < length; ++i)
        put(send.data(), i, dt, input(me, offset + i, salt, dt));
      ASSERT_EQ(zrt_all_gather(test::world(), send.data(), recv.data(), count, dt), ZRT_SUCCESS)
          << test::last_error();
      // Gathering copies: exact.
      EXPECT_EQ(compare(recv.data(), count, dt,
                        [&](size_t i) {
                          int owner = static_cast<int>(i / ((count + n - 1) / n));
                          return Expect{input(owner, i, salt, dt), 0.0};
                        }),
                "");
    }
}

TEST(Collectives, BroadcastFromEveryRoot) {
  int n = test::size(), me = test::rank();
  for (zrt_dtype_t dt : kDtypes)
    for (int root = 0; root < n; ++root) {
      size_t count = 1037;
      int salt = 6000 + root;
      std::vector<char> buf(count * esize(dt));
      for (size_t i = 0; i < count; ++i)
        put(buf.data(), i, dt, input(me, i, salt, dt));
      ASSERT_EQ(zrt_broadcast(test::world(), buf.data(), count, dt, root), ZRT_SUCCESS)
          << test::last_error();
      EXPECT_EQ(compare(buf.data(), count, dt,
                        [&](size_t i) {
                          return Expect{input(root, i, salt, dt), 0.0};
                        }),
                "")
          << "root " << root;
    }
}

TEST(Collectives, InPlaceForms) {
  int n = test::size(), me = test::rank();
  size_t count = 3001;
  std::vector<float> buf(count);
  for (size_t i = 0; i < count; ++i)
    buf[i] = static_cast<float>(me + 1) * static_cast<float>(i % 7);
  ASSERT_EQ(
      zrt_all_reduce(test::world(), buf.data(), buf.data(), count, ZRT_DTYPE_FP32, ZRT_OP_SUM),
      ZRT_SUCCESS);
  float ranks_sum = static_cast<float>(n * (n + 1) / 2);
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(buf[i], ranks_sum * static_cast<float>(i % 7));

  size_t offset = 0, length = 0;
  zrt_shard_range(count, n, me, &offset, &length, nullptr);
  std::vector<double> all(count, -1.0);
  for (size_t i = 0; i < length; ++i)
    all[offset + i] = static_cast<double>(offset + i);
  ASSERT_EQ(zrt_all_gather(test::world(), all.data() + offset, all.data(), count, ZRT_DTYPE_FP64),
            ZRT_SUCCESS)
      << test::last_error();
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(all[i], static_cast<double>(i));
}

TEST(Collectives, ZeroCountIsANoOp) {
  float x = 1.0f;
  EXPECT_EQ(zrt_all_reduce(test::world(), &x, &x, 0, ZRT_DTYPE_FP32, ZRT_OP_SUM), ZRT_SUCCESS);
  EXPECT_EQ(zrt_reduce_scatter(test::world(), nullptr, nullptr, 0, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_SUCCESS)
      << test::last_error();
  EXPECT_EQ(zrt_all_gather(test::world(), nullptr, nullptr, 0, ZRT_DTYPE_BF16), ZRT_SUCCESS);
  EXPECT_EQ(x, 1.0f);
}

TEST(Collectives, NonBlockingRequestsTestedInAnyOrder) {
  int n = test::size(), me = test::rank();
  const int k = 6;
  size_t count = 10007;
  std::vector<std::vector<float>> send(k, std::vector<float>(count)),
      recv(k, std::vector<float>(count));
  std::vector<zrt_request_h> req(k);
  for (int j = 0; j < k; ++j) {
    for (size_t i = 0; i < count; ++i)
      send[j][i] = static_cast<float>((me + j) % 5);
    ASSERT_EQ(zrt_all_reduce_post(test::world(), send[j].data(), recv[j].data(), count,
                                  ZRT_DTYPE_FP32, ZRT_OP_SUM, &req[j]),
              ZRT_SUCCESS)
        << test::last_error();
  }
  // Even ranks drive the last request first: zerort must still start them in order.
  for (int step = 0; step < k; ++step) {
    int j = me % 2 == 0 ? k - 1 - step : step;
    ASSERT_EQ(zrt_request_wait(req[j]), ZRT_SUCCESS) << test::last_error();
    EXPECT_EQ(zrt_request_test(req[j]), ZRT_SUCCESS);  // done stays done
  }
  for (int j = 0; j < k; ++j) {
    float want = 0;
    for (int r = 0; r < n; ++r)
      want += static_cast<float>((r + j) % 5);
    EXPECT_EQ(recv[j][count - 1], want);
    EXPECT_EQ(zrt_request_free(req[j]), ZRT_SUCCESS);
  }
}

TEST(Collectives, TestIsInProgressUntilEveryRankHasPosted) {
  int n = test::size();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  double x = 1.0, y = 0.0;
  zrt_request_h req = nullptr;
  if (test::rank() == 0) {
    ASSERT_EQ(zrt_all_reduce_post(test::world(), &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM, &req),
              ZRT_SUCCESS);
    for (int i = 0; i < 100; ++i)
      EXPECT_EQ(zrt_request_test(req), ZRT_IN_PROGRESS);
    EXPECT_EQ(zrt_request_free(req), ZRT_ERR_INVALID_STATE);
    EXPECT_NE(test::last_error().find("still in progress"), std::string::npos)
        << test::last_error();
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    ASSERT_EQ(zrt_all_reduce_post(test::world(), &x, &y, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM, &req),
              ZRT_SUCCESS);
  }
  ASSERT_EQ(zrt_request_wait(req), ZRT_SUCCESS);
  EXPECT_EQ(y, static_cast<double>(n));
  EXPECT_EQ(zrt_request_free(req), ZRT_SUCCESS);
}

TEST(Collectives, SubCommunicators) {
  int me = test::rank();
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
  zrt_comm_h comm = nullptr;
  ASSERT_EQ(zrt_comm_create(test::context(), half, nullptr, &comm), ZRT_SUCCESS)
      << test::last_error();
  int sub_size = 0, sub_rank = -1;
  zrt_comm_size(comm, &sub_size);
  zrt_comm_rank(comm, &sub_rank);
  EXPECT_EQ(sub_rank, me / 2);
  int expected_members = 0;
  for (int r = 0; r < test::size(); ++r)
    expected_members += (r % 2 == me % 2);
  EXPECT_EQ(sub_size, expected_members);
  double v = me, sum = 0;
  ASSERT_EQ(zrt_all_reduce(comm, &v, &sum, 1, ZRT_DTYPE_FP64, ZRT_OP_SUM), ZRT_SUCCESS);
  double want = 0;
  for (int r = 0; r < test::size(); ++r)
    if (r % 2 == me % 2) want += r;
  EXPECT_EQ(sum, want);
  const char *backend = nullptr;
  EXPECT_EQ(zrt_comm_backend(comm, &backend), ZRT_SUCCESS);
  EXPECT_STREQ(backend, "mpi");
  EXPECT_EQ(zrt_comm_destroy(comm), ZRT_SUCCESS);
  EXPECT_EQ(zrt_comm_rank(comm, &sub_rank), ZRT_ERR_INVALID_HANDLE);  // stale now
  MPI_Comm_free(&half);
}

namespace {

// The deterministic reference: contributions added in rank order in the accumulation
// precision, divided for avg, rounded once into dt.
double ordered_reference(size_t i, int salt, zrt_dtype_t dt, zrt_op_t op, int n) {
  if (dt == ZRT_DTYPE_FP64) {
    double acc = input(0, i, salt, dt);
    for (int r = 1; r < n; ++r)
      acc += input(r, i, salt, dt);
    return op == ZRT_OP_AVG ? acc / n : acc;
  }
  float acc = static_cast<float>(input(0, i, salt, dt));
  for (int r = 1; r < n; ++r)
    acc += static_cast<float>(input(r, i, salt, dt));
  if (op == ZRT_OP_AVG) acc /= static_cast<float>(n);
  std::vector<char> one(8);
  if (dt == ZRT_DTYPE_BF16) {
    // Round to nearest even, written out here independently of zerort.
    uint32_t u = std::bit_cast<uint32_t>(acc);
    u += 0x7fffu + ((u >> 16) & 1u);
    return std::bit_cast<float>(u & 0xffff0000u);
  }
  put(one.data(), 0, dt, acc);
  return get(one.data(), 0, dt);
}

zrt_comm_h deterministic_world() {
  static zrt_comm_h comm = [] {
    zrt_comm_params_t p = {};
    p.field_mask = ZRT_COMM_PARAM_FIELD_DETERMINISTIC;
    p.deterministic = 1;
    zrt_comm_h c = nullptr;
    EXPECT_EQ(zrt_comm_create(test::context(), MPI_COMM_WORLD, &p, &c), ZRT_SUCCESS)
        << test::last_error();
    return c;
  }();
  return comm;
}

}  // namespace

TEST(Deterministic, ReductionsAddInRankOrderAndRoundOnce) {
  int n = test::size(), me = test::rank(), salt = 9000;
  zrt_comm_h comm = deterministic_world();
  for (zrt_dtype_t dt : kDtypes)
    for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG})
      for (size_t count : counts()) {
        ++salt;
        SCOPED_TRACE(
            fmt::format("{} {} count {}", name(dt), op == ZRT_OP_SUM ? "sum" : "avg", count));
        size_t es = esize(dt), offset = 0, length = 0, shard = 0;
        zrt_shard_range(count, n, me, &offset, &length, &shard);
        std::vector<char> send(count * es), all(count * es), part(shard * es), gathered(count * es);
        for (size_t i = 0; i < count; ++i)
          put(send.data(), i, dt, input(me, i, salt, dt));
        ASSERT_EQ(zrt_all_reduce(comm, send.data(), all.data(), count, dt, op), ZRT_SUCCESS)
            << test::last_error();
        ASSERT_EQ(zrt_reduce_scatter(comm, send.data(), part.data(), count, dt, op), ZRT_SUCCESS);
        ASSERT_EQ(zrt_all_gather(comm, part.data(), gathered.data(), count, dt), ZRT_SUCCESS);
        // Bitwise: all-reduce equals reduce-scatter + all-gather, and both the reference.
        EXPECT_EQ(std::memcmp(all.data(), gathered.data(), all.size()), 0);
        EXPECT_EQ(compare(all.data(), count, dt,
                          [&](size_t i) {
                            return Expect{ordered_reference(i, salt, dt, op, n), 0.0};
                          }),
                  "");
      }
}

TEST(Deterministic, InPlaceAllReduceAndRepeatability) {
  zrt_comm_h comm = deterministic_world();
  size_t count = 50001;
  std::vector<float> a(count), b(count);
  for (size_t i = 0; i < count; ++i)
    a[i] = static_cast<float>(input(test::rank(), i, 77, ZRT_DTYPE_FP32));
  std::vector<float> first = a;
  ASSERT_EQ(zrt_all_reduce(comm, first.data(), first.data(), count, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_SUCCESS);
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(zrt_all_reduce(comm, a.data(), b.data(), count, ZRT_DTYPE_FP32, ZRT_OP_SUM),
              ZRT_SUCCESS);
    EXPECT_EQ(std::memcmp(b.data(), first.data(), count * sizeof(float)), 0) << "run " << run;
  }
}
