/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for src/base/options.c. */
#include "qlink/lib/options.h"

#include "qlink/lib/status.h"
#include "ql_test.h"

static const char *const keys[] = {"path", "batch", "strict", "big", "junk"};
static const char *const values[] = {"/data/x.zarr", "4096", "Yes", "99999999999999999999", "12x"};
static const struct ql_options opts = {5, keys, values};

static void test_get(void) {
  QL_CHECK_STR(ql_options_get(&opts, "path", "none"), "/data/x.zarr");
  QL_CHECK_STR(ql_options_get(&opts, "Path", "none"), "none"); /* keys are case-sensitive */
  QL_CHECK_STR(ql_options_get(NULL, "path", "none"), "none");
  QL_CHECK(ql_options_get(&opts, "absent", NULL) == NULL);
}

static void test_i64_and_bool(void) {
  struct ql_error error = {0};
  int64_t v = 0;
  QL_CHECK_OK(ql_options_get_i64(&opts, "batch", 7, &v, &error), error);
  QL_CHECK_INT(v, 4096);
  QL_CHECK_OK(ql_options_get_i64(&opts, "absent", 7, &v, &error), error);
  QL_CHECK_INT(v, 7);
  QL_CHECK_INT(ql_options_get_i64(&opts, "junk", 7, &v, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "option 'junk': '12x' is not an integer");
  QL_CHECK_INT(ql_options_get_i64(&opts, "big", 7, &v, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "option 'big': '99999999999999999999' is out of the 64-bit integer range");
  QL_CHECK_INT(ql_options_get_i64(&opts, "path", 7, &v, &error), QL_EINVAL);

  int b = -1;
  QL_CHECK_OK(ql_options_get_bool(&opts, "strict", 0, &b, &error), error);
  QL_CHECK_INT(b, 1);
  QL_CHECK_OK(ql_options_get_bool(&opts, "absent", 0, &b, &error), error);
  QL_CHECK_INT(b, 0);
  QL_CHECK_INT(ql_options_get_bool(&opts, "batch", 0, &b, &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "option 'batch': '4096' is not a boolean (true/false, 1/0, yes/no, on/off)");
  const char *const k2[] = {"a", "b"};
  const char *const v2[] = {"OFF", "0"};
  const struct ql_options o2 = {2, k2, v2};
  b = -1;
  QL_CHECK_OK(ql_options_get_bool(&o2, "a", 1, &b, &error), error);
  QL_CHECK_INT(b, 0);
  QL_CHECK_OK(ql_options_get_bool(&o2, "b", 1, &b, &error), error);
  QL_CHECK_INT(b, 0);
  ql_error_release(&error);
}

static void test_check(void) {
  struct ql_error error = {0};
  const struct ql_option_info known[] = {
      {"path", "store path", NULL, 1, 0},
      {"batch", "rows per batch", "8192", 0, 0},
  };
  const char *const k[] = {"path", "batch"};
  const char *const v[] = {"/x", "10"};
  const struct ql_options ok = {2, k, v};
  QL_CHECK_OK(ql_options_check(&ok, known, 2, "zarr/store", &error), error);

  const char *const k_bad[] = {"pth"};
  const struct ql_options typo = {1, k_bad, v};
  QL_CHECK_INT(ql_options_check(&typo, known, 2, "zarr/store", &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "unknown option 'pth' for zarr/store; accepted: path, batch");

  const char *const k_batch[] = {"batch"};
  const struct ql_options missing = {1, k_batch, v};
  QL_CHECK_INT(ql_options_check(&missing, known, 2, "zarr/store", &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "missing required option 'path' for zarr/store");
  QL_CHECK_INT(ql_options_check(NULL, known, 2, "zarr/store", &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "missing required option 'path' for zarr/store");

  QL_CHECK_INT(ql_options_check(&typo, NULL, 0, "qlink_fold/fold", &error), QL_EINVAL);
  QL_CHECK_STR(error.message, "unknown option 'pth' for qlink_fold/fold; it takes no options");
  QL_CHECK_OK(ql_options_check(NULL, NULL, 0, "qlink_fold/fold", &error), error);

  /* Nothing required, nothing given. */
  QL_CHECK_OK(ql_options_check(NULL, known + 1, 1, "x", &error), error);
  ql_error_release(&error);
}

int main(void) {
  test_get();
  test_i64_and_bool();
  test_check();
  QL_TEST_END();
}
