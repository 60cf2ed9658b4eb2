#include "plot.hpp"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace training {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

// gnuplot strings are in single quotes; a quote inside doubles.
std::string gnuplot_quoted(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void run_gnuplot(const std::string &script, const std::filesystem::path &data) {
  FILE *gp = ::popen("gnuplot 2>&1", "w");
  if (!gp) throw std::runtime_error("--plot: cannot start gnuplot");
  std::fwrite(script.data(), 1, script.size(), gp);
  const int status = ::pclose(gp);
  if (status != 0) {
    const bool missing = WIFEXITED(status) && WEXITSTATUS(status) == 127;
    throw std::runtime_error(
        missing ? fmt::format("--plot: gnuplot is not installed (Debian: apt-get install "
                              "gnuplot-nox; scripts/install-deps does); the numbers are in {}",
                              data.string())
                : fmt::format("--plot: gnuplot failed (status {}); the numbers are in {}", status,
                              data.string()));
  }
}

PlotFiles write_plots(const std::filesystem::path &dir, const std::string &prefix,
                      const std::string &title, const std::vector<StepMetrics> &steps,
                      const std::vector<EvalMetrics> &evals) {
  std::filesystem::create_directories(dir);
  PlotFiles files{dir / (prefix + "_loss.png"), dir / (prefix + "_memory.png"),
                  dir / (prefix + ".tsv")};
  const std::filesystem::path val_data = dir / (prefix + "_val.tsv");
  {
    std::ofstream out(files.data);
    out << "# step\tloss\tlr\tgrad_norm\tmodel_states_mib\tactivations_mib\trss_mib\n";
    for (const StepMetrics &m : steps)
      out << fmt::format("{}\t{}\t{}\t{}\t{:.3f}\t{:.3f}\t{:.3f}\n", m.step, m.loss, m.lr,
                         m.grad_norm, m.mem_model_states / kMiB, m.mem_activations / kMiB,
                         m.mem_rss / kMiB);
    std::ofstream val(val_data);
    val << "# step\tval_loss\n";
    for (const EvalMetrics &e : evals)
      val << fmt::format("{}\t{}\n", e.step, e.val_loss);
    if (!out || !val)
      throw std::runtime_error(fmt::format("--plot: cannot write {}", dir.string()));
  }

  std::string script = fmt::format(
      "set terminal pngcairo size 900,540 font 'sans,10'\n"
      "set grid\nset key top right\nset xlabel 'step'\n"
      "set output {loss}\nset title {title}\nset ylabel 'cross-entropy loss'\n"
      "plot {data} using 1:2 with lines lw 1.5 title 'train'{val}\n"
      "set output {mem}\nset title {memtitle}\nset ylabel 'MiB per rank'\nset yrange [0:*]\n"
      "set key bottom right\n"
      "plot {data} using 1:7 with lines lw 1.5 title 'resident (RSS)', "
      "{data} using 1:($5+$6) with lines lw 1.5 title 'model states + activations', "
      "{data} using 1:5 with lines lw 1.5 title 'model states'\n",
      fmt::arg("loss", gnuplot_quoted(files.loss_png.string())),
      fmt::arg("title", gnuplot_quoted(title)),
      fmt::arg("data", gnuplot_quoted(files.data.string())),
      fmt::arg("val", evals.empty() ? std::string()
                                    : fmt::format(", {} using 1:2 with linespoints lw 1.5 pt 7 "
                                                  "title 'val'",
                                                  gnuplot_quoted(val_data.string()))),
      fmt::arg("mem", gnuplot_quoted(files.memory_png.string())),
      fmt::arg("memtitle", gnuplot_quoted(title + ": memory per rank")));

  run_gnuplot(script, files.data);
  return files;
}

}  // namespace training
