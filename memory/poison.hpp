// AddressSanitizer poisoning of a pool's free memory: a read or write through a pointer
// that was freed (or past the bytes asked for) is reported where it happens instead of
// silently corrupting the next owner's data. Compiles to nothing without ASan.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define ZRT_POISON(addr, size) ASAN_POISON_MEMORY_REGION((addr), (size))
#define ZRT_UNPOISON(addr, size) ASAN_UNPOISON_MEMORY_REGION((addr), (size))
#else
#define ZRT_POISON(addr, size) ((void)(addr), (void)(size))
#define ZRT_UNPOISON(addr, size) ((void)(addr), (void)(size))
#endif

namespace zrt {

// True when this build poisons (tests check that freed memory is reported).
inline constexpr bool kPoisonsFreedMemory =
#if defined(__SANITIZE_ADDRESS__)
    true;
#else
    false;
#endif

inline void poison(bool host_accessible, uintptr_t addr, size_t size) {
  if (host_accessible && size > 0) ZRT_POISON(reinterpret_cast<void *>(addr), size);
}
inline void unpoison(bool host_accessible, uintptr_t addr, size_t size) {
  if (host_accessible && size > 0) ZRT_UNPOISON(reinterpret_cast<void *>(addr), size);
}

}  // namespace zrt
