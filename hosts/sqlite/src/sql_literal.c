/* SPDX-License-Identifier: Apache-2.0 */
/* qlink SQLite host: SQL literals from module-argument text (sql_literal.h). */
#include "sql_literal.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

#define EXPECTED "expected an integer, a real, a 'string', NULL, TRUE or FALSE"

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
static int is_ident(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' || (unsigned char)c >= 0x80;
}

/* Case-insensitive: is s[0..n) the keyword `kw` (upper case)? */
static int is_keyword(const char *s, size_t n, const char *kw) {
  if (strlen(kw) != n) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i] >= 'a' && s[i] <= 'z' ? (char)(s[i] - 'a' + 'A') : s[i];
    if (c != kw[i]) return 0;
  }
  return 1;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 if none (overlong
 * forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_char(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  size_t len;
  uint32_t cp, min;
  if ((s[0] & 0xE0) == 0xC0) len = 2, cp = s[0] & 0x1Fu, min = 0x80;
  else if ((s[0] & 0xF0) == 0xE0) len = 3, cp = s[0] & 0x0Fu, min = 0x800;
  else if ((s[0] & 0xF8) == 0xF0) len = 4, cp = s[0] & 0x07u, min = 0x10000;
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

static int parse_string(const char *s, size_t n, struct qls_sql_literal *out, const char **why) {
  /* s[0] is the opening quote */
  char *buf = malloc(n);
  if (!buf) return QL_ENOMEM;
  size_t o = 0, i = 1;
  for (;;) {
    if (i >= n) {
      free(buf);
      *why = "a string without its closing quote";
      return QL_EINVAL;
    }
    if (s[i] == '\'') {
      if (i + 1 < n && s[i + 1] == '\'') {
        buf[o++] = '\'';
        i += 2;
        continue;
      }
      i++;
      break;
    }
    if (s[i] == '\0') {
      free(buf);
      *why = "a NUL byte in the string";
      return QL_EINVAL;
    }
    size_t k = utf8_char((const unsigned char *)s + i, n - i);
    if (k == 0) {
      free(buf);
      *why = "a string that is not valid UTF-8";
      return QL_EINVAL;
    }
    memcpy(buf + o, s + i, k);
    o += k;
    i += k;
  }
  if (i != n) {
    free(buf);
    *why = "text after the string's closing quote (adjacent strings are not concatenated)";
    return QL_EINVAL;
  }
  buf[o] = '\0';
  out->kind = QLS_LIT_TEXT;
  out->text = buf;
  out->text_len = o;
  return QL_OK;
}

/* The "C" locale, so that strtod reads '.' whatever the process set. */
static locale_t g_c_locale;
static pthread_once_t g_c_locale_once = PTHREAD_ONCE_INIT;
static void make_c_locale(void) { g_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

static int parse_real(const char *s, size_t n, int negative, struct qls_sql_literal *out, const char **why) {
  char stack[128];
  char *buf = n < sizeof stack ? stack : malloc(n + 1);
  if (!buf) return QL_ENOMEM;
  memcpy(buf, s, n);
  buf[n] = '\0';
  pthread_once(&g_c_locale_once, make_c_locale);
  locale_t old = g_c_locale ? uselocale(g_c_locale) : (locale_t)0;
  errno = 0;
  char *end = NULL;
  double d = strtod(buf, &end);
  int overflow = errno == ERANGE && isinf(d);
  int whole = end == buf + n;
  if (g_c_locale) uselocale(old);
  if (buf != stack) free(buf);
  if (!whole) { /* the syntax was checked: only a missing locale gets here */
    *why = "a real this process cannot convert (no \"C\" locale)";
    return QL_EINVAL;
  }
  if (overflow) {
    *why = "a real outside the float64 range";
    return QL_EINVAL;
  }
  out->kind = QLS_LIT_REAL;
  out->f64 = negative ? -d : d;
  return QL_OK;
}

static int parse_number(const char *s, size_t n, int negative, struct qls_sql_literal *out, const char **why) {
  if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    uint64_t v = 0;
    size_t digits = n - 2;
    for (size_t i = 2; i < n; i++) {
      int h = hex_value(s[i]);
      if (h < 0) {
        *why = "a hexadecimal integer with a character that is no hex digit";
        return QL_EINVAL;
      }
      v = (v << 4) | (uint64_t)h;
    }
    if (digits == 0 || digits > 16) {
      *why = digits ? "a hexadecimal integer of more than 16 digits" : "0x without hex digits";
      return QL_EINVAL;
    }
    int64_t i64 = (int64_t)v; /* two's complement, as SQLite reads it */
    if (negative && i64 == INT64_MIN) {
      *why = "an integer outside the int64 range";
      return QL_EINVAL;
    }
    out->kind = QLS_LIT_INT;
    out->i64 = negative ? -i64 : i64;
    return QL_OK;
  }
  /* digits [. digits] [exp] | . digits [exp] */
  size_t i = 0, int_digits = 0, frac_digits = 0;
  while (i < n && is_digit(s[i])) i++, int_digits++;
  int real = 0;
  if (i < n && s[i] == '.') {
    real = 1;
    i++;
    while (i < n && is_digit(s[i])) i++, frac_digits++;
  }
  if (int_digits + frac_digits == 0) {
    *why = "not a SQL literal: " EXPECTED;
    return QL_EINVAL;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    real = 1;
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t exp_digits = 0;
    while (i < n && is_digit(s[i])) i++, exp_digits++;
    if (exp_digits == 0) {
      *why = "a real whose exponent has no digits";
      return QL_EINVAL;
    }
  }
  if (i != n) {
    *why = is_ident(s[i]) || s[i] == '.' ? "a number followed by other characters"
                                          : "text after the number (one literal per argument)";
    return QL_EINVAL;
  }
  if (real) return parse_real(s, n, negative, out, why);
  /* magnitude up to 2^63 for a negative value, 2^63 - 1 otherwise */
  uint64_t limit = negative ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX, v = 0;
  for (size_t k = 0; k < n; k++) {
    uint64_t d = (uint64_t)(s[k] - '0');
    if (v > (limit - d) / 10) {
      *why = "an integer outside the int64 range";
      return QL_EINVAL;
    }
    v = v * 10 + d;
  }
  out->kind = QLS_LIT_INT;
  out->i64 = negative ? (v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  return QL_OK;
}

int qls_sql_literal_parse(const char *s, size_t n, struct qls_sql_literal *out, const char **why) {
  memset(out, 0, sizeof *out);
  *why = NULL;
  if (memchr(s, '\0', n)) {
    *why = "a NUL byte in the argument";
    return QL_EINVAL;
  }
  while (n && is_space(*s)) s++, n--;
  while (n && is_space(s[n - 1])) n--;
  if (n == 0) {
    *why = "an empty argument: " EXPECTED;
    return QL_EINVAL;
  }
  if (s[0] == '\'') return parse_string(s, n, out, why);
  if (is_keyword(s, n, "NULL")) {
    out->kind = QLS_LIT_NULL;
    return QL_OK;
  }
  if (is_keyword(s, n, "TRUE") || is_keyword(s, n, "FALSE")) {
    out->kind = QLS_LIT_BOOL;
    out->i64 = n == 4;
    return QL_OK;
  }
  int negative = 0;
  size_t i = 0;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    i = 1;
    while (i < n && is_space(s[i])) i++;
  }
  if (i < n && (is_digit(s[i]) || (s[i] == '.' && i + 1 < n && is_digit(s[i + 1]))))
    return parse_number(s + i, n - i, negative, out, why);
  if (s[0] == '"' || s[0] == '`' || s[0] == '[') {
    *why = "a quoted identifier, not a string: strings take single quotes";
  } else if ((s[0] == 'x' || s[0] == 'X') && n > 1 && s[1] == '\'') {
    *why = "a blob, which is not among the literals accepted: " EXPECTED;
  } else {
    *why = "not a SQL literal: " EXPECTED;
  }
  return QL_EINVAL;
}

void qls_sql_literal_free(struct qls_sql_literal *lit) {
  free(lit->text);
  lit->text = NULL;
  lit->text_len = 0;
}

ql_expr_id qls_sql_literal_expr(struct ql_ir_builder *b, const struct qls_sql_literal *lit) {
  struct ql_scalar v;
  memset(&v, 0, sizeof v);
  switch (lit->kind) {
    case QLS_LIT_INT: return ql_ir_literal_i64(b, lit->i64);
    case QLS_LIT_REAL: return ql_ir_literal_f64(b, lit->f64);
    case QLS_LIT_BOOL:
      v.format = "b";
      v.value.i64 = lit->i64;
      return ql_ir_literal(b, &v);
    case QLS_LIT_TEXT:
      v.format = "u";
      v.value.bytes.data = lit->text;
      v.value.bytes.size = (int64_t)lit->text_len;
      return ql_ir_literal(b, &v);
    default: return ql_ir_literal_null(b, "n"); /* QLS_LIT_NULL */
  }
}

int qls_sql_literal_arg(struct ql_ir_builder *b, const char *what, int32_t position, const char *s, ql_expr_id *out,
                        struct ql_error *error) {
  struct qls_sql_literal lit;
  const char *why = NULL;
  size_t n = strlen(s);
  int rc = qls_sql_literal_parse(s, n, &lit, &why);
  if (rc == QL_ENOMEM) return ql_error_set(error, QL_ENOMEM, "out of memory");
  if (rc != QL_OK) {
    size_t shown = n;
    if (shown > 64) { /* cut at a character boundary */
      shown = 64;
      while (shown > 0 && ((unsigned char)s[shown] & 0xC0) == 0x80) shown--;
    }
    return ql_error_set(error, QL_EINVAL, "%s argument %d `%.*s%s`: %s", what, (int)position, (int)shown, s,
                        shown < n ? "..." : "", why);
  }
  *out = qls_sql_literal_expr(b, &lit);
  qls_sql_literal_free(&lit);
  return ql_ir_builder_status(b, error);
}
