// One thread per rank that serves the context's communicators while the program is busy
// elsewhere (Aluminum's progress engine). In `drive` mode it steps every running
// collective, so transfers move during the program's compute and test/wait find them
// done; it spins while work is in flight and naps when there is none. In `watch` mode
// (the default whenever comm.timeout is set) it only runs the watchdogs a few times a
// second: answering peers' queries and failing collectives that time out.
//
// It is bound with hwloc to the last processing unit of the rank's binding (the rank's
// own cores: the thread serves that rank's buffers). It calls MPI concurrently with the
// program, so it needs MPI_THREAD_MULTIPLE; without it zerort progresses inside
// zrt_request_test/wait only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zrt {

class Communicator;
class Topology;

class ProgressThread {
 public:
  enum class Mode { Watch, Drive };
  ProgressThread(const Topology &topology, Mode mode);
  ~ProgressThread();  // stops and joins
  ProgressThread(const ProgressThread &) = delete;
  ProgressThread &operator=(const ProgressThread &) = delete;

  void add(Communicator *comm);
  void remove(Communicator *comm);  // after it returns the thread no longer touches comm
  Mode mode() const { return mode_; }
  const std::string &binding() const { return binding_; }  // "PU 3", or why unbound

 private:
  void run();

  Mode mode_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Communicator *> comms_;
  bool stop_ = false;
  std::string binding_;
  std::thread thread_;
};

}  // namespace zrt
