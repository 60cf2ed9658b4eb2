#include "comm/dtype.hpp"

#include <cstring>

#include "runtime/error.hpp"

namespace zrt {

size_t dtype_size(zrt_dtype_t dtype) {
  switch (dtype) {
    case ZRT_DTYPE_FP32:
      return 4;
    case ZRT_DTYPE_FP64:
      return 8;
    case ZRT_DTYPE_BF16:
      return 2;
    case ZRT_DTYPE_FP16:
      return 2;
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT,
       "dtype is {}: accepted values are ZRT_DTYPE_FP32, ZRT_DTYPE_FP64, ZRT_DTYPE_BF16, "
       "ZRT_DTYPE_FP16",
       static_cast<int>(dtype));
}

const char *dtype_name(zrt_dtype_t dtype) {
  switch (dtype) {
    case ZRT_DTYPE_FP32:
      return "fp32";
    case ZRT_DTYPE_FP64:
      return "fp64";
    case ZRT_DTYPE_BF16:
      return "bf16";
    case ZRT_DTYPE_FP16:
      return "fp16";
    default:
      break;
  }
  return "unknown dtype";
}

const char *op_name(zrt_op_t op) {
  switch (op) {
    case ZRT_OP_SUM:
      return "sum";
    case ZRT_OP_AVG:
      return "avg";
    default:
      break;
  }
  return "unknown op";
}

void check_op(zrt_op_t op) {
  if (op != ZRT_OP_SUM && op != ZRT_OP_AVG)
    fail(ZRT_ERR_INVALID_ARGUMENT, "op is {}: accepted values are ZRT_OP_SUM, ZRT_OP_AVG",
         static_cast<int>(op));
}

void divide_buffer(void *buf, size_t count, zrt_dtype_t dtype, int divisor) {
  switch (dtype) {
    case ZRT_DTYPE_FP32: {
      auto *p = static_cast<float *>(buf);
      const float d = static_cast<float>(divisor);
      for (size_t i = 0; i < count; ++i)
        p[i] /= d;
      return;
    }
    case ZRT_DTYPE_FP64: {
      auto *p = static_cast<double *>(buf);
      const double d = divisor;
      for (size_t i = 0; i < count; ++i)
        p[i] /= d;
      return;
    }
    case ZRT_DTYPE_BF16: {
      auto *p = static_cast<uint16_t *>(buf);
      const float d = static_cast<float>(divisor);
      for (size_t i = 0; i < count; ++i)
        p[i] = float_to_bf16(bf16_to_float(p[i]) / d);
      return;
    }
    case ZRT_DTYPE_FP16: {
      auto *p = static_cast<uint16_t *>(buf);
      const float d = static_cast<float>(divisor);
      for (size_t i = 0; i < count; ++i)
        p[i] = float_to_fp16(fp16_to_float(p[i]) / d);
      return;
    }
    default:
      break;
  }
  dtype_size(dtype);  // throws the standard message
}

void convert_values(const void *in, zrt_dtype_t from, void *out, zrt_dtype_t to, size_t count) {
  dtype_size(from);  // valid dtypes, or an error naming the accepted ones
  dtype_size(to);
  if (from == to) {
    std::memcpy(out, in, count * dtype_size(from));
    return;
  }
  auto load = [&](size_t i) -> double {
    switch (from) {
      case ZRT_DTYPE_FP32:
        return static_cast<const float *>(in)[i];
      case ZRT_DTYPE_FP64:
        return static_cast<const double *>(in)[i];
      case ZRT_DTYPE_BF16:
        return bf16_to_float(static_cast<const uint16_t *>(in)[i]);
      case ZRT_DTYPE_FP16:
        return fp16_to_float(static_cast<const uint16_t *>(in)[i]);
      default:
        return 0;
    }
  };
  for (size_t i = 0; i < count; ++i) {
    double v = load(i);
    switch (to) {
      case ZRT_DTYPE_FP32:
        static_cast<float *>(out)[i] = static_cast<float>(v);
        break;
      case ZRT_DTYPE_FP64:
        static_cast<double *>(out)[i] = v;
        break;
      case ZRT_DTYPE_BF16:
        static_cast<uint16_t *>(out)[i] = float_to_bf16(static_cast<float>(v));
        break;
      case ZRT_DTYPE_FP16:
        static_cast<uint16_t *>(out)[i] = float_to_fp16(static_cast<float>(v));
        break;
      default:
        break;
    }
  }
}

void accumulate(void *dst, const void *src, size_t count, zrt_dtype_t dtype) {
  switch (dtype) {
    case ZRT_DTYPE_FP32: {
      auto *d = static_cast<float *>(dst);
      const auto *s = static_cast<const float *>(src);
      for (size_t i = 0; i < count; ++i)
        d[i] += s[i];
      return;
    }
    case ZRT_DTYPE_FP64: {
      auto *d = static_cast<double *>(dst);
      const auto *s = static_cast<const double *>(src);
      for (size_t i = 0; i < count; ++i)
        d[i] += s[i];
      return;
    }
    case ZRT_DTYPE_BF16: {
      auto *d = static_cast<uint16_t *>(dst);
      const auto *s = static_cast<const uint16_t *>(src);
      for (size_t i = 0; i < count; ++i)
        d[i] = float_to_bf16(bf16_to_float(d[i]) + bf16_to_float(s[i]));
      return;
    }
    case ZRT_DTYPE_FP16: {
      auto *d = static_cast<uint16_t *>(dst);
      const auto *s = static_cast<const uint16_t *>(src);
      for (size_t i = 0; i < count; ++i)
        d[i] = float_to_fp16(fp16_to_float(d[i]) + fp16_to_float(s[i]));
      return;
    }
    default:
      break;
  }
  fail(ZRT_ERR_INVALID_ARGUMENT, "accumulate: dtype {} is not a floating type of zerort",
       dtype_name(dtype));
}

}  // namespace zrt
