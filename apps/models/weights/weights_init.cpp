#include "weights_init.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <optional>
#include <stdexcept>

namespace weights {
namespace {

// "a, b, c and 4 more"
std::string some(const std::vector<std::string> &names) {
  constexpr size_t kShown = 4;
  std::vector<std::string> shown(names.begin(),
                                 names.begin() + static_cast<long>(std::min(names.size(), kShown)));
  std::string text = fmt::format("{}", fmt::join(shown, ", "));
  if (names.size() > kShown) text += fmt::format(" and {} more", names.size() - kShown);
  return text;
}

std::string shape_text(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

WeightsInit::WeightsInit(const std::filesystem::path &path, ModelKind kind,
                         std::vector<ModelTensor> model)
    : file_(path), kind_(kind), model_(std::move(model)) {
  std::map<std::string, int> ids;
  for (size_t i = 0; i < model_.size(); ++i)
    ids[model_[i].name] = static_cast<int>(i);
  std::vector<std::optional<Source>> found(model_.size());
  std::vector<std::string> unknown, shapes, twice;
  const auto &stored = file_.tensors();
  for (size_t f = 0; f < stored.size(); ++f) {
    const std::string &name = stored[f].name;
    int id = -1;
    bool transposed = false, hf = false;
    if (auto it = ids.find(name); it != ids.end()) {
      id = it->second;
    } else if (auto ours = from_hf(kind, name); ours && ids.count(ours->name)) {
      id = ids[ours->name];
      transposed = ours->transposed;
      hf = true;
    } else if (hf_not_a_parameter(kind, name)) {
      ++skipped_;
      continue;
    } else {
      unknown.push_back(name);
      continue;
    }
    const ModelTensor &m = model_[static_cast<size_t>(id)];
    if (found[static_cast<size_t>(id)]) {
      twice.push_back(
          fmt::format("{} and {}", stored[found[static_cast<size_t>(id)]->index].name, name));
      continue;
    }
    std::vector<int64_t> want = m.shape;
    if (transposed && want.size() == 2) std::swap(want[0], want[1]);
    if (stored[f].shape != want) {
      shapes.push_back(fmt::format("{} is {}, the model's {} needs {}{}", name,
                                   shape_text(stored[f].shape), m.name, shape_text(want),
                                   transposed ? " (stored transposed)" : ""));
      continue;
    }
    found[static_cast<size_t>(id)] = Source{f, transposed};
    hf_names_ += hf ? 1 : 0;
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < model_.size(); ++i)
    if (!found[i]) missing.push_back(model_[i].name);

  std::vector<std::string> problems;
  const char *model_name = model_kind_name(kind);
  if (!unknown.empty())
    problems.push_back(fmt::format("{} tensor(s) this {} model does not have: {}", unknown.size(),
                                   model_name, some(unknown)));
  if (!shapes.empty())
    problems.push_back(
        fmt::format("{} shape(s) of another configuration: {}", shapes.size(), some(shapes)));
  if (!twice.empty()) problems.push_back(fmt::format("tensors given twice: {}", some(twice)));
  // Missing ones matter most when nothing else is wrong (a smaller model's file).
  if (!missing.empty() && problems.empty())
    problems.push_back(fmt::format("it lacks {} of the model's {} tensors: {}", missing.size(),
                                   model_.size(), some(missing)));
  if (!problems.empty())
    throw std::invalid_argument(fmt::format("--init-from {}: does not fit this {} model: {}",
                                            path.string(), model_name, fmt::join(problems, "; ")));
  for (const auto &s : found)
    sources_.push_back(*s);
}

void WeightsInit::load(const std::function<void(int, const float *)> &set) const {
  std::vector<float> turned;
  for (size_t i = 0; i < model_.size(); ++i) {
    const Source &s = sources_[i];
    std::vector<float> v = file_.read(s.index);
    if (!s.transposed) {
      set(static_cast<int>(i), v.data());
      continue;
    }
    // Stored [a, b]: the model's [b, a].
    std::vector<int64_t> shape = file_.tensors()[s.index].shape;
    turned = transposed(v, shape);
    set(static_cast<int>(i), turned.data());
  }
}

std::string WeightsInit::description() const {
  std::string text =
      fmt::format("{} in {} names: {} tensors",
                  file_.is_safetensors() ? "a safetensors file" : "a zerort checkpoint",
                  hf_names_ > 0 ? "Hugging Face's" : "zerort's", model_.size());
  if (skipped_ > 0) text += fmt::format(", {} buffer(s) and tied copies skipped", skipped_);
  return text;
}

}  // namespace weights
