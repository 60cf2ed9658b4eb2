#include "comm/coll_args.hpp"

#include <fmt/format.h>

#include "comm/dtype.hpp"
#include "runtime/error.hpp"
#include "runtime/format_bytes.hpp"

namespace zrt {

const char *coll_name(CollKind kind) {
  switch (kind) {
    case CollKind::ReduceScatter:
      return "reduce_scatter";
    case CollKind::AllGather:
      return "all_gather";
    case CollKind::AllReduce:
      return "all_reduce";
    case CollKind::Broadcast:
      return "broadcast";
  }
  return "collective";
}

std::string purpose_text(const CollPurpose &p) {
  const char *what = "";
  switch (p.what) {
    case CollPurpose::What::None:
      return "";
    case CollPurpose::What::GradientBucket:
      what = "the reduction of gradient bucket";
      break;
    case CollPurpose::What::ParamGather:
      what = "the stage-3 gather of the parameter group at bucket";
      break;
    case CollPurpose::What::ParamAllGather:
      what = "the all-gather of updated parameters of bucket";
      break;
    case CollPurpose::What::WeightsGather:
      what = "zrt_param_get's gather of the fp32 weights of bucket";
      break;
  }
  return fmt::format("{} {} at step {}", what, p.index, p.step);
}

std::string CollArgs::describe() const {
  if (kind == CollKind::Broadcast)
    return fmt::format("{} #{} ({} x {}, root {})", coll_name(kind), seq, count, dtype_name(dtype),
                       root);
  if (kind == CollKind::AllGather)
    return fmt::format("{} #{} ({} x {})", coll_name(kind), seq, count, dtype_name(dtype));
  return fmt::format("{} #{} ({} x {}, {})", coll_name(kind), seq, count, dtype_name(dtype),
                     op_name(op));
}

std::string CollArgs::describe_with_bytes() const {
  // A message about a bad dtype still gets written: its elements count as 0 bytes.
  size_t esize = 0;
  try {
    esize = dtype_size(dtype);
  } catch (const Error &) {
  }
  std::string size =
      fmt::format("{} x {} = {}", count, dtype_name(dtype), format_bytes(count * esize));
  if (kind == CollKind::Broadcast)
    return fmt::format("{} #{} ({}, root {})", coll_name(kind), seq, size, root);
  if (kind == CollKind::AllGather) return fmt::format("{} #{} ({})", coll_name(kind), seq, size);
  return fmt::format("{} #{} ({}, {})", coll_name(kind), seq, size, op_name(op));
}

}  // namespace zrt
