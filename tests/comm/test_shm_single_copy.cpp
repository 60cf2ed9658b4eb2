// The shm backend's single-copy path (process_vm_readv) when the kernel refuses it in the
// middle of a job: one rank gets a seccomp filter that fails process_vm_readv with EPERM,
// as a hardened container would. Every rank must get an error for the large collectives
// that read with it (not a crash, not a hang), the communicator must keep working for the
// collectives that copy through shared memory, and a communicator created afterwards must
// find out at setup and fall back to the staged copy.
//
// The filter stays for the life of the process, so ctest runs these tests in processes of
// their own (and keeps Open MPI's own shared-memory transport off CMA there).
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include "support/mpi_fixture.hpp"

using namespace test;

namespace {

// Fails process_vm_readv with EPERM in the calling thread from now on.
bool deny_process_vm_readv() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

zrt_comm_h shm_comm() {
  zrt_comm_params_t p = {};
  p.field_mask = ZRT_COMM_PARAM_FIELD_BACKEND;
  p.backend = "shm";
  zrt_comm_h c = nullptr;
  EXPECT_EQ(zrt_comm_create(context(), MPI_COMM_WORLD, &p, &c), ZRT_SUCCESS) << last_error();
  return c;
}

// An all-gather of count floats, checked; returns its status.
zrt_status_t gather(zrt_comm_h c, size_t count, std::string *error) {
  const int n = size(), me = rank();
  size_t offset = 0, length = 0, shard = 0;
  zrt_shard_range(count, n, me, &offset, &length, &shard);
  std::vector<float> src(length), recv(count, -1.0f);
  for (size_t i = 0; i < length; ++i)
    src[i] = static_cast<float>((offset + i) % 1000);
  zrt_status_t st = zrt_comm_all_gather(c, src.data(), recv.data(), count, ZRT_DTYPE_FP32);
  *error = st == ZRT_SUCCESS ? "" : last_error();
  if (st == ZRT_SUCCESS)
    for (size_t i = 0; i < count; ++i)
      if (recv[i] != static_cast<float>(i % 1000)) {
        *error = fmt::format("element {}: got {}", i, recv[i]);
        break;
      }
  return st;
}

}  // namespace

TEST(ShmSingleCopy, RefusedReadsFailEveryRankAndStagedCopiesGoOn) {
  const int n = size(), me = rank();
  if (n < 2) GTEST_SKIP() << "needs two ranks";
  const size_t small = 1000, large = (size_t{4} << 20) + 3;  // below and above 1 MiB
  zrt_comm_h c = shm_comm();
  ASSERT_NE(c, nullptr);
  std::string error;
  ASSERT_EQ(gather(c, large, &error), ZRT_SUCCESS) << error;

  const int denied = n - 1;
  bool installed = me != denied || deny_process_vm_readv();
  if (!all_ranks(installed)) GTEST_SKIP() << "no seccomp filter here";

  // Every rank fails, the denied one with the kernel's reason, the others naming it.
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(gather(c, large, &error), ZRT_ERR_BACKEND) << error;
    if (me == denied)
      EXPECT_NE(error.find("process_vm_readv"), std::string::npos) << error;
    else
      EXPECT_NE(error.find(fmt::format("rank {}", denied)), std::string::npos) << error;
    // all-reduce's all-gather half reads with it too; auto keeps reduce-scatter staged.
    std::vector<float> send(large, 1.0f), part(large);
    EXPECT_EQ(zrt_comm_all_reduce(c, send.data(), part.data(), large, ZRT_DTYPE_FP32, ZRT_OP_SUM),
              ZRT_ERR_BACKEND);
    EXPECT_EQ(
        zrt_comm_reduce_scatter(c, send.data(), part.data(), large, ZRT_DTYPE_FP32, ZRT_OP_SUM),
        ZRT_SUCCESS)
        << last_error();
    EXPECT_EQ(part[0], static_cast<float>(n));
    // The channel is still in step: small collectives copy through shared memory.
    EXPECT_EQ(gather(c, small, &error), ZRT_SUCCESS) << error;
  }
  EXPECT_EQ(zrt_comm_destroy(c), ZRT_SUCCESS) << last_error();

  // A new communicator's probe finds out (and warns): everything goes through the slots.
  c = shm_comm();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(gather(c, large, &error), ZRT_SUCCESS) << error;
  std::vector<float> send(large, static_cast<float>(me)), all(large);
  ASSERT_EQ(zrt_comm_all_reduce(c, send.data(), all.data(), large, ZRT_DTYPE_FP32, ZRT_OP_SUM),
            ZRT_SUCCESS)
      << last_error();
  EXPECT_EQ(all[large - 1], static_cast<float>(n * (n - 1) / 2));
  EXPECT_EQ(zrt_comm_destroy(c), ZRT_SUCCESS) << last_error();
}
