#pragma once

#include <CLI/CLI.hpp>

// Adds the `bert` subcommand: zrt-bert's training step (BERT on zerort's engine, LAMB)
// against KokkosBlas::gemm on the model's own matrix shapes, measured in the same run.
void add_bert_bench(CLI::App &app);
