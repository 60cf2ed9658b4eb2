#include "optim/buffer_set.hpp"

namespace zrt {

int BufferSet::add(size_t bytes) {
  buffers_.emplace_back(*memory_, place_, bytes, Lifetime::Transient);
  free_.push_back(static_cast<int>(buffers_.size()) - 1);
  return free_.back();
}

int BufferSet::take(size_t bytes) {
  auto fit = free_.end();
  for (auto it = free_.end(); it != free_.begin();) {
    --it;
    size_t size = buffers_[static_cast<size_t>(*it)].size();
    if (size >= bytes && (fit == free_.end() || size < buffers_[static_cast<size_t>(*fit)].size()))
      fit = it;
  }
  if (fit == free_.end()) return -1;
  int index = *fit;
  free_.erase(fit);
  return index;
}

size_t BufferSet::bytes() const {
  size_t total = 0;
  for (const EngineBuffer &b : buffers_)
    total += b.size();
  return total;
}

size_t BufferSet::bytes(Place where) const {
  size_t total = 0;
  for (const EngineBuffer &b : buffers_)
    if (b.place() == where) total += b.size();
  return total;
}

}  // namespace zrt
