#include "runtime/field_table.hpp"

namespace zrt {

namespace {

std::vector<FieldTableInfo> &registry() {
  static std::vector<FieldTableInfo> tables;
  return tables;
}

}  // namespace

const std::vector<FieldTableInfo> &field_tables() {
  return registry();
}

void register_field_table(FieldTableInfo info) {
  registry().push_back(std::move(info));
}

void check_field_mask(uint64_t mask, uint64_t known, const char *argument) {
  if (mask & ~known)
    fail(ZRT_ERR_INVALID_ARGUMENT,
         "{}->field_mask has unknown bits 0x{:x} (a header newer than the library?)", argument,
         mask & ~known);
}

}  // namespace zrt
