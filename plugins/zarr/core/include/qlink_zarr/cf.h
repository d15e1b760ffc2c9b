/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: decoding stored elements into SQL values the way xarray
 * decodes them by default (CF conventions).
 *
 * Sources: xarray's coding/variables.py (CFMaskCoder, CFScaleOffsetCoder,
 * _choose_float_dtype, BooleanCoder, _Unsigned) and coding/times.py
 * (decode_cf_datetime with the default use_cftime=None, time_unit "ns";
 * decode_cf_timedelta for variables carrying a "dtype": "timedelta64[..]"
 * attribute), and the CF conventions' "units: <unit> since <date>".
 *
 * xarray's rules, as followed here:
 * - masked values: every value of _FillValue and missing_value
 *   (v2: the .zarray fill_value is _FillValue; v3: the "_FillValue"
 *   attribute, floats base64-encoded), compared after casting the data to
 *   the decoded type; a masked cell becomes SQL NULL. One departure from
 *   xarray (which keeps NaN fills out of its mask and leaves those cells
 *   NaN): when a float variable's _FillValue or missing_value is NaN, its
 *   NaN cells are masked too (SQL NULL), so count/avg/max and comparisons
 *   skip them as pandas does. A float variable with no fill value, or only
 *   non-NaN ones, keeps its NaNs as NaN. A NaN fill on an integer variable
 *   masks nothing.
 * - bool: cells equal to the _FillValue (v2: a non-null fill_value, so
 *   zarr-python's `false` masks every False cell, as in xarray) are NULL;
 *   xarray's column is then objects (True, False, NaN): here a bool column
 *   with NULLs. Fixed-width strings (UTF-32, bytes without _Encoding) of a
 *   v2 array with a non-null fill_value: cells equal to it are NULL.
 * - decoded type: floats keep their width (float16 becomes float32);
 *   integers with a fill value become float32 (<= 2 bytes) or float64;
 *   scale_factor / add_offset (JSON numbers) give float64, except an
 *   integer scale_factor alone on integers without a fill value, which is
 *   an int64 to xarray (_choose_float_dtype takes the scale's type): int64
 *   cells, element times scale, wrapping as numpy does. A one-element list
 *   stands for its element (xarray's column would be objects). Integers
 *   without either stay integers.
 * - "<unit> since <date>" with calendar standard, gregorian or
 *   proleptic_gregorian (or none) becomes timestamp[ns] as xarray's
 *   decode_cf_datetime does: through pandas when the unit is spelled as
 *   pandas knows it and the reference date is a timestamp[ns] (standard /
 *   gregorian: from 1582-10-15 on), integers multiplied exactly, floats as
 *   float64 times nanoseconds-per-unit, truncated; otherwise through cftime
 *   (references before 1677 or after 2262, the standard calendar Julian
 *   before the reform, cftime-only units such as "hrs"): the value as
 *   float64 times the unit's microseconds in long double, rounded to the
 *   microsecond as cftime does, plus the reference. A value whose date is
 *   not within timestamp[ns] (xarray keeps cftime objects) is QL_EOVERFLOW
 *   from zr_decode_value: a coordinate then stays numeric (model.c). Other
 *   calendars, year 0 in the standard calendar, units neither knows and
 *   reference dates only pandas' dateutil guesses at ("12:00 PM", "EST",
 *   day-first dates) stay numeric and keep units and calendar in the column
 *   metadata. Documented choice: an infinite time value is NULL (xarray's
 *   cftime fallback masks it, then gives the reference date).
 * - timedeltas (a "dtype": "timedelta64[X]" attribute with units exactly
 *   days, hours, ... nanoseconds, as xarray's CFTimedeltaCoder requires)
 *   become durations in X's unit (coarser than seconds: seconds); floats
 *   go to nanoseconds as decode_cf_timedelta does (units above seconds
 *   first into float64 seconds, then steps of 1000 in the value's own
 *   precision, truncated). Documented choice: a fraction finer than X is
 *   truncated (xarray switches the whole column to a finer unit).
 *
 * Thread-safety: decoders are immutable once built.
 */
#ifndef QLINK_ZARR_CF_H
#define QLINK_ZARR_CF_H

#include <jansson.h>
#include <stdint.h>

#include "qlink_zarr/array.h"

/* Output (Arrow) types. */
enum zr_out {
  ZR_OUT_BOOL = 1,
  ZR_OUT_I8, ZR_OUT_I16, ZR_OUT_I32, ZR_OUT_I64,
  ZR_OUT_U8, ZR_OUT_U16, ZR_OUT_U32, ZR_OUT_U64,
  ZR_OUT_F32, ZR_OUT_F64,
  ZR_OUT_TIMESTAMP, /* int64 in `out_unit_ns` ticks, no time zone */
  ZR_OUT_DURATION,  /* int64 in `out_unit_ns` ticks */
  ZR_OUT_UTF8,
  ZR_OUT_BINARY
};

#define ZR_MAX_MASKS 8

struct zr_decoder {
  struct zr_dtype in; /* element type, native order */
  int32_t out;        /* enum zr_out */
  char format[8];     /* Arrow format string of `out` */
  int32_t bool_from_int;
  int32_t n_mask;
  int32_t mask_declared; /* a missing_value string that is no number: masks nothing, yet promotes as a mask does */
  double mask_f[ZR_MAX_MASKS]; /* compared in the decoded float type */
  int64_t mask_i[ZR_MAX_MASKS]; /* compared as integers (time-like integers) */
  int32_t has_scale, has_offset;
  double scale, offset;
  /* CF datetime / timedelta */
  int32_t cf_time;     /* 1: numbers since a reference date */
  int32_t cf_duration; /* 1: numbers of a unit (timedelta) */
  int64_t ns_per_unit; /* of the stored numbers */
  int64_t ref_ns;      /* reference date, ns since the epoch */
  int64_t out_unit_ns; /* TIMESTAMP / DURATION output tick */
  int32_t time_kept_numeric; /* units looked like time but xarray would not decode to datetime64 */
  int32_t mask_nan;          /* 1: a float variable whose fill value is NaN; NaN cells are null
                                (one of the n_mask slots holds that NaN) */
  int32_t bytes_encoding;    /* fixed-width bytes with _Encoding (xarray decodes them to str):
                                0 none (binary), 1 UTF-8, 2 ASCII; output UTF8, validated */
  int32_t cftime; /* with cf_time: decoded as xarray's cftime fallback does (values in
                     microseconds of ref_us, rounded as cftime rounds) */
  int64_t ref_us;
  int32_t cftime_fix; /* cftime's 1-microsecond fix-up applies (units coarser than ms) */
  const uint8_t *string_mask; /* fixed-width strings: cells equal to these in.size bytes are null
                                 (the array's fill, which outlives the decoder); NULL: none */
  const char *vlen_mask; /* variable-length strings: the v2 fill_value (owned by the array's metadata);
                            cells equal to it are null through zr_colbuf_append_vlen_masked; NULL: none */
  int32_t int_scale; /* 1: an integer scale_factor alone on integers (no fill value, no add_offset):
                        int64 output, element times scale_i (xarray keeps the scale's int64 type) */
  int64_t scale_i;
};

/* One decoded value, for statistics and filters. */
struct zr_value {
  int32_t is_null;
  int32_t kind; /* 0: i (int64), 1: u (uint64), 2: f (double), ZR_VALUE_BYTES: s, len */
  int64_t i;
  uint64_t u;
  double f;
  const uint8_t *s; /* ZR_VALUE_BYTES: a string's bytes (borrowed; statistics only, model.h) */
  int64_t len;
};
#define ZR_VALUE_BYTES 3

/* Build the decoder of array `a` as xarray would decode it; with
 * `decode_times` 0, CF times stay numbers (xarray's cftime fallback).
 * Unsupported combinations are QL_ENOTSUP. */
int zr_decoder_init(const struct zr_array *a, int32_t decode_times, struct zr_decoder *out, struct ql_error *error);

/* Decode one element (native order) into a value; strings are not
 * representable (kind -1, is_null 0). QL_EOVERFLOW when a time does not fit
 * timestamp[ns]. */
int zr_decode_value(const struct zr_decoder *d, const uint8_t *elem, struct zr_value *out);

/* "<unit> since <date>" as read from the text, before any calendar. */
struct zr_cf_units {
  int64_t ns_per_unit;
  int32_t pandas_unit; /* pandas knows the unit's spelling (xarray's first decoder) */
  int32_t cftime_unit; /* cftime knows it (xarray's fallback; no nanoseconds) */
  int32_t sub_ms_unit; /* milliseconds or microseconds: cftime's 1-microsecond fix-up does not apply */
  int64_t year, month, day, hour, minute, second; /* as written (year: may be 0 or negative) */
  int64_t frac_ns;    /* fraction of the second in ns (digits past the ninth dropped) */
  int64_t frac_us;    /* the fraction as cftime reads it: int(float("0.<digits>") * 1e6) */
  int64_t tz_minutes; /* offset east of UTC */
};

/* 1582-10-15, the Gregorian reform, in days since 1970-01-01. */
#define ZR_REFORM_DAYS (-141427)

/* Parse "<unit> since <date>" (date "Y-M-D", "Y/M/D" or "YYYYMMDD", an
 * optional time "h:m:s.f", "hhmmss" or an hour, an optional zone "Z",
 * "+hh:mm", "UTC"). QL_EINVAL if not such units. */
int zr_cf_parse_units(const char *units, struct zr_cf_units *u);
/* The reference date as pandas reads it, in ns since the epoch (proleptic
 * Gregorian, zone applied). QL_EOVERFLOW where xarray's pandas decoder
 * gives up: outside timestamp[ns], year 0, or (`proleptic` 0: the standard
 * calendar) before 1582-10-15; QL_EINVAL for a day past the month's end. */
int zr_cf_pandas_ref_ns(const struct zr_cf_units *u, int32_t proleptic, int64_t *ref_ns);
/* The reference date as cftime reads it, in microseconds since the epoch:
 * `proleptic` 1: proleptic Gregorian with a year 0; 0: the standard
 * calendar (Julian before 1582-10-15, no year 0). QL_EINVAL where cftime
 * refuses the date or the unit (nanoseconds). */
int zr_cf_cftime_ref_us(const struct zr_cf_units *u, int32_t proleptic, int64_t *ref_us);

/* Parse "<unit> since <date>": nanoseconds per unit and the reference date
 * in ns since 1970-01-01 (time zone offsets applied). QL_EINVAL if not such
 * units; QL_EOVERFLOW if the date cannot be a timestamp[ns] (year 0 or
 * outside 1677-09-21..2262-04-11); *year receives the reference year. */
int zr_cf_parse_time_units(const char *units, int64_t *ns_per_unit, int64_t *ref_ns, int64_t *year, int64_t *month,
                           int64_t *day);

/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t zr_days_from_civil(int64_t y, int64_t m, int64_t d);

/* A growing column of decoded cells of one output type. */
struct zr_colbuf {
  int32_t out;
  int32_t width; /* bytes per value for fixed-width types */
  int64_t n, cap;
  uint8_t *data;  /* fixed-width values, or string bytes */
  uint8_t *valid; /* NULL until the first null */
  int64_t null_count;
  int32_t *offsets; /* UTF8 / BINARY */
  int64_t data_len, data_cap;
};

int zr_colbuf_init(struct zr_colbuf *b, int32_t out, int64_t capacity);
/* Bytes per value of output type `out` (enum zr_out); 0 for strings. */
int32_t zr_out_width(int32_t out);
void zr_colbuf_free(struct zr_colbuf *b);
/* Decode one element and append it. QL_EOVERFLOW (time out of range) or
 * QL_ENOMEM; QL_EDATA for invalid UTF-32. */
int zr_colbuf_append(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *elem);
/* Append the elements base + offsets[k] * in.size for k < n (the batch
 * gather of a scan); plain copies and masked floats take tight loops. */
int zr_colbuf_append_many(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *base, const int64_t *offsets,
                          int64_t n);
/* Make the NaN cells of a float variable's decoder null (a NaN slot in its
 * masks, mask_nan set); no change for other element types or when the
 * slot is there. */
void zr_decoder_mask_nan(struct zr_decoder *d);
/* 1 when the decoded cells of `d` are the stored elements' bytes, with
 * no nulls (no conversion, no mask): a scan may then hand the decoded
 * buffer itself to Arrow. */
int zr_decoder_is_identity(const struct zr_decoder *d);
/* 1 when `d` keeps float32 cells as stored and only masks fill values
 * (cells equal to a mask become null). */
int zr_decoder_is_masked_f32(const struct zr_decoder *d);
/* For such a decoder: the Arrow validity bitmap of `n` float32 cells
 * (bit set = valid) into `bits` ((n + 7) / 8 bytes); returns the number of
 * masked cells. */
int64_t zr_mask_bitmap_f32(const struct zr_decoder *d, const float *cells, int64_t n, uint8_t *bits);
/* The same for float64 cells kept as stored (fill values compared as
 * float64; a NaN fill masks every NaN): 1 when `d` is such a decoder. */
int zr_decoder_is_masked_f64(const struct zr_decoder *d);
/* For such a decoder: the validity bitmap of `n` float64 cells into `bits`
 * ((n + 7) / 8 bytes); returns the number of masked cells. */
int64_t zr_mask_bitmap_f64(const struct zr_decoder *d, const double *cells, int64_t n, uint8_t *bits);
/* 1 when some of the `n` cells (float32 / float64) is masked by such a
 * decoder (the same rule as the bitmaps), 0 when none is: a fast pass a
 * scan makes before building a bitmap, since most batches of a
 * NaN-filled variable hold no missing cell. */
int zr_mask_any_f32(const struct zr_decoder *d, const float *cells, int64_t n);
int zr_mask_any_f64(const struct zr_decoder *d, const double *cells, int64_t n);
/* Append the element `elem` decoded, `count` times (a repeated dimension
 * value; fixed-width outputs only, else as zr_colbuf_append). */
int zr_colbuf_append_repeat(struct zr_colbuf *b, const struct zr_decoder *d, const uint8_t *elem, int64_t count);
/* Same for variable-length strings: elements {offset, length} into `heap`.
 * QL_EDATA for bytes that are not UTF-8 or lie outside the heap. */
int zr_colbuf_append_vlen(struct zr_colbuf *b, const struct zr_heap *heap, const uint8_t *base,
                          const int64_t *offsets, int64_t n);
/* The same, cells equal to `d`'s vlen_mask (a v2 fill_value, as xarray
 * masks it) becoming null; `d` may be NULL (no mask). */
int zr_colbuf_append_vlen_masked(struct zr_colbuf *b, const struct zr_decoder *d, const struct zr_heap *heap,
                                 const uint8_t *base, const int64_t *offsets, int64_t n);
/* Move the buffers into an Arrow array (b is left empty). */
int zr_colbuf_finish(struct zr_colbuf *b, struct ArrowArray *out, struct ql_error *error);

#endif /* QLINK_ZARR_CF_H */
