/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/loader/table_spec.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"
#include "qlink/lib/text.h"
#include "ql_test.h"

static void test_ok(void) {
  struct ql_error error = {0};
  struct ql_table_spec spec;
  QL_CHECK_OK(ql_table_spec_parse("qlink_zarr/store?path=/data/x.zarr&group=a%2Fb&batch=4096", &spec, &error), error);
  QL_CHECK_STR(spec.plugin, "qlink_zarr");
  QL_CHECK_STR(spec.provider, "store");
  QL_CHECK_INT(spec.options.count, 3);
  QL_CHECK_STR(spec.options.keys[0], "path");
  QL_CHECK_STR(spec.options.values[0], "/data/x.zarr");
  QL_CHECK_STR(spec.options.keys[1], "group");
  QL_CHECK_STR(spec.options.values[1], "a/b");
  QL_CHECK_STR(spec.options.keys[2], "batch");
  QL_CHECK_STR(spec.options.values[2], "4096");
  ql_table_spec_free(&spec);
  QL_CHECK(spec.plugin == NULL && spec.options.count == 0);
  ql_table_spec_free(&spec); /* freed: no-op */

  /* The plugin is a path: split at the last '/' before '?'. */
  QL_CHECK_OK(ql_table_spec_parse("build/release/plugins/qlink_zarr.so/store?path=s3%3A%2F%2Fb%2Fk%3Fv", &spec, &error),
              error);
  QL_CHECK_STR(spec.plugin, "build/release/plugins/qlink_zarr.so");
  QL_CHECK_STR(spec.provider, "store");
  QL_CHECK_INT(spec.options.count, 1);
  QL_CHECK_STR(spec.options.values[0], "s3://b/k?v");
  ql_table_spec_free(&spec);

  /* A '/' inside the query does not move the split. */
  QL_CHECK_OK(ql_table_spec_parse("/abs/p.so/t?path=/a/b&empty=&x=a+b=c", &spec, &error), error);
  QL_CHECK_STR(spec.plugin, "/abs/p.so");
  QL_CHECK_STR(spec.provider, "t");
  QL_CHECK_INT(spec.options.count, 3);
  QL_CHECK_STR(spec.options.values[0], "/a/b");
  QL_CHECK_STR(spec.options.keys[1], "empty");
  QL_CHECK_STR(spec.options.values[1], "");
  QL_CHECK_STR(spec.options.values[2], "a+b=c"); /* '+' kept; only the first '=' splits */
  ql_table_spec_free(&spec);

  /* No query, empty query, stray '&'. */
  QL_CHECK_OK(ql_table_spec_parse("p/t", &spec, &error), error);
  QL_CHECK_INT(spec.options.count, 0);
  ql_table_spec_free(&spec);
  QL_CHECK_OK(ql_table_spec_parse("p/t?", &spec, &error), error);
  QL_CHECK_INT(spec.options.count, 0);
  ql_table_spec_free(&spec);
  QL_CHECK_OK(ql_table_spec_parse("p/t?&a=1&&b=2&", &spec, &error), error);
  QL_CHECK_INT(spec.options.count, 2);
  QL_CHECK_STR(spec.options.keys[1], "b");
  ql_table_spec_free(&spec);
  QL_CHECK_OK(ql_table_spec_parse("my%20plugin/t%5F1", &spec, &error), error);
  QL_CHECK_STR(spec.plugin, "my plugin");
  QL_CHECK_STR(spec.provider, "t_1");
  ql_table_spec_free(&spec);
}

struct bad_case {
  const char *spec;
  const char *message;
};

static void test_errors(void) {
  static const struct bad_case cases[] = {
      {"qlink_zarr", "table spec 'qlink_zarr' has no '/': expected PLUGIN/PROVIDER?key=value&..."},
      {"/store?x=1", "table spec '/store?x=1': the plugin is empty"},
      {"qlink_zarr/?x=1", "table spec 'qlink_zarr/?x=1': the provider is empty"},
      {"qlink_zarr/", "table spec 'qlink_zarr/': the provider is empty"},
      {"p/t?path", "table spec 'p/t?path': option 'path' has no '=' (expected key=value)"},
      {"p/t?a=1&flag&b=2", "table spec 'p/t?a=1&flag&b=2': option 'flag' has no '=' (expected key=value)"},
      {"p/t?=v", "table spec 'p/t?=v': option '=v' has an empty key"},
      {"p/t?a=1&a=2", "table spec 'p/t?a=1&a=2': option 'a' is given twice"},
      /* the first repeat in spec order, as a one-by-one check finds it */
      {"p/t?a=1&b=1&b=2&a=2", "table spec 'p/t?a=1&b=1&b=2&a=2': option 'b' is given twice"},
      {"p/t?z=1&a=1&z=2&a=2", "table spec 'p/t?z=1&a=1&z=2&a=2': option 'z' is given twice"},
      {"p/t?a%3Db=1&a=b=2&a%3db=3", "table spec 'p/t?a%3Db=1&a=b=2&a%3db=3': option 'a=b' is given twice"},
      /* a repeat before a malformed option is reported; one after it is not */
      {"p/t?a=1&a=2&flag", "table spec 'p/t?a=1&a=2&flag': option 'a' is given twice"},
      {"p/t?a=1&flag&a=2", "table spec 'p/t?a=1&flag&a=2': option 'flag' has no '=' (expected key=value)"},
      {"p/t?a=1&a=%zz", "bad percent escape '%zz' in table spec option value '%zz'"},
      {"p/t?a=%zz", "bad percent escape '%zz' in table spec option value '%zz'"},
      {"?x=1", "table spec '?x=1' has no '/': expected PLUGIN/PROVIDER?key=value&..."},
      {"", "table spec '' has no '/': expected PLUGIN/PROVIDER?key=value&..."},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct ql_error error = {0};
    struct ql_table_spec spec;
    QL_CHECK_INT(ql_table_spec_parse(cases[i].spec, &spec, &error), QL_EINVAL);
    QL_CHECK_STR(error.message, cases[i].message);
    QL_CHECK(spec.plugin == NULL && spec.provider == NULL && spec.options.count == 0 && spec.options.keys == NULL);
    ql_error_release(&error);
  }
  struct ql_error error = {0};
  struct ql_table_spec spec;
  QL_CHECK_INT(ql_table_spec_parse(NULL, &spec, &error), QL_EINVAL);
  ql_error_release(&error);
}

/* "p/t?k0=v0&k1=v1&...": n options (malloc'd). */
static char *many_options(int64_t n, const char *extra) {
  size_t cap = 8 + (size_t)n * 24 + strlen(extra);
  char *text = malloc(cap);
  size_t used = (size_t)snprintf(text, cap, "p/t?");
  for (int64_t i = 0; i < n; i++) used += (size_t)snprintf(text + used, cap - used, "&k%lld=v%lld", (long long)i, (long long)i);
  snprintf(text + used, cap - used, "%s", extra);
  return text;
}

/* 200,000 options parse (the repeat check is O(n log n): the quadratic one
 * took minutes here) with every key and value in place; a repeat at the
 * very end, and one of the first key, are still found. */
static void test_many_options(void) {
  enum { N = 200000 };
  struct ql_error error = {0};
  struct ql_table_spec spec;
  char *text = many_options(N, "");
  QL_CHECK_OK(ql_table_spec_parse(text, &spec, &error), error);
  QL_CHECK_INT(spec.options.count, N);
  int in_place = 1;
  for (int64_t i = 0; i < N && in_place; i++) {
    char want[32];
    snprintf(want, sizeof want, "k%lld", (long long)i);
    in_place = strcmp(spec.options.keys[i], want) == 0 && strcmp(spec.options.values[i] + 1, want + 1) == 0 &&
               spec.options.values[i][0] == 'v';
  }
  QL_CHECK(in_place);
  ql_table_spec_free(&spec);
  free(text);

  text = many_options(N, "&k199999=again");
  QL_CHECK_INT(ql_table_spec_parse(text, &spec, &error), QL_EINVAL);
  const char *tail = "': option 'k199999' is given twice";
  size_t mlen = strlen(error.message);
  QL_CHECK(mlen > strlen(tail) && strcmp(error.message + mlen - strlen(tail), tail) == 0);
  QL_CHECK(spec.options.keys == NULL && spec.options.count == 0);
  ql_error_release(&error);
  free(text);

  text = many_options(N, "&k0=again&k5=again");
  QL_CHECK_INT(ql_table_spec_parse(text, &spec, &error), QL_EINVAL);
  tail = "': option 'k0' is given twice";
  mlen = strlen(error.message);
  QL_CHECK(mlen > strlen(tail) && strcmp(error.message + mlen - strlen(tail), tail) == 0);
  ql_error_release(&error);
  free(text);
}

/* ql_table_spec_parse_n: a NUL inside the text is an error naming its
 * offset, never the end of the spec. */
static void test_length_and_nul(void) {
  struct ql_error error = {0};
  struct ql_table_spec spec;
  static const char with_nul[] = "qlink_sample/series?stop=3\0&x=1";
  QL_CHECK_INT(ql_table_spec_parse_n(with_nul, sizeof with_nul - 1, &spec, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "table spec has a NUL byte at offset 26 (of 31 bytes), after "
                              "'qlink_sample/series?stop=3': text may not hold NUL bytes");
  QL_CHECK(spec.plugin == NULL && spec.options.keys == NULL);
  ql_error_release(&error);
  /* a NUL first, and one as the last byte */
  QL_CHECK_INT(ql_table_spec_parse_n("\0p/t", 4, &spec, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "table spec has a NUL byte at offset 0 (of 4 bytes), after '': text may not hold NUL bytes");
  ql_error_release(&error);
  QL_CHECK_INT(ql_table_spec_parse_n("p/t?a=1", 8, &spec, &error), QL_EINVAL); /* the terminator counted in */
  QL_CHECK_STR(error.message, "table spec has a NUL byte at offset 7 (of 8 bytes), after 'p/t?a=1': text may not hold NUL bytes");
  ql_error_release(&error);
  /* the length is honoured: no NUL needed at the end, bytes past it unread */
  QL_CHECK_OK(ql_table_spec_parse_n("p/t?a=1&b=2XXXX", 11, &spec, &error), error);
  QL_CHECK_INT(spec.options.count, 2);
  QL_CHECK_STR(spec.options.values[1], "2");
  ql_table_spec_free(&spec);
  QL_CHECK_INT(ql_table_spec_parse_n("p/t?a=1&a=2", 11, &spec, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "table spec 'p/t?a=1&a=2': option 'a' is given twice");
  ql_error_release(&error);
  QL_CHECK_INT(ql_table_spec_parse_n("", 0, &spec, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "table spec '' has no '/': expected PLUGIN/PROVIDER?key=value&...");
  ql_error_release(&error);
  QL_CHECK_INT(ql_table_spec_parse_n(NULL, 3, &spec, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "table spec is NULL");
  ql_error_release(&error);
  /* the quoted text before a NUL is cut, visibly, at 200 bytes */
  char long_text[300];
  memset(long_text, 'a', sizeof long_text);
  long_text[250] = '\0';
  QL_CHECK_INT(ql_text_check_nul(long_text, sizeof long_text, "qlink_allow argument 1", &error), QL_EINVAL);
  QL_CHECK(strncmp(error.message, "qlink_allow argument 1 has a NUL byte at offset 250 (of 300 bytes), after 'aaa", 78) == 0);
  QL_CHECK(strstr(error.message, "aaa...': text may not hold NUL bytes") != NULL);
  QL_CHECK_INT((int64_t)strlen(error.message), 78 - 3 + 200 + (int64_t)strlen("...': text may not hold NUL bytes"));
  ql_error_release(&error);
  QL_CHECK_OK(ql_text_check_nul("abc", 3, "x", &error), error);
  QL_CHECK_OK(ql_text_check_nul("", 0, "x", &error), error);
}

int main(void) {
  test_ok();
  test_errors();
  test_many_options();
  test_length_and_nul();
  QL_TEST_END();
}
