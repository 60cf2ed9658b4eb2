/**
 * @file zerort/defs.h
 * @brief Export macro, C linkage guards and the opaque handle types.
 */
#ifndef ZERORT_DEFS_H
#define ZERORT_DEFS_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define ZRT_API __attribute__((visibility("default")))
#else
#define ZRT_API
#endif

#ifdef __cplusplus
#define ZRT_BEGIN_DECLS extern "C" {
#define ZRT_END_DECLS }
#else
#define ZRT_BEGIN_DECLS
#define ZRT_END_DECLS
#endif

/**
 * @brief Bit @p n of a field_mask: a uint64_t, so every struct has 64 field bits (an enum
 * constant is an int in C and would stop at bit 30).
 */
#define ZRT_BIT(n) (UINT64_C(1) << (n))

/** @brief Marks a name of the previous API version, kept one version as an alias. */
#if defined(__GNUC__) || defined(__clang__)
#define ZRT_DEPRECATED(replacement) __attribute__((deprecated("use " replacement)))
#else
#define ZRT_DEPRECATED(replacement)
#endif

/** @brief A runtime instance bound to one MPI communicator (zrt_init). */
typedef struct zrt_context *zrt_context_h;
/** @brief A communicator: a group of ranks and the backend that moves their data. */
typedef struct zrt_comm *zrt_comm_h;
/** @brief An asynchronous operation in flight (zrt_*_post; zerort/request.h). */
typedef struct zrt_request *zrt_request_h;

/** @brief Element types of buffers that zerort reduces, gathers and stores. */
typedef enum zrt_dtype {
  ZRT_DTYPE_FP32 = 0, /**< IEEE 754 binary32 */
  ZRT_DTYPE_FP64 = 1, /**< IEEE 754 binary64 */
  ZRT_DTYPE_BF16 = 2, /**< bfloat16: the upper half of a binary32 */
  ZRT_DTYPE_FP16 = 3 /**< IEEE 754 binary16 */,
  /** Not a value: makes every int a valid value of the type, so a bad value passed
      from C is an error zerort reports, not undefined behaviour in C++. */
  ZRT_DTYPE_FORCE_INT_ = -2147483647 - 1
} zrt_dtype_t;

/** @brief Reduction operations. Half-precision types accumulate in fp32. */
typedef enum zrt_op {
  ZRT_OP_SUM = 0, /**< element-wise sum */
  ZRT_OP_AVG = 1 /**< element-wise sum divided by the number of ranks */,
  /** Not a value: makes every int a valid value of the type, so a bad value passed
      from C is an error zerort reports, not undefined behaviour in C++. */
  ZRT_OP_FORCE_INT_ = -2147483647 - 1
} zrt_op_t;

#endif /* ZERORT_DEFS_H */
