#include <zerort/nn/nearest_name.hpp>

#include <algorithm>

namespace zrt::nn {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string nearest_name(std::string_view key, const std::vector<std::string_view> &names,
                         size_t max_distance) {
  std::string best;
  size_t best_distance = max_distance + 1;
  for (std::string_view name : names)
    if (size_t d = edit_distance(key, name); d < best_distance) best_distance = d, best = name;
  return best;
}

}  // namespace zrt::nn
