/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: a host's values as a plugin function's arguments.
 *
 * A plugin function takes its arguments as one Arrow struct array
 * (qlink/function.h). A host holds them in its own cells (SQLite values,
 * DuckDB vectors); it reads each into a `struct ql_cell` (one of five
 * kinds) and builds the struct array here, every argument coerced to the
 * Arrow format the function's signature declares:
 *
 *   format                     accepts                      conversion
 *   "c" "s" "i" "l"            INTEGER, REAL if integral    range-checked to the width
 *   "C" "S" "I" "L"            INTEGER >= 0, REAL likewise  range-checked to the width
 *   "f" "g"                    INTEGER, REAL                to float / double
 *   "b"                        INTEGER, REAL                non-zero is true
 *   "u" (utf8)                 TEXT                         the bytes, as is
 *   "z" (binary)               BLOB, TEXT                   the bytes, as is
 *   any of these               NULL                         a null
 *
 * Anything else is an error naming the argument (1-based), the value and
 * the format, e.g. "argument 1: 'x' is not a number (the function takes
 * l)"; callers prefix the function's name. A function without declared
 * formats (signature.arg_formats NULL) takes each argument in the format of
 * its cells (ql_cell_format).
 *
 * Thread-safety: functions touch only their arguments.
 */
#ifndef QLINK_LIB_ARGS_H
#define QLINK_LIB_ARGS_H

#include <stdint.h>

#include "qlink/function.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ql_cell_kind { QL_CELL_NULL = 0, QL_CELL_INTEGER = 1, QL_CELL_REAL = 2, QL_CELL_TEXT = 3, QL_CELL_BLOB = 4 };

/* One value. TEXT and BLOB borrow `data`/`size` (not NUL-terminated) from
 * the host for the duration of ql_args_build. */
struct ql_cell {
  int32_t kind; /* enum ql_cell_kind */
  int32_t reserved_;
  int64_t i;    /* INTEGER */
  double f;     /* REAL */
  const char *data;
  int64_t size;
};

/* The format a cell of `kind` takes when the function declares none:
 * INTEGER "l", REAL "g", TEXT "u", BLOB "z", NULL "l". */
const char *ql_cell_format(int32_t kind);

/* The format argument `i` of a call with `n_args` arguments is passed in:
 * the signature's declared one when it declares formats for exactly that
 * many arguments, else `given` (the format of the host's own value). */
const char *ql_signature_arg_format(const struct ql_signature *sig, int32_t n_args, int32_t i, const char *given);

/* 1 if `format` is one of the formats in the table above; 0 otherwise. */
int ql_args_format_supported(const char *format);
/* 1 if cells of `kind` can convert to `format` (by the table above; a REAL
 * may still fail per value when it is not integral); 0 otherwise. */
int ql_args_kind_fits(int32_t kind, const char *format);

/* A struct array of `n_rows` rows over `n_args` arguments from row-major
 * cells (cells[r * n_args + a]), argument a in formats[a], with its struct
 * schema (children "arg0", "arg1", ..., nullable). QL_EINVAL naming the
 * argument for a value that does not convert, QL_EOVERFLOW for more than
 * 2 GiB of text or bytes in one argument, QL_ENOTSUP for a format not in the
 * table. Outputs owned by the caller; on failure both are left released. */
int ql_args_build(const char *const *formats, int32_t n_args, const struct ql_cell *cells, int64_t n_rows,
                  struct ArrowSchema *schema, struct ArrowArray *array, struct ql_error *error);

#ifdef __cplusplus
}
#endif

#endif /* QLINK_LIB_ARGS_H */
