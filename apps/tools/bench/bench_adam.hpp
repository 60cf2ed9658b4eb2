#pragma once

#include <CLI/CLI.hpp>

// Adds the `adam` subcommand: zerort's AdamW kernel against a scalar loop and against the
// memory-bandwidth roofline measured in the same run.
void add_adam_bench(CLI::App &app);
