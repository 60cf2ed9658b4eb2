// Where memory goes that MPI, UCX or NCCL may still write after zerort gave up on it. When
// the watchdog abandons a collective or an agreement, the library underneath may keep
// running it (an MPI nonblocking collective cannot be cancelled) and write its results, or
// its internal buffers, at any time until MPI_Finalize. Such objects are buried here: kept
// for the life of the process and never destroyed, since their destructors could wait for
// peers that will never come.
#pragma once

#include <memory>

namespace zrt {

// Keeps p reachable (so leak checkers do not report it) and never frees it.
void keep_forever(const void *p);

template <class T>
void bury(std::unique_ptr<T> object) {
  keep_forever(object.release());
}

}  // namespace zrt
