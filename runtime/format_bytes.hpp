// The one way zerort writes a byte count for people: in messages, logs, zrt-info and the
// apps' reports (through zrt_format_bytes), so a size reads the same everywhere.
#pragma once

#include <cstdint>
#include <string>

namespace zrt {

// "1.5 GiB", "64 MiB", "1020 KiB", "17 B": binary units, three significant digits, never
// an exponent.
std::string format_bytes(uint64_t bytes);

}  // namespace zrt
