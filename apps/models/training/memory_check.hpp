// Whether what a trainer is about to allocate in host memory fits what its rank may still
// use (zrt_context_memory_limit: its share of the node's memory or of the job's cgroup, or
// the process's rlimits), checked before the allocation: in a memory cgroup (Slurm's --mem)
// a job that does not fit is otherwise killed by the kernel without a word.
#pragma once

#include <zerort/zerort.h>

#include <cstdint>
#include <string>
#include <vector>

namespace training {

/// A part of what is about to be allocated on this rank: what it is ("activations for 4 x
/// 1024 tokens") and its bytes.
struct HostNeed {
  std::string what;
  int64_t bytes = 0;
};

/// Throws std::runtime_error when @p needs together exceed what this rank may still use:
/// the message names each need, the limit (which one, its size, the ranks sharing it, what
/// the process uses of it already) and @p remedies, followed by how to raise the limit.
/// No check with a null @p context or no needs. Local.
void check_host_memory(zrt_context_h context, const std::vector<HostNeed> &needs,
                       const std::string &remedies);

/// The same for what is about to be allocated on the rank's GPU (a CUDA build), against
/// what the device has free now (after the engine's buffers): the message names each need,
/// the free and total bytes, and @p remedies. No check in a host build. Local.
void check_device_memory(const std::vector<HostNeed> &needs, const std::string &remedies);

/// "the memory cgroup's limit of 1.5 GiB, shared by 2 ranks on this node"
std::string describe_limit(const zrt_memory_limit_t &limit);

}  // namespace training
