#include "optim/memory_fit.hpp"

#include <fmt/format.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "optim/engine_plan.hpp"
#include "optim/stage_layout.hpp"
#include "runtime/format_bytes.hpp"

namespace zrt {

namespace {

// "1.86 GiB of host memory on this rank at ZeRO stage 0 over 1 rank (parameters 475 MiB,
// gradients 475 MiB, optimizer state 950 MiB)"
std::string need_text(const MemoryReport &r, size_t bytes, const char *where, int stage,
                      int nranks) {
  std::vector<std::string> parts;
  auto add = [&](const char *name, int64_t b) {
    if (b > 0) parts.push_back(fmt::format("{} {}", name, format_bytes(static_cast<size_t>(b))));
  };
  add("parameters", r.parameters);
  add("gradients", r.gradients);
  add("master weights", r.master_weights);
  add("optimizer state", r.optimizer_state);
  add("buckets", r.buckets);
  return fmt::format(
      "the model states need {} of {} memory on this rank at ZeRO stage {} over "
      "{} rank{} (in all: {})",
      format_bytes(bytes), where, stage, nranks, nranks == 1 ? "" : "s", fmt::join(parts, ", "));
}

// What would make it fit besides a larger limit: the higher stages that would (with their
// need, computed as the engine's), more ranks, the optimizer state in host memory.
std::string remedies(const EngineSettings &settings, const Layout &layout, int nranks, bool device,
                     int window_ranks, const std::function<int64_t(const MemoryReport &)> &bytes,
                     size_t room, const std::string &larger) {
  std::vector<std::string> ways;
  // On one rank no stage divides anything.
  std::vector<std::string> fits;
  for (int stage = settings.stage + 1; stage <= 3 && nranks > 1; ++stage) {
    const MemoryReport r =
        EnginePlan::planned_memory(settings, StageLayout::of(stage), layout, device, window_ranks);
    const size_t need = static_cast<size_t>(bytes(r));
    if (need <= room) fits.push_back(fmt::format("{} ({})", stage, format_bytes(need)));
  }
  if (!fits.empty())
    ways.push_back(fmt::format("ZeRO stage {} (zero_optimization.stage)", fmt::join(fits, " or ")));
  ways.push_back(fmt::format("more ranks{} ({} now)",
                             settings.stage == 3 ? ""
                                                 : " at ZeRO stage 3, which divides all the "
                                                   "states among them",
                             nranks));
  if (device && !settings.offload_optimizer)
    ways.push_back(
        "the optimizer state in host memory (zero_optimization.offload_optimizer.device cpu)");
  if (device && settings.offload_optimizer && settings.offload_ratio < 1)
    ways.push_back(fmt::format(
        "more of the optimizer state in host memory (zero_optimization.offload_optimizer.ratio "
        "above {})",
        settings.offload_ratio));
  ways.push_back(larger);
  std::string text;
  for (size_t i = 0; i < ways.size(); ++i)
    text += (i == 0 ? "" : i + 1 == ways.size() ? ", or " : ", ") + ways[i];
  return text;
}

// The limit (not RLIMIT_AS) that leaves this rank the least room, and that room.
const MemoryLimit *tightest_memory_limit(const MemoryPart &memory, const ProcessUsage &usage,
                                         size_t *room) {
  const MemoryLimit *tight = nullptr;
  *room = std::numeric_limits<size_t>::max();
  for (const MemoryLimit &l : memory.limits()) {
    if (l.kind == MemoryLimitKind::AddressSpace) continue;
    const size_t r = room_under(l, usage);
    if (r < *room) {
      *room = r;
      tight = &l;
    }
  }
  return tight;
}

}  // namespace

void check_engine_fits(MemoryPart &memory, const EngineSettings &settings, const Layout &layout,
                       int nranks, bool device, int window_ranks) {
  const MemoryReport need = EnginePlan::planned_memory(settings, StageLayout::of(settings.stage),
                                                       layout, device, window_ranks);
  // What the process may use: host memory of every kind (pool, pinned, node-shared window).
  if (need.host_bytes > 0) {
    const ProcessUsage usage = read_process_usage();
    size_t room = 0;
    const MemoryLimit *limit = tightest_memory_limit(memory, usage, &room);
    if (limit != nullptr && static_cast<size_t>(need.host_bytes) > room)
      fail(
          ZRT_ERR_OUT_OF_MEMORY,
          "{}, and this rank may use {} more under {} (it uses {} already). To fit: {}",
          need_text(need, static_cast<size_t>(need.host_bytes), "host", settings.stage, nranks),
          format_bytes(room), describe_limit(*limit), format_bytes(used_under(*limit, usage)),
          remedies(
              settings, layout, nranks, device, window_ranks,
              [](const MemoryReport &r) { return r.host_bytes; }, room, how_to_raise(limit->kind)));
  }
  // Pinned memory that mlock pins (not cudaHostAlloc's) counts against RLIMIT_MEMLOCK: past
  // it the pool would fall back to pageable memory, which the offloaded state must not.
  if (need.pinned_bytes > 0 &&
      std::string(memory.pool(MemorySpace::PinnedHost).resource().kind()) == "mmap+mlock") {
    const LockLimit lock = read_lock_limit();
    if (lock.limited && static_cast<size_t>(need.pinned_bytes) > lock.room())
      fail(ZRT_ERR_OUT_OF_MEMORY,
           "the offloaded state needs {} of pinned host memory on this rank, and RLIMIT_MEMLOCK "
           "(ulimit -l) lets this process lock {} ({} of it locked already). To fit: raise "
           "the limit (ulimit -l unlimited, memlock in /etc/security/limits.conf; Slurm "
           "propagates the submitting shell's limit, PropagateResourceLimits), or offload "
           "less ({}a higher stage or more ranks to shrink the shard)",
           format_bytes(static_cast<size_t>(need.pinned_bytes)), format_bytes(lock.limit),
           format_bytes(lock.locked),
           settings.offload_param ? "zero_optimization.offload_param.device none, or "
                                  : "a lower zero_optimization.offload_optimizer.ratio, ");
  }
  // What each pool may still hold (its limit: memory.<space>.limit, whose default follows the
  // process's limits, RLIMIT_AS included).
  // The host pool holds the host buffers but the pinned ones and those in the window.
  const bool window = window_ranks > 0;
  struct PoolNeed {
    MemorySpace space;
    std::function<int64_t(const MemoryReport &)> bytes;
    const char *where;
  };
  const PoolNeed pools[] = {
      {MemorySpace::Host,
       [window](const MemoryReport &r) {
         return r.host_bytes - r.pinned_bytes - (window ? r.node_shared_bytes : 0);
       },
       "host"},
      {MemorySpace::PinnedHost, [](const MemoryReport &r) { return r.pinned_bytes; },
       "pinned host"},
      {MemorySpace::Device, [](const MemoryReport &r) { return r.device_bytes; }, "device"},
  };
  for (const PoolNeed &p : pools) {
    const int64_t bytes = p.bytes(need);
    if (bytes <= 0) continue;
    Pool &pool = memory.pool(p.space);
    const PoolStats s = pool.stats();
    const size_t room = s.limit > s.live ? s.limit - s.live : 0;
    if (static_cast<size_t>(bytes) <= room) continue;
    const std::string &key = pool.options().limit_key;
    fail(ZRT_ERR_OUT_OF_MEMORY,
         "{}, and its {} pool may hold {} more: its limit is {}{} and {} of it is in use. To "
         "fit: {}",
         need_text(need, static_cast<size_t>(bytes), p.where, settings.stage, nranks), p.where,
         format_bytes(room), format_bytes(s.limit), key.empty() ? "" : " (" + key + ")",
         format_bytes(s.live),
         remedies(settings, layout, nranks, device, window_ranks, p.bytes, room,
                  fmt::format("a larger memory.{}.limit{}", space_name(p.space),
                              key.find("by default") != std::string::npos
                                  ? " or a larger limit behind its default"
                                  : "")));
  }
}

}  // namespace zrt
