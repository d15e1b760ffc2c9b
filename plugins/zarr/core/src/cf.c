/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: xarray's default CF decoding, per element. See cf.h. */
#include "qlink_zarr/cf.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

/* ------------------------------------------------------------ building */

static void set_out(struct zr_decoder *d, int32_t out) {
  static const char *formats[] = {"",  "b", "c", "s", "i", "l", "C", "S", "I",
                                  "L", "f", "g", "",  "",  "u", "z"};
  d->out = out;
  snprintf(d->format, sizeof(d->format), "%s", formats[out]);
  if (out == ZR_OUT_TIMESTAMP || out == ZR_OUT_DURATION) {
    const char *unit = d->out_unit_ns == 1000000000LL ? "s"
                       : d->out_unit_ns == 1000000LL  ? "m"
                       : d->out_unit_ns == 1000LL     ? "u"
                                                      : "n";
    snprintf(d->format, sizeof(d->format), out == ZR_OUT_TIMESTAMP ? "ts%s:" : "tD%s", unit);
  }
}

static int64_t arrow_unit_ns(int64_t unit_ns) {
  /* Arrow timestamps and durations have s, ms, us and ns ticks only. */
  if (unit_ns == 1 || unit_ns == 1000 || unit_ns == 1000000 || unit_ns == 1000000000LL) return unit_ns;
  return 1000000000LL;
}

/* The float64 whose 8 little-endian bytes `s` is base64 of (xarray's v3
 * encoding of a float fill value): QL_OK, QL_EDATA when `s` is not base64
 * of 8 bytes, QL_ENOMEM. Little-endian hosts only, as qlink targets. */
static int base64_f64(const char *s, double *f) {
  uint8_t *raw = NULL;
  int64_t n = 0;
  int rc = zr_base64_decode(s, &raw, &n);
  if (rc == QL_OK && n == 8) memcpy(f, raw, 8);
  free(raw);
  if (rc != QL_OK) return rc == QL_ENOMEM ? QL_ENOMEM : QL_EDATA;
  return n == 8 ? QL_OK : QL_EDATA;
}

/* A fill value as a double (and int64 when integral): a JSON number,
 * "NaN"/"Infinity" strings, or (with `base64`) base64 of a float64
 * (xarray's v3 encoding). Returns 0 when the value masks nothing (NaN) or
 * cannot be read. */
static int fill_number(const json_t *v, int base64, double *f, int64_t *i, int *is_int) {
  *is_int = 0;
  if (json_is_integer(v)) {
    *i = json_integer_value(v);
    *f = (double)*i;
    *is_int = 1;
    return 1;
  }
  if (json_is_real(v)) {
    *f = json_real_value(v);
  } else if (json_is_boolean(v)) {
    *f = json_is_true(v);
  } else if (json_is_string(v)) {
    const char *s = json_string_value(v);
    uint64_t big;
    if (zr_json_big_uint(v, &big)) {
      *f = (double)big; /* compared as float64, as xarray's mask compares */
      return 1;
    }
    if (strcmp(s, "NaN") == 0) return 0;
    if (strcmp(s, "Infinity") == 0) {
      *f = INFINITY;
    } else if (strcmp(s, "-Infinity") == 0) {
      *f = -INFINITY;
    } else if (!base64 || base64_f64(s, f) != QL_OK) {
      return 0;
    }
  } else {
    return 0;
  }
  if (isnan(*f)) return 0;
  if (*f == floor(*f) && fabs(*f) < 9.2e18) {
    *i = (int64_t)*f;
    *is_int = 1;
  }
  return 1;
}

/* 1 when a fill value is NaN: a JSON "NaN" string, a non-finite real, or
 * (with `base64`) base64 of a NaN float64. */
static int fill_is_nan(const json_t *v, int base64) {
  if (json_is_real(v)) return isnan(json_real_value(v));
  if (!json_is_string(v)) return 0;
  const char *s = json_string_value(v);
  if (strcmp(s, "NaN") == 0) return 1;
  double f = 0;
  return base64 && base64_f64(s, &f) == QL_OK && isnan(f);
}

/* A mask value given as a string must be "NaN", "Infinity", "-Infinity" or
 * base64 of a float64 (xarray's v3 encoding): anything else would mask
 * nothing without a word. */
static int check_fill_string(const json_t *v, const char *key, struct ql_error *error) {
  if (json_is_array(v)) {
    for (size_t k = 0; k < json_array_size(v); k++) QL_RETURN_NOT_OK(check_fill_string(json_array_get(v, k), key, error));
    return QL_OK;
  }
  if (!json_is_string(v)) return QL_OK;
  const char *s = json_string_value(v);
  uint64_t big;
  if (zr_json_big_uint(v, &big)) return QL_OK;
  if (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0) return QL_OK;
  double f;
  int rc = base64_f64(s, &f);
  if (rc == QL_ENOMEM) return ql_error_set(error, QL_ENOMEM, "out of memory");
  if (rc != QL_OK) {
    return ql_error_set(error, QL_EDATA, "%s '%.64s' is not a number, \"NaN\", \"Infinity\" or base64 of a float64", key,
                        s);
  }
  return QL_OK;
}

/* Add mask value `v` (a list: each element). `base64`: a string may be
 * base64 of a float64 (a v3 _FillValue as xarray encodes it); otherwise a
 * string that is not a number ("-9999", "n/a": missing_value attributes of
 * some HDF and GDAL conversions) masks nothing, as xarray's comparison of
 * the data with a string finds no cell, yet still makes the variable a
 * masked one (mask_declared: integers become floats, as in xarray). */
void zr_decoder_mask_nan(struct zr_decoder *d) {
  if (d->in.type == ZR_FLOAT && !d->mask_nan && d->n_mask < ZR_MAX_MASKS) {
    d->mask_f[d->n_mask] = NAN;
    d->mask_i[d->n_mask] = INT64_MIN + 1;
    d->n_mask++;
    d->mask_nan = 1;
  }
}

static void add_mask(struct zr_decoder *d, const json_t *v, int base64) {
  if (!v || json_is_null(v)) return;
  if (json_is_array(v)) {
    for (size_t k = 0; k < json_array_size(v); k++) add_mask(d, json_array_get(v, k), base64);
    return;
  }
  if (fill_is_nan(v, base64)) {
    /* A float variable whose fill value is NaN: its NaN cells are the
     * missing ones, so they become NULL (xarray leaves them NaN, which
     * pandas also treats as missing). Integers cannot hold NaN. */
    zr_decoder_mask_nan(d);
    return;
  }
  double f;
  int64_t i = 0;
  int is_int;
  if (!fill_number(v, base64, &f, &i, &is_int)) {
    if (json_is_string(v)) d->mask_declared = 1;
    return;
  }
  if (d->n_mask >= ZR_MAX_MASKS) return;
  d->mask_f[d->n_mask] = f;
  d->mask_i[d->n_mask] = is_int ? i : INT64_MIN + 1; /* never equal to a time tick that matters */
  d->n_mask++;
}

/* Mask values: v2 takes _FillValue from the zarr fill_value, or from the
 * attribute when fill_value is null (xarray's use_zarr_fill_value_as_mask
 * default sets the attribute from a non-null fill_value only); v3 from the
 * attribute; missing_value from the attribute. */
static void add_masks(struct zr_decoder *d, const struct zr_array *a) {
  if (a->zarr_format == 2 && !a->fill_is_null) {
    add_mask(d, a->fill_json, 1);
  } else {
    add_mask(d, json_object_get(a->attrs, "_FillValue"), 1);
  }
  add_mask(d, json_object_get(a->attrs, "missing_value"), 0);
}

static int is_number(const json_t *v) { return json_is_number(v); }

/* A one-element list stands for its element, as xarray reads scale_factor
 * and add_offset (netCDF attributes are arrays; converters keep them so). */
static const json_t *scalar_of(const json_t *v) {
  return json_is_array(v) && json_array_size(v) == 1 ? json_array_get(v, 0) : v;
}

static int is_standard_calendar(const char *cal) {
  return !cal || strcasecmp(cal, "standard") == 0 || strcasecmp(cal, "gregorian") == 0 ||
         strcasecmp(cal, "proleptic_gregorian") == 0;
}

/* xarray's decode_cf_datetime for the standard calendars: pandas first
 * (a reference date within timestamp[ns], from the Gregorian reform on
 * unless proleptic, a unit pandas spells), else cftime, whose dates
 * become datetime64[ns] when they all fall within timestamp[ns] (checked
 * per value: zr_decode_value's QL_EOVERFLOW). */
static void init_time(struct zr_decoder *d, const json_t *attrs) {
  const char *units = json_string_value(json_object_get(attrs, "units"));
  const char *cal = json_string_value(json_object_get(attrs, "calendar"));
  if (!units || !strstr(units, " since ")) return;
  if (d->in.type != ZR_INT && d->in.type != ZR_UINT && d->in.type != ZR_FLOAT) return;
  struct zr_cf_units u;
  if (zr_cf_parse_units(units, &u) != QL_OK) return; /* not time units to xarray either: plain numbers */
  int proleptic = cal && strcasecmp(cal, "proleptic_gregorian") == 0;
  d->time_kept_numeric = 1;
  if (!is_standard_calendar(cal)) return;
  int64_t ref;
  if (u.pandas_unit && zr_cf_pandas_ref_ns(&u, proleptic, &ref) == QL_OK) {
    d->ref_ns = ref;
  } else if (zr_cf_cftime_ref_us(&u, proleptic, &ref) == QL_OK) {
    d->cftime = 1;
    d->ref_us = ref;
    d->cftime_fix = !u.sub_ms_unit;
  } else {
    return;
  }
  d->time_kept_numeric = 0;
  d->cf_time = 1;
  d->ns_per_unit = u.ns_per_unit;
  d->out_unit_ns = 1;
}

static void init_duration(struct zr_decoder *d, const json_t *attrs) {
  const char *dtype = json_string_value(json_object_get(attrs, "dtype"));
  const char *units = json_string_value(json_object_get(attrs, "units"));
  if (!dtype || !units || strncmp(dtype, "timedelta64[", 12) != 0) return;
  if (d->in.type != ZR_INT && d->in.type != ZR_UINT && d->in.type != ZR_FLOAT) return;
  /* xarray's CFTimedeltaCoder takes these spellings only (its TIME_UNITS:
   * exact, lower case, plural); "hrs" or "Hours" stay numbers. */
  static const struct {
    const char *name;
    int64_t ns;
  } names[] = {{"days", 86400000000000LL}, {"hours", 3600000000000LL},   {"minutes", 60000000000LL},
               {"seconds", 1000000000LL},  {"milliseconds", 1000000LL}, {"microseconds", 1000LL},
               {"nanoseconds", 1LL}};
  int64_t ns = 0;
  for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
    if (strcmp(units, names[k].name) == 0) ns = names[k].ns;
  }
  if (ns == 0) return;
  struct zr_dtype target;
  struct ql_error ignored;
  memset(&ignored, 0, sizeof(ignored));
  char typestr[32];
  snprintf(typestr, sizeof(typestr), "<m8%s", dtype + 11);
  if (zr_dtype_parse_v2(typestr, &target, &ignored) != QL_OK) {
    ql_error_release(&ignored);
    return;
  }
  d->cf_duration = 1;
  d->ns_per_unit = ns;
  d->out_unit_ns = arrow_unit_ns(target.unit_ns);
}

/* Fixed-width bytes: binary, or text when `_Encoding` names one (xarray's
 * EncodedStringCoder decodes such bytes to str, as netCDF char arrays
 * converted by xarray carry _Encoding: utf-8). */
static int init_bytes(struct zr_decoder *d, const json_t *attrs, struct ql_error *error) {
  const json_t *enc = json_object_get(attrs, "_Encoding");
  if (!enc) {
    set_out(d, ZR_OUT_BINARY);
    return QL_OK;
  }
  const char *name = json_string_value(enc);
  if (name && (strcasecmp(name, "utf-8") == 0 || strcasecmp(name, "utf8") == 0)) {
    d->bytes_encoding = 1;
  } else if (name && (strcasecmp(name, "ascii") == 0 || strcasecmp(name, "us-ascii") == 0)) {
    d->bytes_encoding = 2;
  } else {
    return ql_error_set(error, QL_ENOTSUP, "_Encoding '%.32s' is not supported (utf-8, ascii)", name ? name : "(not a string)");
  }
  set_out(d, ZR_OUT_UTF8);
  return QL_OK;
}

/* Fixed-width strings of a v2 array whose fill_value is not null: xarray
 * takes that fill_value as _FillValue and masks the cells equal to it
 * (NaN in its object column, NULL here). Bytes decoded as text
 * (_Encoding) are compared by xarray as str with a bytes fill: nothing
 * matches. v3 string fills in attributes are refused by xarray. */
static void set_string_mask(struct zr_decoder *d, const struct zr_array *a) {
  if (a->zarr_format == 2 && !a->fill_is_null) d->string_mask = a->fill;
}

int zr_decoder_init(const struct zr_array *a, int32_t decode_times, struct zr_decoder *d, struct ql_error *error) {
  memset(d, 0, sizeof(*d));
  d->in = a->dtype;
  d->in.big_endian = 0;
  const json_t *attrs = a->attrs;
  const char *unsig = json_string_value(json_object_get(attrs, "_Unsigned"));
  if (unsig && strcmp(unsig, "true") == 0 && d->in.type == ZR_INT) d->in.type = ZR_UINT;
  if (unsig && strcmp(unsig, "false") == 0 && d->in.type == ZR_UINT) d->in.type = ZR_INT;
  switch (d->in.type) {
    case ZR_UNICODE:
      set_string_mask(d, a);
      set_out(d, ZR_OUT_UTF8);
      return QL_OK;
    case ZR_VLEN:
      /* zarr-python's v2 string arrays carry fill_value "": xarray masks
       * the cells equal to it (zr_colbuf_append_vlen_masked) */
      if (a->zarr_format == 2 && !a->fill_is_null && json_is_string(a->fill_json)) {
        d->vlen_mask = json_string_value(a->fill_json);
      }
      set_out(d, ZR_OUT_UTF8);
      return QL_OK;
    case ZR_BYTES:
      QL_RETURN_NOT_OK(init_bytes(d, attrs, error));
      if (!d->bytes_encoding) set_string_mask(d, a);
      return QL_OK;
    case ZR_BOOL:
      /* xarray masks the cells equal to a bool's _FillValue (its column
       * becomes objects: True, False, NaN); here they are NULL. */
      add_masks(d, a);
      set_out(d, ZR_OUT_BOOL);
      return QL_OK;
    case ZR_DATETIME:
    case ZR_TIMEDELTA:
      d->out_unit_ns = arrow_unit_ns(d->in.unit_ns);
      set_out(d, d->in.type == ZR_DATETIME ? ZR_OUT_TIMESTAMP : ZR_OUT_DURATION);
      return QL_OK;
    default: break;
  }
  const char *as = json_string_value(json_object_get(attrs, "dtype"));
  if (as && strcmp(as, "bool") == 0 && (d->in.type == ZR_INT || d->in.type == ZR_UINT)) {
    d->bool_from_int = 1;
    set_out(d, ZR_OUT_BOOL);
    return QL_OK;
  }
  if (a->zarr_format != 2 || a->fill_is_null) {
    QL_RETURN_NOT_OK(check_fill_string(json_object_get(attrs, "_FillValue"), "_FillValue", error));
  }
  add_masks(d, a);
  if (d->in.type == ZR_UINT && unsig && strcmp(unsig, "true") == 0) {
    /* fill values written as signed numbers view as unsigned */
    for (int32_t k = 0; k < d->n_mask; k++) {
      if (d->mask_f[k] < 0) d->mask_f[k] += ldexp(1.0, 8 * d->in.size);
    }
  }
  const json_t *scale = scalar_of(json_object_get(attrs, "scale_factor"));
  const json_t *offset = scalar_of(json_object_get(attrs, "add_offset"));
  if (scale && !is_number(scale)) return ql_error_set(error, QL_ENOTSUP, "scale_factor is not a number");
  if (offset && !is_number(offset)) return ql_error_set(error, QL_ENOTSUP, "add_offset is not a number");
  d->has_scale = scale != NULL;
  d->has_offset = offset != NULL;
  d->scale = scale ? json_number_value(scale) : 1.0;
  d->offset = offset ? json_number_value(offset) : 0.0;
  if (decode_times) {
    init_time(d, attrs);
  } else {
    const char *units = json_string_value(json_object_get(attrs, "units"));
    d->time_kept_numeric = units && strstr(units, " since ") != NULL;
  }
  if (!d->cf_time) init_duration(d, attrs);
  if (d->cf_time) {
    set_out(d, ZR_OUT_TIMESTAMP);
    return QL_OK;
  }
  if (d->cf_duration) {
    set_out(d, ZR_OUT_DURATION);
    return QL_OK;
  }
  if (d->has_scale && !d->has_offset && json_is_integer(scale) && d->n_mask == 0 && !d->mask_declared &&
      (d->in.type == ZR_INT || d->in.type == ZR_UINT)) {
    /* xarray's _choose_float_dtype takes the type of a lone scale_factor:
     * a JSON integer is an int64, so the data become int64 times it */
    d->int_scale = 1;
    d->scale_i = json_integer_value(scale);
    set_out(d, ZR_OUT_I64);
    return QL_OK;
  }
  if (d->has_scale || d->has_offset) {
    set_out(d, ZR_OUT_F64);
    return QL_OK;
  }
  int size = d->in.size;
  if (d->in.type == ZR_FLOAT) {
    set_out(d, size <= 4 ? ZR_OUT_F32 : ZR_OUT_F64);
  } else if (d->n_mask > 0 || d->mask_declared) {
    set_out(d, size <= 2 ? ZR_OUT_F32 : ZR_OUT_F64);
  } else {
    int base = d->in.type == ZR_INT ? ZR_OUT_I8 : ZR_OUT_U8;
    set_out(d, base + (size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3));
  }
  return QL_OK;
}

/* ------------------------------------------------------------ decoding */

/* Raw element as int64 / uint64 / double. */
static void read_raw(const struct zr_dtype *t, const uint8_t *e, int64_t *i, uint64_t *u, double *f) {
  switch (t->type) {
    case ZR_INT:
    case ZR_DATETIME:
    case ZR_TIMEDELTA:
      switch (t->size) {
        case 1: { int8_t v; memcpy(&v, e, 1); *i = v; break; }
        case 2: { int16_t v; memcpy(&v, e, 2); *i = v; break; }
        case 4: { int32_t v; memcpy(&v, e, 4); *i = v; break; }
        default: { int64_t v; memcpy(&v, e, 8); *i = v; break; }
      }
      *f = (double)*i;
      *u = (uint64_t)*i;
      break;
    case ZR_UINT:
    case ZR_BOOL:
      switch (t->size) {
        case 1: { uint8_t v; memcpy(&v, e, 1); *u = v; break; }
        case 2: { uint16_t v; memcpy(&v, e, 2); *u = v; break; }
        case 4: { uint32_t v; memcpy(&v, e, 4); *u = v; break; }
        default: { uint64_t v; memcpy(&v, e, 8); *u = v; break; }
      }
      *f = (double)*u;
      *i = (int64_t)*u;
      break;
    case ZR_FLOAT:
      if (t->size == 2) {
        uint16_t h;
        memcpy(&h, e, 2);
        *f = zr_half_to_float(h);
      } else if (t->size == 4) {
        float v;
        memcpy(&v, e, 4);
        *f = v;
      } else {
        memcpy(f, e, 8);
      }
      *i = 0;
      *u = 0;
      break;
    default:
      *i = 0;
      *u = 0;
      *f = 0;
  }
}

static int masked_float(const struct zr_decoder *d, double x, int as_f32) {
  if (d->mask_nan && isnan(x)) return 1;
  for (int32_t k = 0; k < d->n_mask; k++) {
    if (as_f32 ? (float)x == (float)d->mask_f[k] : x == d->mask_f[k]) return 1;
  }
  return 0;
}

/* 1677-09-21 00:12:43.145224 and 2262-04-11 23:47:16.854775 in
 * microseconds: the cftime dates xarray turns into datetime64[ns]. */
#define ZR_NS_LOWER_US (-9223372036854775LL)
#define ZR_NS_UPPER_US 9223372036854775LL

/* A time through xarray's cftime fallback: the value as float64, times
 * the unit's microseconds in long double, rounded to a whole microsecond
 * (np.rint; cftime's cast_to_int fix-up: a result 1 past or short of a
 * whole second is floored or ceiled, except for ms / us units), added to
 * the reference date. */
static int decode_cftime(const struct zr_decoder *d, double x, struct zr_value *out) {
  long double scaled = (long double)x * (long double)(d->ns_per_unit / 1000);
  if (!(scaled > -9.2e18L && scaled < 9.2e18L)) return QL_EOVERFLOW;
  long double r = rintl(scaled);
  if (d->cftime_fix) {
    int64_t m = (int64_t)r % 1000000;
    if (m < 0) m += 1000000;
    if (m == 1) r = floorl(scaled);
    if (m == 999999) r = ceill(scaled);
  }
  int64_t us;
  if (__builtin_add_overflow((int64_t)r, d->ref_us, &us)) return QL_EOVERFLOW;
  if (us < ZR_NS_LOWER_US || us > ZR_NS_UPPER_US) return QL_EOVERFLOW;
  out->i = us * 1000;
  return QL_OK;
}

/* A float timedelta in ns as xarray's decode_cf_timedelta computes it:
 * units coarser than seconds are first multiplied into float64 seconds;
 * then the value is multiplied by 1000 per step down to nanoseconds in
 * its own precision (float32 stays float32: numpy's in-place *= 1000),
 * and truncated. */
static int float_timedelta_ns(int64_t ns_per_unit, double x, int f32, int64_t *out) {
  int64_t unit = ns_per_unit;
  if (unit > 1000000000LL) {
    x *= (double)(unit / 1000000000LL);
    unit = 1000000000LL;
    f32 = 0;
  }
  if (f32) {
    float v = (float)x;
    for (; unit > 1; unit /= 1000) v *= 1000.0f;
    x = v;
  } else {
    for (; unit > 1; unit /= 1000) x *= 1000.0;
  }
  if (!(x > -9.2e18 && x < 9.2e18)) return QL_EOVERFLOW;
  *out = (int64_t)x;
  return QL_OK;
}

static int decode_time(const struct zr_decoder *d, int64_t i, uint64_t u, double f, struct zr_value *out) {
  out->kind = 0;
  int is_float = d->in.type == ZR_FLOAT || d->has_scale || d->has_offset;
  int64_t ticks;
  if (!is_float) {
    if (d->in.type == ZR_UINT && u > (uint64_t)INT64_MAX) return QL_EOVERFLOW;
    for (int32_t k = 0; k < d->n_mask; k++) {
      if (i == d->mask_i[k]) {
        out->is_null = 1;
        return QL_OK;
      }
    }
    if (i == INT64_MIN) {
      out->is_null = 1;
      return QL_OK;
    }
    if (d->cftime) return decode_cftime(d, d->in.type == ZR_UINT ? (double)u : (double)i, out);
    int64_t per_tick = d->ns_per_unit / d->out_unit_ns;
    if (__builtin_mul_overflow(i, per_tick, &ticks)) return QL_EOVERFLOW;
  } else {
    double x = f;
    if (masked_float(d, x, d->in.type == ZR_FLOAT && d->in.size <= 4 && !d->has_scale && !d->has_offset)) {
      out->is_null = 1;
      return QL_OK;
    }
    if (d->has_scale) x *= d->scale;
    if (d->has_offset) x += d->offset;
    if (isnan(x) || (isinf(x) && d->cf_time)) {
      /* NaN is NaT; an infinite time is masked by cftime (numpy's
       * masked_invalid), which xarray then turns into the reference date:
       * documented choice, NULL */
      out->is_null = 1;
      return QL_OK;
    }
    if (d->cftime) return decode_cftime(d, x, out);
    if (d->cf_duration) {
      int f32 = d->in.type == ZR_FLOAT && d->in.size <= 4 && !d->has_scale && !d->has_offset;
      QL_RETURN_NOT_OK(float_timedelta_ns(d->ns_per_unit, x, f32, &ticks));
      ticks /= d->out_unit_ns;
    } else {
      double v = x * (double)(d->ns_per_unit / d->out_unit_ns);
      if (!(v > -9.2e18 && v < 9.2e18)) return QL_EOVERFLOW;
      ticks = (int64_t)v; /* truncation, as numpy's astype(int64) */
    }
  }
  int64_t ref = d->cf_time ? d->ref_ns / d->out_unit_ns : 0;
  if (__builtin_add_overflow(ticks, ref, &out->i)) return QL_EOVERFLOW;
  return QL_OK;
}

int zr_decode_value(const struct zr_decoder *d, const uint8_t *elem, struct zr_value *out) {
  memset(out, 0, sizeof(*out));
  int64_t i;
  uint64_t u;
  double f;
  if (d->out == ZR_OUT_UTF8 || d->out == ZR_OUT_BINARY) {
    out->kind = -1;
    return QL_OK;
  }
  read_raw(&d->in, elem, &i, &u, &f);
  if (d->cf_time || d->cf_duration) return decode_time(d, i, u, f, out);
  switch (d->out) {
    case ZR_OUT_BOOL:
      out->kind = 0;
      out->i = d->in.type == ZR_BOOL ? (u != 0) : (i != 0 || u != 0);
      for (int32_t k = 0; d->in.type == ZR_BOOL && k < d->n_mask; k++) {
        if ((double)out->i == d->mask_f[k]) out->is_null = 1;
      }
      return QL_OK;
    case ZR_OUT_TIMESTAMP:
    case ZR_OUT_DURATION: {
      out->kind = 0;
      if (i == INT64_MIN) {
        out->is_null = 1;
        return QL_OK;
      }
      int64_t per = d->in.unit_ns / d->out_unit_ns;
      if (d->in.unit_ns % d->out_unit_ns != 0) per = 1;
      if (__builtin_mul_overflow(i, per, &out->i)) return QL_EOVERFLOW;
      return QL_OK;
    }
    case ZR_OUT_F32:
    case ZR_OUT_F64: {
      out->kind = 2;
      int f32 = d->out == ZR_OUT_F32;
      double x = f32 ? (double)(float)f : f;
      if (d->n_mask && masked_float(d, x, f32)) {
        out->is_null = 1;
        return QL_OK;
      }
      if (d->has_scale) x *= d->scale;
      if (d->has_offset) x += d->offset;
      out->f = f32 ? (double)(float)x : x;
      return QL_OK;
    }
    default:
      if (d->int_scale) {
        /* int64 arithmetic, wrapping as numpy's does */
        out->kind = 0;
        out->i = (int64_t)((uint64_t)i * (uint64_t)d->scale_i);
        return QL_OK;
      }
      if (d->in.type == ZR_UINT) {
        out->kind = 1;
        out->u = u;
      } else {
        out->kind = 0;
        out->i = i;
      }
      return QL_OK;
  }
}

/* -------------------------------------------------------- column buffers */

static int out_width(int32_t out) {
  switch (out) {
    case ZR_OUT_BOOL:
    case ZR_OUT_I8:
    case ZR_OUT_U8: return 1;
    case ZR_OUT_I16:
    case ZR_OUT_U16: return 2;
    case ZR_OUT_I32:
    case ZR_OUT_U32:
    case ZR_OUT_F32: return 4;
    case ZR_OUT_UTF8:
    case ZR_OUT_BINARY: return 0;
    default: return 8;
  }
}

int32_t zr_out_width(int32_t out) { return out_width(out); }

int zr_colbuf_init(struct zr_colbuf *b, int32_t out, int64_t capacity) {
  memset(b, 0, sizeof(*b));
  b->out = out;
  b->width = out_width(out);
  b->cap = capacity > 0 ? capacity : 1;
  if (b->width) {
    b->data = malloc((size_t)(b->cap * b->width));
  } else {
    b->offsets = malloc(sizeof(int32_t) * (size_t)(b->cap + 1));
    b->data_cap = 64;
    b->data = malloc((size_t)b->data_cap);
    if (b->offsets) b->offsets[0] = 0;
  }
  if (!b->data || (!b->width && !b->offsets)) {
    zr_colbuf_free(b);
    return QL_ENOMEM;
  }
  return QL_OK;
}

void zr_colbuf_free(struct zr_colbuf *b) {
  free(b->data);
  free(b->valid);
  free(b->offsets);
  memset(b, 0, sizeof(*b));
}

static int grow_rows(struct zr_colbuf *b) {
  if (b->n < b->cap) return QL_OK;
  int64_t cap = b->cap * 2;
  if (b->width) {
    uint8_t *d = realloc(b->data, (size_t)(cap * b->width));
    if (!d) return QL_ENOMEM;
    b->data = d;
  } else {
    int32_t *o = realloc(b->offsets, sizeof(int32_t) * (size_t)(cap + 1));
    if (!o) return QL_ENOMEM;
    b->offsets = o;
  }
  if (b->valid) {
    uint8_t *v = realloc(b->valid, (size_t)cap);
    if (!v) return QL_ENOMEM;
    b->valid = v;
  }
  b->cap = cap;
  return QL_OK;
}

static int mark_null(struct zr_colbuf *b) {
  if (!b->valid) {
    b->valid = malloc((size_t)b->cap);
    if (!b->valid) return QL_ENOMEM;
    memset(b->valid, 1, (size_t)b->n);
  }
  b->valid[b->n] = 0;
  b->null_count++;
  return QL_OK;
}

static int valid_utf8(const uint8_t *p, int64_t n);

static int reserve_bytes(struct zr_colbuf *b, int64_t more) {
  if (b->data_len + more > INT32_MAX) return QL_EOVERFLOW;
  if (b->data_len + more <= b->data_cap) return QL_OK;
  int64_t cap = b->data_cap * 2;
  while (cap < b->data_len + more) cap *= 2;
  uint8_t *d = realloc(b->data, (size_t)cap);
  if (!d) return QL_ENOMEM;
  b->data = d;
  b->data_cap = cap;
  return QL_OK;
}

static int append_string(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *elem) {
  if (d->in.type == ZR_BYTES) {
    int64_t n = d->in.size;
    while (n > 0 && elem[n - 1] == 0) n--;
    if (d->bytes_encoding == 1 && !valid_utf8(elem, n)) return QL_EDATA;
    for (int64_t k = 0; d->bytes_encoding == 2 && k < n; k++) {
      if (elem[k] >= 0x80) return QL_EDATA;
    }
    QL_RETURN_NOT_OK(reserve_bytes(b, n));
    memcpy(b->data + b->data_len, elem, (size_t)n);
    b->data_len += n;
  } else {
    int64_t units = d->in.size / 4;
    while (units > 0) {
      uint32_t cp;
      memcpy(&cp, elem + 4 * (units - 1), 4);
      if (cp != 0) break;
      units--;
    }
    QL_RETURN_NOT_OK(reserve_bytes(b, units * 4));
    for (int64_t k = 0; k < units; k++) {
      uint32_t cp;
      memcpy(&cp, elem + 4 * k, 4);
      uint8_t *o = b->data + b->data_len;
      if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        b->data_len += 1;
      } else if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        b->data_len += 2;
      } else if (cp < 0x10000) {
        if (cp >= 0xD800 && cp <= 0xDFFF) return QL_EDATA;
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        b->data_len += 3;
      } else if (cp <= 0x10FFFF) {
        o[0] = (uint8_t)(0xF0 | (cp >> 18));
        o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (uint8_t)(0x80 | (cp & 0x3F));
        b->data_len += 4;
      } else {
        return QL_EDATA;
      }
    }
  }
  b->offsets[b->n + 1] = (int32_t)b->data_len;
  return QL_OK;
}

int zr_colbuf_append(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *elem) {
  QL_RETURN_NOT_OK(grow_rows(b));
  if (b->valid) b->valid[b->n] = 1;
  if (!b->width) {
    if (d->string_mask && memcmp(elem, d->string_mask, (size_t)d->in.size) == 0) {
      QL_RETURN_NOT_OK(mark_null(b));
      b->offsets[b->n + 1] = (int32_t)b->data_len;
    } else {
      QL_RETURN_NOT_OK(append_string(b, d, elem));
    }
    b->n++;
    return QL_OK;
  }
  /* Plain copies need no conversion: the common case, kept cheap. */
  if (!d->n_mask && !d->mask_declared && !d->has_scale && !d->has_offset && !d->cf_time && !d->cf_duration &&
      !d->bool_from_int && d->in.size == b->width && d->out != ZR_OUT_TIMESTAMP && d->out != ZR_OUT_DURATION &&
      !(d->out == ZR_OUT_BOOL)) {
    memcpy(b->data + b->n * b->width, elem, (size_t)b->width);
    b->n++;
    return QL_OK;
  }
  struct zr_value v;
  QL_RETURN_NOT_OK(zr_decode_value(d, elem, &v));
  uint8_t *o = b->data + b->n * b->width;
  if (v.is_null) {
    QL_RETURN_NOT_OK(mark_null(b));
    memset(o, 0, (size_t)b->width);
    b->n++;
    return QL_OK;
  }
  switch (b->out) {
    case ZR_OUT_BOOL:
    case ZR_OUT_I8:
    case ZR_OUT_U8: o[0] = (uint8_t)(v.kind == 1 ? v.u : (uint64_t)v.i); break;
    case ZR_OUT_I16:
    case ZR_OUT_U16: { uint16_t x = (uint16_t)(v.kind == 1 ? v.u : (uint64_t)v.i); memcpy(o, &x, 2); break; }
    case ZR_OUT_I32:
    case ZR_OUT_U32: { uint32_t x = (uint32_t)(v.kind == 1 ? v.u : (uint64_t)v.i); memcpy(o, &x, 4); break; }
    case ZR_OUT_F32: { float x = (float)v.f; memcpy(o, &x, 4); break; }
    case ZR_OUT_F64: memcpy(o, &v.f, 8); break;
    default: { uint64_t x = v.kind == 1 ? v.u : (uint64_t)v.i; memcpy(o, &x, 8); break; }
  }
  b->n++;
  return QL_OK;
}

static int is_plain(const struct zr_decoder *d, int32_t width) {
  return !d->n_mask && !d->mask_declared && !d->has_scale && !d->has_offset && !d->cf_time && !d->cf_duration &&
         !d->bool_from_int && d->in.size == width && d->out != ZR_OUT_TIMESTAMP && d->out != ZR_OUT_DURATION && d->out != ZR_OUT_BOOL;
}

static int reserve_rows(struct zr_colbuf *b, int64_t n) {
  while (b->n + n > b->cap) QL_RETURN_NOT_OK(grow_rows(b));
  return QL_OK;
}

/* float32 data with fill values and no scaling: xarray compares in float32. */
static int append_masked_f32(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *base,
                             const int64_t *offsets, int64_t n) {
  float masks[ZR_MAX_MASKS];
  for (int32_t k = 0; k < d->n_mask; k++) masks[k] = (float)d->mask_f[k];
  float *out = (float *)(void *)b->data;
  for (int64_t r = 0; r < n; r++) {
    float x;
    memcpy(&x, base + offsets[r] * 4, 4);
    int masked = d->mask_nan && x != x;
    for (int32_t k = 0; k < d->n_mask; k++) masked |= x == masks[k];
    if (masked) {
      QL_RETURN_NOT_OK(mark_null(b));
      x = 0;
    } else if (b->valid) {
      b->valid[b->n] = 1;
    }
    out[b->n++] = x;
  }
  return QL_OK;
}

/* float64 data with fill values and no scaling (xarray's default float64
 * variable, whose fill is NaN): compared as float64. */
static int append_masked_f64(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *base,
                             const int64_t *offsets, int64_t n) {
  double *out = (double *)(void *)b->data;
  for (int64_t r = 0; r < n; r++) {
    double x;
    memcpy(&x, base + offsets[r] * 8, 8);
    int masked = d->mask_nan && x != x;
    for (int32_t k = 0; k < d->n_mask; k++) masked |= x == d->mask_f[k];
    if (masked) {
      QL_RETURN_NOT_OK(mark_null(b));
      x = 0;
    } else if (b->valid) {
      b->valid[b->n] = 1;
    }
    out[b->n++] = x;
  }
  return QL_OK;
}

int zr_colbuf_append_many(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *base, const int64_t *offsets,
                          int64_t n) {
  if (b->width == 8 && zr_decoder_is_masked_f64(d)) {
    QL_RETURN_NOT_OK(reserve_rows(b, n));
    return append_masked_f64(b, d, base, offsets, n);
  }
  if (b->width && (is_plain(d, b->width) ||
                   (d->in.type == ZR_FLOAT && d->in.size == 4 && d->out == ZR_OUT_F32 && !d->has_scale &&
                    !d->has_offset && !d->cf_time && !d->cf_duration))) {
    QL_RETURN_NOT_OK(reserve_rows(b, n));
    if (d->n_mask) return append_masked_f32(b, d, base, offsets, n);
    if (b->valid) memset(b->valid + b->n, 1, (size_t)n);
    uint8_t *o = b->data + b->n * b->width;
    switch (b->width) {
      case 1:
        for (int64_t r = 0; r < n; r++) o[r] = base[offsets[r]];
        break;
      case 2:
        for (int64_t r = 0; r < n; r++) memcpy(o + 2 * r, base + 2 * offsets[r], 2);
        break;
      case 4:
        for (int64_t r = 0; r < n; r++) memcpy(o + 4 * r, base + 4 * offsets[r], 4);
        break;
      default:
        for (int64_t r = 0; r < n; r++) memcpy(o + 8 * r, base + 8 * offsets[r], 8);
        break;
    }
    b->n += n;
    return QL_OK;
  }
  int64_t size = d->in.size;
  for (int64_t r = 0; r < n; r++) QL_RETURN_NOT_OK(zr_colbuf_append(b, d, base + offsets[r] * size));
  return QL_OK;
}

int zr_decoder_is_identity(const struct zr_decoder *d) {
  int32_t width = out_width(d->out);
  if (!width || d->in.type == ZR_VLEN || d->n_mask) return 0;
  return is_plain(d, width) || (d->in.type == ZR_FLOAT && d->in.size == 4 && d->out == ZR_OUT_F32 && !d->has_scale &&
                                !d->has_offset && !d->cf_time && !d->cf_duration);
}

int zr_decoder_is_masked_f32(const struct zr_decoder *d) {
  return d->n_mask > 0 && d->in.type == ZR_FLOAT && d->in.size == 4 && d->out == ZR_OUT_F32 && !d->has_scale &&
         !d->has_offset && !d->cf_time && !d->cf_duration;
}

int zr_decoder_is_masked_f64(const struct zr_decoder *d) {
  return d->n_mask > 0 && d->in.type == ZR_FLOAT && d->in.size == 8 && d->out == ZR_OUT_F64 && !d->has_scale &&
         !d->has_offset && !d->cf_time && !d->cf_duration;
}

int64_t zr_mask_bitmap_f64(const struct zr_decoder *d, const double *cells, int64_t n, uint8_t *bits) {
  memset(bits, 0, (size_t)((n + 7) / 8));
  int64_t nulls = 0;
  for (int64_t i = 0; i < n; i++) {
    double x;
    memcpy(&x, cells + i, sizeof(x));
    int masked = d->mask_nan && x != x;
    for (int32_t k = 0; k < d->n_mask; k++) masked |= x == d->mask_f[k];
    nulls += masked;
    bits[i >> 3] |= (uint8_t)((unsigned)!masked << (i & 7));
  }
  return nulls;
}

/* Set bits per byte value (no popcount instruction is assumed). */
static unsigned bit_count(unsigned byte) {
  static const uint8_t nibble[16] = {0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4};
  return nibble[byte & 15] + nibble[byte >> 4];
}

/* A float mask as a bit-pattern test: x == m exactly when the bits of x,
 * sign bit dropped where `ignore` says (m = ±0), equal `want`; a NaN mask
 * equals nothing. Integer compares without branches run several times
 * faster than float ones. */
struct zr_mask_bits {
  uint32_t want, ignore;
  int32_t never; /* NaN mask: matched by the is-NaN test instead (zr_decoder.mask_nan) */
};

/* float32 bits that are a NaN: exponent all ones, mantissa not zero. */
static inline unsigned bits_are_nan(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

static struct zr_mask_bits mask_bits_of(double value) {
  struct zr_mask_bits mb = {0, 0, 0};
  float m = (float)value;
  if (m != m) {
    mb.never = 1;
  } else if (m == 0) {
    mb.ignore = 0x80000000u;
  } else {
    memcpy(&mb.want, &m, sizeof(mb.want));
  }
  return mb;
}

/* One bitmap byte over count (<= 8) cells: bit b set unless cell b matches a mask. */
static inline unsigned mask_byte(const uint32_t *u, int count, const struct zr_mask_bits *mb, int32_t n_mask,
                                 int32_t nan) {
  unsigned byte = 0;
  for (int b = 0; b < count; b++) {
    unsigned masked = nan ? bits_are_nan(u[b]) : 0u;
    for (int32_t k = 0; k < n_mask; k++) masked |= !mb[k].never & ((u[b] & ~mb[k].ignore) == mb[k].want);
    byte |= (masked ^ 1u) << b;
  }
  return byte;
}

#ifdef __SSE2__
/* Bitmap bytes of 8 cells at a time, 4 lanes per compare. */
static int64_t mask_bytes_sse2(const float *cells, int64_t full, const struct zr_mask_bits *mb, int32_t n_mask,
                               int32_t nan, uint8_t *bits) {
  int64_t valid = 0;
  __m128i want[ZR_MAX_MASKS], keep[ZR_MAX_MASKS];
  int32_t used = 0;
  for (int32_t k = 0; k < n_mask; k++) {
    if (mb[k].never) continue;
    want[used] = _mm_set1_epi32((int)mb[k].want);
    keep[used] = _mm_set1_epi32((int)~mb[k].ignore);
    used++;
  }
  for (int64_t i = 0; i < full; i++) {
    __m128i lo = _mm_loadu_si128((const __m128i *)(const void *)(cells + 8 * i));
    __m128i hi = _mm_loadu_si128((const __m128i *)(const void *)(cells + 8 * i + 4));
    __m128i mlo = _mm_setzero_si128(), mhi = _mm_setzero_si128();
    if (nan) {
      __m128 flo = _mm_castsi128_ps(lo), fhi = _mm_castsi128_ps(hi);
      mlo = _mm_castps_si128(_mm_cmpunord_ps(flo, flo));
      mhi = _mm_castps_si128(_mm_cmpunord_ps(fhi, fhi));
    }
    for (int32_t k = 0; k < used; k++) {
      mlo = _mm_or_si128(mlo, _mm_cmpeq_epi32(_mm_and_si128(lo, keep[k]), want[k]));
      mhi = _mm_or_si128(mhi, _mm_cmpeq_epi32(_mm_and_si128(hi, keep[k]), want[k]));
    }
    unsigned masked = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(mlo)) |
                      (unsigned)_mm_movemask_ps(_mm_castsi128_ps(mhi)) << 4;
    unsigned byte = ~masked & 0xffu;
    bits[i] = (uint8_t)byte;
    valid += bit_count(byte);
  }
  return valid;
}
#endif

/* Cells per early-exit test of the "any masked" passes: long enough that
 * the test is rare, short enough that a masked cell near the start stops
 * the pass soon. */
#define ZR_ANY_STRIDE 64

int zr_mask_any_f32(const struct zr_decoder *d, const float *cells, int64_t n) {
  struct zr_mask_bits mb[ZR_MAX_MASKS];
  for (int32_t k = 0; k < d->n_mask; k++) mb[k] = mask_bits_of(d->mask_f[k]);
  int64_t i = 0;
#ifdef __SSE2__
  __m128i want[ZR_MAX_MASKS], keep[ZR_MAX_MASKS];
  int32_t used = 0;
  for (int32_t k = 0; k < d->n_mask; k++) {
    if (mb[k].never) continue;
    want[used] = _mm_set1_epi32((int)mb[k].want);
    keep[used] = _mm_set1_epi32((int)~mb[k].ignore);
    used++;
  }
  for (; i + ZR_ANY_STRIDE <= n; i += ZR_ANY_STRIDE) {
    __m128i acc = _mm_setzero_si128();
    for (int64_t j = i; j < i + ZR_ANY_STRIDE; j += 4) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(cells + j));
      if (d->mask_nan) {
        __m128 f = _mm_castsi128_ps(v);
        acc = _mm_or_si128(acc, _mm_castps_si128(_mm_cmpunord_ps(f, f)));
      }
      for (int32_t k = 0; k < used; k++) acc = _mm_or_si128(acc, _mm_cmpeq_epi32(_mm_and_si128(v, keep[k]), want[k]));
    }
    if (_mm_movemask_epi8(acc)) return 1;
  }
#endif
  for (; i < n; i += 8) {
    uint32_t u[8];
    int count = n - i < 8 ? (int)(n - i) : 8;
    memcpy(u, cells + i, sizeof(uint32_t) * (size_t)count);
    if (mask_byte(u, count, mb, d->n_mask, d->mask_nan) != (1u << count) - 1u) return 1;
  }
  return 0;
}

int zr_mask_any_f64(const struct zr_decoder *d, const double *cells, int64_t n) {
  int64_t i = 0;
#ifdef __SSE2__
  __m128d masks[ZR_MAX_MASKS];
  int32_t used = 0;
  for (int32_t k = 0; k < d->n_mask; k++) {
    if (d->mask_f[k] != d->mask_f[k]) continue; /* a NaN mask equals nothing; mask_nan covers NaN fills */
    masks[used++] = _mm_set1_pd(d->mask_f[k]);
  }
  for (; i + ZR_ANY_STRIDE <= n; i += ZR_ANY_STRIDE) {
    __m128d acc = _mm_setzero_pd();
    for (int64_t j = i; j < i + ZR_ANY_STRIDE; j += 2) {
      __m128d v = _mm_loadu_pd(cells + j);
      if (d->mask_nan) acc = _mm_or_pd(acc, _mm_cmpunord_pd(v, v));
      for (int32_t k = 0; k < used; k++) acc = _mm_or_pd(acc, _mm_cmpeq_pd(v, masks[k]));
    }
    if (_mm_movemask_pd(acc)) return 1;
  }
#endif
  for (; i < n; i++) {
    double x;
    memcpy(&x, cells + i, sizeof(x));
    if (d->mask_nan && x != x) return 1;
    for (int32_t k = 0; k < d->n_mask; k++) {
      if (x == d->mask_f[k]) return 1;
    }
  }
  return 0;
}

int64_t zr_mask_bitmap_f32(const struct zr_decoder *d, const float *cells, int64_t n, uint8_t *bits) {
  struct zr_mask_bits mb[ZR_MAX_MASKS];
  for (int32_t k = 0; k < d->n_mask; k++) mb[k] = mask_bits_of(d->mask_f[k]);
  int64_t valid = 0, full = n / 8;
#ifdef __SSE2__
  valid = mask_bytes_sse2(cells, full, mb, d->n_mask, d->mask_nan, bits);
#else
  for (int64_t i = 0; i < full; i++) {
    uint32_t u[8];
    memcpy(u, cells + 8 * i, sizeof(u));
    unsigned byte = mask_byte(u, 8, mb, d->n_mask, d->mask_nan);
    bits[i] = (uint8_t)byte;
    valid += bit_count(byte);
  }
#endif
  if (n % 8) {
    uint32_t u[8];
    memcpy(u, cells + 8 * full, sizeof(uint32_t) * (size_t)(n % 8));
    unsigned byte = mask_byte(u, (int)(n % 8), mb, d->n_mask, d->mask_nan);
    bits[full] = (uint8_t)byte;
    valid += bit_count(byte);
  }
  return n - valid;
}

int zr_colbuf_append_repeat(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *elem, int64_t count) {
  if (count <= 0) return QL_OK;
  QL_RETURN_NOT_OK(zr_colbuf_append(b, d, elem));
  if (!b->width || count == 1) {
    for (int64_t k = 1; k < count; k++) QL_RETURN_NOT_OK(zr_colbuf_append(b, d, elem));
    return QL_OK;
  }
  /* Copy the decoded cell (and its validity) instead of decoding again. */
  int64_t first = b->n - 1;
  int is_null = b->valid && !b->valid[first];
  if (is_null) {
    for (int64_t k = 1; k < count; k++) QL_RETURN_NOT_OK(zr_colbuf_append(b, d, elem));
    return QL_OK;
  }
  QL_RETURN_NOT_OK(reserve_rows(b, count - 1));
  if (b->valid) memset(b->valid + b->n, 1, (size_t)(count - 1));
  uint8_t *cell = b->data + first * b->width;
  switch (b->width) {
    case 4: {
      uint32_t v;
      memcpy(&v, cell, 4);
      uint32_t *o = (uint32_t *)(void *)(cell + 4);
      for (int64_t k = 0; k < count - 1; k++) o[k] = v;
      break;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, cell, 8);
      uint64_t *o = (uint64_t *)(void *)(cell + 8);
      for (int64_t k = 0; k < count - 1; k++) o[k] = v;
      break;
    }
    default:
      for (int64_t k = 1; k < count; k++) memcpy(cell + k * b->width, cell, (size_t)b->width);
      break;
  }
  b->n += count - 1;
  return QL_OK;
}

/* Is [p, p+n) well-formed UTF-8 (no surrogates, no overlongs, <= U+10FFFF)? */
static int valid_utf8(const uint8_t *p, int64_t n) {
  int64_t i = 0;
  while (i < n) {
    uint8_t c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (len == 0 || c > 0xF4 || i + len > n) return 0;
    for (int k = 1; k < len; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return 0;
    }
    if (len == 3 && ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] >= 0xA0))) return 0;
    if (len == 4 && ((c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] >= 0x90))) return 0;
    i += len;
  }
  return 1;
}

int zr_colbuf_append_vlen(struct zr_colbuf *b, const struct zr_heap *heap, const uint8_t *base,
                          const int64_t *offsets, int64_t n) {
  return zr_colbuf_append_vlen_masked(b, NULL, heap, base, offsets, n);
}

int zr_colbuf_append_vlen_masked(struct zr_colbuf *b, const struct zr_decoder *d, const struct zr_heap *heap,
                                 const uint8_t *base, const int64_t *offsets, int64_t n) {
  const char *mask = d ? d->vlen_mask : NULL;
  size_t mask_len = mask ? strlen(mask) : 0;
  for (int64_t r = 0; r < n; r++) {
    uint64_t elem[2];
    memcpy(elem, base + 16 * offsets[r], 16);
    if (elem[1] > (uint64_t)heap->len || elem[0] > (uint64_t)heap->len - elem[1]) return QL_EDATA;
    const uint8_t *s = heap->data + elem[0];
    if (!valid_utf8(s, (int64_t)elem[1])) return QL_EDATA;
    QL_RETURN_NOT_OK(grow_rows(b));
    if (mask && elem[1] == mask_len && (mask_len == 0 || memcmp(s, mask, mask_len) == 0)) {
      QL_RETURN_NOT_OK(mark_null(b));
      b->offsets[b->n + 1] = (int32_t)b->data_len;
      b->n++;
      continue;
    }
    if (b->valid) b->valid[b->n] = 1;
    QL_RETURN_NOT_OK(reserve_bytes(b, (int64_t)elem[1]));
    if (elem[1]) memcpy(b->data + b->data_len, s, (size_t)elem[1]);
    b->data_len += (int64_t)elem[1];
    b->offsets[b->n + 1] = (int32_t)b->data_len;
    b->n++;
  }
  return QL_OK;
}

static uint8_t *pack_bits(const uint8_t *bytes, int64_t n) {
  uint8_t *bits = calloc((size_t)((n + 7) / 8) + 1, 1);
  if (!bits) return NULL;
  for (int64_t k = 0; k < n; k++) {
    if (bytes[k]) bits[k / 8] |= (uint8_t)(1u << (k % 8));
  }
  return bits;
}

int zr_colbuf_finish(struct zr_colbuf *b, struct ArrowArray *out, struct ql_error *error) {
  uint8_t *validity = NULL;
  if (b->valid) {
    validity = pack_bits(b->valid, b->n);
    if (!validity) return ql_error_set(error, QL_ENOMEM, "out of memory packing validity");
  }
  int rc;
  if (b->out == ZR_OUT_BOOL) {
    uint8_t *bits = pack_bits(b->data, b->n);
    if (!bits) {
      free(validity);
      return ql_error_set(error, QL_ENOMEM, "out of memory packing booleans");
    }
    free(b->data);
    b->data = NULL;
    rc = ql_array_init_fixed(out, b->n, b->null_count, validity, bits, error);
  } else if (!b->width) {
    rc = ql_array_init_binary(out, b->n, b->null_count, validity, b->offsets, b->data, error);
    b->offsets = NULL;
    b->data = NULL;
  } else {
    rc = ql_array_init_fixed(out, b->n, b->null_count, validity, b->data, error);
    b->data = NULL;
  }
  zr_colbuf_free(b);
  return rc;
}
