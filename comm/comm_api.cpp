// The C entry points of zerort/comm.h (and zrt_context_comm).
#include "comm/collective_request.hpp"
#include "comm/comm_fields.hpp"
#include "comm/comm_handles.hpp"
#include "comm/comm_part.hpp"
#include "comm/communicator.hpp"
#include "comm/dtype.hpp"
#include "comm/partition.hpp"
#include "runtime/agree.hpp"
#include "runtime/async_request.hpp"
#include "runtime/runtime_context.hpp"
#include "zerort/comm.h"

using namespace zrt;

namespace {

zrt_status_t post(const char *function, zrt_comm_h comm, CollArgs args, zrt_request_h *request_p) {
  return abi_call(function, [&] {
    Communicator &c = comm_from(comm);
    require_nonnull(request_p, "request_p");
    std::unique_ptr<Request> request = c.post(args);
    *request_p = to_handle<zrt_request_h>(request_table().insert(std::move(request)));
    return ZRT_SUCCESS;
  });
}

// post + wait + free, for the blocking forms.
zrt_status_t run(const char *function, zrt_comm_h comm, CollArgs args) {
  return abi_call(function, [&] {
    Communicator &c = comm_from(comm);
    std::unique_ptr<Request> request = c.post(args);
    struct Release {
      Communicator &c;
      ~Release() { c.request_freed(); }
    } release{c};
    return request->wait();
  });
}

CollArgs make(CollKind kind, const void *send, void *recv, size_t count, zrt_dtype_t dtype,
              zrt_op_t op, int root) {
  CollArgs a;
  a.kind = kind;
  a.send = send;
  a.recv = recv;
  a.count = count;
  a.dtype = dtype;
  a.op = op;
  a.root = root;
  return a;
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_comm_mem_alloc(zrt_comm_h comm, size_t bytes, void **ptr_p) {
  return abi_call("zrt_comm_mem_alloc", [&] {
    Communicator &c = comm_from(comm);
    void *p = c.memory().allocate(bytes, ptr_p == nullptr ? "ptr_p is NULL" : "");
    *ptr_p = p;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_comm_mem_free(zrt_comm_h comm, void *ptr) {
  return abi_call("zrt_comm_mem_free", [&] {
    comm_from(comm).memory().free(ptr);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_context_comm(zrt_context_h context, zrt_comm_h *comm_p) {
  return abi_call("zrt_context_comm", [&] {
    Context &c = context_from(context);
    require_nonnull(comm_p, "comm_p");
    *comm_p = to_handle<zrt_comm_h>(c.part<CommPart>().world());
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_comm_create(zrt_context_h context, MPI_Comm mpi_comm,
                                     const zrt_comm_params_t *params, zrt_comm_h *comm_p) {
  return abi_call("zrt_comm_create", [&] {
    Context &c = context_from(context);
    require_nonnull(comm_p, "comm_p");
    Communicator::Options options = c.part<CommPart>().default_options();
    std::map<std::string, std::string> no_keys;
    comm_params_table().read(params, no_keys, options);
    options.breaks_context = false;  // a program's communicator fails alone
    if (mpi_comm == MPI_COMM_NULL) fail(ZRT_ERR_INVALID_ARGUMENT, "mpi_comm is MPI_COMM_NULL");
    std::unique_ptr<Communicator> comm;
    // Agreed, so a backend that fails on one rank fails the creation on all of them.
    run_agreed(mpi_comm,
               [&] { comm = std::make_unique<Communicator>(c, mpi_comm, options, false); });
    Communicator *raw = comm.get();
    raw->set_agreed();
    raw->handle = comm_table().insert(std::move(comm));
    c.part<CommPart>().adopt(raw->handle);
    *comm_p = to_handle<zrt_comm_h>(raw->handle);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_comm_create_fortran(zrt_context_h context, MPI_Fint mpi_comm,
                                             const zrt_comm_params_t *params, zrt_comm_h *comm_p) {
  // A Fortran program has initialized MPI, or zrt_init (which needs it) has failed.
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return abi_call("zrt_comm_create", []() -> zrt_status_t {
      fail(ZRT_ERR_INVALID_STATE, "call MPI_Init before zrt_comm_create from Fortran");
    });
  return zrt_comm_create(context, MPI_Comm_f2c(mpi_comm), params, comm_p);
}

ZRT_API zrt_status_t zrt_comm_destroy(zrt_comm_h comm) {
  return abi_call("zrt_comm_destroy", [&] {
    Communicator &c = comm_from(comm);
    if (c.world())
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "comm is the context's own communicator; zrt_finalize destroys it");
    if (c.live_requests() > 0)
      fail(ZRT_ERR_INVALID_STATE, "{} request(s) on comm are not freed", c.live_requests());
    c.context().part<CommPart>().forget(c.handle);
    comm_table().remove(handle_value(comm), "comm");
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_comm_rank(zrt_comm_h comm, int *rank_p) {
  return abi_call("zrt_comm_rank", [&] {
    const Communicator &c = comm_from(comm);
    require_nonnull(rank_p, "rank_p");
    *rank_p = c.rank();
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_comm_size(zrt_comm_h comm, int *size_p) {
  return abi_call("zrt_comm_size", [&] {
    const Communicator &c = comm_from(comm);
    require_nonnull(size_p, "size_p");
    *size_p = c.size();
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_comm_backend(zrt_comm_h comm, const char **name_p) {
  return abi_call("zrt_comm_backend", [&] {
    const Communicator &c = comm_from(comm);
    require_nonnull(name_p, "name_p");
    *name_p = c.backend_name();
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_comm_agree_status(zrt_comm_h comm, zrt_status_t local_status,
                                           int *failed_rank_p) {
  // The local message is read before abi_call can overwrite it.
  std::string message = zrt::last_error();
  zrt_status_t agreed = ZRT_SUCCESS;
  zrt_status_t rc = abi_call("zrt_comm_agree_status", [&] {
    const Communicator &c = comm_from(comm);
    AgreedStatus a = agree_status(c.mpi_comm(), local_status, message);
    if (failed_rank_p != nullptr) *failed_rank_p = a.failed_rank;
    if (a.status != ZRT_SUCCESS)
      set_last_error(fmt::format("rank {}: {}", a.failed_rank, a.message));
    agreed = a.status;
    return ZRT_SUCCESS;
  });
  return rc != ZRT_SUCCESS ? rc : agreed;
}

ZRT_API zrt_status_t zrt_shard_range(size_t count, int nranks, int rank, size_t *offset_p,
                                     size_t *length_p, size_t *shard_p) {
  return abi_call("zrt_shard_range", [&] {
    if (nranks <= 0) fail(ZRT_ERR_INVALID_ARGUMENT, "nranks is {}: it must be positive", nranks);
    if (rank < 0 || rank >= nranks)
      fail(ZRT_ERR_INVALID_ARGUMENT, "rank is {}: accepted values are 0 .. {}", rank, nranks - 1);
    Shard s = shard_range(count, nranks, rank);
    if (offset_p != nullptr) *offset_p = s.offset;
    if (length_p != nullptr) *length_p = s.length;
    if (shard_p != nullptr) *shard_p = s.shard;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_dtype_size(zrt_dtype_t dtype, size_t *size_p) {
  return abi_call("zrt_dtype_size", [&] {
    require_nonnull(size_p, "size_p");
    *size_p = dtype_size(dtype);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_dtype_convert(const void *in, zrt_dtype_t from, void *out, zrt_dtype_t to,
                                       size_t count) {
  return abi_call("zrt_dtype_convert", [&] {
    const size_t in_bytes = count * dtype_size(from), out_bytes = count * dtype_size(to);
    if (count == 0) return ZRT_SUCCESS;
    require_nonnull(in, "in");
    require_nonnull(out, "out");
    auto a = reinterpret_cast<uintptr_t>(in), b = reinterpret_cast<uintptr_t>(out);
    if (a < b + out_bytes && b < a + in_bytes)
      fail(ZRT_ERR_INVALID_ARGUMENT, "in and out overlap; convert into a separate buffer");
    convert_values(in, from, out, to, count);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_comm_reduce_scatter_post(zrt_comm_h comm, const void *sendbuf,
                                                  void *recvbuf, size_t count, zrt_dtype_t dtype,
                                                  zrt_op_t op, zrt_request_h *request_p) {
  return post("zrt_comm_reduce_scatter_post", comm,
              make(CollKind::ReduceScatter, sendbuf, recvbuf, count, dtype, op, 0), request_p);
}

ZRT_API zrt_status_t zrt_comm_all_gather_post(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                              size_t count, zrt_dtype_t dtype,
                                              zrt_request_h *request_p) {
  return post("zrt_comm_all_gather_post", comm,
              make(CollKind::AllGather, sendbuf, recvbuf, count, dtype, ZRT_OP_SUM, 0), request_p);
}

ZRT_API zrt_status_t zrt_comm_all_reduce_post(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                              size_t count, zrt_dtype_t dtype, zrt_op_t op,
                                              zrt_request_h *request_p) {
  return post("zrt_comm_all_reduce_post", comm,
              make(CollKind::AllReduce, sendbuf, recvbuf, count, dtype, op, 0), request_p);
}

ZRT_API zrt_status_t zrt_comm_broadcast_post(zrt_comm_h comm, void *buf, size_t count,
                                             zrt_dtype_t dtype, int root,
                                             zrt_request_h *request_p) {
  return post("zrt_comm_broadcast_post", comm,
              make(CollKind::Broadcast, nullptr, buf, count, dtype, ZRT_OP_SUM, root), request_p);
}

ZRT_API zrt_status_t zrt_comm_reduce_scatter(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                             size_t count, zrt_dtype_t dtype, zrt_op_t op) {
  return run("zrt_comm_reduce_scatter", comm,
             make(CollKind::ReduceScatter, sendbuf, recvbuf, count, dtype, op, 0));
}

ZRT_API zrt_status_t zrt_comm_all_gather(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                         size_t count, zrt_dtype_t dtype) {
  return run("zrt_comm_all_gather", comm,
             make(CollKind::AllGather, sendbuf, recvbuf, count, dtype, ZRT_OP_SUM, 0));
}

ZRT_API zrt_status_t zrt_comm_all_reduce(zrt_comm_h comm, const void *sendbuf, void *recvbuf,
                                         size_t count, zrt_dtype_t dtype, zrt_op_t op) {
  return run("zrt_comm_all_reduce", comm,
             make(CollKind::AllReduce, sendbuf, recvbuf, count, dtype, op, 0));
}

ZRT_API zrt_status_t zrt_comm_broadcast(zrt_comm_h comm, void *buf, size_t count, zrt_dtype_t dtype,
                                        int root) {
  return run("zrt_comm_broadcast", comm,
             make(CollKind::Broadcast, nullptr, buf, count, dtype, ZRT_OP_SUM, root));
}

}  // extern "C"
