// zrt_comm_mem_alloc: buffers the node's ranks share. Collectives on them must give the
// same bits as on private buffers (the direct path sums in the same rank order as the
// staged one), must really take the direct path where the backend has one (shm, and hier
// inside a node), must fall back when one rank's buffer is private, and bad frees must fail
// on every rank without freeing anything.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/mpi_fixture.hpp"

using namespace test;

namespace {

nlohmann::json describe() {
  size_t n = 0;
  zrt_context_describe(context(), nullptr, 0, &n);
  std::string s(n + 1, '\0');
  zrt_context_describe(context(), s.data(), s.size(), &n);
  s.resize(n);
  return nlohmann::json::parse(s);
}

// The world communicator's shm facts (its own, or hier's inside a node); null if neither.
nlohmann::json shm_facts() {
  nlohmann::json b = describe()["comm"]["world"]["backend"];
  const std::string host = b["host"];
  if (host == "shm") return b["created"]["shm"];
  if (host == "hier") return b["created"]["hier"]["intra"]["facts"];
  return nullptr;
}

// Phases that ran direct so far on the world communicator; -1 where it has no direct path.
int64_t direct_phases() {
  nlohmann::json f = shm_facts();
  if (f.is_null() || !f.contains("direct_phases")) return -1;
  return f["direct_phases"].get<int64_t>();
}

// Whether the world communicator is shm with a direct path (more than one rank): there
// every phase of a large collective on shared buffers goes direct. (hier goes direct in
// the reduce-scatter inside each node only.)
bool shm_with_direct_path() {
  return all_ranks(describe()["comm"]["world"]["backend"]["host"] == "shm" && direct_phases() >= 0);
}

// Distinct, finite values per rank and element, as bytes of the dtype.
std::vector<unsigned char> values(size_t count, zrt_dtype_t dtype, int seed) {
  size_t es = 0;
  zrt_dtype_size(dtype, &es);
  std::vector<unsigned char> v(count * es);
  for (size_t i = 0; i < count; ++i) {
    const float x = static_cast<float>((i * 37 + static_cast<size_t>(seed) * 11) % 1999) / 7.0f -
                    100.0f + 0.001f * static_cast<float>(seed);
    if (es == 4) {
      std::memcpy(&v[i * 4], &x, 4);
    } else {  // bf16 / fp16: the top half of a float is a fine bf16; fp16 from a small int
      uint32_t bits = 0;
      std::memcpy(&bits, &x, 4);
      uint16_t h = dtype == ZRT_DTYPE_BF16
                       ? static_cast<uint16_t>(bits >> 16)
                       : static_cast<uint16_t>(0x3c00 + (i * 13 + static_cast<size_t>(seed)) % 900);
      std::memcpy(&v[i * 2], &h, 2);
    }
  }
  return v;
}

enum class Op { ReduceScatter, AllGather, AllGatherInPlace, AllReduce, AllReduceInPlace };
const char *op_name(Op op) {
  switch (op) {
    case Op::ReduceScatter:
      return "reduce_scatter";
    case Op::AllGather:
      return "all_gather";
    case Op::AllGatherInPlace:
      return "all_gather_in_place";
    case Op::AllReduce:
      return "all_reduce";
    case Op::AllReduceInPlace:
      return "all_reduce_in_place";
  }
  return "?";
}

// Runs op with send and recv at the given places (each large enough) and returns the
// output bytes.
std::vector<unsigned char> run(Op op, size_t count, zrt_dtype_t dtype, unsigned char *send,
                               unsigned char *recv) {
  const int n = size(), me = rank();
  size_t es = 0, offset = 0, length = 0, shard = 0;
  zrt_dtype_size(dtype, &es);
  zrt_shard_range(count, n, me, &offset, &length, &shard);
  std::vector<unsigned char> input = values(count, dtype, me);
  std::memcpy(send, input.data(), input.size());
  std::memset(recv, 0xee, count * es);
  zrt_status_t st = ZRT_SUCCESS;
  size_t out = count;
  switch (op) {
    case Op::ReduceScatter:
      st = zrt_comm_reduce_scatter(world(), send, recv, count, dtype, ZRT_OP_SUM);
      out = shard;
      break;
    case Op::AllGather:
      st = zrt_comm_all_gather(world(), send + offset * es, recv, count, dtype);
      break;
    case Op::AllGatherInPlace:
      std::memcpy(recv + offset * es, send + offset * es, length * es);
      st = zrt_comm_all_gather(world(), recv + offset * es, recv, count, dtype);
      break;
    case Op::AllReduce:
      st = zrt_comm_all_reduce(world(), send, recv, count, dtype, ZRT_OP_SUM);
      break;
    case Op::AllReduceInPlace:
      st = zrt_comm_all_reduce(world(), send, send, count, dtype, ZRT_OP_SUM);
      return st == ZRT_SUCCESS ? std::vector<unsigned char>(send, send + count * es)
                               : std::vector<unsigned char>{};
  }
  EXPECT_EQ(st, ZRT_SUCCESS) << op_name(op) << ": " << last_error();
  return std::vector<unsigned char>(recv, recv + out * es);
}

}  // namespace

TEST(CommMem, AllocationsArePageAlignedZeroedAndWritable) {
  void *p = nullptr;
  const size_t bytes = 12345 + static_cast<size_t>(rank()) * 4096;  // differs across ranks
  ASSERT_EQ(zrt_comm_mem_alloc(world(), bytes, &p), ZRT_SUCCESS) << last_error();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  const unsigned char *c = static_cast<const unsigned char *>(p);
  size_t nonzero = 0;
  for (size_t i = 0; i < bytes; ++i)
    nonzero += c[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  std::memset(p, 0x5a, bytes);
  EXPECT_EQ(zrt_comm_mem_free(world(), p), ZRT_SUCCESS) << last_error();
}

// Every op and dtype, below and above comm.shm.direct_bytes (1 MiB by default) and with
// counts the rank count does not divide, on shared buffers (at an offset inside them, too)
// against private ones: the same bits, and the direct path taken where there is one.
TEST(CommMem, CollectivesOnSharedBuffersGiveTheBitsOfPrivateOnes) {
  const bool direct = shm_with_direct_path();
  const size_t threshold = direct ? shm_facts()["direct_bytes"].get<size_t>() : 0;
  const zrt_dtype_t dtypes[] = {ZRT_DTYPE_FP32, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16};
  const size_t counts[] = {1, 1001, 700001};
  const Op ops[] = {Op::ReduceScatter, Op::AllGather, Op::AllGatherInPlace, Op::AllReduce,
                    Op::AllReduceInPlace};
  const size_t max_bytes = 700001 * 4 + 256;
  void *shared_send = nullptr, *shared_recv = nullptr;
  ASSERT_EQ(zrt_comm_mem_alloc(world(), max_bytes, &shared_send), ZRT_SUCCESS) << last_error();
  ASSERT_EQ(zrt_comm_mem_alloc(world(), max_bytes, &shared_recv), ZRT_SUCCESS) << last_error();
  std::vector<unsigned char> private_send(max_bytes), private_recv(max_bytes);
  for (zrt_dtype_t dtype : dtypes)
    for (size_t count : counts)
      for (Op op : ops)
        for (size_t at : {size_t{0}, size_t{64}}) {
          const int64_t before = direct_phases();
          std::vector<unsigned char> want =
              run(op, count, dtype, private_send.data() + at, private_recv.data() + at);
          const int64_t between = direct_phases();
          std::vector<unsigned char> got =
              run(op, count, dtype, static_cast<unsigned char *>(shared_send) + at,
                  static_cast<unsigned char *>(shared_recv) + at);
          const int64_t after = direct_phases();
          SCOPED_TRACE(::testing::Message()
                       << op_name(op) << " of " << count << " x dtype " << dtype << " at +" << at);
          ASSERT_EQ(got.size(), want.size());
          EXPECT_TRUE(got == want) << "shared buffers gave other bits than private ones";
          EXPECT_EQ(between, before) << "private buffers went direct";
          size_t es = 0, shard = 0;
          zrt_dtype_size(dtype, &es);
          zrt_shard_range(count, size(), rank(), nullptr, nullptr, &shard);
          // From the threshold on (all shards together) every phase goes direct: all-reduce
          // has two.
          const bool large = shard * es * static_cast<size_t>(size()) >= threshold;
          const int64_t phases = op == Op::AllReduce || op == Op::AllReduceInPlace ? 2 : 1;
          if (direct) {
            EXPECT_EQ(after - between, large ? phases : 0);
          }
        }
  EXPECT_EQ(zrt_comm_mem_free(world(), shared_recv), ZRT_SUCCESS) << last_error();
  EXPECT_EQ(zrt_comm_mem_free(world(), shared_send), ZRT_SUCCESS) << last_error();
}

// One rank's buffers private, the others' shared: every rank falls back together.
TEST(CommMem, OnePrivateBufferMakesEveryRankFallBack) {
  const size_t count = 600003, bytes = count * 4;
  void *shared_send = nullptr, *shared_recv = nullptr;
  ASSERT_EQ(zrt_comm_mem_alloc(world(), bytes, &shared_send), ZRT_SUCCESS) << last_error();
  ASSERT_EQ(zrt_comm_mem_alloc(world(), bytes, &shared_recv), ZRT_SUCCESS) << last_error();
  std::vector<unsigned char> private_send(bytes), private_recv(bytes);
  for (Op op : {Op::ReduceScatter, Op::AllReduce, Op::AllGather}) {
    std::vector<unsigned char> want =
        run(op, count, ZRT_DTYPE_FP32, private_send.data(), private_recv.data());
    const int64_t before = direct_phases();
    const bool mine_private = rank() == size() - 1;
    std::vector<unsigned char> got =
        run(op, count, ZRT_DTYPE_FP32,
            mine_private ? private_send.data() : static_cast<unsigned char *>(shared_send),
            static_cast<unsigned char *>(shared_recv));
    EXPECT_TRUE(got == want) << op_name(op);
    // All-reduce's all-gather reads the recv buffers, which are all shared.
    if (shm_with_direct_path()) {
      EXPECT_EQ(direct_phases() - before, op == Op::AllReduce ? 1 : 0) << op_name(op);
    }
  }
  EXPECT_EQ(zrt_comm_mem_free(world(), shared_recv), ZRT_SUCCESS) << last_error();
  EXPECT_EQ(zrt_comm_mem_free(world(), shared_send), ZRT_SUCCESS) << last_error();
}

TEST(CommMem, BadAllocationsFailOnEveryRank) {
  void *p = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(zrt_comm_mem_alloc(world(), 0, &p), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("bytes is 0"), std::string::npos) << last_error();
  EXPECT_EQ(p, reinterpret_cast<void *>(0x1)) << "output written on failure";
  EXPECT_EQ(zrt_comm_mem_alloc(world(), SIZE_MAX / 2, &p), ZRT_ERR_OUT_OF_MEMORY) << last_error();
  // One rank's bad argument: the others must fail too, not wait for it.
  const bool bad = rank() == size() - 1;
  zrt_status_t st = zrt_comm_mem_alloc(world(), 4096, bad ? nullptr : &p);
  EXPECT_EQ(st, ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("ptr_p is NULL"), std::string::npos) << last_error();
  EXPECT_EQ(zrt_comm_mem_alloc(nullptr, 4096, &p), ZRT_ERR_INVALID_HANDLE);
}

TEST(CommMem, BadFreesFailOnEveryRankAndFreeNothing) {
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(zrt_comm_mem_alloc(world(), 8192, &a), ZRT_SUCCESS) << last_error();
  ASSERT_EQ(zrt_comm_mem_alloc(world(), 8192, &b), ZRT_SUCCESS) << last_error();
  std::memset(a, 1, 8192);
  std::memset(b, 2, 8192);
  int local = 0;
  EXPECT_EQ(zrt_comm_mem_free(world(), &local), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("not returned by zrt_comm_mem_alloc"), std::string::npos)
      << last_error();
  EXPECT_EQ(zrt_comm_mem_free(world(), nullptr), ZRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(zrt_comm_mem_free(world(), static_cast<char *>(a) + 8), ZRT_ERR_INVALID_ARGUMENT);
  // Buffers are freed together: the last rank freeing b while the others free a fails
  // everywhere, shared or private.
  if (size() > 1) {
    EXPECT_EQ(zrt_comm_mem_free(world(), rank() == size() - 1 ? b : a), ZRT_ERR_MISMATCH);
    EXPECT_NE(last_error().find("different buffers"), std::string::npos) << last_error();
  }
  // Both still there and intact.
  EXPECT_EQ(static_cast<unsigned char *>(a)[8191], 1);
  EXPECT_EQ(static_cast<unsigned char *>(b)[8191], 2);
  EXPECT_EQ(zrt_comm_mem_free(world(), a), ZRT_SUCCESS) << last_error();
  EXPECT_EQ(zrt_comm_mem_free(world(), b), ZRT_SUCCESS) << last_error();
  EXPECT_EQ(zrt_comm_mem_free(world(), a), ZRT_ERR_INVALID_ARGUMENT) << "a double free";
}

// Buffers left allocated go with their communicator; a communicator with the mpi backend
// hands out private memory that works the same.
TEST(CommMem, BuffersGoWithTheirCommunicator) {
  for (const char *backend : {"shm", "mpi"}) {
    zrt_comm_params_t params = {};
    params.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND;
    params.backend = backend;
    zrt_comm_h c = nullptr;
    if (zrt_comm_create(context(), MPI_COMM_WORLD, &params, &c) != ZRT_SUCCESS) continue;
    const size_t count = 300001;
    void *send = nullptr, *recv = nullptr;
    ASSERT_EQ(zrt_comm_mem_alloc(c, count * 4, &send), ZRT_SUCCESS) << last_error();
    ASSERT_EQ(zrt_comm_mem_alloc(c, count * 4, &recv), ZRT_SUCCESS) << last_error();
    float *s = static_cast<float *>(send), *r = static_cast<float *>(recv);
    for (size_t i = 0; i < count; ++i)
      s[i] = static_cast<float>(i % 100 + rank());
    ASSERT_EQ(zrt_comm_all_reduce(c, send, recv, count, ZRT_DTYPE_FP32, ZRT_OP_SUM), ZRT_SUCCESS)
        << backend << ": " << last_error();
    const int n = size();
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i)
      wrong += r[i] != static_cast<float>(n * static_cast<int>(i % 100) + n * (n - 1) / 2);
    EXPECT_EQ(wrong, 0u) << backend;
    EXPECT_EQ(zrt_comm_mem_free(c, send), ZRT_SUCCESS) << last_error();
    EXPECT_EQ(zrt_comm_destroy(c), ZRT_SUCCESS) << last_error();  // recv goes with it
  }
}

// A rank overwrites its send buffer as soon as its reduce-scatter returns (as a backward
// pass refills a gradient bucket): no peer may still be reading it then. Rank 0 goes on at
// once while the others dawdle, so that it rewrites early; without the closing barrier of
// the direct path this fails within a few rounds at np 4.
TEST(CommMem, SendBuffersMayBeReusedAsSoonAsTheCollectiveReturns) {
  const int n = size(), me = rank();
  const size_t count = size_t{1} << 21;
  size_t offset = 0, length = 0, shard = 0;
  zrt_shard_range(count, n, me, &offset, &length, &shard);
  void *sp = nullptr, *out = nullptr;
  ASSERT_EQ(zrt_comm_mem_alloc(world(), count * 4, &sp), ZRT_SUCCESS) << last_error();
  ASSERT_EQ(zrt_comm_mem_alloc(world(), shard * 4, &out), ZRT_SUCCESS) << last_error();
  float *send = static_cast<float *>(sp);
  const float *o = static_cast<const float *>(out);
  size_t wrong = 0;
  for (int round = 0; round < 100; ++round) {
    // Written high to low, so the part a peer reads last is overwritten first.
    for (size_t i = count; i-- > 0;)
      send[i] = static_cast<float>(round * (me + 1));
    ASSERT_EQ(zrt_comm_reduce_scatter(world(), send, out, count, ZRT_DTYPE_FP32, ZRT_OP_SUM),
              ZRT_SUCCESS)
        << last_error();
    for (size_t i = 0; i < length; ++i)
      wrong += o[i] != static_cast<float>(round * n * (n + 1) / 2);
    if (me != 0) {
      volatile double x = 0;
      for (int k = 0; k < 200000; ++k)
        x = x + k;
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(zrt_comm_mem_free(world(), out), ZRT_SUCCESS) << last_error();
  EXPECT_EQ(zrt_comm_mem_free(world(), sp), ZRT_SUCCESS) << last_error();
}

// Broadcast, and an all-reduce whose send buffer is shared but whose output is private (the
// reduce-scatter goes direct, the all-gather falls back).
TEST(CommMem, BroadcastAndHalfSharedAllReduce) {
  const int n = size(), me = rank();
  const size_t count = 500009;
  void *shared = nullptr;
  ASSERT_EQ(zrt_comm_mem_alloc(world(), count * 4, &shared), ZRT_SUCCESS) << last_error();
  float *s = static_cast<float *>(shared);
  for (int root = 0; root < n; ++root) {
    for (size_t i = 0; i < count; ++i)
      s[i] = me == root ? static_cast<float>(i % 1000 + static_cast<size_t>(root)) : -1.0f;
    ASSERT_EQ(zrt_comm_broadcast(world(), s, count, ZRT_DTYPE_FP32, root), ZRT_SUCCESS)
        << last_error();
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i)
      wrong += s[i] != static_cast<float>(i % 1000 + static_cast<size_t>(root));
    EXPECT_EQ(wrong, 0u) << "root " << root;
  }
  for (size_t i = 0; i < count; ++i)
    s[i] = static_cast<float>(i % 100 + static_cast<size_t>(me));
  std::vector<float> out(count, -1.0f);
  const int64_t before = direct_phases();
  ASSERT_EQ(zrt_comm_all_reduce(world(), s, out.data(), count, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_SUCCESS)
      << last_error();
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i)
    wrong += out[i] != static_cast<float>(static_cast<size_t>(n) * (i % 100) +
                                          static_cast<size_t>(n * (n - 1) / 2));
  EXPECT_EQ(wrong, 0u);
  if (shm_with_direct_path()) {
    EXPECT_EQ(direct_phases() - before, 1) << "the reduce-scatter half goes direct";
  }
  EXPECT_EQ(zrt_comm_mem_free(world(), shared), ZRT_SUCCESS) << last_error();
}

// hier (faked nodes of several ranks): the reduce-scatter inside each node goes direct.
TEST(CommMem, HierReadsItsNodesSharedBuffersInPlace) {
  if (!all_ranks(describe()["comm"]["world"]["backend"]["host"] == "hier" && direct_phases() >= 0))
    GTEST_SKIP() << "the world communicator is not hier with nodes of several ranks";
  const size_t count = 1 << 20;
  void *send = nullptr, *recv = nullptr;
  ASSERT_EQ(zrt_comm_mem_alloc(world(), count * 4, &send), ZRT_SUCCESS) << last_error();
  ASSERT_EQ(zrt_comm_mem_alloc(world(), count * 4, &recv), ZRT_SUCCESS) << last_error();
  float *s = static_cast<float *>(send), *r = static_cast<float *>(recv);
  for (size_t i = 0; i < count; ++i)
    s[i] = static_cast<float>(i % 50 + static_cast<size_t>(rank()));
  const int64_t before = direct_phases();
  ASSERT_EQ(zrt_comm_all_reduce(world(), send, recv, count, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_SUCCESS)
      << last_error();
  EXPECT_GE(direct_phases() - before, 1);
  const int n = size();
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i)
    wrong += r[i] != static_cast<float>(static_cast<size_t>(n) * (i % 50) +
                                        static_cast<size_t>(n * (n - 1) / 2));
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(zrt_comm_mem_free(world(), recv), ZRT_SUCCESS) << last_error();
  EXPECT_EQ(zrt_comm_mem_free(world(), send), ZRT_SUCCESS) << last_error();
}

// A collective in flight on one rank while another already allocates: the allocation
// keeps it moving instead of waiting forever.
TEST(CommMem, AllocationWhileACollectiveIsInFlight) {
  const size_t count = 300001;
  std::vector<float> send(count, 1.0f), recv(count);
  zrt_request_h request = nullptr;
  ASSERT_EQ(zrt_comm_all_reduce_post(world(), send.data(), recv.data(), count, ZRT_DTYPE_FP32,
                                     ZRT_OP_SUM, &request),
            ZRT_SUCCESS)
      << last_error();
  // Rank 0 allocates before it waits; the others wait first.
  void *p = nullptr;
  if (rank() == 0) {
    EXPECT_EQ(zrt_comm_mem_alloc(world(), 4096, &p), ZRT_SUCCESS) << last_error();
  }
  ASSERT_EQ(zrt_request_wait(request), ZRT_SUCCESS) << last_error();
  zrt_request_free(request);
  if (rank() != 0) {
    EXPECT_EQ(zrt_comm_mem_alloc(world(), 4096, &p), ZRT_SUCCESS) << last_error();
  }
  EXPECT_EQ(recv[count - 1], static_cast<float>(size()));
  EXPECT_EQ(zrt_comm_mem_free(world(), p), ZRT_SUCCESS) << last_error();
}
