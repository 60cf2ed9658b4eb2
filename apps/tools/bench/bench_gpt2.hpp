#pragma once

#include <CLI/CLI.hpp>

// Adds the `gpt2` subcommand: zrt-gpt2's training step (GPT-2 124M on zerort's engine)
// against KokkosBlas::gemm on the model's own matrix shapes, measured in the same run.
void add_gpt2_bench(CLI::App &app);
