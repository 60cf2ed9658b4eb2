#include "block_offload.hpp"

#include <fmt/format.h>

#include <Kokkos_Core.hpp>

#include <stdexcept>

namespace gpt2 {
namespace {

// Each push takes its size rounded up to the pool's alignment (256 bytes by default);
// a coarser rounding leaves room for any alignment a configuration may choose.
constexpr size_t kRingGranule = size_t{1} << 16;

}  // namespace

BlockOffload::BlockOffload(zrt_context_h context, int num_layers, std::array<void *, 2> slots,
                           size_t slot_bytes)
    : num_layers_(num_layers),
      slots_(slots),
      slot_bytes_(slot_bytes),
      tokens_(static_cast<size_t>(num_layers), nullptr) {
  const int pushes = num_layers - 2;
  if (pushes <= 0) return;  // both blocks stay in their slots: nothing to move
  if (!context) throw std::invalid_argument("activation offload needs a zerort context");
  zrt_offload_params_t params = {};
  params.field_mask = ZRT_OFFLOAD_PARAM_FIELD_RING_BYTES;
  params.ring_bytes =
      static_cast<size_t>(pushes) * ((slot_bytes + kRingGranule - 1) / kRingGranule * kRingGranule);
  check(zrt_offload_create(context, &params, &engine_), "zrt_offload_create");
}

BlockOffload::~BlockOffload() {
  if (!engine_) return;
  try {
    discard_all();
  } catch (const std::exception &) {
    // Destroying the engine below waits for its copies and drops the tokens anyway.
  }
  zrt_offload_destroy(engine_);
}

void BlockOffload::check(zrt_status_t st, const char *what) const {
  if (st != ZRT_SUCCESS)
    throw std::runtime_error(
        fmt::format("activation offload: {}: {}", what, zrt_last_error_message()));
}

void BlockOffload::discard_all() {
  // Newest first, as backward would have fetched them: the ring's head moves back.
  for (size_t l = tokens_.size(); l-- > 0;)
    if (tokens_[l]) {
      zrt_offload_token_h t = tokens_[l];
      tokens_[l] = nullptr;
      check(zrt_offload_discard(engine_, t), "zrt_offload_discard");
    }
}

void BlockOffload::begin_forward() {
  if (engine_) discard_all();
}

void BlockOffload::before_block_forward(int l) {
  if (l < 2 || !pushed(l - 2)) return;
  check(zrt_offload_wait(engine_, tokens_[static_cast<size_t>(l - 2)]), "zrt_offload_wait");
}

void BlockOffload::after_block_forward(int l) {
  if (!pushed(l)) return;
  // The copy engine reads the slot on its own thread (or stream): the block's kernels
  // must have written it.
  Kokkos::fence();
  check(zrt_offload_push(engine_, slot(l), slot_bytes_, &tokens_[static_cast<size_t>(l)]),
        "zrt_offload_push");
}

void BlockOffload::before_block_backward(int l) {
  if (pushed(l)) {
    zrt_offload_token_h t = tokens_[static_cast<size_t>(l)];
    tokens_[static_cast<size_t>(l)] = nullptr;
    check(zrt_offload_fetch(engine_, t, slot(l)), "zrt_offload_fetch");
  }
  // Block l - 1's slot held block l + 1, whose backward is done.
  if (l >= 1 && pushed(l - 1))
    check(zrt_offload_prefetch_into(engine_, tokens_[static_cast<size_t>(l - 1)], slot(l - 1)),
          "zrt_offload_prefetch_into");
}

OffloadMemory BlockOffload::memory() const {
  OffloadMemory m;
  if (!engine_) return m;
  zrt_offload_stats_t s = {};
  s.field_mask = ZRT_OFFLOAD_STATS_FIELD_BYTES | ZRT_OFFLOAD_STATS_FIELD_TIMES;
  check(zrt_offload_stats(engine_, &s), "zrt_offload_stats");
  m.offloaded = static_cast<int64_t>(s.offloaded_bytes);
  m.peak_offloaded = static_cast<int64_t>(s.peak_offloaded_bytes);
  m.ring = static_cast<int64_t>(s.ring_bytes);
  m.exposed_seconds = s.exposed_seconds;
  return m;
}

}  // namespace gpt2
