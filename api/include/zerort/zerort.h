/**
 * @file zerort/zerort.h
 * @brief The whole public C API of zerort. C99; include this one header.
 *
 * Conventions: functions are zrt_<object>_<verb>; every call returns a zrt_status_t;
 * outputs come last, end in _p and are written only on success; parameter structs begin
 * with a field_mask naming the fields the caller set. No call exits or aborts the
 * process on bad input, and no C++ exception crosses this interface.
 */
#ifndef ZERORT_ZERORT_H
#define ZERORT_ZERORT_H

#include "zerort/checkpoint.h"
#include "zerort/comm.h"
#include "zerort/context.h"
#include "zerort/defs.h"
#include "zerort/engine.h"
#include "zerort/memory.h"
#include "zerort/optimizer.h"
#include "zerort/plan.h"
#include "zerort/request.h"
#include "zerort/status.h"
#include "zerort/version.h"

#endif /* ZERORT_ZERORT_H */
