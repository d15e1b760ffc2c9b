/* SPDX-License-Identifier: Apache-2.0 */
/* qlink ABI: versions, options, scalars, function identity and statistics.
 *
 * First ABI version: 0.1.
 */
#ifndef QLINK_TYPES_H
#define QLINK_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "qlink/arrow_c.h"
#include "qlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ABI versions: (major << 16) | minor. The full version is always exchanged,
 * never the major alone. While the major is 0, every minor may change the ABI;
 * a host and plugin must agree on the exact version. */
#define QL_ABI_VERSION_MAKE(major, minor) ((uint32_t)(((uint32_t)(major) << 16) | (uint32_t)(minor)))
#define QL_ABI_VERSION_MAJOR(v) ((uint32_t)(v) >> 16)
#define QL_ABI_VERSION_MINOR(v) ((uint32_t)(v)&0xFFFFu)
#define QL_ABI_VERSION_0_1 QL_ABI_VERSION_MAKE(0, 1)
/* The newest version these headers describe. */
#define QL_ABI_VERSION QL_ABI_VERSION_0_1

/* Every ABI struct begins with `uint32_t struct_size`, the sizeof the
 * producer compiled with. Structs only grow at the end, so a consumer reads a
 * member only when the producer's struct reaches past it. */
#define QL_HAS_MEMBER(ptr, type, member) \
  ((ptr)->struct_size >= offsetof(type, member) + sizeof(((type *)0)->member))

/* Layouts follow the negotiated ABI version (qlink/plugin.h): a callee that
 * fills a struct in caller memory (an `out` parameter, struct ql_error) never
 * writes past that version's size, and structs without `struct_size` (array
 * elements such as ql_plan_node, ql_expr, ql_item_info, ql_column_statistics)
 * change only with the version, so a producer emits the layout of the version
 * negotiated with its consumer. docs/abi.md, "Growth". */

/* Key/value options, e.g. a table provider's `path=/data/x.zarr`.
 * Borrowed: valid for the duration of the call that receives them. Keys are
 * unique; values are NUL-terminated UTF-8. */
struct ql_options {
  int64_t count;
  const char *const *keys;
  const char *const *values;
};

/* Describes one option a plugin object accepts (for help text, validation and
 * `qlink-check`). Static strings owned by the plugin. */
struct ql_option_info {
  const char *name;
  const char *description;
  const char *default_value; /* NULL: no default */
  int32_t required;          /* 1 if the object cannot be created without it */
  int32_t reserved_;
};

/* A scalar value, as literals and statistics carry them.
 *
 * `format` is an Arrow C Data Interface format string ("l" int64, "g" float64,
 * "u" utf8, "tsu:UTC" timestamp[us, UTC], "d:12,2" decimal128, ...); "n" is
 * the null type. Exactly one member of `value` is meaningful, chosen by the
 * format's storage: signed integers, dates, times, timestamps and durations in
 * `i64` (in the type's own unit: days for "tdD", the format's unit for
 * timestamps); unsigned in `u64`; "e", "f", "g" in `f64` (widened); "b" in
 * `i64` as 0/1; strings and binaries in `bytes`; decimal128 in `dec128` (two's
 * complement little-endian halves). Anything else (lists, structs, intervals)
 * is only in `array`.
 *
 * `array`, when not NULL, is the same value as a length-1 Arrow array with
 * `schema` as its type; both are owned by whoever owns the enclosing object.
 * Strings in `format` and `value.bytes` are owned likewise.
 */
struct ql_scalar {
  const char *format;
  int32_t is_null;
  int32_t reserved_;
  union {
    int64_t i64;
    uint64_t u64;
    double f64;
    struct {
      const char *data; /* not NUL-terminated in general */
      int64_t size;
    } bytes;
    struct {
      uint64_t lo;
      int64_t hi;
    } dec128;
  } value;
  const struct ArrowSchema *schema; /* optional */
  const struct ArrowArray *array;   /* optional */
};

/* Function kinds (Substrait and DataFusion terms). */
enum ql_function_kind {
  QL_FUNCTION_SCALAR = 1,    /* UDF */
  QL_FUNCTION_AGGREGATE = 2, /* UDAF */
  QL_FUNCTION_WINDOW = 3,    /* UDWF */
  QL_FUNCTION_TABLE = 4      /* UDTF */
};

/* Where a function comes from. */
enum ql_function_origin {
  QL_ORIGIN_UNKNOWN = 0, /* the host cannot tell: treat as user-defined and never match it by name */
  QL_ORIGIN_BUILTIN = 1, /* the host engine's own built-in, named canonically (docs/functions.md) */
  QL_ORIGIN_USER = 2     /* registered by a user or library; `library` + `uid` identify it */
};

/* Function identity (docs/abi.md gap G2, section 4).
 *
 * A built-in is identified by `origin == QL_ORIGIN_BUILTIN` and its canonical
 * lower-case name ("sum", "count", "avg", "min", "max", "abs", ...; the list
 * is docs/functions.md). A user-defined function is identified by the owning
 * library's name and a `uid` unique within that library; its `name` is only
 * what the user registered it as, and a user function named "sum" is never
 * the built-in `sum`. Two identities are the same function iff origin, kind,
 * and either the canonical name (built-in) or library + uid (user) are equal.
 *
 * Strings are borrowed from whoever produced the identity (see each use).
 */
struct ql_function_id {
  int32_t origin; /* enum ql_function_origin */
  int32_t kind;   /* enum ql_function_kind */
  const char *name;
  const char *library; /* QL_ORIGIN_USER: owning library, e.g. "qlink_sample" or "host" */
  uint64_t uid;        /* QL_ORIGIN_USER: unique within `library` */
};

/* How much to trust a statistic (DataFusion's Precision). */
enum ql_precision {
  QL_PRECISION_ABSENT = 0,
  QL_PRECISION_INEXACT = 1, /* an estimate or a bound that may be loose */
  QL_PRECISION_EXACT = 2
};

struct ql_column_statistics {
  int32_t null_count_precision;
  int32_t min_max_precision; /* applies to both min and max */
  int64_t null_count;
  struct ql_scalar min;      /* of the column's type; inclusive */
  struct ql_scalar max;
  int32_t distinct_count_precision;
  int32_t reserved_;
  int64_t distinct_count;
};

/* Statistics of a table or of one partition of an execution plan.
 *
 * Ownership: the callee fills a caller-provided struct and sets `release`;
 * the caller calls `release` when done (it frees `columns` and every string
 * and array reachable from it, then sets `release` to NULL).
 * `n_columns` equals the number of fields of the schema it describes
 * (the table's full schema, or the plan's output schema).
 */
struct ql_statistics {
  uint32_t struct_size;
  int32_t num_rows_precision;
  int64_t num_rows;
  int32_t total_bytes_precision;
  int32_t reserved_;
  int64_t total_bytes;
  int64_t n_columns;
  struct ql_column_statistics *columns;
  void (*release)(struct ql_statistics *self);
  void *private_data;
};

/* An owned byte buffer, e.g. the result of an object-store range read.
 * The consumer calls `release` (it frees the bytes and sets release to NULL).
 * Moving is a bitwise copy plus setting the source's release to NULL. */
struct ql_bytes {
  const uint8_t *data;
  int64_t size;
  void (*release)(struct ql_bytes *self);
  void *private_data;
};

#ifdef __cplusplus
}
#endif

#endif /* QLINK_TYPES_H */
