#include "checkpoint_info.hpp"

#include <fmt/format.h>
#include <zerort/zerort.h>

#include <stdexcept>
#include <system_error>

namespace gpt2 {
namespace {

// The fields that fix the parameters' names and shapes.
constexpr const char *kShapeKeys[] = {"n_layer", "n_head", "n_embd", "vocab_size", "n_positions"};

std::string shape_text(const nlohmann::json &model) {
  std::string s;
  for (const char *k : kShapeKeys)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, model.value(k, nlohmann::json()).dump());
  return s;
}

}  // namespace

CheckpointInfo read_checkpoint_info(const std::filesystem::path &path, const Gpt2Config &config) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::runtime_error(fmt::format("--resume {}: no such checkpoint file", path.string()));
  size_t n = 0;
  if (zrt_checkpoint_describe(path.c_str(), nullptr, 0, &n) != ZRT_SUCCESS)
    throw std::runtime_error(fmt::format("--resume {}: not a zerort checkpoint: {}", path.string(),
                                         zrt_last_error_message()));
  std::string text(n + 1, '\0');
  if (zrt_checkpoint_describe(path.c_str(), text.data(), text.size(), &n) != ZRT_SUCCESS)
    throw std::runtime_error(
        fmt::format("--resume {}: {}", path.string(), zrt_last_error_message()));
  text.resize(n);

  CheckpointInfo info;
  info.path = path;
  nlohmann::json d = nlohmann::json::parse(text, nullptr, false);
  const nlohmann::json meta =
      d.is_object() && d.contains("metadata") ? d["metadata"] : nlohmann::json();
  if (!meta.is_object() || meta.value("program", "") != "zrt-gpt2" || !meta.contains("model") ||
      !meta["model"].is_object())
    throw std::runtime_error(
        fmt::format("--resume {}: a zerort checkpoint, but not one of zrt-gpt2 (its metadata has "
                    "no GPT-2 model); zrt-ckpt inspect shows what it holds",
                    path.string()));
  const nlohmann::json mine = config.to_json();
  for (const char *k : kShapeKeys)
    if (meta["model"].value(k, nlohmann::json()) != mine[k])
      throw std::runtime_error(fmt::format(
          "--resume {}: the checkpoint is of another model ({}: {}), not of this one ({}: {}); "
          "pass the --config it was trained with",
          path.string(), meta["model"].value("name", "?"), shape_text(meta["model"]), config.name,
          shape_text(mine)));
  try {
    info.step = meta.at("step").get<int64_t>();
    info.micro_batches = meta.at("micro_batches").get<int64_t>();
  } catch (const nlohmann::json::exception &e) {
    throw std::runtime_error(
        fmt::format("--resume {}: damaged trainer metadata: {}", path.string(), e.what()));
  }
  info.metadata = meta;
  return info;
}

}  // namespace gpt2
