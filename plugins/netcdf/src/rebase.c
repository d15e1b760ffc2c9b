/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: record variables whose files disagree only on the
 * reference date or unit of "<unit> since <date>" (xarray writes each file
 * of a split series with units of its own first time): each file's numbers
 * rebased onto the first file's units, exactly, as if one file held them
 * (ncf.h: ncf_rebase_plan, ncf_rebase_apply). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ncf.h"
#include "qlink/lib/status.h"

static const char *attr_text(const json_t *attrs, const char *key) {
  return json_string_value(json_object_get(attrs, key));
}

/* Attributes equal but for `units` (and, absent on one side, nothing). */
static int same_but_units(const json_t *a, const json_t *b) {
  json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
  int same = x && y;
  if (same) {
    json_object_del(x, "units");
    json_object_del(y, "units");
    same = json_equal(x, y);
  }
  json_decref(x);
  json_decref(y);
  return same;
}

int ncf_rebase_plan(const struct zr_array *first, const struct zr_array *other, struct ncf_var *v, int32_t file,
                    int32_t n_files, struct ql_error *error) {
  if (json_equal(first->attrs, other->attrs)) return QL_OK;
  const char *u0 = attr_text(first->attrs, "units"), *u1 = attr_text(other->attrs, "units");
  const char *cal = attr_text(first->attrs, "calendar");
  struct zr_cf_units p0, p1;
  int64_t r0, r1;
  int proleptic = cal && strcasecmp(cal, "proleptic_gregorian") == 0;
  int ok = same_but_units(first->attrs, other->attrs) && u0 && u1 && zr_cf_parse_units(u0, &p0) == QL_OK &&
           zr_cf_parse_units(u1, &p1) == QL_OK && zr_cf_pandas_ref_ns(&p0, 1, &r0) == QL_OK &&
           zr_cf_pandas_ref_ns(&p1, 1, &r1) == QL_OK && p1.ns_per_unit % p0.ns_per_unit == 0 &&
           (r1 - r0) % p0.ns_per_unit == 0 && (first->dtype.type == ZR_INT || first->dtype.type == ZR_FLOAT) &&
           first->dtype.size >= 4;
  /* standard calendars only (references within timestamp[ns]: after the reform) */
  ok = ok && (!cal || proleptic || strcasecmp(cal, "standard") == 0 || strcasecmp(cal, "gregorian") == 0);
  if (!ok) {
    return ql_error_set(error, QL_EINVAL,
                        "variable '%s' has other attributes in this file than in the first (units '%s' and '%s'; only "
                        "the reference date or unit of \"<unit> since <date>\" may differ)",
                        first->name, u0 ? u0 : "(none)", u1 ? u1 : "(none)");
  }
  if (!v->rebase) {
    v->rebase = calloc((size_t)n_files * 2, sizeof(int64_t));
    if (!v->rebase) return ql_error_set(error, QL_ENOMEM, "out of memory");
    for (int32_t k = 0; k < n_files; k++) v->rebase[2 * k] = 1;
  }
  v->rebase[2 * file] = p1.ns_per_unit / p0.ns_per_unit;
  v->rebase[2 * file + 1] = (r1 - r0) / p0.ns_per_unit;
  /* cells equal to a fill value stay as they are */
  v->n_keep = 0;
  const char *keys[2] = {"_FillValue", "missing_value"};
  for (int k = 0; k < 2 && v->n_keep < 2; k++) {
    const json_t *m = json_object_get(other->attrs, keys[k]);
    if (!json_is_number(m)) continue;
    double f = json_number_value(m);
    v->keep_f[v->n_keep] = f;
    v->keep_i[v->n_keep++] = json_is_integer(m) ? json_integer_value(m) : INT64_MIN + 1;
  }
  return QL_OK;
}

/* 1 when the cell is a fill value the rebase leaves alone. */
static int kept(const struct ncf_var *v, int64_t i, double f, int is_float) {
  for (int32_t k = 0; k < v->n_keep; k++) {
    if (is_float ? f == v->keep_f[k] : i == v->keep_i[k]) return 1;
  }
  return is_float && isnan(f);
}

void ncf_rebase_apply(const struct ncf_var *v, int32_t file, const struct zr_dtype *d, uint8_t *cells, int64_t n) {
  if (!v->rebase) return;
  int64_t mul = v->rebase[2 * file], add = v->rebase[2 * file + 1];
  if (mul == 1 && add == 0) return;
  for (int64_t i = 0; i < n; i++) {
    uint8_t *c = cells + i * d->size;
    if (d->type == ZR_INT && d->size == 8) {
      int64_t x;
      memcpy(&x, c, 8);
      if (x == INT64_MIN || kept(v, x, 0, 0)) continue; /* NaT as xarray writes it, with or without _FillValue */
      x = (int64_t)((uint64_t)x * (uint64_t)mul + (uint64_t)add);
      memcpy(c, &x, 8);
    } else if (d->type == ZR_INT) {
      int32_t x;
      memcpy(&x, c, 4);
      if (kept(v, x, 0, 0)) continue;
      x = (int32_t)((uint32_t)x * (uint32_t)mul + (uint32_t)add);
      memcpy(c, &x, 4);
    } else if (d->size == 8) {
      double x;
      memcpy(&x, c, 8);
      if (kept(v, 0, x, 1)) continue;
      x = x * (double)mul + (double)add;
      memcpy(c, &x, 8);
    } else {
      float x;
      memcpy(&x, c, 4);
      if (kept(v, 0, x, 1)) continue;
      x = (float)((double)x * (double)mul + (double)add);
      memcpy(c, &x, 4);
    }
  }
}
