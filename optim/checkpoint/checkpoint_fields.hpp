// The field tables of checkpoint.h's structs (runtime/field_table.hpp), compiled in every
// build so a build without HDF5 still knows (and refuses) the same fields.
#pragma once

#include <string>

#include "runtime/field_table.hpp"
#include "zerort/checkpoint.h"

namespace zrt {

// What zrt_checkpoint_save takes from zrt_checkpoint_params_t.
struct SaveOptions {
  std::string metadata;
  int keep_last = 0;
};

const ParamTable<zrt_checkpoint_params_t, SaveOptions> &checkpoint_params_table();
// Source: the file's own description of the dataset, every field set.
const ReportTable<zrt_checkpoint_tensor_t, zrt_checkpoint_tensor_t> &checkpoint_tensor_table();

}  // namespace zrt
