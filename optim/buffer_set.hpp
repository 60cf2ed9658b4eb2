// A small allocator for the gradient reducer's transient buffers (bucket buffers, landing
// slices): a few buffers of one place from the engine's memory, handed out best fit (the
// smallest free one that holds the request, the most recently returned among equals), so a
// small bucket does not take the buffer a large one needs. When none fits, the caller
// decides: wait for a reduction to return one, or add() another.
#pragma once

#include <cstddef>
#include <vector>

#include "optim/engine_memory.hpp"

namespace zrt {

class BufferSet {
 public:
  BufferSet() = default;
  BufferSet(EngineMemory &memory, Place place) : memory_(&memory), place_(place) {}

  // A new free buffer of bytes, zeroed (so its memory is committed now, not in the middle of
  // a backward pass); returns its index. Throws Error when the pool cannot provide it.
  int add(size_t bytes);
  // The index of the smallest free buffer of at least bytes, now taken; -1 if none.
  int take(size_t bytes);
  void give_back(int index) { free_.push_back(index); }

  char *data(int index) const { return buffers_[static_cast<size_t>(index)].bytes(); }
  Place place() const { return place_; }
  size_t count() const { return buffers_.size(); }
  size_t bytes() const;             // of every buffer, taken or free
  size_t bytes(Place where) const;  // of those that went to where (EngineBuffer::place)

 private:
  EngineMemory *memory_ = nullptr;
  Place place_ = Place::Host;
  std::vector<EngineBuffer> buffers_;
  std::vector<int> free_;
};

}  // namespace zrt
