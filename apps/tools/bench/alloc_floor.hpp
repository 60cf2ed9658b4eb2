// The floor under zrt-bench pool's latencies: about the least an allocator reached
// through a library call costs on this machine. floor_alloc and floor_free are called
// through function pointers (as a call into a shared library goes through the PLT) and
// keep a per-thread stack of blocks of one size, checking nothing: not a handle, not the
// pointer, not a double free, and they are told the size on free. A measured bound, not
// a proven one (it also enjoys the executable's cheaper thread-local storage): floor time
// over malloc time says roughly how close to malloc a pool behind a C ABI can come.
#pragma once

#include <cstddef>

namespace bench {

extern void *(*const volatile floor_alloc)(size_t bytes);
extern void (*const volatile floor_free)(void *ptr, size_t bytes);

// Makes room in the calling thread's stack for `depth` blocks, so that frees never spill
// to free() and the figure stays the stack's alone. Its blocks come from glibc's malloc,
// not from jemalloc, whose heap is being measured beside it.
void floor_prepare(size_t depth);
// Returns the blocks the calling thread's stack holds.
void floor_release_all();

}  // namespace bench
