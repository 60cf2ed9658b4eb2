// The trainers' one small reduction per step: losses, counts and stop flags summed over
// the ranks in fp64 through zerort's own all-reduce.
#pragma once

#include <fmt/format.h>
#include <zerort/zerort.h>

#include <stdexcept>
#include <vector>

namespace training {

/// Sums @p values over the @p size ranks of @p comm, in place (nothing for one rank or a
/// null comm). Collective; throws std::runtime_error with zerort's message.
inline void sum_over_ranks(zrt_comm_h comm, int size, std::vector<double> &values) {
  if (size <= 1 || !comm) return;
  zrt_status_t rc = zrt_comm_all_reduce(comm, values.data(), values.data(), values.size(),
                                        ZRT_DTYPE_FP64, ZRT_OP_SUM);
  if (rc != ZRT_SUCCESS)
    throw std::runtime_error(fmt::format("all-reduce failed: {}", zrt_last_error_message()));
}

}  // namespace training
