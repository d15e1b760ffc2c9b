/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing "PLUGIN/PROVIDER?key=value&key2=value2" table specs. PLUGIN may
 * itself be a path with '/', so the provider is what follows the last '/'
 * before the '?'. Keys and values are percent-decoded ('+' stays '+').
 *
 * A spec may carry any number of options (a spec is user text): repeated
 * keys are found by sorting the keys once, O(n log n), not by comparing
 * each key with every earlier one. */
#include <stdlib.h>
#include <string.h>

#include "../base/text.h"
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"

void ql_table_spec_free(struct ql_table_spec *spec) {
  if (!spec) return;
  free(spec->plugin);
  free(spec->provider);
  for (int64_t i = 0; i < spec->options.count; i++) {
    free((void *)spec->options.keys[i]);
    free((void *)spec->options.values[i]);
  }
  free((void *)spec->options.keys);
  free((void *)spec->options.values);
  memset(spec, 0, sizeof(*spec));
}

struct ql_key_ref {
  const char *key;
  int64_t index;
};

static int ql_key_ref_cmp(const void *a, const void *b) {
  const struct ql_key_ref *x = a, *y = b;
  int c = strcmp(x->key, y->key);
  if (c) return c;
  return (x->index > y->index) - (x->index < y->index);
}

/* The smallest i in [0, n) such that keys[i] equals some keys[j], j < i
 * (the option a one-by-one scan finds repeated first), or -1 when the keys
 * are distinct; -2 when out of memory. Sorting by (key, index) puts every
 * key's occurrences together in order; each adjacent equal pair's second
 * index is a repeat, and the smallest of those is the answer. */
static int64_t ql_first_repeat(char *const *keys, int64_t n) {
  if (n < 2) return -1;
  struct ql_key_ref *refs = malloc((size_t)n * sizeof(*refs));
  if (!refs) return -2;
  for (int64_t i = 0; i < n; i++) refs[i] = (struct ql_key_ref){keys[i], i};
  qsort(refs, (size_t)n, sizeof(*refs), ql_key_ref_cmp);
  int64_t first = -1;
  for (int64_t i = 1; i < n; i++) {
    if (strcmp(refs[i - 1].key, refs[i].key) == 0 && (first < 0 || refs[i].index < first)) first = refs[i].index;
  }
  free(refs);
  return first;
}

/* Parse the query part into spec->options. A repeated key is reported as
 * the first repeat in spec order, ahead of any later malformed option, as
 * a one-by-one check would. */
static int ql_table_spec_parse_query(const char *spec_text, const char *query, struct ql_table_spec *spec,
                                     struct ql_error *error) {
  int64_t max = 1;
  for (const char *p = query; *p; p++) max += *p == '&';
  char **keys = calloc((size_t)max, sizeof(char *));
  char **values = calloc((size_t)max, sizeof(char *));
  spec->options.keys = (const char *const *)keys;
  spec->options.values = (const char *const *)values;
  if (!keys || !values) return ql_error_set(error, QL_ENOMEM, "out of memory parsing table spec '%s'", spec_text);
  int64_t complete = 0; /* options with both key and value decoded */
  int rc = QL_OK;
  const char *p = query;
  while (*p && rc == QL_OK) {
    const char *end = strchr(p, '&');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0) { /* "a=1&&b=2" and a trailing '&' are tolerated */
      const char *eq = memchr(p, '=', len);
      if (!eq) {
        rc = ql_error_set(error, QL_EINVAL, "table spec '%s': option '%.*s' has no '=' (expected key=value)", spec_text,
                          (int)len, p);
      } else if (eq == p) {
        rc = ql_error_set(error, QL_EINVAL, "table spec '%s': option '%.*s' has an empty key", spec_text, (int)len, p);
      } else {
        int64_t i = spec->options.count;
        rc = ql_percent_decode(p, (size_t)(eq - p), "table spec option key", &keys[i], error);
        if (rc == QL_OK) {
          spec->options.count++; /* counted now so ql_table_spec_free frees the key */
          rc = ql_percent_decode(eq + 1, len - (size_t)(eq - p) - 1, "table spec option value", &values[i], error);
        }
        if (rc == QL_OK) complete++;
      }
    }
    p += len;
    if (*p == '&') p++;
  }
  int64_t repeat = ql_first_repeat(keys, complete);
  if (repeat == -2) return ql_error_set(error, QL_ENOMEM, "out of memory checking the options of a table spec");
  if (repeat >= 0) {
    return ql_error_set(error, QL_EINVAL, "table spec '%s': option '%s' is given twice", spec_text, keys[repeat]);
  }
  return rc;
}

static int ql_table_spec_parse_into(const char *spec, struct ql_table_spec *out, struct ql_error *error) {
  const char *query = strchr(spec, '?');
  size_t head_len = query ? (size_t)(query - spec) : strlen(spec);
  const char *slash = NULL;
  for (const char *p = spec; p < spec + head_len; p++) {
    if (*p == '/') slash = p;
  }
  if (!slash) {
    return ql_error_set(error, QL_EINVAL, "table spec '%s' has no '/': expected PLUGIN/PROVIDER?key=value&...", spec);
  }
  if (slash == spec) return ql_error_set(error, QL_EINVAL, "table spec '%s': the plugin is empty", spec);
  if (slash + 1 == spec + head_len) return ql_error_set(error, QL_EINVAL, "table spec '%s': the provider is empty", spec);
  QL_RETURN_NOT_OK(ql_percent_decode(spec, (size_t)(slash - spec), "table spec plugin", &out->plugin, error));
  QL_RETURN_NOT_OK(ql_percent_decode(slash + 1, (size_t)(spec + head_len - slash - 1), "table spec provider",
                                     &out->provider, error));
  return ql_table_spec_parse_query(spec, query ? query + 1 : "", out, error);
}

int ql_table_spec_parse(const char *spec, struct ql_table_spec *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (!spec) return ql_error_set(error, QL_EINVAL, "table spec is NULL");
  int rc = ql_table_spec_parse_into(spec, out, error);
  if (rc != QL_OK) ql_table_spec_free(out);
  return rc;
}

int ql_table_spec_parse_n(const char *spec, size_t len, struct ql_table_spec *out, struct ql_error *error) {
  memset(out, 0, sizeof(*out));
  if (!spec) return ql_error_set(error, QL_EINVAL, "table spec is NULL");
  QL_RETURN_NOT_OK(ql_text_check_nul(spec, len, "table spec", error));
  char *text = ql_strndup(spec, len);
  if (!text) return ql_error_set(error, QL_ENOMEM, "out of memory copying a table spec of %zu bytes", len);
  int rc = ql_table_spec_parse(text, out, error);
  free(text);
  return rc;
}
