// Stage 3's parameter cache: zrt_param_gather assembles a parameter's group (layout.hpp)
// from every rank's shard into a transient buffer, prefetches the next group in the
// direction the gathers are moving, and keeps released groups resident (DeepSpeed's "live
// parameters") until the resident elements exceed max_live_elements; then the least
// recently used released groups go. The sequence of gathers and releases is the same on
// every rank, so every rank evicts, and later gathers again, the same groups.
//
// On the device the gathered groups are device memory, and a gather returns once its data
// is there, so the program's later work finds it.
//
// Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "optim/model_state.hpp"
#include "optim/owned_request.hpp"

namespace zrt {

class ParamGatherer {
 public:
  ParamGatherer(Communicator &comm, EngineMemory &memory, const Layout &layout, ModelState &state,
                const EngineSettings &settings, CommStats &stats, const int64_t &step);
  ~ParamGatherer();  // waits for the prefetch in flight, which writes a buffer of ours
  ParamGatherer(const ParamGatherer &) = delete;
  ParamGatherer &operator=(const ParamGatherer &) = delete;

  // Collective: every rank gathers and releases the same parameters in the same order.
  void gather(int index);
  void release(int index);
  // The gathered values of parameter `index`; ZRT_ERR_INVALID_STATE unless gathered.
  void *data(int index) const;

  // Waits for the prefetch in flight, if any.
  void finish_prefetch();
  // Frees every gathered group (after the optimizer changed the shards).
  void drop_all();
  bool prefetching() const { return !prefetch_.empty(); }

  size_t buffer_bytes() const;
  size_t shared_bytes() const;  // of buffer_bytes(), in node-shared memory
  // The gathered groups' buffers worth keeping in node-shared memory, in bytes each.
  static std::vector<size_t> shared_buffers(const Layout &layout, const EngineSettings &settings);
  uint64_t fetches() const { return fetches_; }
  uint64_t evictions() const { return evictions_; }

 private:
  void fetch(int group, bool wait_now);
  void free_group(int group);
  void evict();

  Communicator &comm_;
  CommStats &stats_;
  const int64_t &step_;  // the engine's step count, which each gather says it is for
  EngineMemory &memory_;
  const Layout &layout_;
  ModelState &state_;
  const zrt_dtype_t dtype_;
  const size_t esize_;
  const size_t max_live_elements_;

  std::vector<EngineBuffer> gathered_;  // per group (at its first bucket), empty if not resident
  std::vector<int> refs_;               // gathered parameters per group
  std::vector<uint64_t> used_;          // last use, for LRU eviction
  uint64_t use_clock_ = 0;
  size_t resident_elements_ = 0;
  std::vector<EngineBuffer> spare_;   // freed buffers kept for reuse
  std::vector<EngineBuffer> failed_;  // buffers of failed gathers, which MPI may still write
  std::vector<char> param_gathered_;
  std::vector<OwnedRequest> prefetch_;  // all-gathers in flight (one group's buckets)
  int prefetch_group_ = -1;
  int last_group_ = -1;
  uint64_t fetches_ = 0, evictions_ = 0;
};

}  // namespace zrt
