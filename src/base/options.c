/* SPDX-License-Identifier: Apache-2.0 */
/* Reading and validating struct ql_options. Option sets are small (a
 * handful of keys), so lookups are linear scans. */
#include "qlink/lib/options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "qlink/lib/status.h"

static int64_t ql_options_index(const struct ql_options *options, const char *key) {
  if (!options || !key || !options->keys) return -1;
  for (int64_t i = 0; i < options->count; i++) {
    if (options->keys[i] && strcmp(options->keys[i], key) == 0) return i;
  }
  return -1;
}

const char *ql_options_get(const struct ql_options *options, const char *key, const char *fallback) {
  int64_t i = ql_options_index(options, key);
  return (i >= 0 && options->values && options->values[i]) ? options->values[i] : fallback;
}

/* "a, b, c": the accepted option names, for messages. Malloc'd. */
static char *ql_options_known_list(const struct ql_option_info *known, int32_t n_known) {
  size_t size = 1;
  for (int32_t i = 0; i < n_known; i++) size += strlen(known[i].name) + 2;
  char *list = malloc(size);
  if (!list) return NULL;
  list[0] = '\0';
  for (int32_t i = 0; i < n_known; i++) {
    if (i > 0) strcat(list, ", ");
    strcat(list, known[i].name);
  }
  return list;
}

static int ql_option_is_known(const struct ql_option_info *known, int32_t n_known, const char *key) {
  for (int32_t i = 0; i < n_known; i++) {
    if (strcmp(known[i].name, key) == 0) return 1;
  }
  return 0;
}

int ql_options_check(const struct ql_options *options, const struct ql_option_info *known, int32_t n_known,
                     const char *what, struct ql_error *error) {
  what = what ? what : "this object";
  int64_t count = options ? options->count : 0;
  if (count > 0 && (!options->keys || !options->values)) {
    return ql_error_set(error, QL_EINVAL, "options for %s have %lld entries but no keys or values", what,
                        (long long)count);
  }
  for (int64_t i = 0; i < count; i++) {
    const char *key = options->keys[i];
    if (!key || !options->values[i]) {
      return ql_error_set(error, QL_EINVAL, "option %lld for %s has a NULL key or value", (long long)i, what);
    }
    if (ql_option_is_known(known, n_known, key)) continue;
    if (n_known == 0) return ql_error_set(error, QL_EINVAL, "unknown option '%s' for %s; it takes no options", key, what);
    char *list = ql_options_known_list(known, n_known);
    int rc = ql_error_set(error, QL_EINVAL, "unknown option '%s' for %s; accepted: %s", key, what,
                          list ? list : "(out of memory listing them)");
    free(list);
    return rc;
  }
  for (int32_t i = 0; i < n_known; i++) {
    if (known[i].required && ql_options_index(options, known[i].name) < 0) {
      return ql_error_set(error, QL_EINVAL, "missing required option '%s' for %s", known[i].name, what);
    }
  }
  return QL_OK;
}

int ql_options_get_i64(const struct ql_options *options, const char *key, int64_t fallback, int64_t *out,
                       struct ql_error *error) {
  const char *value = ql_options_get(options, key, NULL);
  if (!value) {
    *out = fallback;
    return QL_OK;
  }
  char *end = NULL;
  errno = 0;
  long long v = strtoll(value, &end, 10);
  if (end == value || *end != '\0' || value[0] == ' ' || value[0] == '\t') {
    return ql_error_set(error, QL_EINVAL, "option '%s': '%s' is not an integer", key, value);
  }
  if (errno == ERANGE) {
    return ql_error_set(error, QL_EINVAL, "option '%s': '%s' is out of the 64-bit integer range", key, value);
  }
  *out = (int64_t)v;
  return QL_OK;
}

int ql_options_get_bool(const struct ql_options *options, const char *key, int fallback, int *out,
                        struct ql_error *error) {
  static const char *const truthy[] = {"true", "1", "yes", "on"};
  static const char *const falsy[] = {"false", "0", "no", "off"};
  const char *value = ql_options_get(options, key, NULL);
  if (!value) {
    *out = fallback;
    return QL_OK;
  }
  for (size_t i = 0; i < sizeof(truthy) / sizeof(truthy[0]); i++) {
    if (strcasecmp(value, truthy[i]) == 0) {
      *out = 1;
      return QL_OK;
    }
    if (strcasecmp(value, falsy[i]) == 0) {
      *out = 0;
      return QL_OK;
    }
  }
  return ql_error_set(error, QL_EINVAL, "option '%s': '%s' is not a boolean (true/false, 1/0, yes/no, on/off)", key,
                      value);
}
