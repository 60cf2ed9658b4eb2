#include "memory_check.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "model_state.hpp"

namespace training {
namespace {

std::string bytes_text(uint64_t bytes) {
  char text[32] = {0};
  size_t length = 0;
  zrt_format_bytes(bytes, text, sizeof text, &length);
  return text;
}

// The needs' total and their "what: bytes" parts, for the messages.
std::pair<int64_t, std::vector<std::string>> sum_needs(const std::vector<HostNeed> &needs) {
  int64_t total = 0;
  std::vector<std::string> parts;
  for (const HostNeed &n : needs)
    if (n.bytes > 0) {
      total += n.bytes;
      parts.push_back(fmt::format("{}: {}", n.what, bytes_text(static_cast<uint64_t>(n.bytes))));
    }
  return {total, parts};
}

const char *how_to_raise(zrt_memory_limit_kind_t kind) {
  switch (kind) {
    case ZRT_MEMORY_LIMIT_CGROUP:
      return "a larger memory limit for the job (Slurm: --mem or --mem-per-cpu)";
    case ZRT_MEMORY_LIMIT_ADDRESS_SPACE:
      return "a larger ulimit -v";
    case ZRT_MEMORY_LIMIT_DATA:
      return "a larger ulimit -d";
    case ZRT_MEMORY_LIMIT_PHYSICAL:
      break;
  }
  return "fewer ranks per node (more nodes)";
}

}  // namespace

std::string describe_limit(const zrt_memory_limit_t &limit) {
  std::string text;
  switch (limit.kind) {
    case ZRT_MEMORY_LIMIT_CGROUP:
      text = "the memory cgroup's limit of " + bytes_text(limit.limit_bytes);
      break;
    case ZRT_MEMORY_LIMIT_ADDRESS_SPACE:
      text = "RLIMIT_AS (ulimit -v) of " + bytes_text(limit.limit_bytes);
      break;
    case ZRT_MEMORY_LIMIT_DATA:
      text = "RLIMIT_DATA (ulimit -d) of " + bytes_text(limit.limit_bytes);
      break;
    case ZRT_MEMORY_LIMIT_PHYSICAL:
      text = "the node's physical memory of " + bytes_text(limit.limit_bytes);
      break;
  }
  if (limit.sharing_ranks > 1)
    text += fmt::format(", shared by {} ranks on this node", limit.sharing_ranks);
  return text;
}

void check_host_memory(zrt_context_h context, const std::vector<HostNeed> &needs,
                       const std::string &remedies) {
  const auto [total, parts] = sum_needs(needs);
  if (context == nullptr || total == 0) return;
  zrt_memory_limit_t limit{};
  limit.field_mask = ZRT_MEMORY_LIMIT_FIELD_ALL;
  if (zrt_context_memory_limit(context, &limit) != ZRT_SUCCESS)
    throw std::runtime_error(zrt_last_error_message());
  if (static_cast<uint64_t>(total) <= limit.available_bytes) return;
  throw std::runtime_error(fmt::format(
      "this rank needs {} more host memory ({}) but may use {} more under {} (it uses {} "
      "already, the model states included). To fit: {}, or {}",
      bytes_text(static_cast<uint64_t>(total)), fmt::join(parts, ", "),
      bytes_text(limit.available_bytes), describe_limit(limit), bytes_text(limit.used_bytes),
      remedies, how_to_raise(limit.kind)));
}

void check_device_memory(const std::vector<HostNeed> &needs, const std::string &remedies) {
  const auto [total, parts] = sum_needs(needs);
  int64_t free = 0, device_total = 0;
  if (total == 0 || !device_memory(free, device_total) || total <= free) return;
  throw std::runtime_error(fmt::format(
      "this rank needs {} more GPU memory ({}) but its GPU has {} free of {} (the model states "
      "are there already). To fit: {}; or fewer model states per GPU: a higher "
      "--zero-stage, more ranks, or --offload-optimizer cpu (zrt-plan shows each stage's "
      "bytes)",
      bytes_text(static_cast<uint64_t>(total)), fmt::join(parts, ", "),
      bytes_text(static_cast<uint64_t>(free)), bytes_text(static_cast<uint64_t>(device_total)),
      remedies));
}

}  // namespace training
