#pragma once

#include <CLI/CLI.hpp>

// Adds the `ckpt` subcommand: checkpoint save and load time and MB/s for a GPT-2-shaped
// model against writing and reading the same bytes with plain POSIX calls in the same run.
void add_ckpt_bench(CLI::App &app);
