// The floor under zrt-bench pool's latencies: the least an allocator reached through a
// library call costs on this machine. floor_alloc and floor_free are called through
// function pointers (as a call into a shared library goes through the PLT) and keep a
// per-thread stack of blocks of one size, checking nothing: not a handle, not the
// pointer, not a double free, and they are told the size on free. No allocator that
// validates its input can be faster, so floor time / malloc time bounds the ratio to
// malloc that any pool behind a C ABI can reach.
#pragma once

#include <cstddef>

namespace bench {

extern void *(*const volatile floor_alloc)(size_t bytes);
extern void (*const volatile floor_free)(void *ptr, size_t bytes);

// Returns the blocks the calling thread's stack holds to malloc.
void floor_release_all();

}  // namespace bench
