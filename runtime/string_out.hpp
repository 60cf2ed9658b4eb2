// snprintf-style output of a string through the C ABI.
#pragma once

#include <cstring>
#include <string>

#include "runtime/error.hpp"

namespace zrt {

// Writes at most size bytes of text, NUL-terminated, into buf (NULL allowed when size is
// 0) and the full length into *length_p.
inline void copy_out(const std::string &text, char *buf, size_t size, size_t *length_p) {
  require_nonnull(length_p, "length_p");
  if (size > 0) {
    require_nonnull(buf, "buf");
    size_t n = std::min(text.size(), size - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  *length_p = text.size();
}

}  // namespace zrt
