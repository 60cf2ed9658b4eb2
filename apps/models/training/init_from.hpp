// --init-from in the trainers: the model's weights from a file (zrt_weights' WeightsInit,
// matched against the model's layout at set-up), fresh optimizer state, step 0.
#pragma once

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <zerort/nn/parameter_store.hpp>
#include "weights_init.hpp"

namespace training {

/// --resume (continue a run: weights, optimizer state, step, data position) and
/// --init-from (weights only), which exclude each other.
inline void add_start_options(CLI::App &app, std::string &resume, std::string &init_from) {
  CLI::Option *resume_option = app.add_option(
      "--resume", resume, "checkpoint file to continue from (same model; any ranks or ZeRO stage)");
  app.add_option("--init-from", init_from,
                 "start from these weights, with fresh optimizer state at step 0: a zerort "
                 "checkpoint, or safetensors in zerort's or Hugging Face's names")
      ->excludes(resume_option);
}

/// Opens and matches @p path against @p store's layout; nullopt for an empty path. Throws
/// std::invalid_argument (set-up's bad input) naming what does not match.
inline std::optional<weights::WeightsInit> open_init_from(const std::filesystem::path &path,
                                                          weights::ModelKind kind,
                                                          zrt::nn::ParameterStore<float> &store) {
  if (path.empty()) return std::nullopt;
  std::vector<weights::ModelTensor> model;
  for (const zrt::nn::TensorSpec &t : store.tensors())
    model.push_back({t.name, t.shape});
  try {
    return std::optional<weights::WeightsInit>(std::in_place, path, kind, std::move(model));
  } catch (const weights::Error &e) {
    throw std::invalid_argument(fmt::format("--init-from: {}", e.what()));
  }
}

/// Sets every parameter from the file (every rank reads the same values: zrt_param_set)
/// and says so on the lead rank. Collective.
inline void load_init_from(const weights::WeightsInit &init, const std::filesystem::path &path,
                           zrt::nn::ParameterStore<float> &store, bool lead) {
  init.load([&](int id, const float *values) { store.set(id, values); });
  if (lead)
    fmt::print("initialized from {} ({}); optimizer state fresh, step 0\n", path.string(),
               init.description());
}

}  // namespace training
