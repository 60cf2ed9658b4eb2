#pragma once

#include <CLI/CLI.hpp>

// Adds the `comm` subcommand: bus bandwidth of zerort's collectives next to Open MPI's own
// on the same buffers, in the same run.
void add_comm_bench(CLI::App &app);
