#include "metrics.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <zerort/zerort.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "files/regular_file.hpp"

namespace training {
namespace {

// A "VmRSS:   1234 kB" field of /proc/self/status, in bytes.
int64_t status_field(const char *name) {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == name) {
      int64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 16, '\n');
  }
  return 0;
}

// JSON has no NaN or infinity: write null for them.
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace

int64_t resident_bytes() {
  return status_field("VmRSS:");
}
int64_t peak_resident_bytes() {
  return status_field("VmHWM:");
}

std::string format_bytes(int64_t bytes) {
  // zerort's own wording, so the trainer's sizes read as the library's messages do.
  char text[32];
  size_t length = 0;
  if (zrt_format_bytes(static_cast<uint64_t>(std::max<int64_t>(bytes, 0)), text, sizeof text,
                       &length) != ZRT_SUCCESS)
    return std::to_string(bytes) + " B";
  return text;
}

std::string state_memory_breakdown(const StateMemory &m, int64_t stage0_bytes,
                                   const std::string &optimizer_label) {
  return fmt::format(
      "{} (parameters {}, gradients {}, master weights {}, {} {}, buckets {}); stage 0 would "
      "hold {}",
      format_bytes(m.total()), format_bytes(m.parameters), format_bytes(m.gradients),
      format_bytes(m.master_weights), optimizer_label, format_bytes(m.optimizer_state),
      format_bytes(m.buckets), format_bytes(stage0_bytes));
}

std::string optimizer_label(zrt_optimizer_t kind) {
  switch (kind) {
    case ZRT_OPTIMIZER_ADAMW:
      return "AdamW";
    case ZRT_OPTIMIZER_ADAM:
      return "Adam";
    case ZRT_OPTIMIZER_LAMB:
      return "LAMB";
    case ZRT_OPTIMIZER_SGD:
      return "SGD";
    default:
      return "optimizer";
  }
}

std::string state_memory_summary(const StateMemory &m, int64_t stage0_bytes) {
  return fmt::format("{} ({} + {} of reduction buckets; stage 0 would hold {})",
                     format_bytes(m.total()), format_bytes(m.total() - m.buckets),
                     format_bytes(m.buckets), format_bytes(stage0_bytes));
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

MetricsLog::MetricsLog(const std::filesystem::path &path) : path_(path) {
  if (path.empty()) return;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  // Read back by --resume and rewritten: a regular file, checked without blocking (opening
  // a FIFO waits for ever for the other end).
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    try {
      ::close(files::open_regular(path));
    } catch (const files::Error &e) {
      throw std::runtime_error(fmt::format("--json-metrics {}: {}", path.string(), e.reason()));
    }
  }
  // Checked now, on bad input, not at the first step; emptied (or continued) then.
  std::ofstream probe(path, std::ios::app);
  if (!probe)
    throw std::runtime_error(fmt::format("--json-metrics {}: cannot create", path.string()));
}

namespace {
// A figure of an earlier record: NaN where it was written as null (a NaN or Inf loss or
// norm) or is missing.
double figure(const nlohmann::json &line, const char *key) {
  auto it = line.find(key);
  return it != line.end() && it->is_number() ? it->get<double>() : std::nan("");
}
int64_t count(const nlohmann::json &line, const char *key) {
  auto it = line.find(key);
  return it != line.end() && it->is_number() ? it->get<int64_t>() : 0;
}
}  // namespace

void MetricsLog::resumed_at(int64_t step) {
  if (path_.empty() || opened_) return;
  std::vector<std::string> kept;
  int64_t unreadable = 0;
  {
    std::error_code ec;
    std::istringstream in(std::filesystem::exists(path_, ec) ? files::read_regular(path_) : "");
    std::string text;
    while (std::getline(in, text)) {
      nlohmann::json line = nlohmann::json::parse(text, nullptr, false);
      if (line.is_discarded() || !line.is_object()) {
        ++unreadable;  // a line cut short by a killed run
        continue;
      }
      const std::string type =
          line.contains("type") && line["type"].is_string() ? line["type"].get<std::string>() : "";
      const int64_t at = count(line, "step");
      if ((type == "step" || type == "eval" || type == "sample") && at > step) continue;
      if (type == "step") {
        StepMetrics m;
        m.step = at;
        m.loss = figure(line, "loss");
        m.lr = figure(line, "lr");
        m.grad_norm = figure(line, "grad_norm");
        m.seconds = figure(line, "ms") / 1e3;
        m.tokens_per_s = figure(line, "tokens_per_s");
        m.mem_model_states = count(line, "mem_model_states");
        m.mem_activations = count(line, "mem_activations");
        m.mem_activations_offloaded = count(line, "mem_activations_offloaded");
        m.mem_activations_sampling = count(line, "mem_activations_sampling");
        m.mem_rss = count(line, "mem_rss");
        m.mem_peak_rss = count(line, "mem_peak_rss");
        m.comm = {figure(line, "comm_wait_ms") / 1e3, count(line, "comm_reduce_scatter_bytes"),
                  count(line, "comm_all_gather_bytes"), count(line, "comm_all_reduce_bytes")};
        steps_.push_back(m);
      } else if (type == "eval") {
        evals_.push_back({at, figure(line, "val_loss"), nlohmann::json::object()});
      }
      kept.push_back(text);
    }
  }
  out_.open(path_, std::ios::trunc);
  opened_ = true;
  for (const std::string &text : kept)
    out_ << text << '\n';
  if (unreadable > 0)
    fmt::print(stderr,
               "note: --json-metrics {}: {} unreadable line(s) of an earlier run left out\n",
               path_.string(), unreadable);
  out_.flush();
}

void MetricsLog::write(const nlohmann::json &line) {
  if (path_.empty()) return;
  if (!opened_) {
    out_.open(path_, std::ios::trunc);
    opened_ = true;
  }
  // Sample text may end inside a UTF-8 character: replace invalid bytes rather than throw.
  out_ << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();  // readable while training runs (tail -f, a dashboard)
}

void MetricsLog::run(const nlohmann::json &info) {
  nlohmann::json line = info;
  line["type"] = "run";
  write(line);
}

void MetricsLog::step(const StepMetrics &m) {
  steps_.push_back(m);
  nlohmann::json line = {{"type", "step"},
                         {"step", m.step},
                         {"loss", number(m.loss)},
                         {"lr", m.lr},
                         {"grad_norm", number(m.grad_norm)},
                         {"ms", m.seconds * 1e3},
                         {"tokens_per_s", m.tokens_per_s},
                         {"mem_model_states", m.mem_model_states},
                         {"mem_activations", m.mem_activations},
                         {"mem_activations_offloaded", m.mem_activations_offloaded},
                         {"mem_activations_sampling", m.mem_activations_sampling},
                         {"mem_rss", m.mem_rss},
                         {"mem_peak_rss", m.mem_peak_rss},
                         {"comm_wait_ms", m.comm.wait_seconds * 1e3},
                         {"comm_reduce_scatter_bytes", m.comm.reduce_scatter_bytes},
                         {"comm_all_gather_bytes", m.comm.all_gather_bytes},
                         {"comm_all_reduce_bytes", m.comm.all_reduce_bytes}};
  for (auto it = m.extra.begin(); it != m.extra.end(); ++it)
    line[it.key()] = it->is_number_float() ? number(it->get<double>()) : *it;
  write(line);
}

void MetricsLog::eval(const EvalMetrics &m) {
  evals_.push_back(m);
  nlohmann::json line = {{"type", "eval"}, {"step", m.step}, {"val_loss", number(m.val_loss)}};
  for (auto it = m.extra.begin(); it != m.extra.end(); ++it)
    line[it.key()] = it->is_number_float() ? number(it->get<double>()) : *it;
  write(line);
}

void MetricsLog::sample(int64_t step, const std::string &text) {
  write({{"type", "sample"}, {"step", step}, {"text", text}});
}

void MetricsLog::end(const nlohmann::json &info) {
  nlohmann::json line = info;
  line["type"] = "end";
  write(line);
}

std::string progress_line(const StepMetrics &m, int64_t total_steps, double eta_seconds) {
  const int width = static_cast<int>(fmt::format("{}", total_steps).size());
  return fmt::format(
      "step {:>{}}/{} | loss {:.4f}{} | lr {:.2e} | norm {:.3f} | {:.0f} ms | {:.0f} tok/s | eta "
      "{} "
      "| mem/rank {} (states {}, activations {}{}{})",
      m.step, width, total_steps, m.loss, m.loss_detail.empty() ? "" : " (" + m.loss_detail + ")",
      m.lr, m.grad_norm, m.seconds * 1e3, m.tokens_per_s, format_duration(eta_seconds),
      format_bytes(m.mem_rss), format_bytes(m.mem_model_states), format_bytes(m.mem_activations),
      m.mem_activations_offloaded > 0
          ? fmt::format(" + {} offloaded", format_bytes(m.mem_activations_offloaded))
          : "",
      m.mem_activations_sampling > 0
          ? fmt::format(", sampling {}", format_bytes(m.mem_activations_sampling))
          : "");
}

}  // namespace training
