/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: v2 numcodecs filters, decoded with exact values (the
 * xarray-written stores of tests/test_tables.py check them against
 * numcodecs itself; these pin the edges numcodecs leaves to NumPy). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numcodecs_filters.h"
#include "ql_test.h"
#include "qlink/lib/status.h"

static int parse(const char *text, struct zr_codec *c, struct ql_error *err) {
  json_t *j = json_loads(text, 0, NULL);
  memset(c, 0, sizeof(*c));
  int rc = zr_filter_parse(j, c, err);
  json_decref(j);
  return rc;
}

static void test_delta_wraps_integers(void) {
  struct ql_error err = {0};
  struct zr_codec c;
  QL_CHECK_OK(parse("{\"id\": \"delta\", \"dtype\": \"|u1\"}", &c, &err), err);
  /* 250, +10 (wraps to 4), -5 as 251, +0 */
  const uint8_t in[] = {250, 10, 251, 0};
  uint8_t *out = NULL;
  int64_t n = 0;
  QL_CHECK_OK(zr_filter_decode(&c, in, 4, &out, &n, &err), err);
  QL_CHECK_INT(n, 4);
  if (out) {
    QL_CHECK_INT(out[0], 250);
    QL_CHECK_INT(out[1], 4);
    QL_CHECK_INT(out[2], 255);
    QL_CHECK_INT(out[3], 255);
  }
  free(out);
  /* big-endian int16 deltas into little-endian int32 */
  QL_CHECK_OK(parse("{\"id\": \"delta\", \"dtype\": \"<i4\", \"astype\": \">i2\"}", &c, &err), err);
  const uint8_t be[] = {0xff, 0xfe, 0x00, 0x05}; /* -2, 5 */
  QL_CHECK_OK(zr_filter_decode(&c, be, 4, &out, &n, &err), err);
  QL_CHECK_INT(n, 8);
  int32_t v[2] = {0, 0};
  if (out) memcpy(v, out, 8);
  QL_CHECK_INT(v[0], -2);
  QL_CHECK_INT(v[1], 3);
  free(out);
}

static void test_fixedscaleoffset_casts(void) {
  struct ql_error err = {0};
  struct zr_codec c;
  QL_CHECK_OK(parse("{\"id\": \"fixedscaleoffset\", \"dtype\": \"<f8\", \"astype\": \"<u2\", \"scale\": 10, "
                    "\"offset\": 1000}",
                    &c, &err),
              err);
  const uint16_t in[] = {0, 5, 65535};
  uint8_t *out = NULL;
  int64_t n = 0;
  QL_CHECK_OK(zr_filter_decode(&c, (const uint8_t *)in, 6, &out, &n, &err), err);
  QL_CHECK_INT(n, 24);
  double d[3] = {0, 0, 0};
  if (out) memcpy(d, out, 24);
  QL_CHECK(d[0] == 1000.0 && d[1] == 1000.5 && d[2] == 7553.5);
  free(out);
  /* to an integer type: truncated toward zero; out of range is an error */
  QL_CHECK_OK(parse("{\"id\": \"fixedscaleoffset\", \"dtype\": \"|i1\", \"astype\": \"<i2\", \"scale\": 2, "
                    "\"offset\": 0}",
                    &c, &err),
              err);
  const int16_t small[] = {-7, 7, 300}; /* 300 / 2 = 150 > 127 */
  QL_CHECK_OK(zr_filter_decode(&c, (const uint8_t *)small, 4, &out, &n, &err), err);
  QL_CHECK_INT(n, 2);
  if (out) {
    QL_CHECK_INT((int8_t)out[0], -3);
    QL_CHECK_INT((int8_t)out[1], 3);
  }
  free(out);
  QL_CHECK_INT(zr_filter_decode(&c, (const uint8_t *)small, 6, &out, &n, &err), QL_EDATA);
  QL_CHECK(out == NULL);
  QL_CHECK(strstr(ql_error_message(&err), "element 2 does not fit") != NULL);
  ql_error_release(&err);
}

static void test_shuffle_keeps_leftover_bytes(void) {
  struct ql_error err = {0};
  struct zr_codec c;
  QL_CHECK_OK(parse("{\"id\": \"shuffle\", \"elementsize\": 2}", &c, &err), err);
  /* elements ab, cd shuffled to a c b d, then a leftover byte e */
  const uint8_t in[] = {'a', 'c', 'b', 'd', 'e'};
  uint8_t *out = NULL;
  int64_t n = 0;
  QL_CHECK_OK(zr_filter_decode(&c, in, 5, &out, &n, &err), err);
  QL_CHECK_INT(n, 5);
  QL_CHECK(out && memcmp(out, "abcde", 5) == 0);
  free(out);
}

static void test_identity_and_casts(void) {
  struct ql_error err = {0};
  struct zr_codec c;
  uint8_t *out = NULL;
  int64_t n = 0;
  const float f[] = {1.5f, -0.25f};
  QL_CHECK_OK(parse("{\"id\": \"bitround\", \"keepbits\": 3}", &c, &err), err);
  QL_CHECK_OK(zr_filter_decode(&c, (const uint8_t *)f, 8, &out, &n, &err), err);
  QL_CHECK(out == NULL && n == 8); /* the input as it is */
  QL_CHECK_OK(parse("{\"id\": \"quantize\", \"digits\": 2, \"dtype\": \"<f4\"}", &c, &err), err);
  QL_CHECK_OK(zr_filter_decode(&c, (const uint8_t *)f, 8, &out, &n, &err), err);
  QL_CHECK(out == NULL && n == 8);
  QL_CHECK_OK(parse("{\"id\": \"astype\", \"encode_dtype\": \"<f4\", \"decode_dtype\": \"<f8\"}", &c, &err), err);
  QL_CHECK_OK(zr_filter_decode(&c, (const uint8_t *)f, 8, &out, &n, &err), err);
  QL_CHECK_INT(n, 16);
  double d[2] = {0, 0};
  if (out) memcpy(d, out, 16);
  QL_CHECK(d[0] == 1.5 && d[1] == -0.25);
  free(out);
  QL_CHECK_INT(zr_filter_decode(&c, (const uint8_t *)f, 7, &out, &n, &err), QL_EDATA);
  QL_CHECK(strstr(ql_error_message(&err), "7 bytes is not a whole number of 4-byte elements") != NULL);
  ql_error_release(&err);
}

static void test_parse_errors(void) {
  struct ql_error err = {0};
  struct zr_codec c;
  QL_CHECK_INT(parse("{\"id\": \"categorize\", \"labels\": [\"a\"]}", &c, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "unsupported v2 filter 'categorize'");
  ql_error_release(&err);
  QL_CHECK_INT(parse("{\"id\": \"delta\"}", &c, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "filter 'delta': 'dtype' is missing or not a dtype string");
  ql_error_release(&err);
  QL_CHECK_INT(parse("{\"id\": \"quantize\", \"digits\": 1, \"dtype\": \"<f2\"}", &c, &err), QL_ENOTSUP);
  QL_CHECK_STR(ql_error_message(&err), "filter 'quantize': dtype '<f2' is not an integer, float32 or float64");
  ql_error_release(&err);
  QL_CHECK_INT(parse("{\"id\": \"shuffle\", \"elementsize\": 0}", &c, &err), QL_EDATA);
  ql_error_release(&err);
  QL_CHECK(zr_filter_known("fixedscaleoffset") && zr_filter_known("packbits") && !zr_filter_known("categorize") &&
           !zr_filter_known(NULL));
  /* dtype strings NumPy takes and zarr-python 3 stores as given */
  QL_CHECK_INT(parse("{\"id\": \"delta\", \"dtype\": \"f5\"}", &c, &err), QL_ENOTSUP);
  QL_CHECK(strstr(ql_error_message(&err), "filter 'delta': dtype") != NULL);
  ql_error_release(&err);
  QL_CHECK_INT(parse("{\"id\": \"delta\", \"dtype\": \"\"}", &c, &err), QL_EDATA);
  ql_error_release(&err);
}

/* numpy.cumsum(float64 deltas, out=float32) sums in float64 and casts
 * each step: 1e8 plus eight 1s is 100000008 (a float32), where a float32
 * running sum would stay at 1e8. The other way, float32 deltas into
 * float64, sum in float64 too. */
static void test_delta_accumulates_in_common_type(void) {
  struct ql_error err = {0};
  struct zr_codec c;
  uint8_t *out = NULL;
  int64_t n = 0;
  double d[9] = {1e8, 1, 1, 1, 1, 1, 1, 1, 1};
  QL_CHECK_OK(parse("{\"id\": \"delta\", \"dtype\": \"<f4\", \"astype\": \"<f8\"}", &c, &err), err);
  QL_CHECK_OK(zr_filter_decode(&c, (const uint8_t *)d, sizeof(d), &out, &n, &err), err);
  QL_CHECK_INT(n, 36);
  float f[9] = {0};
  if (out) memcpy(f, out, 36);
  QL_CHECK(f[0] == 1e8f && f[8] == 100000008.0f && f[4] == 100000000.0f);
  free(out);
  /* float32 1e8 and 1s into float64: float64 sums */
  float g[3] = {1e8f, 1, 1};
  QL_CHECK_OK(parse("{\"id\": \"delta\", \"dtype\": \"<f8\", \"astype\": \"<f4\"}", &c, &err), err);
  QL_CHECK_OK(zr_filter_decode(&c, (const uint8_t *)g, sizeof(g), &out, &n, &err), err);
  double h[3] = {0};
  if (out) memcpy(h, out, 24);
  QL_CHECK(h[1] == 100000001.0 && h[2] == 100000002.0);
  free(out);
  /* float32 deltas into int16: a float32 sum, truncated at each step */
  float k[3] = {1.75f, 1.5f, -0.5f};
  QL_CHECK_OK(parse("{\"id\": \"delta\", \"dtype\": \"<i2\", \"astype\": \"<f4\"}", &c, &err), err);
  QL_CHECK_OK(zr_filter_decode(&c, (const uint8_t *)k, sizeof(k), &out, &n, &err), err);
  int16_t m[3] = {0};
  if (out) memcpy(m, out, 6);
  QL_CHECK(m[0] == 1 && m[1] == 3 && m[2] == 2);
  free(out);
  ql_error_release(&err);
}

/* "i2", "int16", "=i2" and "<i2" are one dtype; ">i2" is big-endian */
static void test_numpy_dtype_names(void) {
  struct ql_error err = {0};
  struct zr_codec c;
  const char *same[] = {"i2", "int16", "=i2", "<i2"};
  for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
    char j[96];
    snprintf(j, sizeof(j), "{\"id\": \"delta\", \"dtype\": \"%s\"}", same[i]);
    QL_CHECK_OK(parse(j, &c, &err), err);
    QL_CHECK(c.f_dtype.type == ZR_INT && c.f_dtype.size == 2 && c.f_dtype.big_endian == 0);
    QL_CHECK(c.f_astype.type == ZR_INT && c.f_astype.size == 2);
  }
  QL_CHECK_OK(parse("{\"id\": \"delta\", \"dtype\": \">i2\", \"astype\": \"u1\"}", &c, &err), err);
  QL_CHECK(c.f_dtype.big_endian == 1 && c.f_astype.type == ZR_UINT && c.f_astype.size == 1);
  QL_CHECK_OK(parse("{\"id\": \"astype\", \"encode_dtype\": \"float32\", \"decode_dtype\": \"f8\"}", &c, &err),
              err);
  QL_CHECK(c.f_astype.type == ZR_FLOAT && c.f_astype.size == 4 && c.f_dtype.size == 8);
  ql_error_release(&err);
}

/* numcodecs.PackBits().encode([1,0,1,1,0,0,0,0,1,1]) is 06 b0 c0: six
 * padding bits, then the bits MSB first */
static void test_packbits(void) {
  struct ql_error err = {0};
  struct zr_codec c;
  uint8_t *out = NULL;
  int64_t n = 0;
  QL_CHECK_OK(parse("{\"id\": \"packbits\"}", &c, &err), err);
  QL_CHECK(c.f_dtype.type == ZR_BOOL && c.f_dtype.size == 1);
  const uint8_t enc[] = {0x06, 0xb0, 0xc0};
  QL_CHECK_OK(zr_filter_decode(&c, enc, 3, &out, &n, &err), err);
  const uint8_t want[] = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1};
  QL_CHECK_INT(n, 10);
  QL_CHECK(out && memcmp(out, want, 10) == 0);
  free(out);
  const uint8_t empty[] = {0x00};
  QL_CHECK_OK(zr_filter_decode(&c, empty, 1, &out, &n, &err), err);
  QL_CHECK_INT(n, 0);
  free(out);
  const uint8_t bad[] = {0x08, 0xff};
  QL_CHECK_INT(zr_filter_decode(&c, bad, 2, &out, &n, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "filter 'packbits': 8 padding bits (at most 7, and 0 for no data)");
  QL_CHECK_INT(zr_filter_decode(&c, bad, 0, &out, &n, &err), QL_EDATA);
  QL_CHECK_STR(ql_error_message(&err), "filter 'packbits': empty chunk (no padding byte)");
  QL_CHECK_INT(zr_filter_decode(&c, (const uint8_t *)"\x03", 1, &out, &n, &err), QL_EDATA);
  QL_CHECK(zr_filter_is_array_codec(ZR_CODEC_F_PACKBITS) && zr_filter_is_array_codec(ZR_CODEC_F_DELTA) &&
           !zr_filter_is_array_codec(ZR_CODEC_F_SHUFFLE) && !zr_filter_is_array_codec(ZR_CODEC_ZSTD));
  ql_error_release(&err);
}

int main(void) {
  test_delta_wraps_integers();
  test_fixedscaleoffset_casts();
  test_shuffle_keeps_leftover_bytes();
  test_identity_and_casts();
  test_parse_errors();
  test_numpy_dtype_names();
  test_delta_accumulates_in_common_type();
  test_packbits();
  QL_TEST_END();
}
