/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/runtime/builtins.c: registration, aliases, and that
 * docs/functions.md lists every canonical name of the C table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "qlink/function.h"
#include "qlink/lib/function_registry.h"
#include "qlink/lib/status.h"
#include "ql_test.h"

static void check_builtin(const struct ql_function_registry *r, const char *name, int32_t kind, const char *canonical,
                          int32_t volatility) {
  struct ql_function_info out = {0};
  int rc = ql_function_registry_lookup(r, name, kind, &out, NULL);
  if (rc != QL_OK) fprintf(stderr, "built-in '%s' (kind %d) not found\n", name, (int)kind);
  QL_CHECK_INT(rc, QL_OK);
  if (rc != QL_OK) return;
  QL_CHECK_INT(out.id.origin, QL_ORIGIN_BUILTIN);
  QL_CHECK_INT(out.id.kind, kind);
  QL_CHECK_STR(out.id.name, canonical);
  QL_CHECK(out.id.library == NULL);
  QL_CHECK_INT(out.id.uid, 0);
  QL_CHECK_INT(out.volatility, volatility);
}

static void test_registration(void) {
  struct ql_error error = {0};
  struct ql_function_registry *r = NULL;
  QL_CHECK_OK(ql_function_registry_new(&r, &error), error);
  QL_CHECK_OK(ql_function_registry_add_builtins(r, &error), error);
  int64_t n;
  const struct ql_builtin *table = ql_builtins(&n);
  QL_CHECK_INT(n, 246);
  QL_CHECK_INT(ql_function_registry_count(r), n); /* no duplicate (name, kind) rows */
  QL_CHECK_INT(ql_function_registry_generation(r), n);
  (void)table;

  check_builtin(r, "sum", QL_FUNCTION_AGGREGATE, "sum", QL_IMMUTABLE);
  check_builtin(r, "COUNT", QL_FUNCTION_AGGREGATE, "count", QL_IMMUTABLE);
  check_builtin(r, "avg", QL_FUNCTION_AGGREGATE, "avg", QL_IMMUTABLE);
  check_builtin(r, "mean", QL_FUNCTION_AGGREGATE, "avg", QL_IMMUTABLE);
  check_builtin(r, "var_samp", QL_FUNCTION_AGGREGATE, "var", QL_IMMUTABLE);
  check_builtin(r, "stddev_samp", QL_FUNCTION_AGGREGATE, "stddev", QL_IMMUTABLE);
  check_builtin(r, "median", QL_FUNCTION_AGGREGATE, "median", QL_IMMUTABLE);
  check_builtin(r, "approx_distinct", QL_FUNCTION_AGGREGATE, "approx_distinct", QL_IMMUTABLE);
  check_builtin(r, "first_value", QL_FUNCTION_AGGREGATE, "first_value", QL_IMMUTABLE);
  check_builtin(r, "first_value", QL_FUNCTION_WINDOW, "first_value", QL_IMMUTABLE);
  check_builtin(r, "row_number", QL_FUNCTION_WINDOW, "row_number", QL_IMMUTABLE);
  check_builtin(r, "ntile", QL_FUNCTION_WINDOW, "ntile", QL_IMMUTABLE);
  check_builtin(r, "abs", QL_FUNCTION_SCALAR, "abs", QL_IMMUTABLE);
  check_builtin(r, "Sqrt", QL_FUNCTION_SCALAR, "sqrt", QL_IMMUTABLE);
  check_builtin(r, "pow", QL_FUNCTION_SCALAR, "power", QL_IMMUTABLE);
  check_builtin(r, "length", QL_FUNCTION_SCALAR, "character_length", QL_IMMUTABLE);
  check_builtin(r, "substring", QL_FUNCTION_SCALAR, "substr", QL_IMMUTABLE);
  check_builtin(r, "date_trunc", QL_FUNCTION_SCALAR, "date_trunc", QL_IMMUTABLE);
  check_builtin(r, "datepart", QL_FUNCTION_SCALAR, "date_part", QL_IMMUTABLE);
  check_builtin(r, "random", QL_FUNCTION_SCALAR, "random", QL_VOLATILE);
  check_builtin(r, "now", QL_FUNCTION_SCALAR, "now", QL_STABLE);
  check_builtin(r, "make_array", QL_FUNCTION_SCALAR, "make_array", QL_IMMUTABLE);
  /* Not built-ins, or the wrong kind. */
  QL_CHECK_INT(ql_function_registry_lookup(r, "sum", QL_FUNCTION_SCALAR, NULL, NULL), QL_ENOTFOUND);
  QL_CHECK_INT(ql_function_registry_lookup(r, "abs", QL_FUNCTION_AGGREGATE, NULL, NULL), QL_ENOTFOUND);
  QL_CHECK_INT(ql_function_registry_lookup(r, "my_udf", QL_FUNCTION_SCALAR, NULL, NULL), QL_ENOTFOUND);
  ql_function_registry_free(r, NULL);
}

static void test_table_shape(void) {
  int64_t n;
  const struct ql_builtin *table = ql_builtins(&n);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    /* Names are lower-case [a-z0-9_]; an alias points at a canonical row of its kind. */
    for (const char *p = table[i].name; *p; p++) {
      if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) bad++;
    }
    if (table[i].canonical) {
      int found = 0;
      for (int64_t j = 0; j < n; j++) {
        if (!table[j].canonical && table[j].kind == table[i].kind && strcmp(table[j].name, table[i].canonical) == 0) {
          found = 1;
        }
      }
      if (!found) bad++;
    }
  }
  QL_CHECK_INT(bad, 0);
}

/* The source tree: $QL_SOURCE_DIR (set by ctest), else derived from this
 * file's path as the compiler saw it (CMake passes absolute paths), so the
 * test also runs outside ctest (scripts/valgrind.sh). */
static void source_dir(char *buf, size_t cap) {
  const char *env = getenv("QL_SOURCE_DIR");
  if (env && env[0]) {
    snprintf(buf, cap, "%s", env);
    return;
  }
  snprintf(buf, cap, "%s", __FILE__);
  char *tail = strstr(buf, "/src/");
  if (tail) {
    *tail = '\0';
  } else {
    snprintf(buf, cap, ".");
  }
}

static char *read_doc(void) {
  char src[4000];
  source_dir(src, sizeof(src));
  char path[4096];
  snprintf(path, sizeof(path), "%s/docs/functions.md", src);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s (set QL_SOURCE_DIR to the source tree)\n", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  size_t got = text ? fread(text, 1, (size_t)size, f) : 0;
  fclose(f);
  if (!text) return NULL;
  text[got] = '\0';
  return text;
}

static void test_doc_lists_every_name(void) {
  char *doc = read_doc();
  QL_CHECK(doc != NULL);
  if (!doc) return;
  int64_t n;
  const struct ql_builtin *table = ql_builtins(&n);
  int missing = 0;
  for (int64_t i = 0; i < n; i++) {
    char quoted[128];
    snprintf(quoted, sizeof(quoted), "`%s`", table[i].name);
    if (!strstr(doc, quoted)) {
      fprintf(stderr, "docs/functions.md does not list %s\n", quoted);
      missing++;
    }
  }
  QL_CHECK_INT(missing, 0);
  free(doc);
}

int main(void) {
  test_registration();
  test_table_shape();
  test_doc_lists_every_name();
  QL_TEST_END();
}
