#include "comm/ucx/ucx_worker.hpp"

#include <cstdlib>
#include <utility>

#include "runtime/error.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

std::string tls() {
  const char *t = std::getenv("UCX_TLS");
  return t != nullptr ? fmt::format("UCX_TLS={}", t) : std::string("UCX_TLS unset (all)");
}

[[noreturn]] void fail_ucx(const char *call, ucs_status_t status) {
  fail(ZRT_ERR_BACKEND, "UCX {} failed: {} ({})", call, ucs_status_string(status), tls());
}

}  // namespace

UcxTransfer::UcxTransfer(UcxTransfer &&o) noexcept
    : worker_(o.worker_),
      request_(std::exchange(o.request_, nullptr)),
      active_(std::exchange(o.active_, false)),
      receive_(o.receive_),
      what_(o.what_) {}

UcxTransfer &UcxTransfer::operator=(UcxTransfer &&o) noexcept {
  if (this != &o) {
    cancel();
    worker_ = o.worker_;
    request_ = std::exchange(o.request_, nullptr);
    active_ = std::exchange(o.active_, false);
    receive_ = o.receive_;
    what_ = o.what_;
  }
  return *this;
}

UcxTransfer::~UcxTransfer() {
  cancel();
}

bool UcxTransfer::done() {
  if (!active_) return true;
  if (request_ != nullptr) {
    ucs_status_t status = ucp_request_check_status(request_);
    if (status == UCS_INPROGRESS) return false;
    ucp_request_free(request_);
    request_ = nullptr;
    active_ = false;
    if (status != UCS_OK)
      fail(ZRT_ERR_BACKEND, "UCX tagged {} failed: {}", what_, ucs_status_string(status));
    return true;
  }
  active_ = false;
  return true;
}

void UcxTransfer::cancel() {
  if (request_ != nullptr) {
    if (receive_) ucp_request_cancel(worker_, request_);
    ucp_request_free(request_);  // a send is released by UCX when it completes
    request_ = nullptr;
  }
  active_ = false;
}

UcxWorker::UcxWorker(MPI_Comm comm) : comm_(comm) {
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  transports_ = tls();

  // Local steps first; the ranks agree before the exchange, so one rank's failure does not
  // leave the others waiting in it.
  ucp_address_t *address = nullptr;
  size_t address_length = 0;
  std::string error;
  try {
    ucp_config_t *config = nullptr;
    ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
    if (st != UCS_OK) fail_ucx("ucp_config_read", st);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    st = ucp_init(&params, config, &context_);
    ucp_config_release(config);
    if (st != UCS_OK) {
      context_ = nullptr;
      fail_ucx("ucp_init", st);
    }
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(context_, &wp, &worker_);
    if (st != UCS_OK) {
      worker_ = nullptr;
      fail_ucx("ucp_worker_create", st);
    }
    st = ucp_worker_get_address(worker_, &address, &address_length);
    if (st != UCS_OK) fail_ucx("ucp_worker_get_address", st);
  } catch (const Error &e) {
    error = e.what();
  }
  int ok = error.empty() ? 1 : 0;
  int rc = MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (rc != MPI_SUCCESS || !ok) {
    if (address != nullptr) ucp_worker_release_address(worker_, address);
    close();
    check_mpi(rc, "MPI_Allreduce(UCX start)");
    fail(ZRT_ERR_BACKEND, "{}", error.empty() ? "UCX could not start on another rank" : error);
  }

  // Exchange addresses, then connect to every peer.
  std::vector<int> lengths(static_cast<size_t>(size_)), displs(static_cast<size_t>(size_));
  int mine = static_cast<int>(address_length);
  rc = MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  std::vector<char> all;
  if (rc == MPI_SUCCESS) {
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[static_cast<size_t>(r)] = total;
      total += lengths[static_cast<size_t>(r)];
    }
    all.resize(static_cast<size_t>(total));
    rc = MPI_Allgatherv(address, mine, MPI_BYTE, all.data(), lengths.data(), displs.data(),
                        MPI_BYTE, comm);
  }
  ucp_worker_release_address(worker_, address);
  if (rc != MPI_SUCCESS) {
    close();
    check_mpi(rc, "MPI_Allgatherv(UCX worker addresses)");
  }
  eps_.assign(static_cast<size_t>(size_), nullptr);
  for (int r = 0; r < size_ && error.empty(); ++r) {
    if (r == rank_) continue;
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep.address =
        reinterpret_cast<const ucp_address_t *>(all.data() + displs[static_cast<size_t>(r)]);
    ucs_status_t st = ucp_ep_create(worker_, &ep, &eps_[static_cast<size_t>(r)]);
    if (st != UCS_OK) {
      eps_[static_cast<size_t>(r)] = nullptr;
      error = fmt::format("UCX ucp_ep_create to rank {} failed: {} ({})", r, ucs_status_string(st),
                          tls());
    }
  }
  ok = error.empty() ? 1 : 0;
  rc = MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (rc != MPI_SUCCESS || !ok) {
    close();
    check_mpi(rc, "MPI_Allreduce(UCX connect)");
    fail(ZRT_ERR_BACKEND, "{}", error.empty() ? "UCX could not connect on another rank" : error);
  }
}

UcxWorker::~UcxWorker() {
  close();
}

void UcxWorker::close() {
  // Every collective has completed (or was abandoned): nothing needs the peers any more,
  // so endpoints close without a handshake; the barrier keeps every worker alive until no
  // peer holds an open endpoint to it. The communicator met under its watch before this
  // (Communicator::~Communicator), so every rank is here; an abandoned worker skips it.
  std::vector<void *> closing;
  for (ucp_ep_h ep : eps_) {
    if (ep == nullptr) continue;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void *r = ucp_ep_close_nbx(ep, &p);
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
  }
  for (void *r : closing) {
    while (ucp_request_check_status(r) == UCS_INPROGRESS)
      ucp_worker_progress(worker_);
    ucp_request_free(r);
  }
  if (!eps_.empty() && !abandoned_) MPI_Barrier(comm_);
  eps_.clear();
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
  worker_ = nullptr;
  context_ = nullptr;
}

bool UcxWorker::progress() {
  bool any = false;
  for (int i = 0; i < 16 && ucp_worker_progress(worker_) != 0; ++i)
    any = true;
  return any;
}

UcxTransfer UcxWorker::send(int peer, const void *buffer, size_t bytes, uint64_t tag) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = ucp_dt_make_contig(1);
  ucs_status_ptr_t r = ucp_tag_send_nbx(eps_[static_cast<size_t>(peer)], buffer, bytes, tag, &p);
  if (UCS_PTR_IS_ERR(r))
    fail(ZRT_ERR_BACKEND, "UCX ucp_tag_send_nbx of {} bytes to rank {} failed: {}", bytes, peer,
         ucs_status_string(UCS_PTR_STATUS(r)));
  UcxTransfer t;
  t.worker_ = worker_;
  t.request_ = r;
  t.active_ = true;
  t.what_ = "send";
  return t;
}

UcxTransfer UcxWorker::receive(void *buffer, size_t bytes, uint64_t tag) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = ucp_dt_make_contig(1);
  ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_, buffer, bytes, tag, ~uint64_t{0}, &p);
  if (UCS_PTR_IS_ERR(r))
    fail(ZRT_ERR_BACKEND, "UCX ucp_tag_recv_nbx of {} bytes failed: {}", bytes,
         ucs_status_string(UCS_PTR_STATUS(r)));
  UcxTransfer t;
  t.worker_ = worker_;
  t.request_ = r;
  t.active_ = true;
  t.receive_ = true;
  t.what_ = "receive";
  return t;
}

}  // namespace zrt
