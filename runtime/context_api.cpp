// The C entry points of zerort/context.h.
#include "runtime/error.hpp"
#include "runtime/field_table.hpp"
#include "runtime/format_bytes.hpp"
#include "runtime/runtime_context.hpp"
#include "runtime/string_out.hpp"
#include "zerort/context.h"

using namespace zrt;

namespace {

using Attr = zrt_context_attr_t;

const ReportTable<Attr, Context> kContextAttr{
    "zrt_context_attr_field",
    "attr_p",
    {
        {ZRT_CONTEXT_ATTR_FIELD_RANK, "rank", [](const Context &c, Attr &a) { a.rank = c.rank(); }},
        {ZRT_CONTEXT_ATTR_FIELD_SIZE, "size", [](const Context &c, Attr &a) { a.size = c.size(); }},
        {ZRT_CONTEXT_ATTR_FIELD_NODE, "node_id, node_count",
         [](const Context &c, Attr &a) {
           a.node_id = c.topology().layout().node_id;
           a.node_count = c.topology().layout().node_count;
         }},
        {ZRT_CONTEXT_ATTR_FIELD_LOCAL, "local_rank, local_size",
         [](const Context &c, Attr &a) {
           a.local_rank = c.topology().layout().local_rank;
           a.local_size = c.topology().layout().local_size;
         }},
        {ZRT_CONTEXT_ATTR_FIELD_BINDING, "bound_by, bound_pus, numa_node",
         [](const Context &c, Attr &a) {
           a.bound_by = c.topology().bound_by();
           a.bound_pus = c.topology().bound_pus();
           a.numa_node = c.topology().numa_node();
         }},
        {ZRT_CONTEXT_ATTR_FIELD_DEVICES, "gpu_count, gpu, nic_count",
         [](const Context &c, Attr &a) {
           const Topology &t = c.topology();
           a.gpu_count = static_cast<int>(t.gpus().size());
           a.gpu = t.gpu() >= 0 ? t.gpus()[static_cast<size_t>(t.gpu())].cuda_index : -1;
           a.nic_count = static_cast<int>(t.nics().size());
         }},
        {ZRT_CONTEXT_ATTR_FIELD_LOG_LEVEL, "log_level",
         [](const Context &c, Attr &a) { a.log_level = c.log_level(); }},
    }};

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_init_versioned(uint32_t api_version, MPI_Comm comm,
                                        const zrt_init_params_t *params, zrt_context_h *context_p) {
  return abi_call("zrt_init", [&] {
    uint32_t major = api_version >> 16, minor = api_version & 0xffffu;
    if (major != ZRT_API_VERSION_MAJOR || minor > ZRT_API_VERSION_MINOR)
      fail(ZRT_ERR_VERSION_MISMATCH,
           "the program was compiled against zerort API {}.{} but the library loaded provides "
           "API {}.{} (library {}); rebuild the program or load a matching libzerort",
           major, minor, ZRT_API_VERSION_MAJOR, ZRT_API_VERSION_MINOR, ZRT_VERSION_STRING);
    require_nonnull(context_p, "context_p");
    auto context = std::make_unique<Context>(comm, params);
    Context *raw = context.get();
    raw->handle = context_table().insert(std::move(context));
    *context_p = to_handle<zrt_context_h>(raw->handle);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_init_fortran(uint32_t api_version, MPI_Fint comm,
                                      const zrt_init_params_t *params, zrt_context_h *context_p) {
  // MPI_Comm_f2c needs MPI; a Fortran program has always initialized it.
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return abi_call("zrt_init", []() -> zrt_status_t {
      fail(ZRT_ERR_INVALID_STATE, "call MPI_Init before zrt_init from Fortran");
    });
  return zrt_init_versioned(api_version, MPI_Comm_f2c(comm), params, context_p);
}

ZRT_API zrt_status_t zrt_finalize(zrt_context_h context) {
  return abi_call("zrt_finalize", [&] {
    Context &c = context_from(context);
    c.check_can_finalize();
    const std::shared_ptr<Breakage> breakage = c.shared_breakage();
    context_table().remove(handle_value(context), "context");
    // Everything is released either way. A broken context's ranks are out of step: its
    // teardown waited for no other rank, and MPI_Finalize would (for ever, for a stopped
    // one), so the caller learns it and ends the job.
    if (breakage->broken())
      fail(breakage->status(),
           "the context is finalized without waiting for other ranks, which are out of step "
           "since {}; end the job with MPI_Abort (MPI_Finalize would wait for them)",
           breakage->why());
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_context_query(zrt_context_h context, zrt_context_attr_t *attr_p) {
  return abi_call("zrt_context_query", [&] {
    const Context &c = context_from(context);
    require_nonnull(attr_p, "attr_p");
    zrt_context_attr_t out = *attr_p;
    kContextAttr.fill(c, out);
    *attr_p = out;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_context_describe(zrt_context_h context, char *buf, size_t size,
                                          size_t *length_p) {
  return abi_call("zrt_context_describe", [&] {
    copy_out(context_from(context).describe().dump(), buf, size, length_p);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_get_version(unsigned *major_p, unsigned *minor_p, unsigned *patch_p,
                                     uint32_t *api_version_p) {
  if (major_p != nullptr) *major_p = ZRT_VERSION_MAJOR;
  if (minor_p != nullptr) *minor_p = ZRT_VERSION_MINOR;
  if (patch_p != nullptr) *patch_p = ZRT_VERSION_PATCH;
  if (api_version_p != nullptr) *api_version_p = ZRT_API_VERSION;
  return ZRT_SUCCESS;
}

ZRT_API zrt_status_t zrt_format_bytes(uint64_t bytes, char *buf, size_t size, size_t *length_p) {
  return abi_call("zrt_format_bytes", [&] {
    copy_out(format_bytes(bytes), buf, size, length_p);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_config_schema(char *buf, size_t size, size_t *length_p) {
  return abi_call("zrt_config_schema", [&] {
    copy_out(ConfigSchema::library().to_json().dump(), buf, size, length_p);
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
