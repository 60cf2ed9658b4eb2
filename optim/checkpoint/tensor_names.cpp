#include "optim/checkpoint/tensor_names.hpp"

#include <string_view>

#include "runtime/error.hpp"

namespace zrt::checkpoint {

namespace {

// The name as HDF5 stores it (its non-empty, non-"." components joined by '/'), and the
// first component HDF5 would drop, described ("" when none).
struct Stored {
  std::string path;
  std::string dropped;
};

Stored stored_as(const std::string &name) {
  Stored out;
  size_t begin = 0;
  while (begin <= name.size()) {
    size_t end = name.find('/', begin);
    if (end == std::string::npos) end = name.size();
    const std::string_view part(name.data() + begin, end - begin);
    if (part.empty() || part == ".") {
      if (out.dropped.empty())
        out.dropped = part == "."          ? "its '.' component"
                      : begin == 0         ? "its leading '/'"
                      : end == name.size() ? "its trailing '/'"
                                           : "the empty component of its '//'";
    } else {
      if (!out.path.empty()) out.path += '/';
      out.path += part;
    }
    begin = end + 1;
  }
  return out;
}

}  // namespace

void TensorNames::check(const std::string &name) const {
  const Stored s = stored_as(name);
  if (!s.dropped.empty()) {
    if (s.path.empty())
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "{} '{}' cannot be stored in a checkpoint: HDF5 drops {}, which leaves no name (the "
           "group that holds the tensors)",
           what_, name, s.dropped);
    if (names_.count(s.path))
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "{} '{}' would be stored in a checkpoint as '{}', the {} '{}' {} before (HDF5 drops "
           "{})",
           what_, name, s.path, what_, s.path, done_, s.dropped);
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "{} '{}' cannot be stored in a checkpoint under its name: HDF5 drops {} and would "
         "store it as '{}' (name it '{}')",
         what_, name, s.dropped, s.path, s.path);
  }
  // A tensor above it: every '/' ends the name of a group that must not be a tensor.
  for (size_t at = name.find('/'); at != std::string::npos; at = name.find('/', at + 1))
    if (const std::string group = name.substr(0, at); names_.count(group))
      fail(ZRT_ERR_INVALID_ARGUMENT,
           "{} '{}' would be stored inside '{}', which is a tensor (the {} '{}' {} before): '/' "
           "separates groups in a checkpoint",
           what_, name, group, what_, group, done_);
  // A tensor below it: the name is a group of that one's path.
  const std::string below = name + '/';
  if (auto it = names_.lower_bound(below); it != names_.end() && it->starts_with(below))
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "{} '{}' would be a tensor where '{}' (the {} {} before) needs a group: '/' separates "
         "groups in a checkpoint",
         what_, name, *it, what_, done_);
}

}  // namespace zrt::checkpoint
