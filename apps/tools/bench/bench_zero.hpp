#pragma once

#include <CLI/CLI.hpp>

// Adds the `zero` subcommand: training-step time of ZeRO stages 1, 2, 3 against stage 0 on
// a synthetic model, with and without overlap.
void add_zero_bench(CLI::App &app);
