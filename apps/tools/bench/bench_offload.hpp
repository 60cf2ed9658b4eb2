#pragma once

#include <CLI/CLI.hpp>

// Adds the `offload` subcommand: activation offload bandwidth next to memcpy, and the
// share of the copy time hidden behind compute in a forward + backward pass.
void add_offload_bench(CLI::App &app);
