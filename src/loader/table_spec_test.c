/* Tests for src/loader/table_spec.c. */
#include "qlink/lib/loader.h"
#include "qlink/lib/status.h"
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

int main(void) {
  test_ok();
  test_errors();
  QL_TEST_END();
}
