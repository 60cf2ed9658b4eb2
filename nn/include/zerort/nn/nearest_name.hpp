// The nearest of some names to a misspelt one, for error messages ("did you mean ...?"):
// the models' JSON configurations refuse unknown keys this way, as zerort's own
// configuration does.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace zrt::nn {

/// Levenshtein distance between @p a and @p b.
size_t edit_distance(std::string_view a, std::string_view b);

/// The name in @p names closest to @p key, if within @p max_distance edits; else "".
std::string nearest_name(std::string_view key, const std::vector<std::string_view> &names,
                         size_t max_distance = 2);

}  // namespace zrt::nn
