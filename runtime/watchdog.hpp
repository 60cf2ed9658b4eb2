// The watchdog of one communicator: a collective that does not complete within the timeout
// (comm.timeout, ZRT_COMM_TIMEOUT) fails on every rank with a message that names the
// operation, its sequence number, its size and the ranks that did not arrive. The same
// machinery watches zerort's agreements (runtime/agreement_watch.hpp), whose operations
// are numbered on their own communicator.
//
// Every rank keeps one receive posted on a communicator of its own (a duplicate). When a
// rank's oldest unfinished collective #s passes the timeout, that rank (the detector)
// sends a query to every other rank. A rank answers with how many collectives it has
// posted, from the communicator's progress: inside zrt_request_test/wait, or from the
// context's watchdog thread while the program is busy elsewhere (the thread exists when
// MPI provides MPI_THREAD_MULTIPLE). After every rank answered, or a grace period, the
// detector writes the verdict - who had not posted #s, who did not answer - and sends it
// to every rank. Each rank then fails its unfinished collectives with it, and every later
// post on the communicator fails the same way, so the rank that skipped the collective
// learns it too. A rank queried but never sent a verdict (its detector died) fails on its
// own after twice the grace period.
//
// Only the failure path sends messages: a healthy collective costs one MPI_Test.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/mpi_comm.hpp"

namespace zrt {

struct WatchVerdict {
  uint64_t seq = 0;  // the collective that timed out
  std::string message;
};

class Watchdog {
 public:
  // Collective over comm (duplicated). timeout in seconds, > 0. noun names what it
  // watches in its messages ("collective", "agreement").
  Watchdog(MPI_Comm comm, double timeout, const char *noun = "collective");
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  double timeout() const { return timeout_; }

  // The oldest unfinished collective of this rank, as the watchdog needs it.
  struct Oldest {
    uint64_t seq = 0;
    double posted_at = 0;  // steady-clock seconds
    std::string what;      // "all_reduce #5 (1000 x fp32 = 3.91 KiB, sum)"
  };
  // Answers peers, watches the clock, and returns the verdict this rank must apply (its
  // own or a peer's), once. posted: collectives posted on this rank so far. Called with
  // the communicator locked; never blocks.
  std::optional<WatchVerdict> poll(double now, const Oldest *oldest, uint64_t posted,
                                   const std::string &backend);

  static double now();  // steady-clock seconds

 private:
  struct Message {
    int32_t kind = 0;  // Query, Reply, Verdict
    int32_t from = 0;
    uint64_t seq = 0;
    uint64_t posted = 0;
    char text[960] = {0};
  };
  enum Kind : int32_t { Query = 1, Reply = 2, Verdict = 3 };

  void post_receive();
  void send(int to, const Message &m);
  void reap_sends();
  std::optional<WatchVerdict> handle(const Message &m, double now, uint64_t posted);
  std::string verdict_text(double now) const;

  MpiComm comm_;
  int rank_ = 0, size_ = 1;
  double timeout_ = 0, grace_ = 0;
  const char *noun_ = "collective";
  Message incoming_;
  MPI_Request receive_ = MPI_REQUEST_NULL;
  struct Outgoing {
    std::unique_ptr<char[]> message;  // MPI reads it until the send completes
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::deque<Outgoing> sends_;
  bool decided_ = false;  // a verdict was returned; the communicator is failed

  // Detection of this rank's own timeout.
  bool detecting_ = false;
  double detect_deadline_ = 0;
  Oldest detecting_what_;
  std::vector<int64_t> replies_;  // posted count per rank, -1: no answer yet

  // A peer's query: its verdict should follow.
  bool alerted_ = false;
  int alerted_by_ = -1;
  uint64_t alerted_seq_ = 0;
  double alerted_deadline_ = 0;
};

}  // namespace zrt
