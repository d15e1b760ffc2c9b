/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: SQLite values to and from Arrow, for functions and
 * results.
 *
 * Arguments: a plugin function's declared argument formats (its signature)
 * are honoured for int8..int64, float32/64, bool, utf8 and binary; without
 * declared formats each argument takes the format of its SQLite value
 * (INTEGER int64 "l", REAL float64 "g", TEXT utf8 "u", BLOB binary "z", NULL
 * int64). Results map as cells.h says.
 */
#ifndef QLS_VALUES_H
#define QLS_VALUES_H

#include "cells.h"
#include "common.h"

/* The Arrow format a SQLite value takes when nothing is declared. */
const char *qls_format_of_value(sqlite3_value *v);

/* A struct array of `n_rows` rows over `n_args` arguments, values row-major
 * (vals[r * n_args + a]), with its struct schema: each value read as a
 * libqlink cell with SQLite's affinity, then built by ql_args_build
 * (qlink/lib/args.h), whose errors it returns. Outputs owned by the caller. */
int qls_build_args(const char *const *formats, int32_t n_args, sqlite3_value **vals, int64_t n_rows,
                   struct ArrowSchema *schema, struct ArrowArray *array, struct ql_error *error);

/* Set the SQLite result from a cell (TEXT/BLOB copied: SQLite keeps the
 * value past the batch). */
void qls_result_cell(sqlite3_context *ctx, const struct qls_cell *cell);

#endif /* QLS_VALUES_H */
