#include "comm/nccl/nccl_backend.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "comm/dtype.hpp"
#include "comm/nccl/ordered_sum_kernel.hpp"
#include "comm/partition.hpp"
#include "memory/cuda/cuda_device.hpp"
#include "runtime/error.hpp"
#include "runtime/mpi_error.hpp"
#include "runtime/runtime_context.hpp"

namespace zrt {

namespace {

void check_cuda(cudaError_t err, const char *what) {
  if (err != cudaSuccess)
    fail(ZRT_ERR_BACKEND, "CUDA {} failed: {}", what, cudaGetErrorString(err));
}

void check_nccl(ncclResult_t r, const char *what) {
  if (r != ncclSuccess && r != ncclInProgress)
    fail(ZRT_ERR_BACKEND, "NCCL {} failed: {}", what, ncclGetErrorString(r));
}

ncclDataType_t nccl_type(zrt_dtype_t dtype) {
  switch (dtype) {
    case ZRT_DTYPE_FP32:
      return ncclFloat32;
    case ZRT_DTYPE_FP64:
      return ncclFloat64;
    case ZRT_DTYPE_BF16:
      return ncclBfloat16;
    case ZRT_DTYPE_FP16:
      return ncclFloat16;
    default:
      break;
  }
  dtype_size(dtype);  // throws the standard message
  return ncclFloat32;
}

class NcclBackend;

// An operation enqueued on the stream; done when its event has fired.
class NcclOp final : public BackendOp {
 public:
  NcclOp(NcclBackend &backend, cudaEvent_t event) : backend_(backend), event_(event) {}
  ~NcclOp() override;
  bool step() override;
  void abandon() override;

 private:
  NcclBackend &backend_;
  cudaEvent_t event_;
};

class NcclBackend final : public Backend {
 public:
  explicit NcclBackend(const BackendGroup &group) : group_(group) {
    // Every rank checks its device before any collective step, and they agree.
    std::string problem;
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      problem = err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device";
      cudaGetLastError();
    } else {
      const Topology &t = group.context->topology();
      int chosen = t.gpu() >= 0 ? t.gpus()[static_cast<size_t>(t.gpu())].cuda_index : -1;
      device_ = chosen >= 0 ? chosen : t.layout().local_rank % count;
      err = cudaSetDevice(device_);
      if (err != cudaSuccess) problem = cudaGetErrorString(err);
    }
    int ok = problem.empty() ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, group.comm),
              "MPI_Allreduce(CUDA devices)");
    if (!ok)
      fail(ZRT_ERR_NOT_SUPPORTED, "backend nccl needs a CUDA device on every rank: {}",
           problem.empty() ? "another rank has none" : problem);

    ncclUniqueId id{};
    if (group.rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, group.comm), "MPI_Bcast(NCCL unique id)");
    check_nccl(ncclCommInitRank(&comm_, group.size, id, group.rank), "ncclCommInitRank");
    err = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (err != cudaSuccess) {
      ncclCommDestroy(comm_);
      check_cuda(err, "cudaStreamCreateWithFlags");
    }
  }

  ~NcclBackend() override {
    if (!aborted_) {
      cudaStreamSynchronize(stream_);
      ncclCommDestroy(comm_);
    }
    cudaStreamDestroy(stream_);
  }

  const char *name() const override { return "nccl"; }
  bool serves(MemoryKind kind) const override { return kind == MemoryKind::Device; }

  void describe(nlohmann::json &out) const override {
    int version = 0;
    ncclGetVersion(&version);
    out["nccl_version"] = version;
    out["device"] = device_;
  }

  std::unique_ptr<BackendOp> start(const CollArgs &a) override {
    if (aborted_) fail(ZRT_ERR_BACKEND, "the NCCL communicator was aborted by the watchdog");
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    // The producer's work first: in stream order where it is a CUDA event, else the host
    // waits for it.
    if (void *ready = cuda_event_of(a.ready)) {
      check_cuda(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(ready), 0),
                 "cudaStreamWaitEvent");
    } else if (!a.ready) {
      // A plain call (zrt_comm_all_reduce & co.) names no producer: it comes after the work the
      // program already put on CUDA's legacy default stream, as a cudaMemcpy would. Without
      // this a cudaMemset of the buffers just before the call could land after the result
      // (seen on an H200, 2026-12-04).
      cudaEvent_t before = nullptr;
      check_cuda(cudaEventCreateWithFlags(&before, cudaEventDisableTiming), "cudaEventCreate");
      cudaError_t err = cudaEventRecord(before, cudaStreamLegacy);
      if (err == cudaSuccess) err = cudaStreamWaitEvent(stream_, before, 0);
      cudaEventDestroy(before);  // released once the wait has passed it
      check_cuda(err, "cudaStreamWaitEvent on the default stream");
    } else {
      a.ready.synchronize();
    }
    const int n = group_.size, me = group_.rank;
    const size_t es = dtype_size(a.dtype);
    const ncclDataType_t type = nccl_type(a.dtype);
    // NCCL before 2.29.7 leaves the last elements of a one-rank ncclAvg unwritten
    // (NVIDIA/nccl#1950; seen here on an H200 with the CUDA 13 wheels' NCCL, 2026-12-04).
    // On one rank the average is the sum, bit for bit.
    const ncclRedOp_t op = a.op == ZRT_OP_AVG && n > 1 ? ncclAvg : ncclSum;
    const Shard own = shard_range(a.count, n, me);
    const size_t padded = own.shard * static_cast<size_t>(n);
    const bool even = padded == a.count;
    char *send = const_cast<char *>(static_cast<const char *>(a.send));
    char *recv = static_cast<char *>(a.recv);

    auto scratch = [&](size_t bytes) {
      void *p = nullptr;
      check_cuda(cudaMallocAsync(&p, std::max<size_t>(bytes, 1), stream_), "cudaMallocAsync");
      return static_cast<char *>(p);
    };
    // The whole buffer padded to n equal shards, zeros in the padding.
    auto padded_copy = [&](const char *src) {
      char *p = scratch(padded * es);
      check_cuda(cudaMemcpyAsync(p, src, a.count * es, cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync");
      check_cuda(cudaMemsetAsync(p + a.count * es, 0, (padded - a.count) * es, stream_),
                 "cudaMemsetAsync");
      return p;
    };
    // All-gather of every rank's shard from `mine` (its valid elements) into out.
    auto all_gather = [&](const char *mine, char *out) {
      if (even) {
        check_nccl(ncclAllGather(mine, out, own.shard, type, comm_, stream_), "ncclAllGather");
        return;
      }
      char *p = scratch(padded * es);
      char *slot = p + own.offset * es;
      if (own.length > 0)
        check_cuda(cudaMemcpyAsync(slot, mine, own.length * es, cudaMemcpyDeviceToDevice, stream_),
                   "cudaMemcpyAsync");
      check_cuda(cudaMemsetAsync(slot + own.length * es, 0, (own.shard - own.length) * es, stream_),
                 "cudaMemsetAsync");
      check_nccl(ncclAllGather(slot, p, own.shard, type, comm_, stream_), "ncclAllGather");
      check_cuda(cudaMemcpyAsync(out, p, a.count * es, cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync");
      check_cuda(cudaFreeAsync(p, stream_), "cudaFreeAsync");
    };
    // Deterministic: every rank's piece of this rank's shard, summed in rank order.
    auto ordered_reduce_scatter = [&](char *out) {
      char *pieces = scratch(static_cast<size_t>(n) * own.shard * es);
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int p = 0; p < n; ++p) {
        const Shard s = shard_range(a.count, n, p);
        if (s.length > 0)
          check_nccl(ncclSend(send + s.offset * es, s.length, type, p, comm_, stream_), "ncclSend");
        if (own.length > 0)
          check_nccl(ncclRecv(pieces + static_cast<size_t>(p) * own.length * es, own.length, type,
                              p, comm_, stream_),
                     "ncclRecv");
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd");
      check_cuda(launch_ordered_sum(pieces, own.length, n, own.length, a.dtype, a.op, out, stream_),
                 "ordered sum kernel launch");
      check_cuda(cudaFreeAsync(pieces, stream_), "cudaFreeAsync");
    };

    if (a.count > 0) {
      switch (a.kind) {
        case CollKind::ReduceScatter:
          if (own.shard > own.length)
            check_cuda(
                cudaMemsetAsync(recv + own.length * es, 0, (own.shard - own.length) * es, stream_),
                "cudaMemsetAsync");
          if (group_.deterministic) {
            ordered_reduce_scatter(recv);
          } else if (even) {
            check_nccl(ncclReduceScatter(send, recv, own.shard, type, op, comm_, stream_),
                       "ncclReduceScatter");
          } else {
            char *p = padded_copy(send);
            check_nccl(ncclReduceScatter(p, recv, own.shard, type, op, comm_, stream_),
                       "ncclReduceScatter");
            check_cuda(cudaFreeAsync(p, stream_), "cudaFreeAsync");
          }
          break;
        case CollKind::AllGather:
          all_gather(send, recv);
          break;
        case CollKind::AllReduce:
          if (group_.deterministic) {
            char *mine = scratch(std::max<size_t>(own.length, 1) * es);
            ordered_reduce_scatter(mine);
            all_gather(mine, recv);
            check_cuda(cudaFreeAsync(mine, stream_), "cudaFreeAsync");
          } else {
            check_nccl(ncclAllReduce(send, recv, a.count, type, op, comm_, stream_),
                       "ncclAllReduce");
          }
          break;
        case CollKind::Broadcast:
          check_nccl(ncclBroadcast(recv, recv, a.count, type, a.root, comm_, stream_),
                     "ncclBroadcast");
          break;
      }
    }
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
    cudaError_t err = cudaEventRecord(event, stream_);
    if (err != cudaSuccess) {
      cudaEventDestroy(event);
      check_cuda(err, "cudaEventRecord");
    }
    return std::make_unique<NcclOp>(*this, event);
  }

  // Asynchronous NCCL errors (a peer that died, a network failure) end the operation.
  void check_async() {
    ncclResult_t async = ncclSuccess;
    if (!aborted_ && ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress)
      fail(ZRT_ERR_BACKEND, "NCCL reported an asynchronous error: {}", ncclGetErrorString(async));
  }

  void abort() {
    if (aborted_) return;
    ncclCommAbort(comm_);
    aborted_ = true;
  }

 private:
  BackendGroup group_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  bool aborted_ = false;
};

NcclOp::~NcclOp() {
  cudaEventDestroy(event_);
}

bool NcclOp::step() {
  cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) {
    backend_.check_async();
    return false;
  }
  check_cuda(err, "cudaEventQuery");
  return true;
}

void NcclOp::abandon() {
  backend_.abort();
}

}  // namespace

std::unique_ptr<Backend> make_nccl_backend(const BackendGroup &group) {
  return std::make_unique<NcclBackend>(group);
}

}  // namespace zrt
