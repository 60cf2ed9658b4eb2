#include "memory/offload.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "runtime/error.hpp"
#include "runtime/format_bytes.hpp"
#include "runtime/log.hpp"

namespace zrt {

namespace {

// Tags of offload engines' tokens: 1 .. 4095, reused after 4095 engines.
uint32_t next_tag() {
  static std::atomic<uint32_t> counter{0};
  return counter.fetch_add(1) % 4095 + 1;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

nlohmann::json OffloadStats::to_json() const {
  return {{"engine", engine},
          {"pushes", pushes},
          {"fetches", fetches},
          {"discards", discards},
          {"prefetches", prefetches},
          {"prefetches_skipped", prefetches_skipped},
          {"tokens", tokens},
          {"ring_bytes", ring_bytes},
          {"ring_used_bytes", ring_used},
          {"offloaded_bytes", offloaded},
          {"peak_offloaded_bytes", peak_offloaded},
          {"device_bytes_saved", device_saved},
          {"peak_device_bytes_saved", peak_device_saved},
          {"copy_seconds", copy_seconds},
          {"exposed_seconds", exposed_seconds}};
}

Offload::Offload(Pool &ring_pool, std::function<Pool &(MemorySpace)> staging_pool,
                 std::unique_ptr<CopyEngine> engine, OffloadOptions options)
    : ring_pool_(ring_pool),
      staging_pool_(std::move(staging_pool)),
      engine_(std::move(engine)),
      options_(std::move(options)),
      ring_(options_.ring_bytes, ring_pool.options().alignment),
      tokens_(next_tag()) {
  if (options_.prefetch_depth < 1 || options_.prefetch_depth > 64)
    fail(ZRT_ERR_INVALID_ARGUMENT, "prefetch_depth is {}: accepted values are 1 .. 64",
         options_.prefetch_depth);
  if (options_.ring_bytes < ring_pool.options().alignment)
    fail(ZRT_ERR_INVALID_ARGUMENT, "ring_bytes is {}: the ring needs at least {} bytes",
         options_.ring_bytes, ring_pool.options().alignment);
  if (ring_pool.space() != MemorySpace::PinnedHost)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "the ring's pool '{}' is a {} pool: offload needs a ZRT_MEMORY_PINNED_HOST pool",
         ring_pool.name(), space_name(ring_pool.space()));
  try {
    ring_base_ = static_cast<char *>(ring_pool.allocate(options_.ring_bytes, Lifetime::Long));
  } catch (const Error &e) {
    fail(e.status(), "pinned memory for the offload ring of {}{} is not available: {}",
         format_bytes(options_.ring_bytes),
         options_.ring_key.empty() ? "" : " (" + options_.ring_key + ")", e.what());
  }
  stats_.engine = engine_->name();
  stats_.ring_bytes = ring_.capacity();
}

Offload::~Offload() {
  std::lock_guard lock(mutex_);
  tokens_.for_each([&](Token *t) {
    try {
      engine_->wait(t->push_ticket);
      if (t->stage == Stage::Staged || t->stage == Stage::Direct) engine_->wait(t->stage_ticket);
    } catch (...) {
      // Nothing more can be done about a failed copy while tearing down.
    }
    if (t->stage == Stage::Staged) {
      try {
        t->staging_pool->free(t->staging);
      } catch (...) {
      }
    }
  });
  engine_.reset();  // no copy can touch the ring after this
  try {
    ring_pool_.free(ring_base_);
  } catch (...) {
  }
}

Offload::Token &Offload::token_of(uint64_t token, const char *argument) {
  TokenSlots::Found f = tokens_.find(token);
  switch (f.verdict) {
    case TokenSlots::Verdict::Valid:
      break;
    case TokenSlots::Verdict::Null:
      fail(ZRT_ERR_INVALID_HANDLE, "{} is a NULL offload token", argument);
    case TokenSlots::Verdict::Foreign:
      fail(ZRT_ERR_INVALID_HANDLE,
           "{} (0x{:x}) is not a token of this offload engine: it belongs to another engine or "
           "is not a token",
           argument, token);
    case TokenSlots::Verdict::Stale:
      fail(ZRT_ERR_INVALID_HANDLE,
           "{} (0x{:x}) is a stale offload token: it was already fetched or discarded", argument,
           token);
  }
  return *f.value;
}

void Offload::add_spare_token() {
  token_store_.emplace_back();
  spare_tokens_ = &token_store_.back();
}

uint64_t Offload::push(const void *src, size_t bytes) {
  require_nonnull(src, "src");
  if (bytes == 0) fail(ZRT_ERR_INVALID_ARGUMENT, "bytes is 0: there is nothing to offload");
  std::lock_guard lock(mutex_);
  // Where the ring's size comes from, for the messages only (not built on the fast path).
  auto key = [&] {
    return options_.ring_key.empty() ? std::string() : " (" + options_.ring_key + ")";
  };
  if (bytes > ring_.capacity())
    fail(ZRT_ERR_OUT_OF_MEMORY, "a tensor of {} does not fit in the offload ring of {}{}",
         format_bytes(bytes), format_bytes(ring_.capacity()), key());
  // The token and its slot first: a failure after the copy is submitted would have to
  // undo it.
  if (!tokens_.prepare_insert())
    fail(ZRT_ERR_OUT_OF_MEMORY, "too many offload tokens: at most {} may be held at once",
         TokenSlots::kMaxSlots);
  if (spare_tokens_ == nullptr) add_spare_token();
  Token &t = *spare_tokens_;
  std::optional<size_t> offset = ring_.reserve(bytes);
  if (!offset)
    fail(ZRT_ERR_OUT_OF_MEMORY,
         "the offload ring has no room for {}: {} of {}{} are held by {} token(s); fetch or "
         "discard tokens first, or make the ring larger",
         format_bytes(bytes), format_bytes(ring_.used()), format_bytes(ring_.capacity()), key(),
         ring_.entries());
  MemorySpace source = engine_->space_of(src);
  uint64_t ticket;
  try {
    ticket = engine_->submit(ring_base_ + *offset, src, bytes);
  } catch (...) {
    ring_.release(*offset);
    throw;
  }
  spare_tokens_ = t.next_spare;
  uint64_t handle = tokens_.insert(&t);
  t.slot = TokenSlots::index_of(handle);
  t.offset = *offset;
  t.bytes = bytes;
  t.source = source;
  t.push_ticket = ticket;
  t.stage = Stage::None;
  ++stats_.pushes;
  ++stats_.tokens;
  stats_.offloaded += bytes;
  stats_.peak_offloaded = std::max(stats_.peak_offloaded, stats_.offloaded);
  if (source == MemorySpace::Device) {
    stats_.device_saved += bytes;
    stats_.peak_device_saved = std::max(stats_.peak_device_saved, stats_.device_saved);
  }
  return handle;
}

bool Offload::test(uint64_t token) {
  std::lock_guard lock(mutex_);
  return engine_->done(token_of(token, "token").push_ticket);
}

void Offload::wait_ticket(uint64_t ticket) {
  if (engine_->done(ticket)) return;
  auto t0 = std::chrono::steady_clock::now();
  engine_->wait(ticket);
  stats_.exposed_seconds += seconds_since(t0);
}

void Offload::wait(uint64_t token) {
  std::lock_guard lock(mutex_);
  wait_ticket(token_of(token, "token").push_ticket);
}

void Offload::start_stage(Token &t) {
  Pool *pool = nullptr;
  void *staging = nullptr;
  try {
    pool = &staging_pool_(t.source);
    staging = pool->allocate(t.bytes, Lifetime::Transient);
  } catch (const Error &e) {
    // A prefetch is a hint: without a staging buffer, fetch copies from the ring itself.
    log::debug("offload: prefetch of {} not staged: {}", format_bytes(t.bytes), e.what());
    ++stats_.prefetches_skipped;
    t.stage = Stage::None;
    return;
  }
  try {
    t.stage_ticket = engine_->submit(staging, ring_base_ + t.offset, t.bytes);
  } catch (...) {
    pool->free(staging);
    throw;
  }
  t.staging_pool = pool;
  t.staging = staging;
  t.stage = Stage::Staged;
  ++staged_;
  ++stats_.prefetches;
}

void Offload::start_queued() {
  while (staged_ < options_.prefetch_depth && !queued_.empty()) {
    Token *t = queued_.front();
    queued_.pop_front();
    start_stage(*t);
  }
}

void Offload::prefetch(uint64_t token) {
  std::lock_guard lock(mutex_);
  Token &t = token_of(token, "token");
  if (t.stage != Stage::None) return;
  if (staged_ >= options_.prefetch_depth) {
    queued_.push_back(&t);
    t.stage = Stage::Queued;
    return;
  }
  start_stage(t);
}

void Offload::prefetch_into(uint64_t token, void *dst) {
  std::lock_guard lock(mutex_);
  Token &t = token_of(token, "token");
  require_nonnull(dst, "dst");
  if (t.stage == Stage::Staged || t.stage == Stage::Direct) return;
  if (t.stage == Stage::Queued) {
    std::erase(queued_, &t);
    t.stage = Stage::None;
  }
  // The engine's queue is ordered, so this copy reads what the push wrote.
  t.stage_ticket = engine_->submit(dst, ring_base_ + t.offset, t.bytes);
  t.staging = dst;
  t.stage = Stage::Direct;
  ++stats_.prefetches;
}

void Offload::finish(Token &t, bool fetched) {
  if (t.stage == Stage::Queued) std::erase(queued_, &t);
  if (t.stage == Stage::Staged) {
    t.staging_pool->free(t.staging);
    --staged_;
  }
  ring_.release(t.offset);
  stats_.offloaded -= t.bytes;
  if (t.source == MemorySpace::Device) stats_.device_saved -= t.bytes;
  --stats_.tokens;
  ++(fetched ? stats_.fetches : stats_.discards);
  tokens_.remove(t.slot);
  t = Token{};
  t.next_spare = spare_tokens_;
  spare_tokens_ = &t;
  start_queued();
}

void Offload::fetch(uint64_t token, void *dst) {
  std::lock_guard lock(mutex_);
  Token &t = token_of(token, "token");
  require_nonnull(dst, "dst");
  const void *from = ring_base_ + t.offset;
  if (t.stage == Stage::Staged || t.stage == Stage::Direct) {
    wait_ticket(t.stage_ticket);
    if (t.stage == Stage::Staged) from = t.staging;
  } else {
    wait_ticket(t.push_ticket);
  }
  if (t.stage != Stage::Direct || t.staging != dst) {
    auto t0 = std::chrono::steady_clock::now();
    engine_->copy(dst, from, t.bytes);
    double dt = seconds_since(t0);
    sync_copy_seconds_ += dt;
    stats_.exposed_seconds += dt;
  }
  finish(t, true);
}

void Offload::discard(uint64_t token) {
  std::lock_guard lock(mutex_);
  Token &t = token_of(token, "token");
  // The ring and staging space may be reused only once no copy writes into it.
  wait_ticket(t.push_ticket);
  if (t.stage == Stage::Staged || t.stage == Stage::Direct) wait_ticket(t.stage_ticket);
  finish(t, false);
}

OffloadStats Offload::stats() const {
  std::lock_guard lock(mutex_);
  OffloadStats s = stats_;
  s.ring_used = ring_.used();
  s.copy_seconds = engine_->busy_seconds() + sync_copy_seconds_;
  return s;
}

nlohmann::json Offload::describe() const {
  nlohmann::json j = stats().to_json();
  j["prefetch_depth"] = options_.prefetch_depth;
  j["ring_pool"] = ring_pool_.name();
  return j;
}

}  // namespace zrt
