// The MPI backend: zerort's collectives on MPI's non-blocking collectives. It serves any
// host buffer on any communicator and is the reference the faster backends are tested
// against. bf16 and fp16 travel as 16-bit integers and are summed by user MPI_Ops that
// accumulate each pairwise sum in fp32.
#pragma once

#include <memory>

#include "comm/backend.hpp"

namespace zrt {

std::unique_ptr<Backend> make_mpi_backend(const BackendGroup &group);

}  // namespace zrt
