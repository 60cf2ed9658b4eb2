// The allocators zrt-bench pool compares with, in the same process: glibc's malloc and,
// when the build found it, jemalloc. Linking jemalloc replaces malloc for the whole
// process, so glibc's is called by its own names (__libc_malloc); the build compiles
// baseline_jemalloc.cpp or baseline_no_jemalloc.cpp, never both.
#pragma once

#include <cstddef>
#include <string>

namespace baseline {

void *libc_malloc(size_t bytes);
void libc_free(void *ptr);
// Bytes glibc holds from the system now (arena + mmapped chunks, mallinfo2).
size_t libc_reserved();

bool have_jemalloc();
std::string jemalloc_version();  // "" without jemalloc
void *je_malloc(size_t bytes);
void je_free(void *ptr);
// Bytes jemalloc has mapped from the system now (stats.mapped), 0 without jemalloc.
size_t je_reserved();

}  // namespace baseline
