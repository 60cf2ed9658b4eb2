#include "comm/streaming_copy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace zrt {

void copy_streaming(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__)
  auto *d = static_cast<char *>(dst);
  const auto *s = static_cast<const char *>(src);
  // Up to dst's first cache-line boundary as memcpy does (small copies entirely), so that
  // each round below fills one line.
  const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  size_t i = head;
  // Four stores a round: a whole 64-byte line leaves the write-combining buffer at once.
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i *>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i *>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
  // Streaming stores are weakly ordered: the fence orders them before whatever this thread
  // stores next (the flag or counter that tells others the copy is done).
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace zrt
