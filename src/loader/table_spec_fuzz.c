/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: table specs, URL splits and path joins are parsed from
 * user text (SQL, command lines); none may crash, leak or read out of
 * bounds, and every success must satisfy the documented shape. The
 * length-taking spec parser must refuse a NUL inside and otherwise agree
 * with the C-string one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/loader.h"
#include "qlink/lib/object_store.h"
#include "qlink/lib/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_spec(const char *text) {
  struct ql_error error = {0};
  struct ql_table_spec spec;
  if (ql_table_spec_parse(text, &spec, &error) == QL_OK) {
    /* Non-empty parts; every option has a key. */
    if (!spec.plugin[0] || !spec.provider[0]) abort();
    for (int64_t i = 0; i < spec.options.count; i++) {
      if (!spec.options.keys[i][0] || !spec.options.values[i]) abort();
    }
    ql_table_spec_free(&spec);
  } else if (!error.release || spec.plugin || spec.options.keys) {
    abort(); /* a failure always explains itself and leaves nothing allocated */
  }
  ql_error_release(&error);
}

static void check_url(const char *text) {
  struct ql_error error = {0};
  char *store = NULL, *path = NULL;
  if (ql_url_split(text, &store, &path, &error) == QL_OK) {
    /* A normalised path: no leading or trailing '/', no "." or ".." segment. */
    size_t n = strlen(path);
    if (n && (path[0] == '/' || path[n - 1] == '/')) abort();
    if (strstr(path, "//") || !strcmp(path, ".") || !strcmp(path, "..") || !strncmp(path, "../", 3)) abort();
    if (!strstr(store, "://")) abort();
    char *joined = NULL;
    if (ql_path_join(path, path, &joined, &error) == QL_OK) free(joined);
    free(store);
    free(path);
  }
  ql_error_release(&error);
}

/* The length-taking entry point over the raw bytes: a NUL inside is an
 * error naming its offset; without one it answers as the C-string form. */
static void check_spec_n(const uint8_t *data, size_t size, const char *text) {
  struct ql_error error = {0}, error2 = {0};
  struct ql_table_spec spec, spec2;
  int rc = ql_table_spec_parse_n((const char *)data, size, &spec, &error);
  if (memchr(data, 0, size)) {
    if (rc != QL_EINVAL || !strstr(error.message, "has a NUL byte at offset") || spec.plugin || spec.options.keys) abort();
  } else {
    int rc2 = ql_table_spec_parse(text, &spec2, &error2);
    if (rc != rc2) abort();
    if (rc == QL_OK && (strcmp(spec.plugin, spec2.plugin) || spec.options.count != spec2.options.count)) abort();
    if (rc != QL_OK && strcmp(error.message, error2.message)) abort();
    if (rc == QL_OK) ql_table_spec_free(&spec2);
  }
  if (rc == QL_OK) ql_table_spec_free(&spec);
  ql_error_release(&error);
  ql_error_release(&error2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  check_spec(text);
  check_spec_n(data, size, text);
  if (text[0] != '\0' && text[0] != '/' && !strstr(text, "://")) {
    /* Relative local paths resolve against the working directory: keep them absolute for speed. */
    text[0] = '/';
  }
  check_url(text);
  free(text);
  return 0;
}
