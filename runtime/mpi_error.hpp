// Turns MPI error codes into zrt::Error. zerort sets MPI_ERRORS_RETURN on its own
// communicators, so MPI failures come back here instead of aborting the job.
#pragma once

#include <mpi.h>

#include "runtime/error.hpp"

namespace zrt {

std::string mpi_error_string(int code);

inline void check_mpi(int code, const char *what) {
  if (code != MPI_SUCCESS) fail(ZRT_ERR_MPI, "{} failed: {}", what, mpi_error_string(code));
}

}  // namespace zrt
