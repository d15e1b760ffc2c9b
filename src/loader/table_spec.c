/* Parsing "PLUGIN/PROVIDER?key=value&key2=value2" table specs. PLUGIN may
 * itself be a path with '/', so the provider is what follows the last '/'
 * before the '?'. Keys and values are percent-decoded ('+' stays '+'). */
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

/* Parse the query part into spec->options. */
static int ql_table_spec_parse_query(const char *spec_text, const char *query, struct ql_table_spec *spec,
                                     struct ql_error *error) {
  int64_t max = 1;
  for (const char *p = query; *p; p++) max += *p == '&';
  char **keys = calloc((size_t)max, sizeof(char *));
  char **values = calloc((size_t)max, sizeof(char *));
  spec->options.keys = (const char *const *)keys;
  spec->options.values = (const char *const *)values;
  if (!keys || !values) return ql_error_set(error, QL_ENOMEM, "out of memory parsing table spec '%s'", spec_text);
  const char *p = query;
  while (*p) {
    const char *end = strchr(p, '&');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > 0) { /* "a=1&&b=2" and a trailing '&' are tolerated */
      const char *eq = memchr(p, '=', len);
      if (!eq) {
        return ql_error_set(error, QL_EINVAL, "table spec '%s': option '%.*s' has no '=' (expected key=value)",
                            spec_text, (int)len, p);
      }
      if (eq == p) return ql_error_set(error, QL_EINVAL, "table spec '%s': option '%.*s' has an empty key", spec_text, (int)len, p);
      int64_t i = spec->options.count;
      QL_RETURN_NOT_OK(ql_percent_decode(p, (size_t)(eq - p), "table spec option key", &keys[i], error));
      spec->options.count++; /* counted now so ql_table_spec_free frees the key */
      QL_RETURN_NOT_OK(ql_percent_decode(eq + 1, len - (size_t)(eq - p) - 1, "table spec option value", &values[i], error));
      for (int64_t j = 0; j < i; j++) {
        if (strcmp(keys[j], keys[i]) == 0) {
          return ql_error_set(error, QL_EINVAL, "table spec '%s': option '%s' is given twice", spec_text, keys[i]);
        }
      }
    }
    p += len;
    if (*p == '&') p++;
  }
  return QL_OK;
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
