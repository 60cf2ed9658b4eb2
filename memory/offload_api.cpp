// The C entry points of zerort/memory.h for activation offload.
#include "memory/memory_fields.hpp"
#include "memory/memory_part.hpp"
#include "zerort/memory.h"

using namespace zrt;

namespace {

Offload &offload_from(zrt_offload_h offload) {
  return *offload_table().get(handle_value(offload), "offload").offload;
}

uint64_t token_value(zrt_offload_token_h token) {
  return handle_value(token);
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_context_offload(zrt_context_h context, zrt_offload_h *offload_p) {
  return abi_call("zrt_context_offload", [&] {
    Context &c = context_from(context);
    require_nonnull(offload_p, "offload_p");
    *offload_p = to_handle<zrt_offload_h>(c.part<MemoryPart>().offload_entry().handle);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_create(zrt_context_h context, const zrt_offload_params_t *params,
                                        zrt_offload_h *offload_p) {
  return abi_call("zrt_offload_create", [&] {
    Context &c = context_from(context);
    require_nonnull(offload_p, "offload_p");
    MemoryPart &memory = c.part<MemoryPart>();
    OffloadRequest request;
    request.memory = &memory;
    request.options = memory.default_offload_options();
    std::map<std::string, std::string> no_keys;
    offload_params_table().read(params, no_keys, request);
    *offload_p = to_handle<zrt_offload_h>(
        memory.create_offload(std::move(request.options), request.ring_pool).handle);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_destroy(zrt_offload_h offload) {
  return abi_call("zrt_offload_destroy", [&] {
    OffloadEntry &e = offload_table().get(handle_value(offload), "offload");
    e.part->destroy_offload(e);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_push(zrt_offload_h offload, const void *src, size_t bytes,
                                      zrt_offload_token_h *token_p) {
  return abi_call("zrt_offload_push", [&] {
    Offload &o = offload_from(offload);
    require_nonnull(token_p, "token_p");
    *token_p = to_handle<zrt_offload_token_h>(o.push(src, bytes));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_test(zrt_offload_h offload, zrt_offload_token_h token) {
  return abi_call("zrt_offload_test", [&] {
    return offload_from(offload).test(token_value(token)) ? ZRT_SUCCESS : ZRT_IN_PROGRESS;
  });
}

ZRT_API zrt_status_t zrt_offload_wait(zrt_offload_h offload, zrt_offload_token_h token) {
  return abi_call("zrt_offload_wait", [&] {
    offload_from(offload).wait(token_value(token));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_prefetch(zrt_offload_h offload, zrt_offload_token_h token) {
  return abi_call("zrt_offload_prefetch", [&] {
    offload_from(offload).prefetch(token_value(token));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_prefetch_into(zrt_offload_h offload, zrt_offload_token_h token,
                                               void *dst) {
  return abi_call("zrt_offload_prefetch_into", [&] {
    offload_from(offload).prefetch_into(token_value(token), dst);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_fetch(zrt_offload_h offload, zrt_offload_token_h token,
                                       void *dst) {
  return abi_call("zrt_offload_fetch", [&] {
    offload_from(offload).fetch(token_value(token), dst);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_discard(zrt_offload_h offload, zrt_offload_token_h token) {
  return abi_call("zrt_offload_discard", [&] {
    offload_from(offload).discard(token_value(token));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_offload_stats(zrt_offload_h offload, zrt_offload_stats_t *stats_p) {
  return abi_call("zrt_offload_stats", [&] {
    Offload &o = offload_from(offload);
    require_nonnull(stats_p, "stats_p");
    offload_stats_table().check(*stats_p);
    zrt_offload_stats_t out = *stats_p;
    offload_stats_table().fill(o.stats(), out);
    *stats_p = out;
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
