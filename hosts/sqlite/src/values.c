/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: SQLite values to and from Arrow (values.h). */
#include "values.h"

#include <stdlib.h>
#include <string.h>

#include "qlink/lib/args.h"
#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

void qls_result_cell(sqlite3_context *ctx, const struct qls_cell *cell) {
  switch (cell->klass) {
    case QLS_INTEGER: sqlite3_result_int64(ctx, cell->i); break;
    case QLS_REAL: sqlite3_result_double(ctx, cell->f); break;
    case QLS_TEXT: sqlite3_result_text64(ctx, cell->data ? cell->data : "", (sqlite3_uint64)cell->size, SQLITE_TRANSIENT, SQLITE_UTF8); break;
    case QLS_BLOB: sqlite3_result_blob64(ctx, cell->data ? cell->data : "", (sqlite3_uint64)cell->size, SQLITE_TRANSIENT); break;
    default: sqlite3_result_null(ctx);
  }
}

const char *qls_format_of_value(sqlite3_value *v) {
  switch (sqlite3_value_type(v)) {
    case SQLITE_FLOAT: return ql_cell_format(QL_CELL_REAL);
    case SQLITE_TEXT: return ql_cell_format(QL_CELL_TEXT);
    case SQLITE_BLOB: return ql_cell_format(QL_CELL_BLOB);
    default: return ql_cell_format(QL_CELL_INTEGER);
  }
}

/* A SQLite value as a cell for an argument of `format`, with SQLite's own
 * affinity: text that looks like a number is a number for numeric
 * formats, and a number is its text for utf8 and binary. */
static struct ql_cell cell_of(sqlite3_value *v, const char *format) {
  struct ql_cell c = {QL_CELL_NULL, 0, 0, 0, NULL, 0};
  if (sqlite3_value_type(v) == SQLITE_NULL) return c;
  if (strcmp(format, "u") == 0 || strcmp(format, "z") == 0) {
    int blob = format[0] == 'z' && sqlite3_value_type(v) == SQLITE_BLOB;
    c.kind = blob ? QL_CELL_BLOB : QL_CELL_TEXT;
    c.data = blob ? (const char *)sqlite3_value_blob(v) : (const char *)sqlite3_value_text(v);
    c.size = sqlite3_value_bytes(v);
    return c;
  }
  switch (sqlite3_value_numeric_type(v)) {
    case SQLITE_INTEGER: c.kind = QL_CELL_INTEGER, c.i = sqlite3_value_int64(v); break;
    case SQLITE_FLOAT: c.kind = QL_CELL_REAL, c.f = sqlite3_value_double(v); break;
    case SQLITE_BLOB: c.kind = QL_CELL_BLOB, c.data = sqlite3_value_blob(v), c.size = sqlite3_value_bytes(v); break;
    default: c.kind = QL_CELL_TEXT, c.data = (const char *)sqlite3_value_text(v), c.size = sqlite3_value_bytes(v);
  }
  return c;
}

int qls_build_args(const char *const *formats, int32_t n_args, sqlite3_value **vals, int64_t n_rows,
                   struct ArrowSchema *schema, struct ArrowArray *array, struct ql_error *error) {
  struct ql_cell *cells = malloc(sizeof *cells * (size_t)(n_rows * n_args + 1));
  if (!cells) {
    memset(schema, 0, sizeof *schema);
    memset(array, 0, sizeof *array);
    return ql_error_set(error, QL_ENOMEM, "out of memory for %lld argument rows", (long long)n_rows);
  }
  for (int64_t r = 0; r < n_rows; r++) {
    for (int32_t a = 0; a < n_args; a++) cells[r * n_args + a] = cell_of(vals[r * n_args + a], formats[a]);
  }
  int rc = ql_args_build(formats, n_args, cells, n_rows, schema, array, error);
  free(cells);
  return rc;
}
