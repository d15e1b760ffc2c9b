/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_netcdf: netCDF attributes as the JSON values the table model reads
 * (zarr keeps attributes as JSON; cf.h decodes from them):
 * - text (NC_CHAR) is a string, trailing NULs dropped; bytes that are not
 *   UTF-8 become '?' (attributes are metadata; never a failed open);
 * - NC_STRING: a string, or a list of strings when there are several;
 * - numbers: one value is a number, several a list (as netCDF4-python hands
 *   them to xarray: a scalar, or an array); integers as integers (a uint64
 *   above INT64_MAX as its decimal digits, as zr_json_big_uint reads it),
 *   floats as float64 (exact for float32), NaN and infinities as "NaN",
 *   "Infinity", "-Infinity".
 * Called with the lock held (ncf.h). */
#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrs.h"
#include "qlink/lib/status.h"

static json_t *text_json(const char *s, size_t n) {
  while (n > 0 && s[n - 1] == '\0') n--;
  json_t *v = json_stringn(s, n);
  if (v) return v;
  char *copy = malloc(n + 1);
  if (!copy) return NULL;
  for (size_t i = 0; i < n; i++) copy[i] = (unsigned char)s[i] >= 0x80 || s[i] == '\0' ? '?' : s[i];
  v = json_stringn(copy, n);
  free(copy);
  return v;
}

static json_t *float_json(double f) {
  if (isnan(f)) return json_string("NaN");
  if (isinf(f)) return json_string(f > 0 ? "Infinity" : "-Infinity");
  return json_real(f);
}

static json_t *uint_json(unsigned long long u) {
  if (u <= (unsigned long long)INT64_MAX) return json_integer((json_int_t)u);
  char digits[32];
  snprintf(digits, sizeof(digits), "%llu", u);
  return json_string(digits);
}

static int is_float(nc_type t) { return t == NC_FLOAT || t == NC_DOUBLE; }
static int is_unsigned(nc_type t) { return t == NC_UBYTE || t == NC_USHORT || t == NC_UINT || t == NC_UINT64; }

/* Numbers: each element read in the widest type of its kind. */
static int numbers_json(int gid, int varid, const char *name, nc_type type, size_t len, json_t **out) {
  size_t n = len ? len : 1;
  void *buf = malloc(n * 8);
  if (!buf) return NC_ENOMEM;
  int st = is_float(type) ? nc_get_att_double(gid, varid, name, buf)
           : is_unsigned(type) ? nc_get_att_ulonglong(gid, varid, name, buf)
                               : nc_get_att_longlong(gid, varid, name, buf);
  json_t *list = st == NC_NOERR ? json_array() : NULL;
  for (size_t i = 0; list && i < len; i++) {
    json_t *v = is_float(type)      ? float_json(((double *)buf)[i])
                : is_unsigned(type) ? uint_json(((unsigned long long *)buf)[i])
                                    : json_integer((json_int_t)((long long *)buf)[i]);
    if (!v || json_array_append_new(list, v) != 0) {
      json_decref(list);
      list = NULL;
      st = NC_ENOMEM;
    }
  }
  free(buf);
  if (st != NC_NOERR) return st;
  if (len == 1) {
    *out = json_incref(json_array_get(list, 0));
    json_decref(list);
  } else {
    *out = list;
  }
  return NC_NOERR;
}

static int strings_json(int gid, int varid, const char *name, size_t len, json_t **out) {
  char **s = calloc(len ? len : 1, sizeof(*s));
  if (!s) return NC_ENOMEM;
  int st = nc_get_att_string(gid, varid, name, s);
  json_t *list = st == NC_NOERR ? json_array() : NULL;
  for (size_t i = 0; list && i < len; i++) {
    json_t *v = text_json(s[i] ? s[i] : "", s[i] ? strlen(s[i]) : 0);
    if (!v || json_array_append_new(list, v) != 0) {
      json_decref(list);
      list = NULL;
      st = NC_ENOMEM;
    }
  }
  if (st == NC_NOERR || len) nc_free_string(len, s);
  free(s);
  if (st != NC_NOERR) return st;
  if (len == 1) {
    *out = json_incref(json_array_get(list, 0));
    json_decref(list);
  } else {
    *out = list;
  }
  return NC_NOERR;
}

static int one_attr(int gid, int varid, const char *name, json_t *obj, struct ql_error *error) {
  nc_type type;
  size_t len;
  int st = nc_inq_att(gid, varid, name, &type, &len);
  json_t *v = NULL;
  if (st == NC_NOERR && type == NC_CHAR) {
    char *buf = malloc(len + 1);
    st = buf ? nc_get_att_text(gid, varid, name, buf) : NC_ENOMEM;
    if (st == NC_NOERR && !(v = text_json(buf, len))) st = NC_ENOMEM;
    free(buf);
  } else if (st == NC_NOERR && type == NC_STRING) {
    st = strings_json(gid, varid, name, len, &v);
  } else if (st == NC_NOERR && type >= NC_BYTE && type <= NC_UINT64) {
    st = numbers_json(gid, varid, name, type, len, &v);
  } else if (st == NC_NOERR) {
    return ql_error_set(error, QL_ENOTSUP, "attribute '%s' has a user-defined type (%d), not served", name, (int)type);
  }
  if (st != NC_NOERR) return ql_error_set(error, QL_EDATA, "attribute '%s': %s", name, nc_strerror(st));
  if (json_object_set_new(obj, name, v) != 0) return ql_error_set(error, QL_ENOMEM, "out of memory");
  return QL_OK;
}

int ncf_attrs_json(int gid, int varid, json_t **out, struct ql_error *error) {
  *out = json_object();
  if (!*out) return ql_error_set(error, QL_ENOMEM, "out of memory");
  int natts = 0;
  int st = nc_inq_varnatts(gid, varid, &natts);
  if (st != NC_NOERR) return ql_error_set(error, QL_EDATA, "attributes: %s", nc_strerror(st));
  for (int i = 0; i < natts; i++) {
    char name[NC_MAX_NAME + 1];
    st = nc_inq_attname(gid, varid, i, name);
    if (st != NC_NOERR) return ql_error_set(error, QL_EDATA, "attribute %d: %s", i, nc_strerror(st));
    QL_RETURN_NOT_OK(one_attr(gid, varid, name, *out, error));
  }
  return QL_OK;
}
