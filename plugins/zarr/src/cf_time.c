/* qlink_zarr: CF "<unit> since <date>" parsing. See cf.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cf.h"
#include "qlink/error.h"

/* Howard Hinnant's days_from_civil (public domain algorithm). */
int64_t zr_days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int64_t unit_ns(const char *u, size_t n) {
  static const struct {
    const char *name;
    int64_t ns;
  } units[] = {{"days", 86400000000000LL}, {"hours", 3600000000000LL}, {"minutes", 60000000000LL},
               {"seconds", 1000000000LL},  {"milliseconds", 1000000LL}, {"microseconds", 1000LL},
               {"nanoseconds", 1LL}};
  char buf[16];
  if (n == 0 || n > sizeof(buf) - 2) return 0;
  for (size_t i = 0; i < n; i++) buf[i] = (char)tolower((unsigned char)u[i]);
  buf[n] = '\0';
  /* Abbreviations xarray decodes through cftime when pandas refuses them
   * (cftime 1.6's unit lists; "us" and "ns" are not among them). */
  static const struct {
    const char *name;
    int64_t ns;
  } aliases[] = {{"d", 86400000000000LL}, {"hr", 3600000000000LL},   {"hrs", 3600000000000LL}, {"h", 3600000000000LL},
                 {"min", 60000000000LL},  {"mins", 60000000000LL},   {"sec", 1000000000LL},    {"secs", 1000000000LL},
                 {"s", 1000000000LL},     {"msec", 1000000LL},       {"msecs", 1000000LL},     {"ms", 1000000LL},
                 {"millisec", 1000000LL}, {"millisecs", 1000000LL},  {"microsec", 1000LL},     {"microsecs", 1000LL}};
  for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
    if (strcmp(aliases[i].name, buf) == 0) return aliases[i].ns;
  }
  /* xarray lower-cases and appends a missing plural "s" */
  if (buf[n - 1] != 's') {
    buf[n] = 's';
    buf[n + 1] = '\0';
  }
  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    if (strcmp(units[i].name, buf) == 0) return units[i].ns;
  }
  return 0;
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

static int days_in_month(int64_t y, int64_t m) {
  static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 ? 28 + leap : dm[m - 1];
}

int zr_cf_parse_time_units(const char *units, int64_t *ns_per_unit, int64_t *ref_ns, int64_t *year, int64_t *month,
                           int64_t *day) {
  const char *since = strstr(units, " since ");
  if (!since) return QL_EINVAL;
  const char *u = units;
  while (*u == ' ') u++;
  const char *ue = since;
  while (ue > u && ue[-1] == ' ') ue--;
  if (ue <= u) return QL_EINVAL;
  *ns_per_unit = unit_ns(u, (size_t)(ue - u));
  if (*ns_per_unit == 0) return QL_EINVAL;
  const char *p = since + 7;
  while (*p == ' ') p++;
  int64_t y, mo = 1, d = 1, h = 0, mi = 0, s = 0, frac_ns = 0;
  int neg = 0;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  p = read_int(p, 1, 6, &y);
  if (!p) return QL_EINVAL;
  if (neg) y = -y;
  if (*p == '-') {
    p = read_int(p + 1, 1, 2, &mo);
    if (!p) return QL_EINVAL;
    if (*p == '-') {
      p = read_int(p + 1, 1, 2, &d);
      if (!p) return QL_EINVAL;
    }
  }
  if (*p == 'T' || *p == ' ') {
    const char *q = p + 1;
    while (*q == ' ') q++;
    const char *r = read_int(q, 1, 2, &h);
    if (r && *r == ':') {
      p = r;
      p = read_int(p + 1, 1, 2, &mi);
      if (!p) return QL_EINVAL;
      if (*p == ':') {
        p = read_int(p + 1, 1, 2, &s);
        if (!p) return QL_EINVAL;
        if (*p == '.') {
          p++;
          int64_t scale = 100000000;
          while (isdigit((unsigned char)*p)) {
            frac_ns += (*p - '0') * scale;
            scale /= 10;
            p++;
          }
        }
      }
    } else if (r && (*r == '\0' || *r == ' ')) {
      p = r; /* "2000-01-01 0" style hour only */
    } else {
      h = 0;
    }
  }
  while (*p == ' ') p++;
  int64_t tz_ns = 0;
  if (*p == 'Z' || strncasecmp(p, "UTC", 3) == 0 || strncasecmp(p, "GMT", 3) == 0) {
    p += *p == 'Z' ? 1 : 3;
  }
  if (*p == '+' || *p == '-') {
    int sign = *p == '-' ? -1 : 1;
    int64_t th = 0, tm = 0;
    const char *q = read_int(p + 1, 1, 2, &th);
    if (!q) return QL_EINVAL;
    if (*q == ':') q++;
    const char *q2 = read_int(q, 2, 2, &tm);
    if (q2) q = q2;
    p = q;
    tz_ns = sign * (th * 3600 + tm * 60) * 1000000000LL;
  }
  while (*p == ' ') p++;
  if (*p != '\0') return QL_EINVAL;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return QL_EINVAL;
  *year = y;
  *month = mo;
  *day = d;
  if (y != 0 && d > days_in_month(y, mo)) return QL_EINVAL;
  /* timestamp[ns] covers 1677-09-21 .. 2262-04-11; year 0 does not exist
   * in the standard calendar (xarray / cftime refuse it) */
  if (y <= 1677 || y >= 2262) return QL_EOVERFLOW;
  int64_t days = zr_days_from_civil(y, mo, d);
  *ref_ns = ((days * 86400 + h * 3600 + mi * 60 + s) * 1000000000LL) + frac_ns - tz_ns;
  return QL_OK;
}
