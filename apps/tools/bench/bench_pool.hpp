#pragma once

#include <CLI/CLI.hpp>

// Adds the `pool` subcommand: allocation latency of zerort's pool next to glibc malloc and
// jemalloc in the same run, and peak reserved over peak live on a training-like trace.
void add_pool_bench(CLI::App &app);
