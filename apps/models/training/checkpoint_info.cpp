#include "checkpoint_info.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <zerort/zerort.h>

#include <stdexcept>
#include <system_error>

#include "files/regular_file.hpp"

namespace training {
namespace {

std::string shape_text(const nlohmann::json &model, const std::vector<std::string> &keys) {
  std::string s;
  for (const std::string &k : keys)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, model.value(k, nlohmann::json()).dump());
  return s;
}

}  // namespace

std::filesystem::path checkpoint_path(const std::filesystem::path &save_path, int64_t step) {
  std::string path = save_path.string();
  if (auto at = path.find("{step}"); at != std::string::npos)
    path.replace(at, 6, fmt::format("{:08d}", step));
  return path;
}

void check_save_folder(const std::filesystem::path &save_path) {
  const auto dir = std::filesystem::absolute(save_path).parent_path();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir))
    throw std::runtime_error(
        fmt::format("--save {}: cannot create the folder {}", save_path.string(), dir.string()));
}

CheckpointInfo read_checkpoint_info(const std::filesystem::path &path,
                                    const CheckpointOwner &owner) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw std::runtime_error(fmt::format("--resume {}: no such checkpoint file", path.string()));
  try {
    ::close(files::open_regular(path));  // a FIFO, a folder, a device: named
  } catch (const files::Error &e) {
    throw std::runtime_error(fmt::format("--resume {}: {}", path.string(), e.reason()));
  }
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
  const std::string program =
      meta.is_object() && meta.contains("program") && meta["program"].is_string()
          ? meta["program"].get<std::string>()
          : "";
  if (!program.empty() && program != owner.program)
    throw std::runtime_error(
        fmt::format("--resume {}: a checkpoint of {}, not of {} (its model is not a {})",
                    path.string(), program, owner.program, owner.model_kind));
  if (!meta.is_object() || program != owner.program || !meta.contains("model") ||
      !meta["model"].is_object())
    throw std::runtime_error(
        fmt::format("--resume {}: a zerort checkpoint, but not one of {} (its metadata has "
                    "no {} model); zrt-ckpt inspect shows what it holds",
                    path.string(), owner.program, owner.model_kind));
  const nlohmann::json &mine = owner.model;
  for (const std::string &k : owner.shape_keys)
    if (meta["model"].value(k, nlohmann::json()) != mine.value(k, nlohmann::json()))
      throw std::runtime_error(fmt::format(
          "--resume {}: the checkpoint is of another model ({}: {}), not of this one ({}: {}); "
          "pass the --config it was trained with",
          path.string(), meta["model"].value("name", "?"),
          shape_text(meta["model"], owner.shape_keys), mine.value("name", "?"),
          shape_text(mine, owner.shape_keys)));
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

}  // namespace training
