// The local checks of one rank's arguments to a collective, before anything is sent: the
// dtype and op are known, the buffers are there, aligned to their elements, and overlap
// only in the in-place forms of zerort/comm.h.
#pragma once

#include "comm/coll_args.hpp"

namespace zrt {

// Throws Error(ZRT_ERR_INVALID_ARGUMENT) naming the first bad argument of this rank (rank
// of a communicator of `size` ranks). Local.
void validate_args(const CollArgs &args, int size, int rank);

}  // namespace zrt
