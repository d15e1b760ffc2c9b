/* SPDX-License-Identifier: Apache-2.0 */
/* URL splitting (scheme://authority + path, as object_store chooses stores)
 * and safe path joining. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/text.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"

/* Length of a URL scheme at the start of url if "://" follows it, else 0.
 * RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ). */
static size_t ql_url_scheme_length(const char *url) {
  if (!isalpha((unsigned char)url[0])) return 0;
  size_t i = 1;
  while (isalnum((unsigned char)url[i]) || url[i] == '+' || url[i] == '-' || url[i] == '.') i++;
  return strncmp(url + i, "://", 3) == 0 ? i : 0;
}

static int ql_url_split_local(const char *url, char **store_url, char **path, struct ql_error *error) {
  char *absolute = NULL;
  if (url[0] != '/') {
    /* A relative local path is relative to the working directory. */
    char *cwd = getcwd(NULL, 0); /* any length (glibc, musl, BSD) */
    if (!cwd) {
      return ql_error_set(error, QL_EIO, "cannot resolve relative path '%s': working directory unavailable: %s", url,
                          strerror(errno));
    }
    size_t n = strlen(cwd) + 1 + strlen(url) + 1;
    absolute = malloc(n);
    if (absolute) snprintf(absolute, n, "%s/%s", cwd, url);
    free(cwd);
    if (!absolute) return ql_error_set(error, QL_ENOMEM, "out of memory resolving '%s'", url);
  }
  int rc = ql_path_normalize(absolute ? absolute : url, "path", path, error);
  free(absolute);
  if (rc != QL_OK) return rc;
  *store_url = ql_strdup("file://");
  if (!*store_url) {
    free(*path);
    *path = NULL;
    return ql_error_set(error, QL_ENOMEM, "out of memory splitting '%s'", url);
  }
  return QL_OK;
}

int ql_url_split(const char *url, char **store_url, char **path, struct ql_error *error) {
  *store_url = NULL;
  *path = NULL;
  if (!url || !url[0]) return ql_error_set(error, QL_EINVAL, "empty URL or path");
  size_t scheme_len = ql_url_scheme_length(url);
  if (scheme_len == 0) return ql_url_split_local(url, store_url, path, error);

  const char *authority = url + scheme_len + 3;
  const char *slash = strchr(authority, '/');
  size_t authority_len = slash ? (size_t)(slash - authority) : strlen(authority);
  const char *rest = slash ? slash + 1 : "";

  char scheme[32];
  if (scheme_len >= sizeof(scheme)) return ql_error_set(error, QL_EINVAL, "URL scheme too long in '%s'", url);
  for (size_t i = 0; i < scheme_len; i++) scheme[i] = (char)tolower((unsigned char)url[i]);
  scheme[scheme_len] = '\0';
  if (strcmp(scheme, "file") == 0) {
    /* Only the local host: "file:///x" or "file://localhost/x". */
    if (authority_len != 0 && !(authority_len == 9 && strncmp(authority, "localhost", 9) == 0)) {
      return ql_error_set(error, QL_EINVAL, "file URL '%s' names host '%.*s'; only local files are supported", url,
                          (int)authority_len, authority);
    }
    authority_len = 0;
  }

  char *decoded = NULL;
  QL_RETURN_NOT_OK(ql_percent_decode(rest, strlen(rest), "URL path", &decoded, error));
  int rc = ql_path_normalize(decoded, "URL path", path, error);
  free(decoded);
  if (rc != QL_OK) return rc;

  size_t n = scheme_len + 3 + authority_len + 1;
  *store_url = malloc(n);
  if (!*store_url) {
    free(*path);
    *path = NULL;
    return ql_error_set(error, QL_ENOMEM, "out of memory splitting '%s'", url);
  }
  snprintf(*store_url, n, "%s://%.*s", scheme, (int)authority_len, authority);
  return QL_OK;
}

int ql_path_join(const char *base, const char *key, char **out, struct ql_error *error) {
  *out = NULL;
  if (!key) return ql_error_set(error, QL_EINVAL, "ql_path_join: key is NULL");
  if (key[0] == '/') return ql_error_set(error, QL_EINVAL, "key '%s' is absolute; expected a relative key", key);
  char *normal = NULL;
  QL_RETURN_NOT_OK(ql_path_normalize(key, "key", &normal, error));
  base = base ? base : "";
  size_t base_len = strlen(base);
  while (base_len > 0 && base[base_len - 1] == '/') base_len--;
  size_t key_len = strlen(normal);
  size_t n = base_len + 1 + key_len + 1;
  char *joined = malloc(n);
  if (!joined) {
    free(normal);
    return ql_error_set(error, QL_ENOMEM, "out of memory joining '%s' and '%s'", base, key);
  }
  if (base_len == 0) {
    snprintf(joined, n, "%s", normal);
  } else if (key_len == 0) {
    snprintf(joined, n, "%.*s", (int)base_len, base);
  } else {
    snprintf(joined, n, "%.*s/%s", (int)base_len, base, normal);
  }
  free(normal);
  *out = joined;
  return QL_OK;
}
