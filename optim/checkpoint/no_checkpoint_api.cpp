// zerort/checkpoint.h in a build without parallel HDF5: every call says so.
#include "runtime/error.hpp"
#include "zerort/checkpoint.h"

using namespace zrt;

namespace {
zrt_status_t unsupported(const char *function) {
  return abi_call(function, []() -> zrt_status_t {
    fail(ZRT_ERR_NOT_SUPPORTED,
         "this build of zerort has no parallel HDF5; configure with -DZRT_ENABLE_HDF5=ON");
  });
}
}  // namespace

extern "C" {
ZRT_API zrt_status_t zrt_checkpoint_save(zrt_engine_h, const char *,
                                         const zrt_checkpoint_params_t *) {
  return unsupported("zrt_checkpoint_save");
}
ZRT_API zrt_status_t zrt_checkpoint_save_post(zrt_engine_h, const char *,
                                              const zrt_checkpoint_params_t *, zrt_request_h *) {
  return unsupported("zrt_checkpoint_save_post");
}
ZRT_API zrt_status_t zrt_checkpoint_save_async(zrt_engine_h, const char *,
                                               const zrt_checkpoint_params_t *,
                                               zrt_checkpoint_request_h *) {
  return unsupported("zrt_checkpoint_save_async");
}
ZRT_API zrt_status_t zrt_checkpoint_test(zrt_checkpoint_request_h, int *) {
  return unsupported("zrt_checkpoint_test");
}
ZRT_API zrt_status_t zrt_checkpoint_wait(zrt_checkpoint_request_h) {
  return unsupported("zrt_checkpoint_wait");
}
ZRT_API zrt_status_t zrt_checkpoint_load(zrt_engine_h, const char *) {
  return unsupported("zrt_checkpoint_load");
}
ZRT_API zrt_status_t zrt_checkpoint_describe(const char *, char *, size_t, size_t *) {
  return unsupported("zrt_checkpoint_describe");
}
ZRT_API zrt_status_t zrt_checkpoint_open(const char *, zrt_checkpoint_h *) {
  return unsupported("zrt_checkpoint_open");
}
ZRT_API zrt_status_t zrt_checkpoint_create(const char *, const char *, zrt_checkpoint_h *) {
  return unsupported("zrt_checkpoint_create");
}
ZRT_API zrt_status_t zrt_checkpoint_close(zrt_checkpoint_h) {
  return unsupported("zrt_checkpoint_close");
}
ZRT_API zrt_status_t zrt_checkpoint_tensor_count(zrt_checkpoint_h, int *) {
  return unsupported("zrt_checkpoint_tensor_count");
}
ZRT_API zrt_status_t zrt_checkpoint_tensor(zrt_checkpoint_h, int, zrt_checkpoint_tensor_t *) {
  return unsupported("zrt_checkpoint_tensor");
}
ZRT_API zrt_status_t zrt_checkpoint_read(zrt_checkpoint_h, int, float *) {
  return unsupported("zrt_checkpoint_read");
}
ZRT_API zrt_status_t zrt_checkpoint_verify(zrt_checkpoint_h, int, int *) {
  return unsupported("zrt_checkpoint_verify");
}
ZRT_API zrt_status_t zrt_checkpoint_write(zrt_checkpoint_h, const char *, int, const int64_t *,
                                          const float *) {
  return unsupported("zrt_checkpoint_write");
}
}  // extern "C"
