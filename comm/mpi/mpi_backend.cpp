#include "comm/mpi/mpi_backend.hpp"

#include <climits>
#include <cstring>
#include <functional>
#include <vector>

#include "comm/dtype.hpp"
#include "comm/ordered_sum.hpp"
#include "comm/partition.hpp"
#include "comm/start_order.hpp"
#include "runtime/mpi_comm.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

void sum_bf16(void *in, void *inout, int *len, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

void sum_fp16(void *in, void *inout, int *len, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = float_to_fp16(fp16_to_float(a[i]) + fp16_to_float(b[i]));
}

class MpiOp final : public BackendOp {
 public:
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<int> counts, displs;  // MPI reads these until completion
  std::function<void()> finish;     // post-processing once the data has arrived

  ~MpiOp() override {
    // A failed operation: MPI forbids freeing an active collective request, so wait for
    // it rather than leak it into a later MPI_Finalize. An abandoned one may never
    // complete (a rank did not arrive): it is leaked, the lesser harm.
    if (request != MPI_REQUEST_NULL && !abandoned_) MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
  void abandon() override { abandoned_ = true; }

  bool step() override {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (!done) return false;
    if (finish) finish();
    return true;
  }

 private:
  bool abandoned_ = false;
};

// Deterministic reduce-scatter and all-reduce: an all-to-all brings every rank's
// contribution to this rank's shard, which is summed in rank order (ordered_sum); the
// all-reduce then all-gathers the shards. Twice the traffic of a reduce-scatter for the
// all-reduce's first half is not needed: the all-to-all moves (n-1)/n of the buffer, as a
// ring reduce-scatter does. The all-reduce's all-gather starts when the all-to-all has
// completed, which happens in a different order on different ranks: it runs on its own
// communicator and waits for its turn (StartOrder) so those starts keep sequence order.
class OrderedReduceOp final : public BackendOp {
 public:
  OrderedReduceOp(const CollArgs &a, MPI_Comm comm, MPI_Comm gather_comm, StartOrder &order, int n,
                  int rank, MPI_Datatype type)
      : args_(a),
        comm_(comm),
        gather_comm_(gather_comm),
        order_(order),
        n_(n),
        type_(type),
        esize_(dtype_size(a.dtype)) {
    if (a.kind == CollKind::AllReduce) ticket_ = order_.take();
    own_ = shard_range(a.count, n, rank);
    counts_.resize(static_cast<size_t>(n));
    displs_.resize(static_cast<size_t>(n));
    recv_counts_.assign(static_cast<size_t>(n), static_cast<int>(own_.length));
    recv_displs_.resize(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
      Shard s = shard_range(a.count, n, r);
      counts_[static_cast<size_t>(r)] = static_cast<int>(s.length);
      displs_[static_cast<size_t>(r)] = static_cast<int>(std::min(s.offset, a.count));
      recv_displs_[static_cast<size_t>(r)] = r * static_cast<int>(own_.length);
    }
    chunks_.resize(own_.length * static_cast<size_t>(n) * esize_);
    if (a.kind == CollKind::ReduceScatter && own_.shard > own_.length)
      std::memset(static_cast<char *>(a.recv) + own_.length * esize_, 0,
                  (own_.shard - own_.length) * esize_);
    check_mpi(MPI_Ialltoallv(a.send, counts_.data(), displs_.data(), type_, chunks_.data(),
                             recv_counts_.data(), recv_displs_.data(), type_, comm_, &request_),
              "MPI_Ialltoallv");
  }

  ~OrderedReduceOp() override {
    if (request_ != MPI_REQUEST_NULL && !abandoned_) MPI_Wait(&request_, MPI_STATUS_IGNORE);
    if (args_.kind == CollKind::AllReduce && !gathering_) order_.skip(ticket_);
  }
  void abandon() override { abandoned_ = true; }

  bool step() override {
    if (!summed_) {
      int done = 0;
      check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done) return false;
      summed_ = true;
      if (args_.kind == CollKind::ReduceScatter) {
        ordered_sum(chunks_.data(), own_.length, n_, own_.length, args_.dtype, args_.op,
                    args_.recv);
        return true;
      }
      // All-reduce: sum this rank's shard into the first chunk, then gather every shard.
      ordered_sum(chunks_.data(), own_.length, n_, own_.length, args_.dtype, args_.op,
                  chunks_.data());
    }
    if (!gathering_) {
      if (!order_.is_turn(ticket_)) return false;
      gathering_ = true;
      order_.started();
      check_mpi(MPI_Iallgatherv(chunks_.data(), static_cast<int>(own_.length), type_, args_.recv,
                                counts_.data(), displs_.data(), type_, gather_comm_, &request_),
                "MPI_Iallgatherv");
    }
    int done = 0;
    check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done != 0;
  }

 private:
  CollArgs args_;
  MPI_Comm comm_, gather_comm_;
  StartOrder &order_;
  uint64_t ticket_ = 0;
  int n_;
  MPI_Datatype type_;
  size_t esize_;
  Shard own_;
  std::vector<int> counts_, displs_, recv_counts_, recv_displs_;
  std::vector<char> chunks_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool summed_ = false, gathering_ = false, abandoned_ = false;
};

class MpiBackend final : public Backend {
 public:
  explicit MpiBackend(const BackendGroup &group)
      : group_(group), gather_comm_(MpiComm::dup(group.comm)) {
    check_mpi(MPI_Op_create(&sum_bf16, 1, &sum_bf16_), "MPI_Op_create(bf16 sum)");
    if (int rc = MPI_Op_create(&sum_fp16, 1, &sum_fp16_); rc != MPI_SUCCESS) {
      MPI_Op_free(&sum_bf16_);
      check_mpi(rc, "MPI_Op_create(fp16 sum)");
    }
  }
  ~MpiBackend() override {
    if (abandoned_) {  // MPI may still run its operations: MPI_Finalize frees them
      gather_comm_.abandon();
      return;
    }
    MPI_Op_free(&sum_bf16_);
    MPI_Op_free(&sum_fp16_);
  }
  void abandoned() override { abandoned_ = true; }

  const char *name() const override { return "mpi"; }

  void check(const CollArgs &a) const override {
    const size_t n = static_cast<size_t>(group_.size);
    const bool whole = a.kind == CollKind::AllReduce || a.kind == CollKind::Broadcast;
    if (a.count > static_cast<size_t>(INT_MAX) * (whole ? 1 : n))
      fail(ZRT_ERR_NOT_SUPPORTED, "count {} exceeds {}, the limit of backend mpi (int counts)",
           a.count, whole ? "INT_MAX" : "INT_MAX x ranks");
  }

  std::unique_ptr<BackendOp> start(const CollArgs &a) override {
    MPI_Comm comm = group_.comm;
    const int n = group_.size, rank = group_.rank;
    if (group_.deterministic &&
        (a.kind == CollKind::ReduceScatter || a.kind == CollKind::AllReduce))
      return std::make_unique<OrderedReduceOp>(a, comm, gather_comm_, order_, n, rank,
                                               mpi_type(a.dtype));
    auto op = std::make_unique<MpiOp>();
    const size_t esize = dtype_size(a.dtype);
    MPI_Datatype type = mpi_type(a.dtype);
    MPI_Op sum = mpi_sum(a.dtype);
    Shard own = shard_range(a.count, n, rank);
    auto per_rank = [&] {
      op->counts.resize(static_cast<size_t>(n));
      op->displs.resize(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) {
        Shard s = shard_range(a.count, n, r);
        op->counts[static_cast<size_t>(r)] = static_cast<int>(s.length);
        op->displs[static_cast<size_t>(r)] = static_cast<int>(std::min(s.offset, a.count));
      }
    };
    const bool even = a.count % static_cast<size_t>(n) == 0;
    int rc = MPI_SUCCESS;

    switch (a.kind) {
      case CollKind::ReduceScatter: {
        // The padding of a short shard is ours to fill: MPI writes only the valid part.
        if (own.shard > own.length)
          std::memset(static_cast<char *>(a.recv) + own.length * esize, 0,
                      (own.shard - own.length) * esize);
        if (even) {
          rc = MPI_Ireduce_scatter_block(a.send, a.recv, static_cast<int>(own.shard), type, sum,
                                         comm, &op->request);
        } else {
          per_rank();
          rc =
              MPI_Ireduce_scatter(a.send, a.recv, op->counts.data(), type, sum, comm, &op->request);
        }
        if (a.op == ZRT_OP_AVG && own.length > 0)
          op->finish = [recv = a.recv, len = own.length, dt = a.dtype, n] {
            divide_buffer(recv, len, dt, n);
          };
        break;
      }
      case CollKind::AllGather: {
        const void *send =
            a.send == static_cast<char *>(a.recv) + own.offset * esize ? MPI_IN_PLACE : a.send;
        if (even) {
          rc = MPI_Iallgather(send, static_cast<int>(own.shard), type, a.recv,
                              static_cast<int>(own.shard), type, comm, &op->request);
        } else {
          per_rank();
          rc = MPI_Iallgatherv(send, static_cast<int>(own.length), type, a.recv, op->counts.data(),
                               op->displs.data(), type, comm, &op->request);
        }
        break;
      }
      case CollKind::AllReduce: {
        const void *send = a.send == a.recv ? MPI_IN_PLACE : a.send;
        rc = MPI_Iallreduce(send, a.recv, static_cast<int>(a.count), type, sum, comm, &op->request);
        if (a.op == ZRT_OP_AVG)
          op->finish = [recv = a.recv, len = a.count, dt = a.dtype, n] {
            divide_buffer(recv, len, dt, n);
          };
        break;
      }
      case CollKind::Broadcast:
        rc = MPI_Ibcast(a.recv, static_cast<int>(a.count), type, a.root, comm, &op->request);
        break;
    }
    check_mpi(rc, coll_name(a.kind));
    return op;
  }

 private:
  static MPI_Datatype mpi_type(zrt_dtype_t dtype) {
    switch (dtype) {
      case ZRT_DTYPE_FP32:
        return MPI_FLOAT;
      case ZRT_DTYPE_FP64:
        return MPI_DOUBLE;
      case ZRT_DTYPE_BF16:
      case ZRT_DTYPE_FP16:
        return MPI_UINT16_T;
      default:
        break;
    }
    return MPI_DATATYPE_NULL;
  }
  MPI_Op mpi_sum(zrt_dtype_t dtype) const {
    if (dtype == ZRT_DTYPE_BF16) return sum_bf16_;
    if (dtype == ZRT_DTYPE_FP16) return sum_fp16_;
    return MPI_SUM;
  }

  BackendGroup group_;
  MpiComm gather_comm_;  // the deterministic all-reduce's second phase
  StartOrder order_;
  bool abandoned_ = false;
  MPI_Op sum_bf16_ = MPI_OP_NULL;
  MPI_Op sum_fp16_ = MPI_OP_NULL;
};

}  // namespace

std::unique_ptr<Backend> make_mpi_backend(const BackendGroup &group) {
  return std::make_unique<MpiBackend>(group);
}

}  // namespace zrt
