// Byte sizes for the tests: one definition, since the test programs compile their files in
// batches (zrt_unity_build) and a constant per file would be defined twice.
#pragma once

#include <cstddef>

inline constexpr size_t KiB = 1024, MiB = KiB * 1024;
