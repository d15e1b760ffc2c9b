/* SPDX-License-Identifier: Apache-2.0 */
/* qlink_zarr: CF "<unit> since <date>" parsing. See cf.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "qlink/error.h"
#include "qlink/lib/status.h"
#include "qlink_zarr/cf.h"

/* Howard Hinnant's days_from_civil (public domain algorithm). */
int64_t zr_days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* The unit before " since ": nanoseconds per unit, and which of xarray's
 * two decoders knows its spelling. pandas (xarray's first try) lower-cases
 * it and appends a missing plural "s"; cftime (xarray's fallback) takes
 * its own lists, lower-cased, without nanoseconds. */
static int64_t unit_ns(const char *u, size_t n, int32_t *pandas, int32_t *cftime, int32_t *sub_ms) {
  static const struct {
    const char *name;
    int64_t ns;
  } units[] = {{"days", 86400000000000LL}, {"hours", 3600000000000LL},   {"minutes", 60000000000LL},
               {"seconds", 1000000000LL},  {"milliseconds", 1000000LL}, {"microseconds", 1000LL},
               {"nanoseconds", 1LL}};
  /* cftime 1.6's unit lists (day_units ... microsec_units) */
  static const struct {
    const char *name;
    int64_t ns;
  } cf[] = {{"day", 86400000000000LL},  {"days", 86400000000000LL}, {"d", 86400000000000LL},
            {"hour", 3600000000000LL},  {"hours", 3600000000000LL}, {"hr", 3600000000000LL},
            {"hrs", 3600000000000LL},   {"h", 3600000000000LL},     {"minute", 60000000000LL},
            {"minutes", 60000000000LL}, {"min", 60000000000LL},     {"mins", 60000000000LL},
            {"second", 1000000000LL},   {"seconds", 1000000000LL},  {"sec", 1000000000LL},
            {"secs", 1000000000LL},     {"s", 1000000000LL},        {"milliseconds", 1000000LL},
            {"millisecond", 1000000LL}, {"millisec", 1000000LL},    {"millisecs", 1000000LL},
            {"msec", 1000000LL},        {"msecs", 1000000LL},       {"ms", 1000000LL},
            {"microseconds", 1000LL},   {"microsecond", 1000LL},    {"microsec", 1000LL},
            {"microsecs", 1000LL}};
  char buf[16];
  *pandas = *cftime = *sub_ms = 0;
  if (n == 0 || n > sizeof(buf) - 2) return 0;
  for (size_t i = 0; i < n; i++) buf[i] = (char)tolower((unsigned char)u[i]);
  buf[n] = '\0';
  int64_t ns = 0;
  for (size_t i = 0; i < sizeof(cf) / sizeof(cf[0]); i++) {
    if (strcmp(cf[i].name, buf) == 0) {
      ns = cf[i].ns;
      *cftime = 1;
    }
  }
  if (buf[n - 1] != 's') {
    buf[n] = 's';
    buf[n + 1] = '\0';
  }
  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    if (strcmp(units[i].name, buf) == 0) {
      ns = units[i].ns;
      *pandas = 1;
    }
  }
  *sub_ms = ns > 0 && ns <= 1000000LL;
  return ns;
}

static const char *read_int(const char *p, int min_digits, int max_digits, int64_t *out) {
  int n = 0;
  int64_t v = 0;
  while (isdigit((unsigned char)*p) && n < max_digits) {
    v = v * 10 + (*p - '0');
    p++;
    n++;
  }
  if (n < min_digits) return NULL;
  *out = v;
  return p;
}

static int is_leap(int64_t y, int julian) { return julian ? y % 4 == 0 : (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int days_in_month(int64_t y, int64_t m, int julian) {
  static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 ? 28 + is_leap(y, julian) : dm[m - 1];
}

/* Days since 1970-01-01 of a date of the Julian calendar (astronomical
 * year numbering), through the Julian day number. */
static int64_t days_from_julian(int64_t y, int64_t m, int64_t d) {
  int64_t a = (14 - m) / 12;
  int64_t yy = y + 4800 - a, mm = m + 12 * a - 3;
  int64_t q = yy >= 0 ? yy / 4 : -((-yy + 3) / 4); /* floor */
  return d + (153 * mm + 2) / 5 + 365 * yy + q - 32083 - 2440588;
}

static int count_digits(const char *p) {
  int n = 0;
  while (isdigit((unsigned char)p[n])) n++;
  return n;
}

/* The date: "Y-M-D", "Y/M/D" (pandas reads both), or ISO 8601's basic
 * "YYYYMMDD" (xarray's _BASIC_PATTERN; pandas reads it), with an optional
 * leading minus. Returns the rest of the text, NULL if malformed. */
static const char *read_date(const char *p, struct zr_cf_units *u, int *basic) {
  int neg = 0;
  *basic = 0;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  if (count_digits(p) == 8 && !neg) {
    p = read_int(p, 4, 4, &u->year);
    p = read_int(p, 2, 2, &u->month);
    p = read_int(p, 2, 2, &u->day);
    *basic = 1;
    return p;
  }
  p = read_int(p, 1, 6, &u->year);
  if (!p) return NULL;
  if (neg) u->year = -u->year;
  char sep = *p;
  if (sep == '-' || sep == '/') {
    p = read_int(p + 1, 1, 2, &u->month);
    if (!p) return NULL;
    if (*p == sep) {
      p = read_int(p + 1, 1, 2, &u->day);
      if (!p) return NULL;
    }
  }
  return p;
}

/* The fraction of a second after '.': nanoseconds (digits past the ninth
 * dropped, as pandas does) and cftime's int(float("0.<digits>") * 1e6). */
static const char *read_fraction(const char *p, struct zr_cf_units *u) {
  char text[48] = "0.";
  size_t n = 2;
  int64_t scale = 100000000;
  while (isdigit((unsigned char)*p)) {
    u->frac_ns += (*p - '0') * scale;
    scale /= 10;
    if (n < sizeof(text) - 1) text[n++] = *p;
    p++;
  }
  text[n] = '\0';
  u->frac_us = (int64_t)(strtod(text, NULL) * 1e6);
  return p;
}

static const char *read_time(const char *p, struct zr_cf_units *u, int basic) {
  const char *q = p + 1;
  while (*q == ' ') q++;
  if (basic && count_digits(q) == 6) {
    q = read_int(q, 2, 2, &u->hour);
    q = read_int(q, 2, 2, &u->minute);
    return read_int(q, 2, 2, &u->second);
  }
  if (basic && count_digits(q) == 4) {
    q = read_int(q, 2, 2, &u->hour);
    return read_int(q, 2, 2, &u->minute);
  }
  const char *r = read_int(q, 1, 2, &u->hour);
  if (r && *r == ':') {
    p = read_int(r + 1, 1, 2, &u->minute);
    if (!p) return NULL;
    if (*p == ':') {
      p = read_int(p + 1, 1, 2, &u->second);
      if (!p) return NULL;
      if (*p == '.') p = read_fraction(p + 1, u);
    }
    return p;
  }
  if (r && (*r == '\0' || *r == ' ' || *r == 'Z' || *r == '+' || *r == '-')) return r; /* "2000-01-01 0": hour only */
  u->hour = 0;
  return p;
}

/* A "+HH", "+HHMM" or "+HH:MM" offset east of UTC, in minutes. */
static const char *read_offset(const char *p, int64_t *minutes) {
  int sign = *p == '-' ? -1 : 1;
  int64_t th = 0, tm = 0;
  const char *q = read_int(p + 1, 1, 2, &th);
  if (!q) return NULL;
  if (*q == ':') q++;
  const char *q2 = read_int(q, 2, 2, &tm);
  if (q2) q = q2;
  *minutes = sign * (th * 60 + tm);
  return q;
}

static const char *read_zone(const char *p, struct zr_cf_units *u) {
  if (*p == 'Z') return p + 1;
  if (strncasecmp(p, "UTC", 3) == 0 || strncasecmp(p, "GMT", 3) == 0) {
    p += 3;
    if (*p == '+' || *p == '-') {
      /* "UTC+1": pandas (dateutil) reads a POSIX zone, whose offset is
       * west of UTC: 1 hour behind */
      int64_t minutes;
      p = read_offset(p, &minutes);
      if (!p) return NULL;
      u->tz_minutes = -minutes;
      return p;
    }
    const char *q = p;
    while (*q == ' ') q++;
    if (*q == '+' || *q == '-') {
      /* "UTC +1": dateutil keeps UTC and drops the offset */
      int64_t ignored;
      return read_offset(q, &ignored);
    }
    return p;
  }
  if (*p == '+' || *p == '-') return read_offset(p, &u->tz_minutes);
  return p;
}

int zr_cf_parse_units(const char *units, struct zr_cf_units *u) {
  memset(u, 0, sizeof(*u));
  u->month = u->day = 1;
  const char *since = strstr(units, " since ");
  if (!since) return QL_EINVAL;
  const char *w = units;
  while (*w == ' ') w++;
  const char *we = since;
  while (we > w && we[-1] == ' ') we--;
  if (we <= w) return QL_EINVAL;
  u->ns_per_unit = unit_ns(w, (size_t)(we - w), &u->pandas_unit, &u->cftime_unit, &u->sub_ms_unit);
  if (u->ns_per_unit == 0) return QL_EINVAL;
  const char *p = since + 7;
  while (*p == ' ') p++;
  int basic;
  p = read_date(p, u, &basic);
  if (!p) return QL_EINVAL;
  if (*p == 'T' || *p == ' ') {
    p = read_time(p, u, basic);
    if (!p) return QL_EINVAL;
  }
  while (*p == ' ') p++;
  p = read_zone(p, u);
  if (!p) return QL_EINVAL;
  while (*p == ' ') p++;
  if (*p != '\0') return QL_EINVAL;
  if (u->month < 1 || u->month > 12 || u->day < 1 || u->day > 31 || u->hour > 23 || u->minute > 59 || u->second > 60) {
    return QL_EINVAL;
  }
  return QL_OK;
}

/* 128-bit nanoseconds since the epoch of a proleptic Gregorian date. */
static __int128 ref_ns_wide(const struct zr_cf_units *u) {
  int64_t days = zr_days_from_civil(u->year, u->month, u->day);
  __int128 s = (__int128)days * 86400 + u->hour * 3600 + u->minute * 60 + u->second - u->tz_minutes * 60;
  return s * 1000000000 + u->frac_ns;
}

int zr_cf_pandas_ref_ns(const struct zr_cf_units *u, int32_t proleptic, int64_t *ref_ns) {
  /* year 0 does not exist in the standard calendar; pandas refuses a
   * day past the month's end */
  if (u->year == 0) return QL_EOVERFLOW;
  if (u->day > days_in_month(u->year, u->month, 0)) return QL_EINVAL;
  __int128 ns = ref_ns_wide(u);
  /* pandas' Timestamp in ns: 1677-09-21 00:12:43.145224193 ..
   * 2262-04-11 23:47:16.854775807 (INT64_MIN is NaT) */
  if (ns <= (__int128)INT64_MIN || ns > (__int128)INT64_MAX) return QL_EOVERFLOW;
  /* xarray decodes the standard calendar with pandas only from the
   * Gregorian reform on (its _check_date_is_after_shift) */
  if (!proleptic && ns < (__int128)ZR_REFORM_DAYS * 86400 * 1000000000) return QL_EOVERFLOW;
  *ref_ns = (int64_t)ns;
  return QL_OK;
}

int zr_cf_cftime_ref_us(const struct zr_cf_units *u, int32_t proleptic, int64_t *ref_us) {
  if (!u->cftime_unit) return QL_EINVAL;
  int64_t y = u->year;
  int julian = 0;
  if (!proleptic) {
    /* no year 0 (cftime's has_year_zero=False): year -1 is astronomical 0 */
    if (y == 0) return QL_EINVAL;
    if (y < 0) y += 1;
    julian = y < 1582 || (y == 1582 && (u->month < 10 || (u->month == 10 && u->day < 15)));
    /* 1582-10-05 .. 1582-10-14 do not exist */
    if (y == 1582 && u->month == 10 && u->day >= 5 && u->day < 15) return QL_EINVAL;
  }
  if (u->day > days_in_month(y, u->month, julian)) return QL_EINVAL;
  if (y < -200000 || y > 200000) return QL_EOVERFLOW; /* keeps the microseconds within int64 */
  int64_t days = julian ? days_from_julian(y, u->month, u->day) : zr_days_from_civil(y, u->month, u->day);
  int64_t s = days * 86400 + u->hour * 3600 + u->minute * 60 + u->second - u->tz_minutes * 60;
  *ref_us = s * 1000000 + u->frac_us;
  return QL_OK;
}

int zr_cf_parse_time_units(const char *units, int64_t *ns_per_unit, int64_t *ref_ns, int64_t *year, int64_t *month,
                           int64_t *day) {
  struct zr_cf_units u;
  QL_RETURN_NOT_OK(zr_cf_parse_units(units, &u));
  *ns_per_unit = u.ns_per_unit;
  *year = u.year;
  *month = u.month;
  *day = u.day;
  return zr_cf_pandas_ref_ns(&u, 1, ref_ns);
}
