/* SPDX-License-Identifier: Apache-2.0 */
/* Small string helpers shared by libqlink's folders. */
#include "text.h"

#include <stdlib.h>
#include <string.h>

#include "qlink/lib/status.h"

char *ql_strndup(const char *s, size_t n) {
  if (!s) return NULL;
  char *copy = malloc(n + 1);
  if (!copy) return NULL;
  memcpy(copy, s, n);
  copy[n] = '\0';
  return copy;
}

char *ql_strdup(const char *s) { return s ? ql_strndup(s, strlen(s)) : NULL; }

static int ql_hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int ql_percent_decode(const char *s, size_t n, const char *what, char **out, struct ql_error *error) {
  *out = NULL;
  char *buf = malloc(n + 1);
  if (!buf) return ql_error_set(error, QL_ENOMEM, "out of memory decoding %s", what);
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] != '%') {
      buf[o++] = s[i];
      continue;
    }
    if (i + 2 >= n) {
      free(buf);
      return ql_error_set(error, QL_EINVAL, "bad percent escape in %s '%.*s': '%%' needs two hex digits", what,
                          (int)n, s);
    }
    int h = ql_hex_value(s[i + 1]), l = ql_hex_value(s[i + 2]);
    if (h < 0 || l < 0 || (h == 0 && l == 0)) {
      free(buf);
      return ql_error_set(error, QL_EINVAL, "bad percent escape '%%%c%c' in %s '%.*s'", s[i + 1], s[i + 2], what,
                          (int)n, s);
    }
    buf[o++] = (char)(h * 16 + l);
    i += 2;
  }
  buf[o] = '\0';
  *out = buf;
  return QL_OK;
}

int ql_path_normalize(const char *path, const char *what, char **out, struct ql_error *error) {
  *out = NULL;
  size_t n = strlen(path);
  char *buf = malloc(n + 1);
  if (!buf) return ql_error_set(error, QL_ENOMEM, "out of memory normalising %s", what);
  size_t o = 0; /* buf[0..o) holds the kept segments joined by '/' */
  const char *p = path;
  while (*p) {
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 0 || (len == 1 && p[0] == '.')) {
      /* empty or "." segment: drop */
    } else if (len == 2 && p[0] == '.' && p[1] == '.') {
      if (o == 0) {
        free(buf);
        return ql_error_set(error, QL_EINVAL, "%s '%s' climbs above its root with '..'", what, path);
      }
      while (o > 0 && buf[o - 1] != '/') o--;
      if (o > 0) o--; /* the separator before the dropped segment */
    } else {
      if (o > 0) buf[o++] = '/';
      memcpy(buf + o, p, len);
      o += len;
    }
    p += len;
    if (*p == '/') p++;
  }
  buf[o] = '\0';
  *out = buf;
  return QL_OK;
}

int ql_text_check_nul(const char *text, size_t len, const char *what, struct ql_error *error) {
  what = what ? what : "text";
  if (!text) return ql_error_set(error, QL_EINVAL, "%s is NULL", what);
  const char *nul = memchr(text, '\0', len);
  if (!nul) return QL_OK;
  size_t at = (size_t)(nul - text);
  /* The text before the NUL, as far as a message line should show it. */
  enum { QUOTE = 200 };
  return ql_error_set(error, QL_EINVAL, "%s has a NUL byte at offset %zu (of %zu bytes), after '%.*s%s': text may not "
                      "hold NUL bytes", what, at, len, (int)(at < QUOTE ? at : QUOTE), text, at > QUOTE ? "..." : "");
}
