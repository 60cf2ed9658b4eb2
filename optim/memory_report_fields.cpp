#include "optim/memory_report_fields.hpp"

namespace zrt {

namespace {

// At namespace scope: it registers itself at start-up, with every other table.
const ReportTable<zrt_memory_report_t, MemoryReport> kMemoryReport{
    "zrt_memory_report_field",
    "report_p",
    {
        {ZRT_MEMORY_REPORT_FIELD_PARAMETER_COUNT, "parameter_count",
         [](const MemoryReport &r, zrt_memory_report_t &o) {
           o.parameter_count = r.parameter_count;
         }},
        {ZRT_MEMORY_REPORT_FIELD_PARAMETERS, "parameters",
         [](const MemoryReport &r, zrt_memory_report_t &o) { o.parameters = r.parameters; }},
        {ZRT_MEMORY_REPORT_FIELD_GRADIENTS, "gradients",
         [](const MemoryReport &r, zrt_memory_report_t &o) { o.gradients = r.gradients; }},
        {ZRT_MEMORY_REPORT_FIELD_MASTER_WEIGHTS, "master_weights",
         [](const MemoryReport &r, zrt_memory_report_t &o) {
           o.master_weights = r.master_weights;
         }},
        {ZRT_MEMORY_REPORT_FIELD_OPTIMIZER_STATE, "optimizer_state",
         [](const MemoryReport &r, zrt_memory_report_t &o) {
           o.optimizer_state = r.optimizer_state;
         }},
        {ZRT_MEMORY_REPORT_FIELD_BUCKETS, "buckets",
         [](const MemoryReport &r, zrt_memory_report_t &o) { o.buckets = r.buckets; }},
        {ZRT_MEMORY_REPORT_FIELD_TOTAL, "total",
         [](const MemoryReport &r, zrt_memory_report_t &o) { o.total = r.total(); }},
        {ZRT_MEMORY_REPORT_FIELD_GATHER, "gather_fetches, gather_evictions",
         [](const MemoryReport &r, zrt_memory_report_t &o) {
           o.gather_fetches = r.gather_fetches;
           o.gather_evictions = r.gather_evictions;
         }},
        {ZRT_MEMORY_REPORT_FIELD_PLACEMENT, "device_bytes, host_bytes",
         [](const MemoryReport &r, zrt_memory_report_t &o) {
           o.device_bytes = r.device_bytes;
           o.host_bytes = r.host_bytes;
         }},
        {ZRT_MEMORY_REPORT_FIELD_SHARED, "node_shared_bytes, node_shared_ranks",
         [](const MemoryReport &r, zrt_memory_report_t &o) {
           o.node_shared_bytes = r.node_shared_bytes;
           o.node_shared_ranks = r.node_shared_ranks;
         }},
    }};

}  // namespace

const ReportTable<zrt_memory_report_t, MemoryReport> &memory_report_table() {
  return kMemoryReport;
}

}  // namespace zrt
