// The C entry points of zerort/checkpoint.h.
#include "optim/checkpoint/background_save.hpp"
#include "optim/checkpoint/checkpoint_fields.hpp"
#include "optim/checkpoint/checkpoint_file.hpp"
#include "optim/checkpoint/checkpoint_io.hpp"
#include "optim/checkpoint/save_request.hpp"
#include "optim/engine_part.hpp"
#include "optim/zero_engine.hpp"
#include "runtime/string_out.hpp"
#include "zerort/checkpoint.h"

using namespace zrt;
using zrt::checkpoint::SaveRequest;

namespace {

Engine &engine_of(zrt_engine_h h) {
  return engine_table().get(handle_value(h), "engine");
}

HandleTable<CheckpointFile> &file_table() {
  static HandleTable<CheckpointFile> table("checkpoint");
  return table;
}

CheckpointFile &file_of(zrt_checkpoint_h h) {
  return file_table().get(handle_value(h), "checkpoint");
}

// A zrt_request_h of a save, for the API 2 calls that take one.
SaveRequest &save_request_of(zrt_request_h h) {
  SaveRequest *r = dynamic_cast<SaveRequest *>(&request_from(h, "request"));
  if (r == nullptr)
    fail(ZRT_ERR_INVALID_HANDLE, "request is not a checkpoint save (zrt_checkpoint_save_post)");
  return *r;
}

zrt_request_h post_save(zrt_engine_h engine, const char *path,
                        const zrt_checkpoint_params_t *params) {
  Engine &e = engine_of(engine);
  require_nonnull(path, "path");
  SaveOptions options;
  std::map<std::string, std::string> no_keys;
  checkpoint_params_table().read(params, no_keys, options);
  auto save = checkpoint::save_async(e, path, options.metadata, options.keep_last);
  return to_handle<zrt_request_h>(
      request_table().insert(std::make_unique<SaveRequest>(save, handle_value(engine))));
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_checkpoint_save(zrt_engine_h engine, const char *path,
                                         const zrt_checkpoint_params_t *params) {
  return abi_call("zrt_checkpoint_save", [&] {
    Engine &e = engine_of(engine);
    require_nonnull(path, "path");
    SaveOptions options;
    std::map<std::string, std::string> no_keys;
    checkpoint_params_table().read(params, no_keys, options);
    checkpoint::save(e, path, options.metadata, options.keep_last);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_save_post(zrt_engine_h engine, const char *path,
                                              const zrt_checkpoint_params_t *params,
                                              zrt_request_h *request_p) {
  return abi_call("zrt_checkpoint_save_post", [&] {
    require_nonnull(request_p, "request_p");
    *request_p = post_save(engine, path, params);
    return ZRT_SUCCESS;
  });
}

// --- API 2: the save's own request idiom, kept for API 3 over the requests of all --------

ZRT_API zrt_status_t zrt_checkpoint_save_async(zrt_engine_h engine, const char *path,
                                               const zrt_checkpoint_params_t *params,
                                               zrt_checkpoint_request_h *request_p) {
  return abi_call("zrt_checkpoint_save_async", [&] {
    require_nonnull(request_p, "request_p");
    *request_p = post_save(engine, path, params);
    return ZRT_SUCCESS;
  });
}

// API 2 freed the request once the save had ended, failed or not.
ZRT_API zrt_status_t zrt_checkpoint_test(zrt_checkpoint_request_h request, int *done_p) {
  return abi_call("zrt_checkpoint_test", [&] {
    SaveRequest &r = save_request_of(request);
    require_nonnull(done_p, "done_p");
    zrt_status_t status;
    try {
      status = r.test();
    } catch (...) {
      *done_p = 1;
      request_table().remove(handle_value(request), "request");
      throw;
    }
    *done_p = status == ZRT_IN_PROGRESS ? 0 : 1;
    if (*done_p == 1) request_table().remove(handle_value(request), "request");
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_wait(zrt_checkpoint_request_h request) {
  return abi_call("zrt_checkpoint_wait", [&] {
    SaveRequest &r = save_request_of(request);
    zrt_status_t status;
    try {
      status = r.wait();
    } catch (...) {
      request_table().remove(handle_value(request), "request");
      throw;
    }
    request_table().remove(handle_value(request), "request");
    return status;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_load(zrt_engine_h engine, const char *path) {
  return abi_call("zrt_checkpoint_load", [&] {
    Engine &e = engine_of(engine);
    require_nonnull(path, "path");
    checkpoint::load(e, path);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_describe(const char *path, char *buf, size_t size,
                                             size_t *length_p) {
  return abi_call("zrt_checkpoint_describe", [&] {
    require_nonnull(path, "path");
    copy_out(checkpoint::describe(path).dump(), buf, size, length_p);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_open(const char *path, zrt_checkpoint_h *checkpoint_p) {
  return abi_call("zrt_checkpoint_open", [&] {
    require_nonnull(path, "path");
    require_nonnull(checkpoint_p, "checkpoint_p");
    *checkpoint_p = to_handle<zrt_checkpoint_h>(file_table().insert(CheckpointFile::open(path)));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_create(const char *path, const char *metadata,
                                           zrt_checkpoint_h *checkpoint_p) {
  return abi_call("zrt_checkpoint_create", [&] {
    require_nonnull(path, "path");
    require_nonnull(checkpoint_p, "checkpoint_p");
    auto f = CheckpointFile::create(path, metadata != nullptr ? metadata : "");
    *checkpoint_p = to_handle<zrt_checkpoint_h>(file_table().insert(std::move(f)));
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_close(zrt_checkpoint_h checkpoint) {
  return abi_call("zrt_checkpoint_close", [&] {
    std::unique_ptr<CheckpointFile> f = file_table().remove(handle_value(checkpoint), "checkpoint");
    f->close();
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_tensor_count(zrt_checkpoint_h checkpoint, int *count_p) {
  return abi_call("zrt_checkpoint_tensor_count", [&] {
    CheckpointFile &f = file_of(checkpoint);
    require_nonnull(count_p, "count_p");
    *count_p = f.count();
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_tensor(zrt_checkpoint_h checkpoint, int index,
                                           zrt_checkpoint_tensor_t *tensor_p) {
  return abi_call("zrt_checkpoint_tensor", [&] {
    CheckpointFile &f = file_of(checkpoint);
    require_nonnull(tensor_p, "tensor_p");
    zrt_checkpoint_tensor_t out = *tensor_p;
    checkpoint_tensor_table().fill(f.tensor(index), out);
    *tensor_p = out;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_read(zrt_checkpoint_h checkpoint, int index, float *values) {
  return abi_call("zrt_checkpoint_read", [&] {
    file_of(checkpoint).read(index, values);
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_verify(zrt_checkpoint_h checkpoint, int index, int *ok_p) {
  return abi_call("zrt_checkpoint_verify", [&] {
    CheckpointFile &f = file_of(checkpoint);
    require_nonnull(ok_p, "ok_p");
    *ok_p = f.verify(index) ? 1 : 0;
    return ZRT_SUCCESS;
  });
}

ZRT_API zrt_status_t zrt_checkpoint_write(zrt_checkpoint_h checkpoint, const char *name, int ndim,
                                          const int64_t *shape, const float *values) {
  return abi_call("zrt_checkpoint_write", [&] {
    CheckpointFile &f = file_of(checkpoint);
    require_nonnull(name, "name");
    if (ndim < 1 || ndim > 8)
      fail(ZRT_ERR_INVALID_ARGUMENT, "ndim is {}: accepted values are 1 .. 8", ndim);
    require_nonnull(shape, "shape");
    f.write(name, std::vector<int64_t>(shape, shape + ndim), values);
    return ZRT_SUCCESS;
  });
}

}  // extern "C"
