#include "memory/pool.hpp"

#include <algorithm>
#include <atomic>
#include <bit>

#include "runtime/error.hpp"
#include "runtime/format_bytes.hpp"
#include "runtime/log.hpp"

namespace zrt {

namespace {

// Tags of pools' buffer handles: 1 .. 4095, reused after 4095 pools.
uint32_t next_tag() {
  static std::atomic<uint32_t> counter{0};
  return counter.fetch_add(1) % 4095 + 1;
}

uint64_t next_serial() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1) + 1;
}

}  // namespace

CompactPolicy compact_from_c(zrt_compact_t compact, const char *argument) {
  switch (compact) {
    case ZRT_COMPACT_AUTO:
      return CompactPolicy::Auto;
    case ZRT_COMPACT_EAGER:
      return CompactPolicy::Eager;
    case ZRT_COMPACT_OFF:
      return CompactPolicy::Off;
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "{} is {}: accepted values are ZRT_COMPACT_AUTO, ZRT_COMPACT_EAGER, ZRT_COMPACT_OFF",
       argument, static_cast<int>(compact));
}

CompactPolicy compact_from_name(const std::string &name) {
  if (name == "eager") return CompactPolicy::Eager;
  if (name == "off") return CompactPolicy::Off;
  return CompactPolicy::Auto;
}

const char *compact_name(CompactPolicy policy) {
  switch (policy) {
    case CompactPolicy::Auto:
      return "auto";
    case CompactPolicy::Eager:
      return "eager";
    case CompactPolicy::Off:
      return "off";
  }
  return "?";
}

nlohmann::json PoolStats::to_json() const {
  return {{"space", space_name(space)},
          {"limit_bytes", limit},
          {"reserved_bytes", reserved},
          {"peak_reserved_bytes", peak_reserved},
          {"live_bytes", live},
          {"peak_live_bytes", peak_live},
          {"allocations", allocations},
          {"movable_allocations", movable_allocations},
          {"free_bytes", free},
          {"thread_cached_bytes", thread_cached},
          {"largest_free_bytes", largest_free},
          {"fragmentation", fragmentation},
          {"compactions", compactions},
          {"moved_bytes", moved_bytes},
          {"generation", generation},
          {"out_of_memory_count", out_of_memory},
          {"page_locked", page_locked},
          {"numa_node", numa_node},
          {"segments", segments}};
}

std::string PoolStats::summary() const {
  return fmt::format(
      "reserved {} of limit {}, live {} in {} allocations ({} movable), peak live {}, free {}, "
      "largest free block {}, fragmentation {:.2f}, compactions {}",
      format_bytes(reserved), format_bytes(limit), format_bytes(live), allocations,
      movable_allocations, format_bytes(peak_live), format_bytes(free), format_bytes(largest_free),
      fragmentation, compactions);
}

Pool::Pool(std::unique_ptr<Resource> resource, PoolOptions options)
    : resource_(std::move(resource)),
      options_(std::move(options)),
      host_accessible_(resource_->host_accessible()),
      align_shift_(0),
      serial_(next_serial()),
      blocks_(0, host_accessible_),
      buffers_(next_tag()) {
  size_t a = options_.alignment;
  if (a < 64 || a > (size_t{1} << 20) || !std::has_single_bit(a))
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "alignment is {}: accepted values are powers of two from 64 to 1048576", a);
  if (options_.limit == 0) fail(ZRT_ERR_INVALID_ARGUMENT, "limit is 0: a pool needs memory");
  if (options_.segment_bytes == 0)
    fail(ZRT_ERR_INVALID_ARGUMENT, "segment_bytes is 0: a pool grows by whole segments");
  if (options_.name.empty()) options_.name = space_name(resource_->space());
  align_shift_ = static_cast<unsigned>(std::countr_zero(a));
  cache_max_ = round_down(options_.thread_cache_bytes / 2, a);
  blocks_ = BlockList(align_shift_, host_accessible_);
  // Segments are whole pages (or whatever the resource maps) and whole alignment units.
  size_t unit = std::max(resource_->granularity(), a);
  options_.segment_bytes = round_up(std::min(options_.segment_bytes, size_t{1} << 40), unit);
  arena_ = make_arena(*resource_, blocks_, {options_.limit, options_.segment_bytes, a});
}

Pool::~Pool() {
  std::lock_guard registry(thread_cache_registry());
  std::lock_guard lock(mutex_);
  // The threads still hold their caches; they delete them once they see this.
  for (ThreadCache *c : caches_)
    c->pool.store(nullptr, std::memory_order_relaxed);
  arena_.reset();  // its memory goes back to the system
}

// --- allocation -------------------------------------------------------------------------

BufferId Pool::allocate_movable(size_t bytes, Lifetime lifetime) {
  std::lock_guard lock(mutex_);
  // The slot first: a failure after the block is carved would have to undo it.
  if (!buffers_.prepare_insert()) fail(ZRT_ERR_OUT_OF_MEMORY, "too many movable buffers");
  Block *b = allocate_block(bytes, lifetime, BlockState::Movable);
  uint64_t value = buffers_.insert(b);
  b->slot = BufferSlots::index_of(value);
  ++movable_count_;
  return BufferId{value};
}

Block *Pool::allocate_block(size_t bytes, Lifetime lifetime, BlockState kind) {
  bool movable = kind == BlockState::Movable;
  if (bytes == 0)
    fail(ZRT_ERR_INVALID_ARGUMENT, "bytes is 0: an allocation needs at least one byte");
  if (bytes > options_.limit)
    out_of_memory(
        bytes, lifetime, movable,
        fmt::format("the request exceeds the pool's limit of {}{}", format_bytes(options_.limit),
                    options_.limit_key.empty() ? "" : " (" + options_.limit_key + ")"));
  size_t size = round_up(bytes, options_.alignment);
  if (Block *b = cache_.take(size, lifetime)) {
    // The block freed last with this size and lifetime; its address-map entry stayed.
    b->state = kind;
    b->requested = bytes;
    b->locks = 0;
    blocks_.unpoison(b->addr, bytes);
    add_live(size);
    note_live();
    ++count_;
    return b;
  }
  // Everything that can throw bad_alloc happens before the first change.
  blocks_.store().ensure(4);
  addresses_.prepare_insert();
  std::string why;
  Block *f = find_or_make_room(size, lifetime, &why);
  if (f == nullptr) out_of_memory(bytes, lifetime, movable, why);
  Block *b = blocks_.carve(f, size, lifetime);
  b->state = kind;
  b->lifetime = lifetime;
  b->requested = bytes;
  b->locks = 0;
  blocks_.unpoison(b->addr, bytes);
  addresses_.insert(b->addr, b);
  add_live(size);
  note_live();
  ++count_;
  return b;
}

Block *Pool::best_fit_avoiding(size_t size, Lifetime lifetime) {
  // The free block at the other lifetime's edge of the uncommitted middle is where that
  // side grows into; taking it would strand this allocation among the other lifetime's
  // blocks. It is used only when this side cannot grow.
  FreeBins &bins = blocks_.bins();
  Block *avoid = arena_->other_frontier(lifetime);
  if (avoid != nullptr) bins.remove(avoid);
  Block *fit = bins.best_fit(size, lifetime);
  if (avoid != nullptr) bins.insert(avoid);
  return fit;
}

void Pool::flush_cache() {
  cache_.drain([this](Block *b) {
    addresses_.erase(b->addr);
    b->state = BlockState::Free;
    blocks_.merge_free(b);
  });
}

Block *Pool::find_or_make_room(size_t size, Lifetime lifetime, std::string *why) {
  if (Block *fit = best_fit_avoiding(size, lifetime)) return fit;
  // Merge what the quick cache holds before concluding that memory is short.
  if (cache_.count() > 0) {
    flush_cache();
    if (Block *fit = best_fit_avoiding(size, lifetime)) return fit;
  }
  if (thread_idle_bytes() > 0) {
    flush_mine_locked();
    flush_cache();
    if (Block *fit = best_fit_avoiding(size, lifetime)) return fit;
  }
  size_t free_bytes = arena_->reserved() - live_;
  if (options_.compact == CompactPolicy::Eager && can_compact() && free_bytes >= size) {
    compact_locked();
    if (Block *f = blocks_.bins().best_fit(size, lifetime)) return f;
  }
  if (Block *f = grow(size, lifetime, why)) return f;
  // This side cannot grow: the other side's edge block is better than failing.
  if (Block *edge = arena_->other_frontier(lifetime); edge != nullptr && edge->size >= size)
    return edge;
  // Growth cannot help: compact if the memory would suffice in one piece.
  if (options_.compact != CompactPolicy::Off && can_compact() &&
      free_bytes + arena_->uncommitted_bytes() >= size) {
    if (compact_locked() > 0) {
      if (Block *f = blocks_.bins().best_fit(size, lifetime)) return f;
      if (Block *f = grow(size, lifetime, why)) return f;
    }
  }
  if (free_bytes + arena_->uncommitted_bytes() >= size)
    *why = fmt::format("{}; the free memory is fragmented and {}", *why,
                       options_.compact == CompactPolicy::Off
                           ? "compaction is off"
                           : "raw or locked allocations keep it apart");
  return nullptr;
}

Block *Pool::grow(size_t size, Lifetime lifetime, std::string *why) {
  try {
    if (Block *b = arena_->grow(size, lifetime)) return b;
    *why = fmt::format("the pool has reached its limit of {}{}", format_bytes(options_.limit),
                       options_.limit_key.empty() ? "" : " (" + options_.limit_key + ")");
  } catch (const Error &e) {
    *why = e.what();
  }
  return nullptr;
}

void Pool::out_of_memory(size_t bytes, Lifetime lifetime, bool movable, const std::string &why) {
  ++oom_count_;
  std::string message =
      fmt::format("pool '{}' cannot allocate {} ({} bytes, {}{}): {}. Pool: {}", options_.name,
                  format_bytes(bytes), bytes, lifetime_name(lifetime), movable ? ", movable" : "",
                  why, stats_locked().summary());
  // The caller gets the whole message with the status; the log keeps a trace of it for
  // programs that handle the error (by offloading, say) without printing it.
  log::info("{}", message);
  throw Error(ZRT_ERR_OUT_OF_MEMORY, std::move(message));
}

// --- frees and handles ------------------------------------------------------------------

void Pool::free_block(Block *b) {
  sub_live(b->size);
  --count_;
  auto evict = [this](Block *old) {
    addresses_.erase(old->addr);
    old->state = BlockState::Free;
    blocks_.merge_free(old);
  };
  if (cache_.put(b, evict)) {
    b->state = BlockState::Cached;
    b->requested = 0;
    b->locks = 0;
    blocks_.poison(b->addr, b->size);
    return;
  }
  addresses_.erase(b->addr);
  blocks_.release(b);
}

void Pool::bad_free(uintptr_t p) const {
  const void *ptr = reinterpret_cast<const void *>(p);
  if (const Region *r = arena_->region_of(p)) {
    for (const Block *b : blocks_of(*r)) {
      if (p < b->addr || p >= b->end()) continue;
      if (b->state == BlockState::Free || b->state == BlockState::Cached)
        fail(ZRT_ERR_INVALID_ARGUMENT,
             "ptr {} is not allocated: it lies in free memory of pool '{}' (freed twice?)", ptr,
             options_.name);
      if (b->state == BlockState::Uncommitted) break;
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "ptr {} points {} bytes into an allocation at {} of pool '{}': free the address "
           "the pool returned",
           ptr, p - b->addr, reinterpret_cast<const void *>(b->addr), options_.name);
    }
  }
  fail(ZRT_ERR_INVALID_ARGUMENT, "ptr {} was not allocated by pool '{}'", ptr, options_.name);
}

Block &Pool::block_of(BufferId buffer, const char *argument) const {
  uint64_t v = buffer.value;
  BufferSlots::Found f = buffers_.find(v);
  switch (f.verdict) {
    case BufferSlots::Verdict::Valid:
      break;
    case BufferSlots::Verdict::Null:
      fail(ZRT_ERR_INVALID_HANDLE, "{} is a NULL buffer handle", argument);
    case BufferSlots::Verdict::Foreign:
      fail(ZRT_ERR_INVALID_HANDLE,
           "{} (0x{:x}) is not a buffer of pool '{}': it belongs to another pool or is not a "
           "buffer handle",
           argument, v, options_.name);
    case BufferSlots::Verdict::Stale:
      fail(ZRT_ERR_INVALID_HANDLE,
           "{} (0x{:x}) is a stale buffer handle of pool '{}': the buffer was already freed",
           argument, v, options_.name);
  }
  return *f.value;
}

void Pool::free(BufferId buffer) {
  std::lock_guard lock(mutex_);
  Block &b = block_of(buffer, "buffer");
  if (b.locks > 0)
    fail(ZRT_ERR_INVALID_STATE, "buffer is locked ({} lock(s)): unlock it before freeing it",
         b.locks);
  buffers_.remove(b.slot);
  --movable_count_;
  free_block(&b);
}

void *Pool::pointer(BufferId buffer, size_t *bytes, uint64_t *generation) const {
  std::lock_guard lock(mutex_);
  const Block &b = block_of(buffer, "buffer");
  if (bytes != nullptr) *bytes = b.requested;
  if (generation != nullptr) *generation = generation_;
  return reinterpret_cast<void *>(b.addr);
}

void *Pool::lock(BufferId buffer) {
  std::lock_guard lock(mutex_);
  Block &b = block_of(buffer, "buffer");
  if (b.locks == 0) ++locked_count_;
  ++b.locks;
  return reinterpret_cast<void *>(b.addr);
}

void Pool::unlock(BufferId buffer) {
  std::lock_guard lock(mutex_);
  Block &b = block_of(buffer, "buffer");
  if (b.locks == 0) fail(ZRT_ERR_INVALID_STATE, "buffer is not locked");
  if (--b.locks == 0) --locked_count_;
}

// --- trim, stats, checks ----------------------------------------------------------------

size_t Pool::trim() {
  std::lock_guard lock(mutex_);
  blocks_.store().ensure(2);
  flush_mine_locked();
  flush_cache();
  return arena_->trim();
}

uint64_t Pool::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

PoolStats Pool::stats() {
  std::lock_guard lock(mutex_);
  flush_mine_locked();
  flush_cache();
  return stats_locked();
}

PoolStats Pool::stats_locked() const {
  PoolStats s;
  s.space = resource_->space();
  s.limit = options_.limit;
  s.reserved = arena_->reserved();
  s.peak_reserved = arena_->peak_reserved();
  // Blocks idle in thread caches are allocated as far as the pool's books go.
  size_t idle_count = 0;
  for (const ThreadCache *c : caches_)
    idle_count += c->idle.count_relaxed();
  s.thread_cached = thread_idle_bytes();
  s.live = live_ - s.thread_cached;
  s.peak_live = thread_peak_live();
  s.allocations = count_ - idle_count;
  s.movable_allocations = movable_count_;
  s.free = arena_->reserved() - live_;
  const Block *largest = blocks_.bins().largest();
  s.largest_free = largest != nullptr ? largest->size : 0;
  s.fragmentation =
      s.free > 0 ? 1.0 - static_cast<double>(s.largest_free) / static_cast<double>(s.free) : 0.0;
  s.compactions = compactions_;
  s.moved_bytes = moved_bytes_;
  s.generation = generation_;
  s.out_of_memory = oom_count_;
  s.page_locked = resource_->page_locked();
  s.numa_node = resource_->numa_node();
  s.segments = arena_->segments();
  return s;
}

nlohmann::json Pool::describe() {
  nlohmann::json j = stats().to_json();
  j["name"] = options_.name;
  j["resource"] = resource_->describe();
  j["segment_bytes"] = options_.segment_bytes;
  j["alignment"] = options_.alignment;
  j["compact"] = compact_name(options_.compact);
  return j;
}

bool Pool::owns(const void *ptr) const {
  auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(mutex_);
  return arena_->region_of(p) != nullptr;
}

void Pool::check() const {
  std::lock_guard lock(mutex_);
  auto broken = [this](const std::string &what) {
    fail(ZRT_ERR_INTERNAL, "pool '{}' is inconsistent: {}", options_.name, what);
  };
  size_t reserved = 0, live = 0, count = 0, movable = 0, locked = 0, free_blocks = 0, cached = 0;
  const FreeBins &bins = blocks_.bins();
  for (const auto &r : arena_->regions()) {
    uintptr_t at = r->base;
    size_t committed = 0;
    const Block *gap = nullptr;
    if (r->first == nullptr || r->first->prev != nullptr) broken("region list head");
    for (const Block *b : blocks_of(*r)) {
      if (b->addr != at) broken(fmt::format("block at 0x{:x} should start at 0x{:x}", b->addr, at));
      if (b->size == 0 || b->size % options_.alignment != 0) broken("block size not aligned");
      if (b->region != r.get()) broken("block in the wrong region");
      if (b->next != nullptr && b->next->prev != b) broken("broken back link");
      at = b->end();
      switch (b->state) {
        case BlockState::Uncommitted:
          if (gap != nullptr || b != r->gap) broken("second or misplaced uncommitted block");
          gap = b;
          continue;
        case BlockState::Cached:
          ++cached;
          if (addresses_.find(b->addr) != b) broken("cached block missing from the address map");
          break;
        case BlockState::Free:
          ++free_blocks;
          if (b->next != nullptr && b->next->state == BlockState::Free)
            broken(fmt::format("free neighbours at 0x{:x} not merged", b->addr));
          if (!bins.contains(b)) broken("free block missing from its bin");
          break;
        case BlockState::Raw:
        case BlockState::Lent:
        case BlockState::Movable:
          ++count;
          live += b->size;
          if (b->requested == 0 || b->requested > b->size) broken("bad requested size");
          if (b->addr % options_.alignment != 0) broken("misaligned allocation");
          if (addresses_.find(b->addr) != b) broken("allocation missing from the address map");
          if (b->state == BlockState::Movable) {
            ++movable;
            if (b->locks > 0) ++locked;
            if (buffers_.at(b->slot) != b) broken("movable buffer and its slot disagree");
          } else if (b->locks != 0) {
            broken("raw allocation with locks");
          }
          break;
      }
      committed += b->size;
    }
    if (at != r->end()) broken("region not covered by its blocks");
    if (gap != r->gap) broken("region's gap pointer is wrong");
    if (committed != r->committed) broken("region's committed bytes are wrong");
    reserved += committed;
  }
  if (reserved != arena_->reserved())
    broken(fmt::format("reserved {} != {}", arena_->reserved(), reserved));
  if (live != live_) broken(fmt::format("live {} != {}", live_, live));
  if (count != count_ || movable != movable_count_ || locked != locked_count_)
    broken("allocation counts");
  if (cached != cache_.count()) broken("cached blocks and the quick cache disagree");
  if (addresses_.size() != count_ + cached) broken("address map size");
  if (free_blocks != bins.count()) broken("bins hold blocks that are not free");
  if (arena_->reserved() > arena_->peak_reserved() ||
      live_ - thread_idle_bytes() > thread_peak_live())
    broken("peaks below current values");
  for (const ThreadCache *c : caches_)
    if (c->pool.load(std::memory_order_relaxed) != this) broken("a thread cache of another pool");
  // The calling thread's cache (only its owner may read its maps): the fast path trusts
  // the slot the lent map keeps for each block and the address the quick cache keeps.
  if (const ThreadCache *c = my_cache()) {
    size_t idle = 0;
    c->lent.for_each([&](ThreadCache::LentBlock l) {
      const Block *b = l.block;
      if (b->state != BlockState::Lent || b->owner != c) broken("a lent block not lent here");
      if (l.slot != QuickCache::index(b->size, b->lifetime))
        broken(fmt::format("lent block at 0x{:x} filed under the wrong slot", b->addr));
      if (ThreadCache::mark(b) == ThreadCache::kIdle) idle += b->size;
    });
    size_t in_cache = 0;
    c->idle.for_each([&](size_t slot, const QuickCache::Entry &e) {
      if (slot != QuickCache::index(e.block->size, e.block->lifetime))
        broken("an idle block in another class's slot");
      if (e.addr != e.block->addr) broken("an idle block cached under another address");
      if (ThreadCache::mark(e.block) != ThreadCache::kIdle) broken("a cached block not idle");
      in_cache += e.block->size;
    });
    if (idle != in_cache || in_cache != c->idle_bytes.load(std::memory_order_relaxed))
      broken("the thread cache's idle bytes disagree");
  }
}

}  // namespace zrt
