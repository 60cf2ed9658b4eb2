// Where the apps' data lives: in a source tree apps/data/cache (what apps/data/prepare
// writes by default); from an installed prefix, ZRT_DATA_DIR or the user's cache folder
// (~/.cache/zerort/data), which PREFIX/share/zerort/data/prepare writes by default. The rule
// is apps/data/data-root's, which prepare and the Slurm templates source: change both
// together (the install test checks that they agree).
#pragma once

#include <filesystem>
#include <string>

namespace gpt2 {

// The folder that holds tokenizer/ and one folder per corpus.
std::filesystem::path data_root();

// The command that fills data_root(), as the user would type it.
std::string prepare_command();

}  // namespace gpt2
