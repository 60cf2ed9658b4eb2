// --plot: the loss and memory curves of a run as PNG files, drawn by gnuplot.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "metrics.hpp"

namespace training {

struct PlotFiles {
  std::filesystem::path loss_png, memory_png, data;
};

/// Writes DIR/PREFIX.tsv (the numbers) and draws DIR/PREFIX_loss.png (train and val loss
/// against steps) and DIR/PREFIX_memory.png (memory per rank against steps) with gnuplot.
/// Throws std::runtime_error if gnuplot is missing or fails, saying how to install it;
/// the .tsv is written first either way.
PlotFiles write_plots(const std::filesystem::path &dir, const std::string &prefix,
                      const std::string &title, const std::vector<StepMetrics> &steps,
                      const std::vector<EvalMetrics> &evals);

/// Runs gnuplot on @p script. Throws std::runtime_error if gnuplot is missing or fails,
/// saying how to install it and that the numbers are in @p data.
void run_gnuplot(const std::string &script, const std::filesystem::path &data);

/// @p s as a gnuplot string literal.
std::string gnuplot_quoted(const std::string &s);

}  // namespace training
