#include "runtime/breakage.hpp"

#include "runtime/error.hpp"
#include "runtime/log.hpp"

namespace zrt {

void Breakage::mark(zrt_status_t status, const std::string &why) noexcept {
  try {
    std::lock_guard lock(mutex_);
    if (broken_.load(std::memory_order_relaxed)) return;
    status_ = status;
    why_ = why;
    broken_.store(true, std::memory_order_release);
  } catch (...) {
    broken_.store(true, std::memory_order_release);  // out of memory: the flag still counts
  }
  log::debug("the context is broken: its teardown will not wait for other ranks");
}

std::string Breakage::why() const {
  std::lock_guard lock(mutex_);
  return why_;
}

zrt_status_t Breakage::status() const {
  std::lock_guard lock(mutex_);
  return broken_.load(std::memory_order_relaxed) ? status_ : ZRT_SUCCESS;
}

void Breakage::check(const char *what) const {
  if (!broken()) return;
  std::lock_guard lock(mutex_);
  fail(status_ == ZRT_SUCCESS ? ZRT_ERR_TIMEOUT : status_,
       "{} not attempted: the ranks are out of step since {}", what, why_);
}

}  // namespace zrt
