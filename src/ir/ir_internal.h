/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink IR: helpers shared by builder.c, validate.c and print.c.
 * Not installed; every symbol is ql_ir_-prefixed and hidden. */
#ifndef QL_IR_INTERNAL_H
#define QL_IR_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "qlink/lib/ir.h"
#include "qlink/lib/status.h"

/* Recursive walks (printing, schema copies) stop here with QL_EOVERFLOW
 * instead of exhausting the stack of a small host thread. */
#define QL_IR_MAX_DEPTH 4096

/* Storage class of a scalar's value (qlink/types.h, struct ql_scalar). */
enum ql_ir_storage {
  QL_IR_STORAGE_OTHER = 0, /* only in `array` */
  QL_IR_STORAGE_NULL,      /* "n" */
  QL_IR_STORAGE_BOOL,      /* "b": i64 0/1 */
  QL_IR_STORAGE_SIGNED,    /* i64: signed ints, dates, times, timestamps, durations */
  QL_IR_STORAGE_UNSIGNED,  /* u64 */
  QL_IR_STORAGE_FLOAT,     /* f64 */
  QL_IR_STORAGE_BYTES,     /* bytes: utf8, binary, views, fixed-size binary */
  QL_IR_STORAGE_DECIMAL128 /* dec128 */
};

/* Which union member of a ql_scalar a format uses; `format` may be NULL. */
enum ql_ir_storage ql_ir_format_storage(const char *format);
/* Byte width of a fixed-width Arrow format, 0 for "b" (bit-packed), -1 if
 * the format is not fixed-width. */
int64_t ql_ir_format_width(const char *format);

#endif /* QL_IR_INTERNAL_H */
