/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: fill values and base64. See array.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"
#include "qlink_zarr/array.h"

static int b64_value(int c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int zr_base64_decode(const char *text, uint8_t **out, int64_t *n) {
  size_t len = strlen(text);
  while (len > 0 && text[len - 1] == '=') len--;
  uint8_t *buf = malloc(len * 3 / 4 + 1);
  if (!buf) return QL_ENOMEM;
  uint32_t acc = 0;
  int bits = 0;
  int64_t k = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64_value((unsigned char)text[i]);
    if (v < 0) {
      free(buf);
      return QL_EDATA;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf[k++] = (uint8_t)(acc >> bits);
    }
  }
  if (bits >= 6) {
    free(buf);
    return QL_EDATA;
  }
  *out = buf;
  *n = k;
  return QL_OK;
}

/* Round-to-nearest-even single to half precision. */
static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = (int32_t)((x >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = x & 0x7FFFFFu;
  if (((x >> 23) & 0xFF) == 0xFF) return (uint16_t)(sign | 0x7C00u | (mant ? 0x200u : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7C00u);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) half++;
  return (uint16_t)half;
}

static int parse_float_fill(const json_t *json, const struct zr_dtype *d, uint8_t *out, struct ql_error *error) {
  double v;
  if (json_is_number(json)) {
    v = json_number_value(json);
  } else if (json_is_string(json)) {
    const char *s = json_string_value(json);
    if (strcmp(s, "NaN") == 0) {
      v = NAN;
    } else if (strcmp(s, "Infinity") == 0) {
      v = INFINITY;
    } else if (strcmp(s, "-Infinity") == 0) {
      v = -INFINITY;
    } else if (s[0] == '0' && s[1] == 'x' && strlen(s) == 2 + 2 * (size_t)d->size) {
      /* v3 raw bit pattern, most significant byte first */
      uint64_t bits = strtoull(s + 2, NULL, 16);
      if (d->size == 8) memcpy(out, &bits, 8);
      if (d->size == 4) {
        uint32_t b32 = (uint32_t)bits;
        memcpy(out, &b32, 4);
      }
      if (d->size == 2) {
        uint16_t b16 = (uint16_t)bits;
        memcpy(out, &b16, 2);
      }
      return QL_OK;
    } else {
      return ql_error_set(error, QL_EDATA, "malformed float fill_value '%s'", s);
    }
  } else {
    return ql_error_set(error, QL_EDATA, "fill_value of a float array must be a number or a string");
  }
  if (d->size == 8) memcpy(out, &v, 8);
  if (d->size == 4) {
    float f = (float)v;
    memcpy(out, &f, 4);
  }
  if (d->size == 2) {
    uint16_t h = float_to_half((float)v);
    memcpy(out, &h, 2);
  }
  return QL_OK;
}

int zr_json_big_uint(const json_t *v, uint64_t *out) {
  if (!json_is_string(v)) return 0;
  const char *s = json_string_value(v);
  size_t n = strlen(s);
  if (n < 19 || n > 20) return 0;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    unsigned digit = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - digit) / 10) return 0;
    x = x * 10 + digit;
  }
  if (x <= (uint64_t)INT64_MAX) return 0;
  *out = x;
  return 1;
}

static int parse_int_fill(const json_t *json, const struct zr_dtype *d, uint8_t *out, struct ql_error *error) {
  int64_t v;
  uint64_t big;
  if (d->type == ZR_UINT && d->size == 8 && zr_json_big_uint(json, &big)) {
    memcpy(out, &big, 8);
    return QL_OK;
  }
  if (json_is_integer(json)) {
    v = (int64_t)json_integer_value(json);
  } else if (json_is_real(json) && json_real_value(json) == floor(json_real_value(json)) &&
             fabs(json_real_value(json)) < 9.2e18) {
    v = (int64_t)json_real_value(json);
  } else if (json_is_boolean(json)) {
    v = json_is_true(json);
  } else if (json_is_string(json) && strcmp(json_string_value(json), "NaT") == 0 &&
             (d->type == ZR_DATETIME || d->type == ZR_TIMEDELTA)) {
    v = INT64_MIN;
  } else {
    return ql_error_set(error, QL_EDATA, "fill_value of an integer array must be an integer");
  }
  switch (d->size) {
    case 1: {
      int8_t x = (int8_t)v;
      memcpy(out, &x, 1);
      break;
    }
    case 2: {
      int16_t x = (int16_t)v;
      memcpy(out, &x, 2);
      break;
    }
    case 4: {
      int32_t x = (int32_t)v;
      memcpy(out, &x, 4);
      break;
    }
    default: memcpy(out, &v, 8); break;
  }
  return QL_OK;
}

static void utf8_to_utf32(const char *s, uint8_t *out, int32_t size) {
  int32_t n = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (*p && (n + 1) * 4 <= size) {
    uint32_t cp;
    if (*p < 0x80) {
      cp = *p++;
    } else if ((*p & 0xE0) == 0xC0 && p[1]) {
      cp = ((uint32_t)(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
      p += 2;
    } else if ((*p & 0xF0) == 0xE0 && p[1] && p[2]) {
      cp = ((uint32_t)(p[0] & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
      p += 3;
    } else if ((*p & 0xF8) == 0xF0 && p[1] && p[2] && p[3]) {
      cp = ((uint32_t)(p[0] & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) | ((uint32_t)(p[2] & 0x3F) << 6) |
           (p[3] & 0x3F);
      p += 4;
    } else {
      break;
    }
    memcpy(out + 4 * n, &cp, 4);
    n++;
  }
}

int zr_fill_parse(const json_t *json, const struct zr_dtype *d, int32_t zarr_format, uint8_t *out,
                  int32_t *is_null, struct ql_error *error) {
  memset(out, 0, (size_t)d->size);
  *is_null = json == NULL || json_is_null(json);
  if (*is_null) return QL_OK;
  switch (d->type) {
    case ZR_BOOL:
      if (!json_is_boolean(json) && !json_is_integer(json)) {
        return ql_error_set(error, QL_EDATA, "fill_value of a bool array must be true or false");
      }
      out[0] = json_is_boolean(json) ? json_is_true(json) : json_integer_value(json) != 0;
      return QL_OK;
    case ZR_INT:
    case ZR_UINT:
    case ZR_DATETIME:
    case ZR_TIMEDELTA: return parse_int_fill(json, d, out, error);
    case ZR_FLOAT: return parse_float_fill(json, d, out, error);
    case ZR_BYTES: {
      if (!json_is_string(json)) return ql_error_set(error, QL_EDATA, "fill_value of a bytes array must be a string");
      const char *s = json_string_value(json);
      uint8_t *raw = NULL;
      int64_t n = 0;
      if (zr_base64_decode(s, &raw, &n) == QL_OK) {
        memcpy(out, raw, (size_t)(n < d->size ? n : d->size));
        free(raw);
      } else if (zarr_format == 3) {
        size_t l = strlen(s);
        memcpy(out, s, l < (size_t)d->size ? l : (size_t)d->size);
      } else {
        return ql_error_set(error, QL_EDATA, "fill_value of a bytes array is not base64");
      }
      return QL_OK;
    }
    case ZR_VLEN:
      /* elements are {offset, length}: all zero is the empty string */
      if (json_is_string(json) && json_string_value(json)[0] == '\0') return QL_OK;
      return ql_error_set(error, QL_ENOTSUP, "fill_value of a variable-length string array must be \"\" or null");
    case ZR_UNICODE:
      if (!json_is_string(json)) return ql_error_set(error, QL_EDATA, "fill_value of a string array must be a string");
      utf8_to_utf32(json_string_value(json), out, d->size);
      return QL_OK;
    default: return ql_error_set(error, QL_EINTERNAL, "fill_value for an unknown type");
  }
}
