/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: the Arrow -> SQLite type mapping (cells.h). */
#include "cells.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/arrow.h"
#include "qlink/lib/status.h"

void qls_buf_free(struct qls_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

static int buf_reserve(struct qls_buf *b, int64_t more) {
  if (b->len + more + 1 <= b->cap) return 0;
  int64_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + more + 1) cap *= 2;
  char *p = realloc(b->data, (size_t)cap);
  if (!p) return -1;
  b->data = p;
  b->cap = cap;
  return 0;
}

static int buf_put(struct qls_buf *b, const char *s, int64_t n) {
  if (buf_reserve(b, n)) return -1;
  memcpy(b->data + b->len, s, (size_t)n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

static int buf_str(struct qls_buf *b, const char *s) { return buf_put(b, s, (int64_t)strlen(s)); }

/* ------------------------------------------------------------ calendars */

/* Days since 1970-01-01 to a proleptic Gregorian date (Hinnant's algorithm). */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t yy = (int64_t)yoe + era * 400;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = (unsigned)(y - era * 400);
  unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static int64_t unit_per_second(char unit) {
  return unit == 's' ? 1 : unit == 'm' ? 1000 : unit == 'u' ? 1000000 : 1000000000;
}

static int unit_digits(char unit) { return unit == 's' ? 0 : unit == 'm' ? 3 : unit == 'u' ? 6 : 9; }

static int put_date(struct qls_buf *b, int64_t days) {
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  char tmp[48];
  int n = snprintf(tmp, sizeof tmp, y >= 0 && y <= 9999 ? "%04" PRId64 "-%02u-%02u" : "%+05" PRId64 "-%02u-%02u", y,
                   m, d);
  return buf_put(b, tmp, n);
}

/* HH:MM:SS[.frac] of `secs` seconds in the day plus `frac` units. */
static int put_time(struct qls_buf *b, int64_t secs, int64_t frac, char unit) {
  char tmp[48];
  int n = snprintf(tmp, sizeof tmp, "%02d:%02d:%02d", (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
  int digits = unit_digits(unit);
  if (frac > 0 && digits > 0) {
    char f[16];
    int64_t rest = frac;
    for (int k = digits - 1; k >= 0; k--, rest /= 10) f[k] = (char)('0' + rest % 10);
    int k = digits;
    while (k > 0 && f[k - 1] == '0') k--;
    f[k] = '\0';
    n += snprintf(tmp + n, sizeof tmp - (size_t)n, ".%s", f);
  }
  return buf_put(b, tmp, n);
}

int qls_format_timestamp(int64_t v, char unit, struct qls_buf *b) {
  int64_t per = unit_per_second(unit);
  int64_t secs = floor_div(v, per);
  int64_t frac = v - secs * per;
  int64_t days = floor_div(secs, 86400);
  int64_t sod = secs - days * 86400;
  if (put_date(b, days)) return QL_ENOMEM;
  if (buf_put(b, " ", 1)) return QL_ENOMEM;
  return put_time(b, sod, frac, unit) ? QL_ENOMEM : QL_OK;
}

static int digits_at(const char *s, int64_t size, int64_t at, int n, int64_t *out) {
  if (at + n > size) return -1;
  int64_t v = 0;
  for (int i = 0; i < n; i++) {
    char c = s[at + i];
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return 0;
}

int qls_parse_timestamp(const char *s, int64_t size, char unit, int64_t *out) {
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
  if (digits_at(s, size, 0, 4, &y) || size < 10 || s[4] != '-' || digits_at(s, size, 5, 2, &mo) || s[7] != '-' ||
      digits_at(s, size, 8, 2, &d))
    return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return -1;
  int64_t at = 10;
  if (at < size) {
    if (s[at] != ' ' || digits_at(s, size, at + 1, 2, &h) || at + 3 >= size || s[at + 3] != ':' ||
        digits_at(s, size, at + 4, 2, &mi))
      return -1;
    at += 6;
    if (at < size) {
      if (s[at] != ':' || digits_at(s, size, at + 1, 2, &sec)) return -1;
      at += 3;
      if (at < size) {
        if (s[at] != '.' || at + 1 >= size) return -1;
        int digits = unit_digits(unit), k = 0;
        for (at++; at < size; at++, k++) {
          if (s[at] < '0' || s[at] > '9') return -1;
          if (k < digits) frac = frac * 10 + (s[at] - '0');
        }
        for (; k < digits; k++) frac *= 10;
      }
    }
  }
  if (h > 23 || mi > 59 || sec > 59) return -1;
  int64_t days = days_from_civil(y, (unsigned)mo, (unsigned)d);
  int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec, scaled; /* |secs| < 2^38 for 4-digit years */
  if (__builtin_mul_overflow(secs, unit_per_second(unit), &scaled) || __builtin_add_overflow(scaled, frac, out))
    return -1; /* beyond the unit's int64 range (nanoseconds: 1677-09-21 .. 2262-04-11) */
  return 0;
}

/* -------------------------------------------------------------- formats */

static int is_int_format(const char *f) { return f[1] == '\0' && strchr("csilCSI", f[0]) != NULL; }

static int is_decimal128(const char *f) {
  if (strncmp(f, "d:", 2) != 0) return 0;
  const char *c = strchr(f + 2, ',');
  if (!c) return 0;
  const char *c2 = strchr(c + 1, ',');
  return c2 == NULL || strcmp(c2 + 1, "128") == 0;
}

const char *qls_decltype(const struct ArrowSchema *s) {
  const char *f = s->format;
  if (s->dictionary) {
    if (!is_int_format(f) && strcmp(f, "L") != 0) return NULL;
    return qls_decltype(s->dictionary);
  }
  if (strcmp(f, "n") == 0) return "";
  if (strcmp(f, "b") == 0 || is_int_format(f) || strcmp(f, "L") == 0) return "INTEGER";
  if (strcmp(f, "e") == 0 || strcmp(f, "f") == 0 || strcmp(f, "g") == 0) return "REAL";
  if (strcmp(f, "u") == 0 || strcmp(f, "U") == 0 || strcmp(f, "vu") == 0) return "TEXT";
  if (strcmp(f, "z") == 0 || strcmp(f, "Z") == 0 || strcmp(f, "vz") == 0 || strncmp(f, "w:", 2) == 0) return "BLOB";
  if (strncmp(f, "ts", 2) == 0 && strchr("smun", f[2]) && f[2] && f[3] == ':') return "TEXT";
  if (strcmp(f, "tdD") == 0 || strcmp(f, "tdm") == 0) return "TEXT";
  if ((strcmp(f, "tts") == 0 || strcmp(f, "ttm") == 0 || strcmp(f, "ttu") == 0 || strcmp(f, "ttn") == 0))
    return "TEXT";
  if (strncmp(f, "tD", 2) == 0 && f[2] && strchr("smun", f[2]) && f[3] == '\0') return "INTEGER";
  if (is_decimal128(f)) return "TEXT";
  if (strcmp(f, "+l") == 0 || strcmp(f, "+L") == 0 || strncmp(f, "+w:", 3) == 0 || strcmp(f, "+s") == 0 ||
      strcmp(f, "+m") == 0) {
    for (int64_t i = 0; i < s->n_children; i++) {
      if (qls_decltype(s->children[i]) == NULL) return NULL;
    }
    return "TEXT";
  }
  return NULL;
}

/* ---------------------------------------------------------------- cells */

static int valid(const struct ArrowArray *a, int64_t i) {
  if (a->null_count == 0 || a->n_buffers == 0 || a->buffers[0] == NULL) return 1;
  int64_t j = a->offset + i;
  return (((const uint8_t *)a->buffers[0])[j >> 3] >> (j & 7)) & 1;
}

static int64_t read_int(const char *f, const struct ArrowArray *a, int64_t i) {
  int64_t j = a->offset + i;
  const void *d = a->buffers[1];
  switch (f[0]) {
    case 'c': return ((const int8_t *)d)[j];
    case 'C': return ((const uint8_t *)d)[j];
    case 's': return ((const int16_t *)d)[j];
    case 'S': return ((const uint16_t *)d)[j];
    case 'i': return ((const int32_t *)d)[j];
    case 'I': return ((const uint32_t *)d)[j];
    default: return ((const int64_t *)d)[j];
  }
}

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* Decimal128 `lo`,`hi` (two's complement) with `scale` as exact text. */
static int put_decimal128(struct qls_buf *b, uint64_t lo, int64_t hi, int scale) {
  int neg = hi < 0;
  uint64_t uhi = (uint64_t)hi;
  if (neg) { /* negate the 128-bit value */
    lo = ~lo + 1;
    uhi = ~uhi + (lo == 0);
  }
  char digits[48];
  int n = 0;
  while (uhi != 0 || lo != 0) { /* divide by 10, 32 bits at a time */
    uint64_t parts[4] = {uhi >> 32, uhi & 0xffffffffu, lo >> 32, lo & 0xffffffffu};
    uint64_t rem = 0;
    for (int k = 0; k < 4; k++) {
      uint64_t cur = (rem << 32) | parts[k];
      parts[k] = cur / 10;
      rem = cur % 10;
    }
    uhi = (parts[0] << 32) | parts[1];
    lo = (parts[2] << 32) | parts[3];
    digits[n++] = (char)('0' + rem);
  }
  while (n <= scale) digits[n++] = '0';
  char out[64];
  int k = 0;
  if (neg) out[k++] = '-';
  for (int i = n - 1; i >= 0; i--) {
    out[k++] = digits[i];
    if (i == scale && scale > 0) out[k++] = '.';
  }
  return buf_put(b, out, k);
}

static int dec_scale(const char *f) {
  const char *c = strchr(f + 2, ',');
  return atoi(c + 1);
}

static int json_value(const struct ArrowSchema *s, const struct ArrowArray *a, int64_t i, struct qls_buf *b,
                      struct ql_error *error);

static int json_string(struct qls_buf *b, const char *p, int64_t n) {
  if (buf_put(b, "\"", 1)) return -1;
  for (int64_t k = 0; k < n; k++) {
    unsigned char c = (unsigned char)p[k];
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      if (buf_put(b, esc, 2)) return -1;
    } else if (c < 0x20) {
      int m = snprintf(esc, sizeof esc, "\\u%04x", c);
      if (buf_put(b, esc, m)) return -1;
    } else if (buf_put(b, (const char *)&p[k], 1)) {
      return -1;
    }
  }
  return buf_put(b, "\"", 1);
}

/* Read a leaf into `cell`, formatting into `b` (appending) when needed. */
static int leaf(const struct ArrowSchema *s, const struct ArrowArray *a, int64_t i, struct qls_cell *cell,
                struct qls_buf *b, struct ql_error *error) {
  const char *f = s->format;
  memset(cell, 0, sizeof *cell);
  if (s->dictionary) {
    if (!valid(a, i)) return QL_OK;
    int64_t k = strcmp(f, "L") == 0 ? (int64_t)((const uint64_t *)a->buffers[1])[a->offset + i] : read_int(f, a, i);
    if (!a->dictionary || k < 0 || k >= a->dictionary->length)
      return ql_error_set(error, QL_EDATA, "dictionary index %" PRId64 " out of range", k);
    return leaf(s->dictionary, a->dictionary, k, cell, b, error);
  }
  if (strcmp(f, "n") == 0 || !valid(a, i)) return QL_OK;
  int64_t j = a->offset + i;
  if (strcmp(f, "b") == 0) {
    cell->klass = QLS_INTEGER;
    cell->i = (((const uint8_t *)a->buffers[1])[j >> 3] >> (j & 7)) & 1;
  } else if (is_int_format(f)) {
    cell->klass = QLS_INTEGER;
    cell->i = read_int(f, a, i);
  } else if (strcmp(f, "L") == 0) {
    uint64_t u = ((const uint64_t *)a->buffers[1])[j];
    if (u <= (uint64_t)INT64_MAX) {
      cell->klass = QLS_INTEGER;
      cell->i = (int64_t)u;
    } else {
      cell->klass = QLS_REAL;
      cell->f = (double)u;
    }
  } else if (strcmp(f, "e") == 0 || strcmp(f, "f") == 0 || strcmp(f, "g") == 0) {
    double v = f[0] == 'g'   ? ((const double *)a->buffers[1])[j]
               : f[0] == 'f' ? (double)((const float *)a->buffers[1])[j]
                             : half_to_double(((const uint16_t *)a->buffers[1])[j]);
    if (!isnan(v)) {
      cell->klass = QLS_REAL;
      cell->f = v;
    }
  } else if (strcmp(f, "u") == 0 || strcmp(f, "z") == 0) {
    const int32_t *off = a->buffers[1];
    cell->klass = f[0] == 'u' ? QLS_TEXT : QLS_BLOB;
    cell->data = (const char *)a->buffers[2] + off[j];
    cell->size = off[j + 1] - off[j];
  } else if (strcmp(f, "U") == 0 || strcmp(f, "Z") == 0) {
    const int64_t *off = a->buffers[1];
    cell->klass = f[0] == 'U' ? QLS_TEXT : QLS_BLOB;
    cell->data = (const char *)a->buffers[2] + off[j];
    cell->size = off[j + 1] - off[j];
  } else if (strcmp(f, "vu") == 0 || strcmp(f, "vz") == 0) {
    const uint8_t *bytes;
    int64_t n;
    int rc = ql_array_view_at(a, i, &bytes, &n, error);
    if (rc != QL_OK) return rc;
    cell->klass = f[1] == 'u' ? QLS_TEXT : QLS_BLOB;
    cell->data = (const char *)bytes;
    cell->size = n;
  } else if (strncmp(f, "w:", 2) == 0) {
    int64_t w = atoll(f + 2);
    cell->klass = QLS_BLOB;
    cell->data = (const char *)a->buffers[1] + j * w;
    cell->size = w;
  } else if (strncmp(f, "ts", 2) == 0) {
    int64_t start = b->len;
    if (qls_format_timestamp(((const int64_t *)a->buffers[1])[j], f[2], b)) goto nomem;
    cell->klass = QLS_TEXT;
    cell->data = b->data + start;
    cell->size = b->len - start;
  } else if (strcmp(f, "tdD") == 0 || strcmp(f, "tdm") == 0) {
    int64_t days = f[2] == 'D' ? ((const int32_t *)a->buffers[1])[j]
                               : floor_div(((const int64_t *)a->buffers[1])[j], 86400000);
    int64_t start = b->len;
    if (put_date(b, days)) goto nomem;
    cell->klass = QLS_TEXT;
    cell->data = b->data + start;
    cell->size = b->len - start;
  } else if (strncmp(f, "tt", 2) == 0) {
    int64_t v = (f[2] == 's' || f[2] == 'm') ? ((const int32_t *)a->buffers[1])[j] : ((const int64_t *)a->buffers[1])[j];
    int64_t per = unit_per_second(f[2]);
    int64_t start = b->len;
    if (put_time(b, floor_div(v, per), v - floor_div(v, per) * per, f[2])) goto nomem;
    cell->klass = QLS_TEXT;
    cell->data = b->data + start;
    cell->size = b->len - start;
  } else if (strncmp(f, "tD", 2) == 0) {
    int64_t v = ((const int64_t *)a->buffers[1])[j];
    int64_t mul = 1000000000 / unit_per_second(f[2]);
    if ((v > 0 && v > INT64_MAX / mul) || (v < 0 && v < INT64_MIN / mul))
      return ql_error_set(error, QL_EOVERFLOW, "duration %" PRId64 " (%s) exceeds int64 nanoseconds", v, f);
    cell->klass = QLS_INTEGER;
    cell->i = v * mul;
  } else if (is_decimal128(f)) {
    const uint64_t *w = (const uint64_t *)a->buffers[1] + 2 * j;
    int64_t start = b->len;
    if (put_decimal128(b, w[0], (int64_t)w[1], dec_scale(f))) goto nomem;
    cell->klass = QLS_TEXT;
    cell->data = b->data + start;
    cell->size = b->len - start;
  } else if (f[0] == '+' && qls_decltype(s) != NULL) {
    int64_t start = b->len;
    int rc = json_value(s, a, i, b, error);
    if (rc != QL_OK) return rc;
    cell->klass = QLS_TEXT;
    cell->data = b->data + start;
    cell->size = b->len - start;
  } else {
    return ql_error_set(error, QL_EINVAL, "Arrow type '%s' has no SQLite mapping", f);
  }
  return QL_OK;
nomem:
  return ql_error_set(error, QL_ENOMEM, "out of memory formatting a '%s' value", f);
}

static int list_range(const char *f, const struct ArrowArray *a, int64_t j, const struct ArrowSchema *s, int64_t *lo,
                      int64_t *hi) {
  if (f[1] == 'l' || f[1] == 'm') {
    const int32_t *off = a->buffers[1];
    *lo = off[j];
    *hi = off[j + 1];
  } else if (f[1] == 'L') {
    const int64_t *off = a->buffers[1];
    *lo = off[j];
    *hi = off[j + 1];
  } else {
    int64_t w = atoll(s->format + 3);
    *lo = j * w;
    *hi = *lo + w;
  }
  return 0;
}

static int json_value(const struct ArrowSchema *s, const struct ArrowArray *a, int64_t i, struct qls_buf *b,
                      struct ql_error *error) {
  const char *f = s->format;
  if (!s->dictionary && f[0] == '+') {
    if (!valid(a, i)) return buf_str(b, "null") ? QL_ENOMEM : QL_OK;
    int64_t j = a->offset + i;
    if (f[1] == 's') {
      if (buf_str(b, "{")) return QL_ENOMEM;
      for (int64_t c = 0; c < s->n_children; c++) {
        if ((c && buf_str(b, ",")) ||
            json_string(b, s->children[c]->name ? s->children[c]->name : "",
                        (int64_t)strlen(s->children[c]->name ? s->children[c]->name : "")) ||
            buf_str(b, ":"))
          return QL_ENOMEM;
        int rc = json_value(s->children[c], a->children[c], j, b, error);
        if (rc != QL_OK) return rc;
      }
      return buf_str(b, "}") ? QL_ENOMEM : QL_OK;
    }
    int64_t lo, hi;
    list_range(f, a, j, s, &lo, &hi);
    if (f[1] == 'm') { /* map: entries struct of key, value */
      const struct ArrowSchema *es = s->children[0];
      const struct ArrowArray *ea = a->children[0];
      const char *kf = es->children[0]->format;
      int string_keys = !es->children[0]->dictionary && (strcmp(kf, "u") == 0 || strcmp(kf, "U") == 0);
      if (buf_str(b, string_keys ? "{" : "[")) return QL_ENOMEM;
      for (int64_t k = lo; k < hi; k++) {
        if (k > lo && buf_str(b, ",")) return QL_ENOMEM;
        if (!string_keys && buf_str(b, "[")) return QL_ENOMEM;
        int rc = json_value(es->children[0], ea->children[0], ea->offset + k, b, error);
        if (rc != QL_OK) return rc;
        if (buf_str(b, string_keys ? ":" : ",")) return QL_ENOMEM;
        rc = json_value(es->children[1], ea->children[1], ea->offset + k, b, error);
        if (rc != QL_OK) return rc;
        if (!string_keys && buf_str(b, "]")) return QL_ENOMEM;
      }
      return buf_str(b, string_keys ? "}" : "]") ? QL_ENOMEM : QL_OK;
    }
    if (buf_str(b, "[")) return QL_ENOMEM;
    for (int64_t k = lo; k < hi; k++) {
      if (k > lo && buf_str(b, ",")) return QL_ENOMEM;
      int rc = json_value(s->children[0], a->children[0], k, b, error);
      if (rc != QL_OK) return rc;
    }
    return buf_str(b, "]") ? QL_ENOMEM : QL_OK;
  }
  /* A leaf inside JSON: its cell, written as JSON. The cell may format into
   * `b` itself, so format it into a separate buffer. */
  struct qls_buf tmp = {0};
  struct qls_cell cell;
  int rc = leaf(s, a, i, &cell, &tmp, error);
  if (rc == QL_OK) {
    const char *lf = s->dictionary ? s->dictionary->format : f;
    char num[40];
    int n;
    switch (cell.klass) {
      case QLS_NULL: rc = buf_str(b, "null"); break;
      case QLS_INTEGER:
        if (strcmp(lf, "b") == 0) {
          rc = buf_str(b, cell.i ? "true" : "false");
        } else {
          n = snprintf(num, sizeof num, "%" PRId64, cell.i);
          rc = buf_put(b, num, n);
        }
        break;
      case QLS_REAL:
        if (isinf(cell.f)) {
          rc = buf_str(b, "null");
        } else {
          n = snprintf(num, sizeof num, "%.17g", cell.f);
          rc = buf_put(b, num, n);
        }
        break;
      case QLS_TEXT:
        rc = is_decimal128(lf) ? buf_put(b, cell.data, cell.size) : json_string(b, cell.data, cell.size);
        break;
      default: { /* BLOB: hex */
        rc = buf_str(b, "\"");
        for (int64_t k = 0; rc == 0 && k < cell.size; k++) {
          n = snprintf(num, sizeof num, "%02x", (unsigned char)cell.data[k]);
          rc = buf_put(b, num, n);
        }
        if (rc == 0) rc = buf_str(b, "\"");
      }
    }
    rc = rc ? ql_error_set(error, QL_ENOMEM, "out of memory writing JSON") : QL_OK;
  }
  qls_buf_free(&tmp);
  return rc;
}

int qls_cell_read(const struct ArrowSchema *schema, const struct ArrowArray *array, int64_t row,
                  struct qls_cell *out, struct qls_buf *scratch, struct ql_error *error) {
  scratch->len = 0;
  return leaf(schema, array, row, out, scratch, error);
}
