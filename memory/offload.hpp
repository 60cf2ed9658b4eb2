// Activation offload: a pinned host ring (OffloadRing over one raw allocation of a
// pinned pool), a copy engine, and tokens for the tensors it holds.
//
//   push      ring space is reserved and a copy src -> ring is submitted
//   prefetch  a staging buffer in the source's space is taken (transient, from that
//             space's pool) and a copy ring -> staging is submitted; at most
//             prefetch_depth tokens are staged, later prefetches queue
//   prefetch_into  a copy ring -> the caller's dst is submitted now, so fetch with the
//             same dst only waits: no staging buffer and no second copy
//   fetch     waits for the token's last copy, then copies staging (or the ring) -> dst
//             on the calling thread unless prefetch_into already put it there, and
//             releases everything the token held
//
// Tokens are handles of a SlotTable (runtime/slot_table.hpp) tagged with the engine, so
// NULL, foreign (another engine's, or never given out) and stale (fetched or discarded)
// tokens are told apart.
//
// The engine keeps the accounting that zrt_offload_stats reports: bytes offloaded now
// and at peak, the part of them whose source is device memory (the device memory saved
// while they are away), time spent copying, and time callers waited (the copy time not
// hidden behind their compute).
#pragma once

#include <nlohmann/json.hpp>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "memory/copy_engine.hpp"
#include "memory/offload_ring.hpp"
#include "memory/pool.hpp"
#include "runtime/slot_table.hpp"

namespace zrt {

struct OffloadOptions {
  size_t ring_bytes = size_t{256} << 20;
  int prefetch_depth = 2;  // 1 .. 64
  std::string ring_key;    // where ring_bytes comes from, for messages
};

struct OffloadStats {
  uint64_t pushes = 0, fetches = 0, discards = 0, prefetches = 0, prefetches_skipped = 0;
  size_t tokens = 0;
  size_t ring_bytes = 0, ring_used = 0;
  size_t offloaded = 0, peak_offloaded = 0;
  size_t device_saved = 0, peak_device_saved = 0;
  double copy_seconds = 0, exposed_seconds = 0;
  const char *engine = "";

  nlohmann::json to_json() const;
};

class Offload {
 public:
  // ring_pool: where the ring comes from (a pinned host pool; must outlive this).
  // staging_pool: the pool for staging buffers of a source space (may throw).
  // Throws Error(ZRT_ERR_OUT_OF_MEMORY) when the ring cannot be allocated.
  Offload(Pool &ring_pool, std::function<Pool &(MemorySpace)> staging_pool,
          std::unique_ptr<CopyEngine> engine, OffloadOptions options);
  ~Offload();  // waits for every copy, then frees staging buffers and the ring
  Offload(const Offload &) = delete;
  Offload &operator=(const Offload &) = delete;

  uint64_t push(const void *src, size_t bytes);
  bool test(uint64_t token);
  void wait(uint64_t token);
  void prefetch(uint64_t token);
  void prefetch_into(uint64_t token, void *dst);
  void fetch(uint64_t token, void *dst);
  void discard(uint64_t token);

  OffloadStats stats() const;
  nlohmann::json describe() const;
  const OffloadOptions &options() const { return options_; }

 private:
  enum class Stage { None, Queued, Staged, Direct };
  struct Token {
    uint32_t slot = 0;  // its slot in tokens_, which finish() empties
    size_t offset = 0, bytes = 0;
    MemorySpace source = MemorySpace::Host;
    uint64_t push_ticket = 0, stage_ticket = 0;
    Stage stage = Stage::None;
    Pool *staging_pool = nullptr;
    void *staging = nullptr;      // Staged: the staging buffer; Direct: the caller's dst
    Token *next_spare = nullptr;  // while not in tokens_: the next of spare_tokens_
  };

  Token &token_of(uint64_t token, const char *argument);
  void add_spare_token();  // one more in token_store_; may throw bad_alloc
  void start_stage(Token &t);
  void start_queued();
  void finish(Token &t, bool fetched);  // releases what t holds
  void wait_ticket(uint64_t ticket);    // counts exposed time

  Pool &ring_pool_;
  std::function<Pool &(MemorySpace)> staging_pool_;
  std::unique_ptr<CopyEngine> engine_;
  OffloadOptions options_;
  char *ring_base_ = nullptr;

  mutable std::mutex mutex_;
  OffloadRing ring_;
  // Live tokens by handle; the tag names this engine. Every call holds mutex_.
  using TokenSlots = SlotTable<Token, 12>;
  TokenSlots tokens_;
  // Where tokens live: a deque, so the table's pointers stay valid as it grows. The ones
  // not in the table are a list through next_spare, reused last-in first-out, so taking
  // and giving back one never allocates.
  std::deque<Token> token_store_;
  Token *spare_tokens_ = nullptr;
  std::deque<Token *> queued_;  // waiting for a staging slot, oldest first
  int staged_ = 0;
  OffloadStats stats_;
  double sync_copy_seconds_ = 0;
};

}  // namespace zrt
