/* SPDX-License-Identifier: Apache-2.0 */
/* libqlink: a host's values as a plugin function's arguments (qlink/lib/args.h). */
#include "qlink/lib/args.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

const char *ql_cell_format(int32_t kind) {
  switch (kind) {
    case QL_CELL_REAL: return "g";
    case QL_CELL_TEXT: return "u";
    case QL_CELL_BLOB: return "z";
    default: return "l";
  }
}

const char *ql_signature_arg_format(const struct ql_signature *sig, int32_t n_args, int32_t i, const char *given) {
  if (sig && sig->arg_formats && sig->n_args == n_args && i >= 0 && i < n_args) return sig->arg_formats[i];
  return given;
}

/* Bytes per value of an integer or float format, or 0. */
static int width_of(const char *f) {
  if (f == NULL || f[0] == '\0' || f[1] != '\0') return 0;
  switch (f[0]) {
    case 'c': case 'C': return 1;
    case 's': case 'S': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'l': case 'L': case 'g': return 8;
    default: return 0;
  }
}

static int is_binary_format(const char *f) { return f && (strcmp(f, "u") == 0 || strcmp(f, "z") == 0); }
static int is_bool_format(const char *f) { return f && strcmp(f, "b") == 0; }

int ql_args_format_supported(const char *format) {
  return width_of(format) != 0 || is_binary_format(format) || is_bool_format(format);
}

int ql_args_kind_fits(int32_t kind, const char *format) {
  if (!ql_args_format_supported(format)) return 0;
  switch (kind) {
    case QL_CELL_NULL: return 1;
    case QL_CELL_INTEGER:
    case QL_CELL_REAL: return !is_binary_format(format);
    case QL_CELL_TEXT: return is_binary_format(format);
    case QL_CELL_BLOB: return strcmp(format, "z") == 0;
    default: return 0;
  }
}

static const char *kind_noun(int32_t kind) {
  switch (kind) {
    case QL_CELL_INTEGER: return "an integer";
    case QL_CELL_REAL: return "a real";
    case QL_CELL_BLOB: return "a blob";
    default: return "a value";
  }
}

/* A value that does not fit `format`, described for the message. */
static int mismatch(const struct ql_cell *c, int32_t arg, const char *format, struct ql_error *error) {
  if (c->kind == QL_CELL_TEXT) {
    int n = c->size > 64 ? 64 : (int)c->size;
    return ql_error_set(error, QL_EINVAL, "argument %d: '%.*s%s' is not a number (the function takes %s)", arg + 1,
                        n, c->data ? c->data : "", c->size > 64 ? "..." : "", format);
  }
  return ql_error_set(error, QL_EINVAL, "argument %d: %s is not %s (the function takes %s)", arg + 1,
                      kind_noun(c->kind), is_binary_format(format) && format[0] == 'u' ? "text" : "a number",
                      format);
}

/* The utf8/binary column of argument `arg`. */
static int build_binary(const char *format, const struct ql_cell *cells, int64_t n, int64_t stride, int32_t arg,
                        uint8_t *bits, struct ArrowArray *out, struct ql_error *error) {
  int64_t total = 0, nulls = 0;
  for (int64_t r = 0; r < n; r++) {
    const struct ql_cell *c = &cells[r * stride];
    if (c->kind == QL_CELL_NULL) continue;
    if (!ql_args_kind_fits(c->kind, format)) {
      free(bits);
      return mismatch(c, arg, format, error);
    }
    total += c->size;
  }
  if (total > INT32_MAX) {
    free(bits);
    return ql_error_set(error, QL_EOVERFLOW, "argument %d: more than 2 GiB of %s in one batch", arg + 1,
                        format[0] == 'u' ? "text" : "bytes");
  }
  int32_t *off = malloc(sizeof *off * (size_t)(n + 1));
  char *data = malloc((size_t)total + 1);
  if (!off || !data) {
    free(off);
    free(data);
    free(bits);
    return ql_error_set(error, QL_ENOMEM, "out of memory for argument %d", arg + 1);
  }
  int32_t at = 0;
  for (int64_t r = 0; r < n; r++) {
    const struct ql_cell *c = &cells[r * stride];
    off[r] = at;
    if (c->kind == QL_CELL_NULL) {
      nulls++;
      continue;
    }
    if (c->size > 0 && c->data) memcpy(data + at, c->data, (size_t)c->size);
    at += (int32_t)c->size;
    bits[r / 8] |= (uint8_t)(1u << (r % 8));
  }
  off[n] = at;
  return ql_array_init_binary(out, n, nulls, bits, off, data, error);
}

/* The integer value of a numeric cell for an integer format, range-checked. */
static int integer_of(const struct ql_cell *c, const char *format, int w, int32_t arg, int64_t *out,
                      struct ql_error *error) {
  int64_t v;
  if (c->kind == QL_CELL_REAL) {
    double d = c->f;
    if (d != floor(d) || !(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
      return ql_error_set(error, QL_EINVAL, "argument %d: %g is not an integer (the function takes %s)", arg + 1, d,
                          format);
    }
    v = (int64_t)d;
  } else {
    v = c->i;
  }
  int is_unsigned = format[0] >= 'A' && format[0] <= 'Z';
  int64_t lo = is_unsigned ? 0 : (w == 8 ? INT64_MIN : -(INT64_C(1) << (8 * w - 1)));
  int64_t hi = w == 8 ? INT64_MAX : (is_unsigned ? (INT64_C(1) << (8 * w)) - 1 : (INT64_C(1) << (8 * w - 1)) - 1);
  if (v < lo || v > hi) {
    return ql_error_set(error, QL_EINVAL, "argument %d: %" PRId64 " is out of range (the function takes %s)", arg + 1,
                        v, format);
  }
  *out = v;
  return QL_OK;
}

/* The numeric or boolean column of argument `arg`. */
static int build_fixed(const char *format, const struct ql_cell *cells, int64_t n, int64_t stride, int32_t arg,
                       uint8_t *bits, struct ArrowArray *out, struct ql_error *error) {
  int w = width_of(format);
  int is_bool = is_bool_format(format);
  int is_float = format[0] == 'g' || format[0] == 'f';
  uint8_t *data = calloc((size_t)(is_bool ? n / 8 + 1 : n * w + 1), 1);
  if (!data) {
    free(bits);
    return ql_error_set(error, QL_ENOMEM, "out of memory for argument %d", arg + 1);
  }
  int64_t nulls = 0;
  for (int64_t r = 0; r < n; r++) {
    const struct ql_cell *c = &cells[r * stride];
    if (c->kind == QL_CELL_NULL) {
      nulls++;
      continue;
    }
    if (!ql_args_kind_fits(c->kind, format)) {
      free(data);
      free(bits);
      return mismatch(c, arg, format, error);
    }
    bits[r / 8] |= (uint8_t)(1u << (r % 8));
    if (is_float) {
      double d = c->kind == QL_CELL_REAL ? c->f : (double)c->i;
      if (w == 8) memcpy(data + r * 8, &d, 8);
      else {
        float f = (float)d;
        memcpy(data + r * 4, &f, 4);
      }
      continue;
    }
    if (is_bool) {
      if (c->kind == QL_CELL_REAL ? c->f != 0 : c->i != 0) data[r / 8] |= (uint8_t)(1u << (r % 8));
      continue;
    }
    int64_t v = 0;
    int rc = integer_of(c, format, w, arg, &v, error);
    if (rc != QL_OK) {
      free(data);
      free(bits);
      return rc;
    }
    switch (w) {
      case 8: memcpy(data + r * 8, &v, 8); break;
      case 4: { int32_t x = (int32_t)v; memcpy(data + r * 4, &x, 4); } break;
      case 2: { int16_t x = (int16_t)v; memcpy(data + r * 2, &x, 2); } break;
      default: data[r] = (uint8_t)v; break;
    }
  }
  return ql_array_init_fixed(out, n, nulls, bits, data, error);
}

int ql_args_build(const char *const *formats, int32_t n_args, const struct ql_cell *cells, int64_t n_rows,
                  struct ArrowSchema *schema, struct ArrowArray *array, struct ql_error *error) {
  memset(schema, 0, sizeof *schema);
  memset(array, 0, sizeof *array);
  int rc = ql_schema_init_struct(schema, "", n_args, error);
  if (rc == QL_OK) rc = ql_array_init_struct(array, n_rows, n_args, error);
  for (int32_t a = 0; rc == QL_OK && a < n_args; a++) {
    const char *f = formats[a];
    if (!ql_args_format_supported(f)) {
      rc = ql_error_set(error, QL_ENOTSUP, "argument %d: type '%s' cannot be passed from the host's values", a + 1,
                        f ? f : "(null)");
      break;
    }
    char name[16];
    snprintf(name, sizeof name, "arg%d", a);
    rc = ql_schema_init(schema->children[a], f, name, ARROW_FLAG_NULLABLE, error);
    uint8_t *bits = rc == QL_OK ? calloc((size_t)(n_rows / 8 + 1), 1) : NULL;
    if (rc == QL_OK && !bits) rc = ql_error_set(error, QL_ENOMEM, "out of memory for argument %d", a + 1);
    if (rc != QL_OK) break;
    rc = is_binary_format(f) ? build_binary(f, cells + a, n_rows, n_args, a, bits, array->children[a], error)
                             : build_fixed(f, cells + a, n_rows, n_args, a, bits, array->children[a], error);
  }
  if (rc != QL_OK) {
    ql_schema_release(schema);
    ql_array_release(array);
  }
  return rc;
}
