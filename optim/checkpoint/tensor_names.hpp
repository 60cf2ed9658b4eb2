// Which tensor names a checkpoint can hold. A tensor NAME is stored as the HDF5 dataset
// /params/NAME (and /optimizer/KIND/NAME), so NAME is a path: '/' separates groups. Two
// things follow (checkpoint_io.hpp has the file's layout):
//  - HDF5 drops empty components and "." components when it follows a path ("/lead",
//    "a//b", "a/", "./a" and "a/./b" are stored as "lead", "a/b", "a", "a" and "a/b"; "."
//    is the group /params itself), so such a name would come back from the file as another
//    name, or collide with one: refused. ".." and names beginning with '.' are ordinary
//    names to HDF5.
//  - A tensor cannot also be a group: "a" and "a/b" cannot both be tensors (nor can "a/b"
//    and "a/b/c"), while "a/b" and "a/c" share the group "a".
// The file's own metadata is attributes of / and of each dataset, and the groups params and
// optimizer above every name, so no tensor name can shadow it. Without HDF5 in the build the
// rule is the same: a checkpoint written elsewhere must hold the same names.
#pragma once

#include <set>
#include <string>

namespace zrt::checkpoint {

class TensorNames {
 public:
  // @p what and @p done name the caller's names in messages ("parameter", "registered").
  TensorNames(const char *what, const char *done) : what_(what), done_(done) {}
  // Throws Error(ZRT_ERR_INVALID_ARGUMENT) when @p name cannot be a dataset path, or when it
  // collides with a name inserted before, naming both and why ("'a/b' would be stored inside
  // 'a', which is a tensor"). An exact repeat is the caller's to refuse (in its own words).
  // Local.
  void check(const std::string &name) const;
  // Adds a name that check accepted.
  void insert(const std::string &name) { names_.insert(name); }

 private:
  const char *what_, *done_;
  std::set<std::string> names_;
};

}  // namespace zrt::checkpoint
