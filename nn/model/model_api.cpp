// The C API of configured models (zerort/model.h): every body wrapped so that no exception
// crosses it, local checks agreed across the ranks before any collective work.
#include <zerort/comm.h>
#include <zerort/context.h>
#include <zerort/model.h>
#include <zerort/status.h>

#include <fmt/format.h>

#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "configured_model.hpp"

struct zrt_model_s {
  std::unique_ptr<zrt::nn::model::Model> model;
};

namespace {

using zrt::nn::StatusError;
using zrt::nn::model::Model;

// Runs @p body; an exception becomes a status with "FUNCTION: message" as the thread's last
// error, as zerort's own calls do.
template <class F>
zrt_status_t guarded(const char *function, F &&body) noexcept {
  auto fail = [&](zrt_status_t status, const std::string &what) {
    zrt_last_error_set(fmt::format("{}: {}", function, what).c_str());
    return status;
  };
  try {
    body();
    return ZRT_SUCCESS;
  } catch (const StatusError &e) {
    // zerort's own messages already begin with the function that failed.
    const std::string what = e.what();
    return what.rfind("zrt_", 0) == 0 ? (zrt_last_error_set(what.c_str()), e.status)
                                      : fail(e.status, what);
  } catch (const std::invalid_argument &e) {
    return fail(ZRT_ERR_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc &) {
    return fail(ZRT_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    return fail(ZRT_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(ZRT_ERR_INTERNAL, "unknown exception");
  }
}

// Local work whose outcome every rank learns before going on: a bad argument on one rank
// fails the call on all of them.
template <class F>
zrt_status_t agreed(zrt_comm_h comm, const char *function, F &&local) noexcept {
  const zrt_status_t mine = guarded(function, local);
  return zrt_comm_agree_status(comm, mine, nullptr);
}

zrt_status_t check_model(zrt_model_h model, const char *function) {
  if (model == nullptr || !model->model) {
    zrt_last_error_set(fmt::format("{}: model is NULL", function).c_str());
    return ZRT_ERR_INVALID_HANDLE;
  }
  return ZRT_SUCCESS;
}

}  // namespace

extern "C" {

ZRT_API zrt_status_t zrt_model_create(zrt_context_h context, const char *config,
                                      zrt_model_h *model_p) {
  if (context == nullptr) {
    zrt_last_error_set("zrt_model_create: context is NULL");
    return ZRT_ERR_INVALID_HANDLE;
  }
  zrt_comm_h comm = nullptr;
  if (zrt_status_t rc = zrt_context_comm(context, &comm); rc != ZRT_SUCCESS) return rc;
  zrt::nn::model::ModelConfig parsed;
  zrt_status_t rc = agreed(comm, "zrt_model_create", [&] {
    if (config == nullptr) throw std::invalid_argument("config is NULL");
    if (model_p == nullptr) throw std::invalid_argument("model_p is NULL");
    parsed = zrt::nn::model::read_model_config(config);
    zrt::nn::model::ensure_kokkos(context);
  });
  if (rc != ZRT_SUCCESS) return rc;
  auto handle = std::make_unique<zrt_model_s>();
  rc = guarded("zrt_model_create",
               [&] { handle->model = std::make_unique<Model>(context, std::move(parsed)); });
  // Building the layers fails alike on every rank; the engine agrees on its own failures.
  rc = zrt_comm_agree_status(comm, rc, nullptr);
  if (rc != ZRT_SUCCESS) return rc;
  *model_p = handle.release();
  return ZRT_SUCCESS;
}

ZRT_API zrt_status_t zrt_model_destroy(zrt_model_h model) {
  if (model == nullptr) return ZRT_SUCCESS;
  const zrt_status_t rc = guarded("zrt_model_destroy", [&] { model->model.reset(); });
  delete model;
  return rc;
}

ZRT_API zrt_status_t zrt_model_train_step(zrt_model_h model, const zrt_tensor_t *input,
                                          const zrt_tensor_t *target, double *loss_p) {
  if (zrt_status_t rc = check_model(model, "zrt_model_train_step"); rc != ZRT_SUCCESS) return rc;
  Model &m = *model->model;
  zrt_status_t rc =
      agreed(m.comm(), "zrt_model_train_step", [&] { m.prepare_train(input, target); });
  if (rc != ZRT_SUCCESS) return rc;
  double loss = 0;
  rc = guarded("zrt_model_train_step", [&] { loss = m.run_train(); });
  if (rc == ZRT_SUCCESS && loss_p != nullptr) *loss_p = loss;
  return rc;
}

ZRT_API zrt_status_t zrt_model_forward_train(zrt_model_h model, const zrt_tensor_t *input,
                                             zrt_tensor_t *output) {
  if (zrt_status_t rc = check_model(model, "zrt_model_forward_train"); rc != ZRT_SUCCESS) return rc;
  Model &m = *model->model;
  zrt_status_t rc = agreed(m.comm(), "zrt_model_forward_train", [&] {
    if (output == nullptr) throw std::invalid_argument("output is NULL");
    m.prepare_forward(input, output, true);
  });
  if (rc != ZRT_SUCCESS) return rc;
  return guarded("zrt_model_forward_train", [&] { m.run_forward(output, true); });
}

ZRT_API zrt_status_t zrt_model_backward_step(zrt_model_h model, const zrt_tensor_t *output_grad) {
  if (zrt_status_t rc = check_model(model, "zrt_model_backward_step"); rc != ZRT_SUCCESS) return rc;
  Model &m = *model->model;
  zrt_status_t rc =
      agreed(m.comm(), "zrt_model_backward_step", [&] { m.prepare_backward(output_grad); });
  if (rc != ZRT_SUCCESS) return rc;
  return guarded("zrt_model_backward_step", [&] { m.run_backward(); });
}

ZRT_API zrt_status_t zrt_model_forward(zrt_model_h model, const zrt_tensor_t *input,
                                       zrt_tensor_t *output) {
  if (zrt_status_t rc = check_model(model, "zrt_model_forward"); rc != ZRT_SUCCESS) return rc;
  Model &m = *model->model;
  zrt_status_t rc = agreed(m.comm(), "zrt_model_forward", [&] {
    if (output == nullptr) throw std::invalid_argument("output is NULL");
    m.prepare_forward(input, output, false);
  });
  if (rc != ZRT_SUCCESS) return rc;
  return guarded("zrt_model_forward", [&] { m.run_forward(output, false); });
}

ZRT_API zrt_status_t zrt_model_save(zrt_model_h model, const char *path) {
  if (zrt_status_t rc = check_model(model, "zrt_model_save"); rc != ZRT_SUCCESS) return rc;
  Model &m = *model->model;
  zrt_status_t rc = agreed(m.comm(), "zrt_model_save", [&] {
    if (path == nullptr || *path == '\0') throw std::invalid_argument("path is NULL or empty");
  });
  if (rc != ZRT_SUCCESS) return rc;
  return guarded("zrt_model_save", [&] { m.save(path); });
}

ZRT_API zrt_status_t zrt_model_load(zrt_model_h model, const char *path) {
  if (zrt_status_t rc = check_model(model, "zrt_model_load"); rc != ZRT_SUCCESS) return rc;
  Model &m = *model->model;
  zrt_status_t rc = agreed(m.comm(), "zrt_model_load", [&] {
    if (path == nullptr || *path == '\0') throw std::invalid_argument("path is NULL or empty");
  });
  if (rc != ZRT_SUCCESS) return rc;
  rc = guarded("zrt_model_load", [&] { m.load(path); });
  return zrt_comm_agree_status(m.comm(), rc, nullptr);
}

ZRT_API zrt_status_t zrt_model_export(zrt_model_h model, const char *path,
                                      zrt_model_format_t format) {
  if (zrt_status_t rc = check_model(model, "zrt_model_export"); rc != ZRT_SUCCESS) return rc;
  Model &m = *model->model;
  zrt_status_t rc = agreed(m.comm(), "zrt_model_export", [&] {
    if (path == nullptr || *path == '\0') throw std::invalid_argument("path is NULL or empty");
    if (format != ZRT_MODEL_FORMAT_SAFETENSORS && format != ZRT_MODEL_FORMAT_ONNX)
      throw std::invalid_argument(
          fmt::format("format {} is neither ZRT_MODEL_FORMAT_SAFETENSORS nor "
                      "ZRT_MODEL_FORMAT_ONNX",
                      int(format)));
  });
  if (rc != ZRT_SUCCESS) return rc;
  rc = guarded("zrt_model_export", [&] {
    if (format == ZRT_MODEL_FORMAT_SAFETENSORS)
      m.export_safetensors(path);
    else
      m.export_onnx(path);
  });
  // Rank 0 writes: its failure is every rank's.
  return zrt_comm_agree_status(m.comm(), rc, nullptr);
}

ZRT_API zrt_status_t zrt_model_query(zrt_model_h model, zrt_model_info_t *info_p) {
  if (zrt_status_t rc = check_model(model, "zrt_model_query"); rc != ZRT_SUCCESS) return rc;
  return guarded("zrt_model_query", [&] {
    if (info_p == nullptr) throw std::invalid_argument("info_p is NULL");
    *info_p = model->model->info();
  });
}

ZRT_API zrt_status_t zrt_model_describe(zrt_model_h model, char *buf, size_t size,
                                        size_t *length_p) {
  if (zrt_status_t rc = check_model(model, "zrt_model_describe"); rc != ZRT_SUCCESS) return rc;
  return guarded("zrt_model_describe", [&] {
    if (buf == nullptr && size > 0) throw std::invalid_argument("buf is NULL with a size");
    const std::string text = model->model->describe();
    if (size > 0) {
      const size_t n = std::min(size - 1, text.size());
      std::memcpy(buf, text.data(), n);
      buf[n] = '\0';
    }
    if (length_p != nullptr) *length_p = text.size();
  });
}

}  // extern "C"
