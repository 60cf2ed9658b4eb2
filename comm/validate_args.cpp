#include "comm/validate_args.hpp"

#include <cstdint>

#include "comm/dtype.hpp"
#include "comm/partition.hpp"
#include "runtime/error.hpp"

namespace zrt {

namespace {

bool overlaps(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return a_bytes > 0 && b_bytes > 0 && pa < pb + b_bytes && pb < pa + a_bytes;
}

}  // namespace

void validate_args(const CollArgs &a, int size, int rank) {
  size_t esize = dtype_size(a.dtype);
  if (a.kind != CollKind::AllGather && a.kind != CollKind::Broadcast) check_op(a.op);
  if (a.count == 0) return;
  Shard own = shard_range(a.count, size, rank);
  auto aligned = [&](const void *p) { return reinterpret_cast<uintptr_t>(p) % esize == 0; };
  switch (a.kind) {
    case CollKind::ReduceScatter:
      require_nonnull(a.send, "sendbuf");
      require_nonnull(a.recv, "recvbuf");
      if (overlaps(a.send, a.count * esize, a.recv, own.shard * esize))
        fail(ZRT_ERR_INVALID_ARGUMENT,
             "sendbuf and recvbuf overlap; reduce-scatter needs "
             "separate buffers");
      break;
    case CollKind::AllGather:
      if (own.length > 0) require_nonnull(a.send, "sendbuf");
      require_nonnull(a.recv, "recvbuf");
      if (a.send != static_cast<const char *>(a.recv) + own.offset * esize &&
          overlaps(a.send, own.length * esize, a.recv, a.count * esize))
        fail(ZRT_ERR_INVALID_ARGUMENT,
             "sendbuf overlaps recvbuf but is not this rank's slot of "
             "it (recvbuf + {} elements), the only in-place form",
             own.offset);
      break;
    case CollKind::AllReduce:
      require_nonnull(a.send, "sendbuf");
      require_nonnull(a.recv, "recvbuf");
      if (a.send != a.recv && overlaps(a.send, a.count * esize, a.recv, a.count * esize))
        fail(ZRT_ERR_INVALID_ARGUMENT, "sendbuf and recvbuf overlap but are not equal (in place)");
      break;
    case CollKind::Broadcast:
      require_nonnull(a.recv, "buf");
      if (a.root < 0 || a.root >= size)
        fail(ZRT_ERR_INVALID_ARGUMENT, "root is {}: accepted values are 0 .. {}", a.root, size - 1);
      break;
  }
  if ((a.send != nullptr && !aligned(a.send)) || !aligned(a.recv))
    fail(ZRT_ERR_INVALID_ARGUMENT, "buffers must be aligned to the {}-byte {} element", esize,
         dtype_name(a.dtype));
}

}  // namespace zrt
