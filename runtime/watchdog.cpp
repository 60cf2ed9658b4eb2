#include "runtime/watchdog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/graveyard.hpp"
#include "runtime/mpi_error.hpp"

namespace zrt {

namespace {

// "rank 3", "ranks 1, 3-5"
std::string rank_list(const std::vector<int> &ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (i > 0) out += ", ";
    out += j > i ? fmt::format("{}-{}", ranks[i], ranks[j]) : fmt::format("{}", ranks[i]);
    i = j + 1;
  }
  return out;
}

std::string seconds_text(double s) {
  return fmt::format("{:g} s", s);
}

}  // namespace

double Watchdog::now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Watchdog::Watchdog(MPI_Comm comm, double timeout, const char *noun)
    : comm_(MpiComm::dup(comm)),
      timeout_(timeout),
      grace_(std::clamp(timeout / 4, 0.2, 5.0)),
      noun_(noun) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  post_receive();
}

Watchdog::~Watchdog() {
  if (receive_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&receive_);
    MPI_Wait(&receive_, MPI_STATUS_IGNORE);
  }
  // Watchdog messages are small and sent eagerly: they complete at once unless the peer
  // is gone. Give them a moment, then let MPI keep the buffers.
  double deadline = now() + 1.0;
  while (!sends_.empty() && now() < deadline)
    reap_sends();
  for (Outgoing &o : sends_) {
    MPI_Request_free(&o.request);
    bury(std::move(o.message));
  }
}

void Watchdog::post_receive() {
  check_mpi(MPI_Irecv(&incoming_, sizeof(Message), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm_,
                      &receive_),
            "MPI_Irecv(watchdog)");
}

void Watchdog::send(int to, const Message &m) {
  Outgoing o;
  o.message.reset(new char[sizeof(Message)]);
  std::memcpy(o.message.get(), &m, sizeof(Message));
  int rc = MPI_Isend(o.message.get(), sizeof(Message), MPI_BYTE, to, m.kind, comm_, &o.request);
  if (rc == MPI_SUCCESS) sends_.push_back(std::move(o));
  // A failed send: the peer learns by its own timeout instead.
}

void Watchdog::reap_sends() {
  while (!sends_.empty()) {
    int done = 0;
    if (MPI_Test(&sends_.front().request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) {
      sends_.pop_front();
      continue;
    }
    break;
  }
}

std::optional<WatchVerdict> Watchdog::handle(const Message &m, double now, uint64_t posted) {
  switch (m.kind) {
    case Query: {
      Message reply;
      reply.kind = Reply;
      reply.from = rank_;
      reply.seq = m.seq;
      reply.posted = posted;
      send(m.from, reply);
      if (!alerted_) {
        alerted_ = true;
        alerted_by_ = m.from;
        alerted_seq_ = m.seq;
        alerted_deadline_ = now + 2 * grace_;
      }
      return std::nullopt;
    }
    case Reply:
      if (detecting_ && m.seq == detecting_what_.seq && m.from >= 0 && m.from < size_)
        replies_[static_cast<size_t>(m.from)] = static_cast<int64_t>(m.posted);
      return std::nullopt;
    case Verdict: {
      WatchVerdict v;
      v.seq = m.seq;
      v.message.assign(m.text, strnlen(m.text, sizeof m.text));
      return v;
    }
    default:
      return std::nullopt;
  }
}

std::string Watchdog::verdict_text(double now) const {
  (void)now;
  const uint64_t seq = detecting_what_.seq;
  std::vector<int> absent, silent;
  std::vector<std::string> last;
  for (int r = 0; r < size_; ++r) {
    int64_t p = replies_[static_cast<size_t>(r)];
    if (p < 0) {
      silent.push_back(r);
    } else if (static_cast<uint64_t>(p) <= seq) {
      absent.push_back(r);
      last.push_back(p == 0 ? std::string("none") : fmt::format("#{}", p - 1));
    }
  }
  std::vector<std::string> parts;
  if (!absent.empty())
    parts.push_back(
        fmt::format("{} did not arrive (last {} posted on this "
                    "communicator: {})",
                    rank_list(absent), noun_, fmt::join(last, ", ")));
  if (!silent.empty())
    parts.push_back(
        fmt::format("{} did not answer within {} (busy outside zerort without a "
                    "watchdog thread, hung, or dead)",
                    rank_list(silent), seconds_text(grace_)));
  if (parts.empty())
    parts.push_back(
        fmt::format("every rank arrived, but the {} made no progress (a rank that "
                    "posted it is not calling zrt_request_test/wait?)",
                    noun_));
  return fmt::format("{} did not complete within {}: {}; detected by rank {}", detecting_what_.what,
                     seconds_text(timeout_), fmt::join(parts, "; "), rank_);
}

std::optional<WatchVerdict> Watchdog::poll(double now, const Oldest *oldest, uint64_t posted,
                                           const std::string &backend) {
  reap_sends();
  std::optional<WatchVerdict> result;
  for (;;) {
    int done = 0;
    if (MPI_Test(&receive_, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) break;
    Message m = incoming_;
    post_receive();
    std::optional<WatchVerdict> v = handle(m, now, posted);
    if (v && !decided_ && !result) result = std::move(v);
  }
  if (decided_) return std::nullopt;  // keeps answering queries, decides nothing more
  if (result) {
    decided_ = true;
    return result;
  }

  if (detecting_) {
    bool all = std::all_of(replies_.begin(), replies_.end(), [](int64_t p) { return p >= 0; });
    if (!all && now < detect_deadline_) return std::nullopt;
    WatchVerdict v;
    v.seq = detecting_what_.seq;
    v.message = verdict_text(now);
    if (v.message.find("made no progress") != std::string::npos)
      v.message += fmt::format(" [backend {}]", backend);
    Message m;
    m.kind = Verdict;
    m.from = rank_;
    m.seq = v.seq;
    std::string text = v.message.size() < sizeof m.text
                           ? v.message
                           : v.message.substr(0, sizeof m.text - 4) + "...";
    std::memcpy(m.text, text.data(), text.size());
    for (int r = 0; r < size_; ++r)
      if (r != rank_) send(r, m);
    decided_ = true;
    return v;
  }

  if (oldest != nullptr && now - oldest->posted_at > timeout_) {
    detecting_ = true;
    detecting_what_ = *oldest;
    detect_deadline_ = now + grace_;
    replies_.assign(static_cast<size_t>(size_), -1);
    replies_[static_cast<size_t>(rank_)] = static_cast<int64_t>(posted);
    Message q;
    q.kind = Query;
    q.from = rank_;
    q.seq = oldest->seq;
    for (int r = 0; r < size_; ++r)
      if (r != rank_) send(r, q);
    return poll(now, nullptr, posted, backend);  // a single rank decides at once
  }

  if (alerted_ && now > alerted_deadline_) {
    decided_ = true;
    return WatchVerdict{alerted_seq_,
                        fmt::format("rank {} reported that {} #{} did not complete "
                                    "within {}, but its verdict did not arrive",
                                    alerted_by_, noun_, alerted_seq_, seconds_text(timeout_))};
  }
  return std::nullopt;
}

}  // namespace zrt
