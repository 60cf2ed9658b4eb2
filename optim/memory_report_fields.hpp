// The field table of zrt_memory_report_t (runtime/field_table.hpp): what zrt_engine_memory
// and zrt_plan_memory fill from a MemoryReport, one table for both.
#pragma once

#include "optim/zero_engine.hpp"
#include "runtime/field_table.hpp"
#include "zerort/engine.h"

namespace zrt {

const ReportTable<zrt_memory_report_t, MemoryReport> &memory_report_table();

}  // namespace zrt
