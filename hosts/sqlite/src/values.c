/* qlink SQLite host: SQLite values to and from Arrow (values.h). */
#include "values.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    case SQLITE_FLOAT: return "g";
    case SQLITE_TEXT: return "u";
    case SQLITE_BLOB: return "z";
    default: return "l";
  }
}

static int width_of(const char *f) {
  if (f[1] != '\0') return 0;
  switch (f[0]) {
    case 'c': case 'C': return 1;
    case 's': case 'S': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'l': case 'L': case 'g': return 8;
    default: return 0;
  }
}

/* One argument column of `n` rows (values vals[r * stride]) as `format`. */
static int build_column(const char *format, sqlite3_value **vals, int64_t n, int64_t stride, int32_t arg,
                        struct ArrowArray *out, struct ql_error *error) {
  uint8_t *bits = calloc((size_t)(n / 8 + 1), 1);
  if (!bits) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int64_t nulls = 0;
  int is_text = strcmp(format, "u") == 0 || strcmp(format, "z") == 0;
  if (is_text) {
    int32_t *off = malloc(sizeof *off * (size_t)(n + 1));
    int64_t total = 0;
    for (int64_t r = 0; r < n; r++) {
      sqlite3_value *v = vals[r * stride];
      if (sqlite3_value_type(v) != SQLITE_NULL) total += format[0] == 'u' ? (sqlite3_value_text(v), sqlite3_value_bytes(v)) : sqlite3_value_bytes(v);
    }
    if (total > INT32_MAX) {
      free(off);
      free(bits);
      return ql_error_set(error, QL_EOVERFLOW, "argument %d: more than 2 GiB of text in one batch", arg + 1);
    }
    char *data = malloc((size_t)total + 1);
    if (!off || !data) {
      free(off);
      free(data);
      free(bits);
      return ql_error_set(error, QL_ENOMEM, "out of memory");
    }
    int32_t at = 0;
    for (int64_t r = 0; r < n; r++) {
      sqlite3_value *v = vals[r * stride];
      off[r] = at;
      if (sqlite3_value_type(v) == SQLITE_NULL) {
        nulls++;
        continue;
      }
      const void *p = format[0] == 'u' ? (const void *)sqlite3_value_text(v) : sqlite3_value_blob(v);
      int len = sqlite3_value_bytes(v);
      if (len > 0 && p) memcpy(data + at, p, (size_t)len);
      at += len;
      bits[r / 8] |= (uint8_t)(1u << (r % 8));
    }
    off[n] = at;
    return ql_array_init_binary(out, n, nulls, bits, off, data, error);
  }
  int w = width_of(format);
  int is_bool = strcmp(format, "b") == 0;
  if (!w && !is_bool) {
    free(bits);
    return ql_error_set(error, QL_ENOTSUP, "argument %d: type '%s' cannot be passed from SQLite", arg + 1, format);
  }
  void *data = calloc((size_t)(is_bool ? n / 8 + 1 : n * w + 1), 1);
  if (!data) {
    free(bits);
    return ql_error_set(error, QL_ENOMEM, "out of memory");
  }
  int is_float = format[0] == 'g' || format[0] == 'f';
  for (int64_t r = 0; r < n; r++) {
    sqlite3_value *v = vals[r * stride];
    if (sqlite3_value_type(v) == SQLITE_NULL) {
      nulls++;
      continue;
    }
    int t = sqlite3_value_numeric_type(v);
    if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) {
      free(data);
      free(bits);
      return ql_error_set(error, QL_EINVAL, "argument %d: '%s' is not a number (the function takes %s)", arg + 1,
                          (const char *)sqlite3_value_text(v), format);
    }
    bits[r / 8] |= (uint8_t)(1u << (r % 8));
    if (is_float) {
      double d = sqlite3_value_double(v);
      if (w == 8) ((double *)data)[r] = d;
      else ((float *)data)[r] = (float)d;
      continue;
    }
    if (t == SQLITE_FLOAT && sqlite3_value_double(v) != floor(sqlite3_value_double(v))) {
      double d = sqlite3_value_double(v);
      free(data);
      free(bits);
      return ql_error_set(error, QL_EINVAL, "argument %d: %g is not an integer (the function takes %s)", arg + 1, d, format);
    }
    int64_t i = sqlite3_value_int64(v);
    if (is_bool) {
      if (i) ((uint8_t *)data)[r / 8] |= (uint8_t)(1u << (r % 8));
    } else if (w == 8) {
      ((int64_t *)data)[r] = i;
    } else if (w == 4) {
      ((int32_t *)data)[r] = (int32_t)i;
    } else if (w == 2) {
      ((int16_t *)data)[r] = (int16_t)i;
    } else {
      ((int8_t *)data)[r] = (int8_t)i;
    }
  }
  return ql_array_init_fixed(out, n, nulls, bits, data, error);
}

int qls_build_args(const char *const *formats, int32_t n_args, sqlite3_value **vals, int64_t n_rows,
                   struct ArrowSchema *schema, struct ArrowArray *array, struct ql_error *error) {
  memset(schema, 0, sizeof *schema);
  memset(array, 0, sizeof *array);
  int rc = ql_schema_init_struct(schema, "", n_args, error);
  if (rc == QL_OK) rc = ql_array_init_struct(array, n_rows, n_args, error);
  for (int32_t a = 0; rc == QL_OK && a < n_args; a++) {
    char name[16];
    snprintf(name, sizeof name, "arg%d", a);
    rc = ql_schema_init(schema->children[a], formats[a], name, ARROW_FLAG_NULLABLE, error);
    if (rc == QL_OK) rc = build_column(formats[a], vals + a, n_rows, n_args, a, array->children[a], error);
  }
  if (rc != QL_OK) {
    ql_schema_release(schema);
    ql_array_release(array);
  }
  return rc;
}
