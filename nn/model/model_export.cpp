// zrt_model_export's safetensors: every parameter by its name, fp32, little-endian, written
// by rank 0 as PATH.partial and renamed, so a failed export leaves no file behind.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "configured_model.hpp"

namespace zrt::nn::model {

void Model::export_safetensors(const std::string &path) {
  const std::vector<std::vector<float>> values = gather_all();  // collective
  if (rank_ != 0) return;
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}, {"producer", "zerort zrt_model_export"}};
  size_t offset = 0;
  for (size_t i = 0; i < layout_.size(); ++i) {
    const size_t bytes = values[i].size() * sizeof(float);
    header[layout_[i].name] = {
        {"dtype", "F32"}, {"shape", layout_[i].shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section 8-byte aligned
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out)
      throw StatusError(ZRT_ERR_IO,
                        fmt::format("{}: cannot be created: {}", partial, std::strerror(errno)));
    uint64_t n = text.size();
    unsigned char le[8];
    for (int b = 0; b < 8; ++b)
      le[b] = static_cast<unsigned char>(n >> (8 * b));
    out.write(reinterpret_cast<const char *>(le), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto &v : values)  // x86-64 and aarch64 are little-endian, as the format
      out.write(reinterpret_cast<const char *>(v.data()),
                static_cast<std::streamsize>(v.size() * sizeof(float)));
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      out.close();
      std::remove(partial.c_str());
      throw StatusError(ZRT_ERR_IO, fmt::format("{}: writing failed: {}", path, why));
    }
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    std::remove(partial.c_str());
    throw StatusError(ZRT_ERR_IO, fmt::format("{}: {}", path, ec.message()));
  }
}

}  // namespace zrt::nn::model
