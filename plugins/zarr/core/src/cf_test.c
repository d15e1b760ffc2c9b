/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: CF decoding and metadata parsing with exact values. */
#include <math.h>
#include <string.h>

#include "ql_test.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"
#include "qlink_zarr/cf.h"

static int array_v2(const char *zarray, const char *zattrs, struct zr_array *a, struct ql_error *err) {
  json_t *z = json_loads(zarray, 0, NULL);
  json_t *t = zattrs ? json_loads(zattrs, 0, NULL) : NULL;
  int rc = zr_array_parse_v2("v", z, t, a, err);
  json_decref(z);
  if (t) json_decref(t);
  return rc;
}

static void test_time_units(void) {
  int64_t ns, ref, y, m, d;
  QL_CHECK_INT(zr_cf_parse_time_units("days since 2000-01-01", &ns, &ref, &y, &m, &d), QL_OK);
  QL_CHECK_INT(ns, 86400000000000LL);
  QL_CHECK_INT(ref, 946684800000000000LL);
  QL_CHECK_INT(zr_cf_parse_time_units("hour since 1980-01-14 14:00:00", &ns, &ref, &y, &m, &d), QL_OK);
  QL_CHECK_INT(ns, 3600000000000LL);
  QL_CHECK_INT(ref, 316706400000000000LL);
  QL_CHECK_INT(zr_cf_parse_time_units("seconds since 1970-01-01T01:00:00+01:00", &ns, &ref, &y, &m, &d), QL_OK);
  QL_CHECK_INT(ref, 0);
  QL_CHECK_INT(zr_cf_parse_time_units("Milliseconds since 1970-1-2 0:0:1.5", &ns, &ref, &y, &m, &d), QL_OK);
  QL_CHECK_INT(ns, 1000000);
  QL_CHECK_INT(ref, 86401500000000LL);
  QL_CHECK_INT(zr_cf_parse_time_units("hour since 0000-01-01 00:00:00", &ns, &ref, &y, &m, &d), QL_EOVERFLOW);
  QL_CHECK_INT(y, 0);
  QL_CHECK_INT(zr_cf_parse_time_units("days since 1500-01-01", &ns, &ref, &y, &m, &d), QL_EOVERFLOW);
  /* cftime's abbreviations, which xarray decodes through cftime */
  QL_CHECK_INT(zr_cf_parse_time_units("msec since 1970-01-01", &ns, &ref, &y, &m, &d), QL_OK);
  QL_CHECK_INT(ns, 1000000);
  QL_CHECK_INT(zr_cf_parse_time_units("hrs since 1970-01-01", &ns, &ref, &y, &m, &d), QL_OK);
  QL_CHECK_INT(ns, 3600000000000LL);
  QL_CHECK_INT(zr_cf_parse_time_units("D since 1970-01-01", &ns, &ref, &y, &m, &d), QL_OK);
  QL_CHECK_INT(ns, 86400000000000LL);
  QL_CHECK_INT(zr_cf_parse_time_units("s since 1970-01-01", &ns, &ref, &y, &m, &d), QL_OK);
  QL_CHECK_INT(ns, 1000000000LL);
  QL_CHECK_INT(zr_cf_parse_time_units("us since 1970-01-01", &ns, &ref, &y, &m, &d), QL_EINVAL); /* xarray refuses it */
  QL_CHECK_INT(zr_cf_parse_time_units("fortnights since 2000-01-01", &ns, &ref, &y, &m, &d), QL_EINVAL);
  QL_CHECK_INT(zr_cf_parse_time_units("days since yesterday", &ns, &ref, &y, &m, &d), QL_EINVAL);
  QL_CHECK_INT(zr_cf_parse_time_units("meters", &ns, &ref, &y, &m, &d), QL_EINVAL);
  /* found by the metadata fuzzer: no unit before " since " */
  QL_CHECK_INT(zr_cf_parse_time_units("  since 2000-01-01", &ns, &ref, &y, &m, &d), QL_EINVAL);
  QL_CHECK_INT(zr_days_from_civil(1970, 1, 1), 0);
  QL_CHECK_INT(zr_days_from_civil(2000, 3, 1), 11017);
}

static const char *ZARRAY_I2 =
    "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[4],\"dtype\":\"<i2\",\"fill_value\":-32767,\"order\":\"C\","
    "\"compressor\":null,\"filters\":null}";

static void test_mask_and_scale(void) {
  struct ql_error err = {0};
  struct zr_array a;
  struct zr_decoder d;
  struct zr_value v;
  /* int16 packed with scale/offset and a fill value -> float64 */
  QL_CHECK_OK(array_v2(ZARRAY_I2, "{\"scale_factor\":0.5,\"add_offset\":10.0,\"_ARRAY_DIMENSIONS\":[\"x\"]}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "g");
  int16_t raw = 4;
  zr_decode_value(&d, (const uint8_t *)&raw, &v);
  QL_CHECK(!v.is_null && v.f == 12.0);
  raw = -32767;
  zr_decode_value(&d, (const uint8_t *)&raw, &v);
  QL_CHECK(v.is_null);
  zr_array_free(&a);
  /* one-element lists, as netCDF conversions keep attributes; a longer one is refused */
  QL_CHECK_OK(array_v2(ZARRAY_I2, "{\"scale_factor\":[0.25],\"add_offset\":[1],\"_ARRAY_DIMENSIONS\":[\"x\"]}", &a,
                       &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  raw = 4;
  zr_decode_value(&d, (const uint8_t *)&raw, &v);
  QL_CHECK(!v.is_null && v.f == 2.0);
  zr_array_free(&a);
  QL_CHECK_OK(array_v2(ZARRAY_I2, "{\"scale_factor\":[0.25, 2],\"_ARRAY_DIMENSIONS\":[\"x\"]}", &a, &err), err);
  QL_CHECK_INT(zr_decoder_init(&a, 1, &d, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "scale_factor is not a number");
  ql_error_release(&err);
  zr_array_free(&a);
  /* bytes with _Encoding are text; an encoding other than utf-8 / ascii is refused by name */
  const char *zarray_s = "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"|S3\",\"fill_value\":null}";
  QL_CHECK_OK(array_v2(zarray_s, "{\"_Encoding\":\"UTF-8\",\"_ARRAY_DIMENSIONS\":[\"x\"]}", &a, &err), err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "u");
  QL_CHECK_INT(d.bytes_encoding, 1);
  zr_array_free(&a);
  QL_CHECK_OK(array_v2(zarray_s, "{\"_Encoding\":\"cp1252\",\"_ARRAY_DIMENSIONS\":[\"x\"]}", &a, &err), err);
  QL_CHECK_INT(zr_decoder_init(&a, 1, &d, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "_Encoding 'cp1252' is not supported (utf-8, ascii)");
  ql_error_release(&err);
  zr_array_free(&a);
  /* int16 with a fill value only -> float32 */
  QL_CHECK_OK(array_v2(ZARRAY_I2, "{\"_ARRAY_DIMENSIONS\":[\"x\"]}", &a, &err), err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "f");
  zr_array_free(&a);
  /* int16 without fill value stays int16 */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[4],\"chunks\":[4],\"dtype\":\"<i2\",\"fill_value\":null,"
                       "\"compressor\":null}",
                       NULL, &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "s");
  QL_CHECK(a.dims[0] == NULL);
  zr_array_free(&a);
  /* float32 with missing_value -1e34 (ferret's) and a NaN fill: both mask */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[4],\"chunks\":[4],\"dtype\":\"<f4\",\"fill_value\":\"NaN\","
                       "\"compressor\":null}",
                       "{\"missing_value\":-9.999999790214768e+33}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "f");
  QL_CHECK_INT(d.n_mask, 2);
  QL_CHECK_INT(d.mask_nan, 1);
  float fv = -1e34f;
  zr_decode_value(&d, (const uint8_t *)&fv, &v);
  QL_CHECK(v.is_null);
  fv = NAN;
  zr_decode_value(&d, (const uint8_t *)&fv, &v);
  QL_CHECK(v.is_null);
  fv = 2.5f;
  zr_decode_value(&d, (const uint8_t *)&fv, &v);
  QL_CHECK(!v.is_null && v.f == 2.5);
  zr_array_free(&a);
  /* float32 with a non-NaN fill: a stored NaN stays NaN */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[4],\"chunks\":[4],\"dtype\":\"<f4\",\"fill_value\":-1.0,"
                       "\"compressor\":null}",
                       "{}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_INT(d.n_mask, 1);
  QL_CHECK_INT(d.mask_nan, 0);
  fv = NAN;
  zr_decode_value(&d, (const uint8_t *)&fv, &v);
  QL_CHECK(!v.is_null && isnan(v.f));
  zr_array_free(&a);
  /* an integer with a NaN missing_value: nothing to mask, stays an integer */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[4],\"chunks\":[4],\"dtype\":\"<i4\",\"fill_value\":null,"
                       "\"compressor\":null}",
                       "{\"missing_value\":\"NaN\"}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_INT(d.n_mask, 0);
  QL_CHECK_STR(d.format, "i");
  zr_array_free(&a);
  /* v3: _FillValue attribute base64 float64 (xarray), zarr fill_value ignored for masking */
  json_t *meta = json_loads(
      "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],\"data_type\":\"float64\",\"chunk_grid\":{\"name\":"
      "\"regular\",\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":{\"name\":\"default\"},"
      "\"fill_value\":0.0,\"codecs\":[{\"name\":\"bytes\"}],\"attributes\":{\"_FillValue\":\"AAAAAICHw8A=\"},"
      "\"dimension_names\":[\"x\"]}",
      0, NULL);
  QL_CHECK_OK(zr_array_parse_v3("v", meta, &a, &err), err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_INT(d.n_mask, 1);
  QL_CHECK(d.mask_f[0] == -9999.0);
  double dv = 0.0;
  zr_decode_value(&d, (const uint8_t *)&dv, &v);
  QL_CHECK(!v.is_null && v.f == 0.0);
  char key[64];
  int64_t chunk[1] = {1};
  QL_CHECK_INT(zr_chunk_key(&a, chunk, key, sizeof(key)), QL_OK);
  QL_CHECK_STR(key, "v/c/1");
  zr_array_free(&a);
  json_decref(meta);
  /* bool stored as int8 with dtype attribute */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"|i1\",\"fill_value\":null,"
                       "\"compressor\":null,\"dimension_separator\":\"/\"}",
                       "{\"dtype\":\"bool\"}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "b");
  int64_t c2[1] = {0};
  QL_CHECK_INT(zr_chunk_key(&a, c2, key, sizeof(key)), QL_OK);
  QL_CHECK_STR(key, "v/0");
  zr_array_free(&a);
  ql_error_release(&err);
}

static void test_times(void) {
  struct ql_error err = {0};
  struct zr_array a;
  struct zr_decoder d;
  struct zr_value v;
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"<f8\",\"fill_value\":\"NaN\","
                       "\"compressor\":null}",
                       "{\"units\":\"hours since 1990-05-05 05:05:05\"}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "tsn:");
  double h = 0.1;
  zr_decode_value(&d, (const uint8_t *)&h, &v);
  /* 0.1 * 3.6e12 = 360000000000.00006 -> truncated */
  QL_CHECK_INT(v.i, 641883905000000000LL + 360000000000LL);
  h = NAN;
  zr_decode_value(&d, (const uint8_t *)&h, &v);
  QL_CHECK(v.is_null);
  h = 1e12;
  QL_CHECK_INT(zr_decode_value(&d, (const uint8_t *)&h, &v), QL_EOVERFLOW);
  zr_array_free(&a);
  /* year 0: kept numeric, never a wrong date */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"<f8\",\"fill_value\":\"NaN\","
                       "\"compressor\":null}",
                       "{\"units\":\"hour since 0000-01-01 00:00:00\"}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "g");
  QL_CHECK_INT(d.time_kept_numeric, 1);
  zr_array_free(&a);
  /* non-standard calendar: numeric */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"<i8\",\"fill_value\":null,"
                       "\"compressor\":null}",
                       "{\"units\":\"days since 2000-01-01\",\"calendar\":\"360_day\"}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "l");
  zr_array_free(&a);
  /* int64 days with NaT */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"<i8\",\"fill_value\":null,"
                       "\"compressor\":null}",
                       "{\"units\":\"days since 2000-01-01\",\"calendar\":\"proleptic_gregorian\"}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  int64_t days = 1;
  zr_decode_value(&d, (const uint8_t *)&days, &v);
  QL_CHECK_INT(v.i, 946771200000000000LL);
  days = INT64_MIN;
  zr_decode_value(&d, (const uint8_t *)&days, &v);
  QL_CHECK(v.is_null);
  zr_array_free(&a);
  /* timedelta: units hours, dtype timedelta64[s] */
  QL_CHECK_OK(array_v2("{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"<i8\",\"fill_value\":null,"
                       "\"compressor\":null}",
                       "{\"units\":\"hours\",\"dtype\":\"timedelta64[s]\"}", &a, &err),
              err);
  QL_CHECK_OK(zr_decoder_init(&a, 1, &d, &err), err);
  QL_CHECK_STR(d.format, "tDs");
  int64_t hours = 3;
  zr_decode_value(&d, (const uint8_t *)&hours, &v);
  QL_CHECK_INT(v.i, 10800);
  zr_array_free(&a);
  ql_error_release(&err);
}

static void test_metadata_errors(void) {
  struct ql_error err = {0};
  struct zr_array a;
  QL_CHECK_INT(array_v2("{\"zarr_format\":2,\"shape\":[4],\"chunks\":[0],\"dtype\":\"<f8\",\"fill_value\":null}", NULL,
                        &a, &err),
               QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "chunks[0]") != NULL);
  zr_array_free(&a);
  QL_CHECK_INT(array_v2("{\"zarr_format\":2,\"shape\":[4,4],\"chunks\":[2],\"dtype\":\"<f8\",\"fill_value\":null}",
                        NULL, &a, &err),
               QL_EDATA);
  zr_array_free(&a);
  QL_CHECK_INT(array_v2("{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"<f8\",\"fill_value\":null,"
                        "\"filters\":[{\"id\":\"categorize\"}]}",
                        NULL, &a, &err),
               QL_ENOTSUP);
  QL_CHECK(strstr(ql_error_message(&err), "unsupported v2 filter 'categorize'") != NULL);
  zr_array_free(&a);
  /* a supported filter without its parameters */
  QL_CHECK_INT(array_v2("{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"<f8\",\"fill_value\":null,"
                        "\"filters\":[{\"id\":\"delta\"}]}",
                        NULL, &a, &err),
               QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "filter 'delta': 'dtype' is missing") != NULL);
  zr_array_free(&a);
  QL_CHECK_INT(array_v2("{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"<f8\",\"fill_value\":\"oops\"}",
                        NULL, &a, &err),
               QL_EDATA);
  zr_array_free(&a);
  /* consolidated v2 with a key escaping the store */
  json_t *root = json_loads("{\"metadata\":{\"../x/.zarray\":{}},\"zarr_consolidated_format\":1}", 0, NULL);
  struct zr_group g;
  QL_CHECK_INT(zr_group_from_consolidated("mem", root, &g, &err), QL_EINVAL);
  QL_CHECK(strstr(ql_error_message(&err), "outside the store") != NULL);
  zr_group_free(&g);
  json_decref(root);
  ql_error_release(&err);
}

/* The validity bitmap of masked float32 cells equals a plain float compare
 * (x == mask): -0.0 matches a 0 mask, a NaN mask matches nothing unless
 * mask_nan (a NaN fill value) masks every NaN, several masks,
 * lengths that are not whole bytes. */
static void test_mask_bitmap_f32(void) {
  float cells[203];
  for (int i = 0; i < 203; i++) cells[i] = (float)(i % 7) - 3.0f;
  cells[5] = -0.0f;
  cells[17] = NAN;
  cells[40] = -1e34f;
  cells[41] = 1e34f;
  cells[202] = -1e34f;
  cells[150] = -NAN;
  /* the last two: a NaN fill value (mask_nan), whose NaN cells are masked */
  const double masks[6][2] = {{-1e34, 0}, {0.0, 2.0}, {NAN, 3.0}, {-3.0, -1e34}, {NAN, 3.0}, {NAN, 0}};
  const int32_t n_masks[6] = {1, 2, 2, 2, 2, 1};
  for (int t = 0; t < 6; t++) {
    struct zr_decoder d;
    memset(&d, 0, sizeof(d));
    d.n_mask = n_masks[t];
    d.mask_nan = t >= 4;
    for (int k = 0; k < d.n_mask; k++) d.mask_f[k] = masks[t][k];
    for (int n = 197; n <= 203; n++) {
      uint8_t bits[32];
      int64_t nulls = zr_mask_bitmap_f32(&d, cells, n, bits);
      int64_t want_nulls = 0, wrong = 0;
      for (int i = 0; i < n; i++) {
        int masked = 0;
        for (int k = 0; k < d.n_mask; k++) masked |= cells[i] == (float)d.mask_f[k];
        masked |= d.mask_nan && isnan(cells[i]);
        want_nulls += masked;
        wrong += ((bits[i / 8] >> (i % 8)) & 1) == masked;
      }
      QL_CHECK_INT(nulls, want_nulls);
      QL_CHECK_INT(wrong, 0);
    }
  }
}

/* float64 cells: a -9999 mask, and a NaN fill (mask_nan) masking every NaN. */
static void test_mask_bitmap_f64(void) {
  double cells[19];
  for (int i = 0; i < 19; i++) cells[i] = i * 0.5;
  cells[3] = NAN;
  cells[9] = -9999.0;
  cells[18] = -NAN;
  struct zr_decoder d;
  memset(&d, 0, sizeof(d));
  d.in.type = ZR_FLOAT;
  d.in.size = 8;
  d.out = ZR_OUT_F64;
  d.n_mask = 1;
  d.mask_f[0] = -9999.0;
  QL_CHECK_INT(zr_decoder_is_masked_f64(&d), 1);
  uint8_t bits[3];
  QL_CHECK_INT(zr_mask_bitmap_f64(&d, cells, 19, bits), 1);
  QL_CHECK_INT(bits[0], 0xff);
  QL_CHECK_INT(bits[1], 0xfd);
  QL_CHECK_INT(bits[2], 0x07);
  d.n_mask = 2;
  d.mask_f[1] = NAN;
  d.mask_nan = 1;
  QL_CHECK_INT(zr_mask_bitmap_f64(&d, cells, 19, bits), 3);
  QL_CHECK_INT(bits[0], 0xf7);
  QL_CHECK_INT(bits[1], 0xfd);
  QL_CHECK_INT(bits[2], 0x03);
  d.has_scale = 1;
  QL_CHECK_INT(zr_decoder_is_masked_f64(&d), 0);
}

/* The "any masked" passes agree with the bitmaps: one masked cell at each
 * position of arrays longer and shorter than a vector stride (first cell,
 * a stride edge, the scalar tail), -0.0 against a 0 mask, a NaN mask that
 * only a NaN fill (mask_nan) turns on, float and double cells. */
static void test_mask_any(void) {
  enum { N = 200 };
  float f[N];
  double g[N];
  uint8_t bits[N / 8 + 1];
  struct zr_decoder d;
  memset(&d, 0, sizeof(d));
  d.n_mask = 2;
  d.mask_f[0] = NAN;
  d.mask_f[1] = -9999.0;
  int64_t wrong = 0, checked = 0;
  for (int nan_fill = 0; nan_fill <= 1; nan_fill++) {
    d.mask_nan = nan_fill;
    for (int n = 0; n <= N; n += (n < 140 ? 1 : 29)) {
      for (int at = -1; at < n; at++) {
        for (int kind = 0; kind < 3; kind++) {
          for (int i = 0; i < n; i++) {
            f[i] = (float)(i % 13) + 0.5f;
            g[i] = (double)(i % 13) + 0.5;
          }
          if (at >= 0) {
            f[at] = kind == 0 ? NAN : kind == 1 ? -9999.0f : -0.0f;
            g[at] = kind == 0 ? NAN : kind == 1 ? -9999.0 : -0.0;
          }
          int want_f = zr_mask_bitmap_f32(&d, f, n, bits) > 0;
          int want_g = zr_mask_bitmap_f64(&d, g, n, bits) > 0;
          wrong += zr_mask_any_f32(&d, f, n) != want_f;
          wrong += zr_mask_any_f64(&d, g, n) != want_g;
          /* the expectation itself: only a -9999 cell, or a NaN under a NaN fill */
          int masked = at >= 0 && (kind == 1 || (kind == 0 && nan_fill));
          wrong += want_f != masked;
          wrong += want_g != masked;
          checked++;
        }
      }
    }
  }
  QL_CHECK_INT(wrong, 0);
  QL_CHECK(checked > 10000);
  /* a 0 mask matches -0.0 (as x == 0 does) */
  d.n_mask = 1;
  d.mask_nan = 0;
  d.mask_f[0] = 0.0;
  for (int i = 0; i < N; i++) {
    f[i] = 1.0f;
    g[i] = 1.0;
  }
  f[N - 70] = -0.0f;
  g[N - 70] = -0.0;
  QL_CHECK_INT(zr_mask_any_f32(&d, f, N), 1);
  QL_CHECK_INT(zr_mask_any_f64(&d, g, N), 1);
  QL_CHECK_INT(zr_mask_any_f32(&d, f, N - 70), 0);
  QL_CHECK_INT(zr_mask_any_f64(&d, g, N - 70), 0);
}

int main(void) {
  test_mask_bitmap_f32();
  test_mask_any();
  test_mask_bitmap_f64();
  test_time_units();
  test_mask_and_scale();
  test_times();
  test_metadata_errors();
  QL_TEST_END();
}
