#include "selfcheck.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>

namespace {

// Small integers: every sum of a few of them is exact in every dtype (bf16 included), so
// the result must equal the reference bit for bit, whatever order the ranks add in.
int value_of(int rank, size_t i, int salt) {
  uint64_t x = (static_cast<uint64_t>(rank) << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^
               static_cast<uint64_t>(salt);
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 32;
  return static_cast<int>(x % 17) - 8;
}

size_t dtype_bytes(zrt_dtype_t dt) {
  size_t s = 0;
  zrt_dtype_size(dt, &s);
  return s;
}

// Stores v (an exact small value, or the average computed in the dtype's way) at index i,
// rounded as zerort rounds (zrt_dtype_convert).
void store(void *buf, size_t i, zrt_dtype_t dt, double v) {
  size_t esize = 0;
  zrt_dtype_size(dt, &esize);
  zrt_dtype_convert(&v, ZRT_DTYPE_FP64, static_cast<char *>(buf) + i * esize, dt, 1);
}

// The expected reduced value: the exact sum, and for avg the division in the precision
// zerort documents (fp64 for fp64, fp32 otherwise), rounded once to the dtype.
double reduced(zrt_dtype_t dt, zrt_op_t op, int sum, int n) {
  if (op == ZRT_OP_SUM) return sum;
  if (dt == ZRT_DTYPE_FP64) return static_cast<double>(sum) / n;
  return static_cast<double>(static_cast<float>(sum) / static_cast<float>(n));
}

}  // namespace

std::vector<SelfCheckResult> run_selfcheck(zrt_comm_h comm) {
  int rank = 0, n = 1;
  zrt_comm_rank(comm, &rank);
  zrt_comm_size(comm, &n);
  const size_t sizes[] = {1, 7, 1000, 4099, 65536 + 3};
  const zrt_dtype_t dtypes[] = {ZRT_DTYPE_FP32, ZRT_DTYPE_FP64, ZRT_DTYPE_BF16, ZRT_DTYPE_FP16};
  const char *dtype_names[] = {"fp32", "fp64", "bf16", "fp16"};
  std::vector<SelfCheckResult> results;

  auto check = [&](const char *op_name, const char *red, zrt_dtype_t dt, const char *dt_name,
                   const std::function<std::string(size_t, int)> &one) {
    SelfCheckResult r{op_name, dt_name, red, 0, 0, ""};
    int salt = 0;
    for (size_t count : sizes) {
      std::string err = one(count, ++salt);
      // Every rank learns whether any rank saw a wrong element.
      int bad = err.empty() ? 0 : 1;
      MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      ++r.sizes;
      if (bad) {
        ++r.failures;
        if (r.first_error.empty())
          r.first_error =
              err.empty() ? fmt::format("count {}: another rank saw a mismatch", count) : err;
      }
    }
    (void)dt;
    results.push_back(r);
  };

  for (int d = 0; d < 4; ++d) {
    zrt_dtype_t dt = dtypes[d];
    size_t es = dtype_bytes(dt);
    for (zrt_op_t op : {ZRT_OP_SUM, ZRT_OP_AVG}) {
      const char *red = op == ZRT_OP_SUM ? "sum" : "avg";
      check("all_reduce", red, dt, dtype_names[d], [&](size_t count, int salt) -> std::string {
        std::vector<char> send(count * es), recv(count * es), want(count * es);
        for (size_t i = 0; i < count; ++i) {
          store(send.data(), i, dt, value_of(rank, i, salt));
          int sum = 0;
          for (int r = 0; r < n; ++r)
            sum += value_of(r, i, salt);
          store(want.data(), i, dt, reduced(dt, op, sum, n));
        }
        zrt_status_t st = zrt_comm_all_reduce(comm, send.data(), recv.data(), count, dt, op);
        if (st != ZRT_SUCCESS) return zrt_last_error_message();
        for (size_t i = 0; i < count; ++i)
          if (std::memcmp(&recv[i * es], &want[i * es], es) != 0)
            return fmt::format("count {}: element {} differs from the reference", count, i);
        return "";
      });
      check("reduce_scatter", red, dt, dtype_names[d], [&](size_t count, int salt) -> std::string {
        size_t offset = 0, length = 0, shard = 0;
        zrt_shard_range(count, n, rank, &offset, &length, &shard);
        std::vector<char> send(count * es), recv(shard * es, 0x5a), want(shard * es, 0);
        for (size_t i = 0; i < count; ++i)
          store(send.data(), i, dt, value_of(rank, i, salt));
        for (size_t i = 0; i < length; ++i) {
          int sum = 0;
          for (int r = 0; r < n; ++r)
            sum += value_of(r, offset + i, salt);
          store(want.data(), i, dt, reduced(dt, op, sum, n));
        }
        zrt_status_t st = zrt_comm_reduce_scatter(comm, send.data(), recv.data(), count, dt, op);
        if (st != ZRT_SUCCESS) return zrt_last_error_message();
        for (size_t i = 0; i < shard; ++i)
          if (std::memcmp(&recv[i * es], &want[i * es], es) != 0)
            return fmt::format("count {}: shard element {} differs from the reference{}", count, i,
                               i >= length ? " (padding must be zero)" : "");
        return "";
      });
    }
    check("all_gather", "-", dt, dtype_names[d], [&](size_t count, int salt) -> std::string {
      size_t offset = 0, length = 0;
      zrt_shard_range(count, n, rank, &offset, &length, nullptr);
      std::vector<char> send(length * es + es), recv(count * es), want(count * es);
      for (size_t i = 0; i < length; ++i)
        store(send.data(), i, dt, value_of(rank, offset + i, salt));
      for (int r = 0; r < n; ++r) {
        size_t o = 0, l = 0;
        zrt_shard_range(count, n, r, &o, &l, nullptr);
        for (size_t i = 0; i < l; ++i)
          store(want.data(), o + i, dt, value_of(r, o + i, salt));
      }
      zrt_status_t st = zrt_comm_all_gather(comm, send.data(), recv.data(), count, dt);
      if (st != ZRT_SUCCESS) return zrt_last_error_message();
      if (std::memcmp(recv.data(), want.data(), recv.size()) != 0)
        return fmt::format("count {}: gathered buffer differs from the reference", count);
      return "";
    });
    check("broadcast", "-", dt, dtype_names[d], [&](size_t count, int salt) -> std::string {
      int root = n - 1;
      std::vector<char> buf(count * es), want(count * es);
      for (size_t i = 0; i < count; ++i) {
        store(buf.data(), i, dt, value_of(rank, i, salt));
        store(want.data(), i, dt, value_of(root, i, salt));
      }
      zrt_status_t st = zrt_comm_broadcast(comm, buf.data(), count, dt, root);
      if (st != ZRT_SUCCESS) return zrt_last_error_message();
      if (std::memcmp(buf.data(), want.data(), buf.size()) != 0)
        return fmt::format("count {}: broadcast buffer differs from root's", count);
      return "";
    });
  }
  return results;
}
