// zrt-info --selfcheck: every collective of zerort/comm.h on every dtype, against a serial
// reference that each rank computes on its own.
#pragma once

#include <zerort/zerort.h>

#include <string>
#include <vector>

struct SelfCheckResult {
  std::string op;     // "reduce_scatter"
  std::string dtype;  // "fp32"
  std::string reduction;
  int sizes = 0;
  int failures = 0;
  std::string first_error;
};

// Collective over comm. Every rank returns the same results.
std::vector<SelfCheckResult> run_selfcheck(zrt_comm_h comm);
